#!/usr/bin/env bash
# Builds DJL 0.35.0's PyTorch JNI (libdjl_torch.so) from its own sources (third_party/
# djl-pytorch-native, unmodified) against a given libtorch, so that DJL runs on a libtorch other
# than the 2.7.1 its prebuilt JNI was built for: the GPU machine's Python torch (2.11 + CUDA 13),
# or a CPU libtorch with headers for the rehearsal.
#   build-jni.sh OUTPUT_FILE
# The libtorch: TORCH_INCLUDE (the folder holding torch/, ATen/, c10/) and TORCH_LIB (the folder
# holding libtorch_cpu.so), or else PYTHON's (default python3) torch package.
# JNI_INCLUDE: a folder with jni.h, jni_md.h and ai_djl_pytorch_jni_PyTorchLibrary.h (the kit's
# jni-include/, made by jni-headers.sh); default: the kit's.
# TORCH_CXX11_ABI: 0 or 1; default: the torch package's, else read from libc10.so's symbols.
# TORCH_CUDA: 1 to build with -DUSE_CUDA (default: 1 when TORCH_LIB has libtorch_cuda.so).
# JNI_PROFILER=stub replaces DJL's legacy-profiler entry points by ones that throw (they are
# replaced anyway when they do not compile on this libtorch; the project never calls them).
# Prints what it built with; compiles the sources in parallel (JOBS, default nproc).
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
out="${1:?usage: build-jni.sh OUTPUT_FILE}"
sources="$here/third_party/djl-pytorch-native"
jni_include="${JNI_INCLUDE:-$here/jni-include}"
python="${PYTHON:-python3}"
jobs="${JOBS:-$(nproc)}"
cxx="${CXX:-g++}"

fail() { echo "build-jni.sh: $*" >&2; exit 1; }

if [[ -z "${TORCH_INCLUDE:-}" || -z "${TORCH_LIB:-}" ]]; then
    read -r torch_dir torch_abi < <("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__), int(torch.compiled_with_cxx11_abi()))' 2>/dev/null) \
        || fail "no TORCH_INCLUDE/TORCH_LIB given and '$python' has no torch"
    TORCH_INCLUDE="${TORCH_INCLUDE:-$torch_dir/include}"
    TORCH_LIB="${TORCH_LIB:-$torch_dir/lib}"
    TORCH_CXX11_ABI="${TORCH_CXX11_ABI:-$torch_abi}"
fi
[[ -f "$TORCH_INCLUDE/torch/csrc/api/include/torch/torch.h" ]] \
    || fail "$TORCH_INCLUDE has no torch/csrc/api/include/torch/torch.h: a libtorch with headers is needed"
[[ -f "$TORCH_LIB/libtorch_cpu.so" ]] || fail "$TORCH_LIB has no libtorch_cpu.so"
for header in jni.h jni_md.h ai_djl_pytorch_jni_PyTorchLibrary.h; do
    [[ -f "$jni_include/$header" ]] || fail "$jni_include/$header is missing: run jni-headers.sh $jni_include"
done
if [[ -z "${TORCH_CXX11_ABI:-}" ]]; then
    command -v nm >/dev/null || fail "nm (binutils) is missing: set TORCH_CXX11_ABI to 0 or 1"
    # libc10 exports std::string in its signatures: the new ABI shows as std::__cxx11.
    if (( $(nm -D --defined-only "$TORCH_LIB/libc10.so" | grep -c '__cxx11') > 0 )); then
        TORCH_CXX11_ABI=1
    else
        TORCH_CXX11_ABI=0
    fi
fi
cuda="${TORCH_CUDA:-$([[ -f "$TORCH_LIB/libtorch_cuda.so" ]] && echo 1 || echo 0)}"
version_h="$TORCH_INCLUDE/torch/csrc/api/include/torch/version.h"
# libtorch 2.11 defines the numbers in torch/headeronly/version.h, which version.h includes.
version="$(for header in "$version_h" "$TORCH_INCLUDE/torch/headeronly/version.h"; do
        if [[ -f "$header" ]]; then cat "$header"; fi
    done | awk '/define TORCH_VERSION_(MAJOR|MINOR|PATCH) / {v = v (v == "" ? "" : ".") $3} END {print v}')"
[[ "$version" =~ ^[0-9]+\.[0-9]+ ]] || version="${PYTORCH_VERSION:-}"
[[ -n "$version" ]] || fail "cannot read libtorch's version from $version_h: set PYTORCH_VERSION"

