#!/usr/bin/env bash
# Packs the GPU kit into one folder that, with the repository's own files, stays under
# KIT_LIMIT_MIB (64 MiB): a trimmed Java runtime (jlink), the project's jars without
# libtorch's natives (the GPU machine brings its own libtorch and NCCL in its Python environment)
# and without DJL's prebuilt JNI (the kit builds one there), Bytedeco's CUDA 13 glue cut down to
# the CUDA runtime and NCCL, the engine's test jar (the NCCL checks), DJL's JNI sources
# (third_party/djl-pytorch-native) with the JNI headers and build-jni.sh, and the scripts.
#   mvn -B -DskipTests -Pcuda13 clean package && tools/gpu-kit/pack.sh [OUTPUT_DIR]
# (default OUTPUT_DIR: tools/gpu-kit/build/kit). M2_REPO: the Maven repository (default ~/.m2/repository).
# KIT_LIMIT_MIB: the most the kit and the repository's files may take together (default 64, what
# the GPU machines the kit was made for accept beside a checkout).
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/build/kit}"
limit=$((${KIT_LIMIT_MIB:-64} * 1024 * 1024))
lib="$root/benchmarks/target/lib"
glue_version=13.1-9.19-1.5.13
tests_jar="$(ls "$root"/djl-fsdp-engine/target/djl-fsdp-engine-*-tests.jar 2>/dev/null | head -n 1)"
trainer_tests_jar="$(ls "$root"/djl-fsdp-trainer/target/djl-fsdp-trainer-*-tests.jar 2>/dev/null | head -n 1)"
m2="${M2_REPO:-$HOME/.m2/repository}"
# What TestRun (the engine's test jar) needs to run the multi-process tests there: JUnit's platform
# launcher and Jupiter, the versions the build uses (junit.version in the root pom).
junit="$(sed -n 's:.*<junit.version>\(.*\)</junit.version>.*:\1:p' "$root/pom.xml")"
platform="1.${junit#5.}"
junit_jars=(
    "$m2/org/junit/platform/junit-platform-launcher/$platform/junit-platform-launcher-$platform.jar"
    "$m2/org/junit/platform/junit-platform-engine/$platform/junit-platform-engine-$platform.jar"
    "$m2/org/junit/platform/junit-platform-commons/$platform/junit-platform-commons-$platform.jar"
    "$m2/org/junit/jupiter/junit-jupiter-engine/$junit/junit-jupiter-engine-$junit.jar"
    "$m2/org/junit/jupiter/junit-jupiter-api/$junit/junit-jupiter-api-$junit.jar"
    "$m2/org/junit/jupiter/junit-jupiter-params/$junit/junit-jupiter-params-$junit.jar"
    "$m2/org/opentest4j/opentest4j/1.3.0/opentest4j-1.3.0.jar"
    "$m2/org/apiguardian/apiguardian-api/1.1.2/apiguardian-api-1.1.2.jar")
modules="java.base,java.logging,java.management,java.naming,java.net.http,java.sql,java.xml,jdk.jfr,jdk.management,jdk.unsupported,jdk.zipfs"

fail() { echo "pack.sh: $*" >&2; exit 1; }
[[ -f "$root/benchmarks/target/benchmarks.jar" && -d "$lib" && -n "$tests_jar" && -n "$trainer_tests_jar" ]] \
    || fail "build first: (cd '$root' && mvn -B -DskipTests -Pcuda13 package)"
for jar in "${junit_jars[@]}"; do
    [[ -f "$jar" ]] || fail "$jar is missing: run the engine's tests once (mvn -B test -pl djl-fsdp-engine -Dtest=RankDeviceTest)"
done
[[ -f "$lib/cuda-$glue_version-linux-x86_64.jar" ]] \
    || fail "$lib has no CUDA 13 glue (cuda-$glue_version-linux-x86_64.jar): the GPU machine runs CUDA 13;" \
            "build with: (cd '$root' && mvn -B -DskipTests -Pcuda13 package)"
