#!/usr/bin/env bash
# Packs the GPU kit into one folder under the GPU machine's 64 MiB carry limit: a trimmed Java
# runtime (jlink), the project's jars without libtorch's natives (the GPU machine brings its own
# libtorch and NCCL in its Python environment), Bytedeco's CUDA glue cut down to the CUDA runtime
# and NCCL, the engine's test jar (the NCCL checks), and the scripts that run there.
#   mvn -B -DskipTests package && tools/gpu-kit/pack.sh [OUTPUT_DIR]   (default tools/gpu-kit/build/kit)
# M2_REPO: the Maven repository holding Bytedeco's natives (default ~/.m2/repository).
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/build/kit}"
limit=$((64 * 1024 * 1024))
m2="${M2_REPO:-$HOME/.m2/repository}"
lib="$root/benchmarks/target/lib"
glue="$m2/org/bytedeco/cuda/12.9-9.10-1.5.12/cuda-12.9-9.10-1.5.12-linux-x86_64.jar"
javacpp_native="$m2/org/bytedeco/javacpp/1.5.12/javacpp-1.5.12-linux-x86_64.jar"
tests_jar="$(ls "$root"/djl-fsdp-engine/target/djl-fsdp-engine-*-tests.jar 2>/dev/null | head -n 1)"
modules="java.base,java.logging,java.management,java.naming,java.net.http,java.sql,java.xml,jdk.unsupported,jdk.zipfs"

fail() { echo "pack.sh: $*" >&2; exit 1; }
[[ -f "$root/benchmarks/target/benchmarks.jar" && -d "$lib" && -n "$tests_jar" ]] \
    || fail "build first: (cd '$root' && mvn -B -DskipTests package)"
for jar in "$glue" "$javacpp_native"; do
    [[ -f "$jar" ]] || fail "$jar is missing; fetch it with: mvn dependency:get \
-Dartifact=$(basename "$(dirname "$(dirname "$jar")")"):$(basename "$(dirname "$(dirname "$(dirname "$jar")")")"):$(basename "$(dirname "$jar")"):jar:linux-x86_64 -Dtransitive=false (or build once with -Pcuda)"
done
command -v jlink >/dev/null || fail "jlink is missing: install a full JDK 17"
if [[ -e "$out" && ! -f "$out/run-on-gpu.sh" ]]; then
    fail "$out exists and is not a kit: choose another OUTPUT_DIR"
fi

staging="$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/lib"

jlink --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
    --compress=2 --output "$staging/runtime"

# Every jar bin/fsdp uses but libtorch's CPU natives, JMH's (benchmarks only run here), and
# Jinjava with the jars only it needs (finetune's chat templates: no kit step renders one).
for jar in "$lib"/*.jar; do
    case "$(basename "$jar")" in
        pytorch-native-*|jmh-core-*|jopt-simple-*|commons-math3-*) ;;
        jinjava-*|javassist-*|re2j-*|commons-net-*|java-ipv6-*|annotations-3.*|jackson-*) ;;
        big-math-*|immutables-exceptions-*) ;;
        *) cp "$jar" "$staging/lib/" ;;
    esac
done
cp "$root/benchmarks/target/benchmarks.jar" "$tests_jar" "$javacpp_native" "$staging/lib/"

# Keep only the natives the kit runs: Linux x86-64 tokenizers, Bytedeco's cudart and NCCL glue.
python3 - "$staging/lib" "$glue" <<'PY'
import os, sys, zipfile

def trim(source, target, keep):
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target + ".tmp", "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if keep(item.filename):
                zout.writestr(item, zin.read(item.filename))
    os.replace(target + ".tmp", target)

lib, glue = sys.argv[1], sys.argv[2]
tokenizers = [f for f in os.listdir(lib) if f.startswith("tokenizers-")][0]
path = os.path.join(lib, tokenizers)
trim(path, path, lambda n: not n.startswith("native/lib/") or n.startswith("native/lib/linux-x86_64/"))
wanted = ("libjnicudart.so", "libjninccl.so")
trim(glue, os.path.join(lib, os.path.basename(glue)),
     lambda n: not n.startswith("org/bytedeco/cuda/linux-x86_64/") or n.endswith(wanted))
PY

cp "$here/run-on-gpu.sh" "$here/fsdp2_bench.py" "$staging/"
chmod +x "$staging/run-on-gpu.sh"

size=$(du -sb "$staging" | cut -f1)
if (( size > limit )); then
    fail "the kit is $size bytes, over the $limit-byte carry limit"
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$staging" "$out"
trap - EXIT
echo "kit: $out ($size bytes of $limit: runtime $(du -sb "$out/runtime" | cut -f1), jars $(du -sb "$out/lib" | cut -f1))"