flags=(-std=c++17 -O2 -fPIC -w -D_GLIBCXX_USE_CXX11_ABI="$TORCH_CXX11_ABI"
       -I"$jni_include" -I"$sources" -I"$sources/native"
       -I"$TORCH_INCLUDE" -I"$TORCH_INCLUDE/torch/csrc/api/include")
libs=(-L"$TORCH_LIB" -ltorch -ltorch_cpu -lc10)
# DJL's own build defines V1_13_X for libtorch 1.13 to 2.1 (older interpolation modes).
if [[ "$version" =~ ^(1\.13|2\.0|2\.1)\. ]]; then
    flags+=(-DV1_13_X)
fi
link=(-Wl,--no-undefined)
if [[ "$cuda" == 1 ]]; then
    # libtorch's CUDA headers include the CUDA runtime's, cuBLAS's, cuSPARSE's and cuSOLVER's: from
    # CUDA_HOME, /usr/local/cuda, or the Python environment's nvidia-* wheels (nvidia/*/include).
    cuda_dirs=(${CUDA_HOME:+"$CUDA_HOME/include"} /usr/local/cuda/include)
    while IFS= read -r dir; do cuda_dirs+=("$dir"); done < <("$python" - <<'PY' 2>/dev/null
import glob, os, site
bases = site.getsitepackages() + [site.getusersitepackages()]
print("\n".join(sorted({d for b in bases for d in glob.glob(os.path.join(b, "nvidia", "*", "include"))})))
PY
)
    found=""
    for dir in "${cuda_dirs[@]}"; do
        if [[ -d "$dir" ]]; then
            flags+=(-I"$dir")
            [[ -f "$dir/cuda_runtime_api.h" ]] && found="$dir"
        fi
    done
    [[ -n "$found" ]] || fail "no CUDA headers (cuda_runtime_api.h) in ${cuda_dirs[*]}: set CUDA_HOME"
    flags+=(-DUSE_CUDA)
    libs+=(-ltorch_cuda -lc10_cuda)
    # The CUDA runtime's symbols resolve through libtorch_cuda's own dependencies, as in DJL's build.
    link=()
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/djl-jni.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp "$sources"/native/*.cc "$work/"
if [[ "${JNI_PROFILER:-}" == stub ]]; then
    python3 "$here/jni-profiler-stub.py" "$work/ai_djl_pytorch_jni_PyTorchLibrary_system.cc"
fi
echo "build-jni.sh: $("$cxx" --version | head -n 1); libtorch $version, headers $TORCH_INCLUDE, libraries $TORCH_LIB;" \
     "_GLIBCXX_USE_CXX11_ABI=$TORCH_CXX11_ABI, CUDA $cuda, $jobs jobs"
start=$SECONDS
printf '%s\n' "${flags[@]}" > "$work/flags"
# Compiles the given sources in parallel; each leaves its .o, or its errors in its .log.
compile() {
    printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c \
        '"$0" @"$1" -c "$2" -o "${2%.cc}.o" 2> "${2%.cc}.log"' "$cxx" "$work/flags" {} || true
}
compile "$work"/*.cc
system="$work/ai_djl_pytorch_jni_PyTorchLibrary_system"
if [[ ! -f "$system.o" && "${JNI_PROFILER:-}" != stub ]]; then
    echo "build-jni.sh: DJL's legacy profiler does not compile on this libtorch; its two entry points now throw:"
    grep -m 3 'error' "$system.log" | sed 's/^/   | /' || true
    python3 "$here/jni-profiler-stub.py" "$system.cc"
    compile "$system.cc"
fi
for source in "$work"/*.cc; do
    if [[ ! -f "${source%.cc}.o" ]]; then
        echo "build-jni.sh: $(basename "$source") does not compile on this libtorch:" >&2
        grep -m 10 -A 3 'error' "${source%.cc}.log" >&2 || tail -n 20 "${source%.cc}.log" >&2
        exit 1
    fi
done
mkdir -p "$(dirname "$out")"
"$cxx" -shared -o "$out.tmp" "$work"/*.o "${libs[@]}" -Wl,-rpath,"$TORCH_LIB" "${link[@]}" \
    || fail "linking failed"
mv "$out.tmp" "$out"
entries="$(nm -D --defined-only "$out" 2>/dev/null | grep -c ' T Java_' || true)"
echo "build-jni.sh: $out (${entries:-?} JNI entry points, $((SECONDS - start)) s)"