# A build with another profile before leaves its jars in target/lib: two glues on one class path.
for artifact in cuda javacpp; do
    versions=()
    for jar in "$lib/$artifact"-[0-9]*.jar; do
        [[ "$jar" == *-linux-* ]] || versions+=("$(basename "$jar")")
    done
    (( ${#versions[@]} == 1 )) || fail "$lib holds ${#versions[@]} $artifact jars (${versions[*]}):" \
        "rebuild it clean: (cd '$root' && mvn -B -DskipTests -Pcuda13 clean package)"
done
command -v jlink >/dev/null || fail "jlink is missing: install a full JDK 17"
command -v strip >/dev/null || fail "strip is missing: install binutils"
if [[ -e "$out" && ! -f "$out/run-on-gpu.sh" ]]; then
    fail "$out exists and is not a kit: choose another OUTPUT_DIR"
fi

# Every module the project's own classes use must be in the runtime (bench train's CPU time needs
# jdk.management), but java.desktop: finetune's plots, which no kit step draws, and too large for
# the copy limit.
needed="$(jdeps --multi-release 17 --ignore-missing-deps --print-module-deps \
    "$root/benchmarks/target/benchmarks.jar" "$lib"/djl-fsdp-*.jar "$lib"/model-zoo-adapters-*.jar "$tests_jar")"
for module in ${needed//,/ }; do
    [[ "$module" == java.desktop || ",$modules," == *",$module,"* ]] \
        || fail "the project's classes use module $module, which the kit's runtime lacks: add it to modules in pack.sh"
done

staging="$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/lib"

jlink --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
    --compress=2 --output "$staging/runtime"
# The JDK's libjvm.so keeps its full symbol table (24 MB); without the symbols no relocation needs
# (its dynamic symbols stay) it is 20 MB, which is the kit's room for the repository's growth.
strip --strip-unneeded "$staging/runtime/lib/server/libjvm.so"

"$here/jni-headers.sh" "$staging/jni-include" >/dev/null

# Every jar bin/fsdp uses but libtorch's CPU natives, JMH's (benchmarks only run here), and
# Jinjava with the jars only it needs (finetune's chat templates: no kit step renders one), Guava
# among them.
for jar in "$lib"/*.jar; do
    case "$(basename "$jar")" in
        pytorch-native-*|jmh-core-*|jopt-simple-*|commons-math3-*) ;;
        jinjava-*|javassist-*|re2j-*|commons-net-*|java-ipv6-*|annotations-3.*|jackson-*) ;;
        big-math-*|immutables-exceptions-*) ;;
        # Guava, which only Jinjava's jars use (jdeps finds no other user among those packed).
        guava-*|failureaccess-*|listenablefuture-*) ;;
        *) cp "$jar" "$staging/lib/" ;;
    esac
done
cp "$root/benchmarks/target/benchmarks.jar" "$tests_jar" "$staging/lib/"
# The multi-process tests the correctness steps run (TestRun), on their own class path folder.
mkdir -p "$staging/test-lib"
cp "$trainer_tests_jar" "${junit_jars[@]}" "$staging/test-lib/"

# Keep only the natives the kit runs: Linux x86-64 tokenizers (with the properties file naming
# their version, which DJL reads before it loads them), Bytedeco's cudart and NCCL glue;
# of pytorch-jni only what DJL reads once the JNI is built on the GPU machine (it holds no classes:
# jnilib/pytorch.properties, not its prebuilt JNI libraries for libtorch 2.7.1).
python3 - "$staging/lib" "$glue_version" <<'PY'
import os, sys, zipfile

def trim(source, target, keep):
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target + ".tmp", "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if keep(item.filename):
                zout.writestr(item, zin.read(item.filename))
    os.replace(target + ".tmp", target)

lib, glue_version = sys.argv[1], sys.argv[2]
def only(prefix):
    return os.path.join(lib, [f for f in os.listdir(lib) if f.startswith(prefix)][0])
tokenizers = only("tokenizers-")
trim(tokenizers, tokenizers, lambda n: not n.startswith("native/lib/") or n.startswith("native/lib/linux-x86_64/")
     or n == "native/lib/tokenizers.properties")
jni = only("pytorch-jni-")
trim(jni, jni, lambda n: not n.startswith("jnilib/") or n == "jnilib/pytorch.properties")
glue = os.path.join(lib, f"cuda-{glue_version}-linux-x86_64.jar")
wanted = ("libjnicudart.so", "libjninccl.so")
trim(glue, glue, lambda n: not n.startswith("org/bytedeco/cuda/linux-x86_64/") or n.endswith(wanted))
PY

cp "$here/run-on-gpu.sh" "$here/fsdp2_bench.py" "$here/build-jni.sh" "$here/jni-profiler-stub.py" "$staging/"
cp -r "$here/third_party" "$staging/"
chmod +x "$staging/run-on-gpu.sh" "$staging/build-jni.sh"

# What travels: the repository's files (tracked, and untracked ones git does not ignore) and the kit.
size=$(du -sb "$staging" | cut -f1)
tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null \
    | awk '{s += $1} END {print s + 0}')
total=$((size + tree))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "kit $(mib "$size") + repository files $(mib "$tree") = $(mib "$total") of $(mib "$limit")" \
     "(runtime $(mib "$(du -sb "$staging/runtime" | cut -f1)"), jars $(mib "$(du -sb "$staging/lib" | cut -f1)")," \
     "test jars $(mib "$(du -sb "$staging/test-lib" | cut -f1)"))"
if (( total > limit )); then
    fail "the kit and the repository's files are $total bytes together, over the $limit-byte limit of what is copied to a GPU machine"
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$staging" "$out"
trap - EXIT
echo "kit: $out"
