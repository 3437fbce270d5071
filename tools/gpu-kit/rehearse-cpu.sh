#!/usr/bin/env bash
# Rehearses the GPU kit's call on a CPU machine with KIT_DEVICE=cpu: the packed kit (pack.sh,
# packed here when absent) runs KIT_CALL's steps (default one) on a CPU libtorch, its ranks on the
# CPU over the socket ring where NCCL cannot run (the NCCL and FSDP2 steps are skipped).
#   rehearse-cpu.sh [RESULTS_DIR]        (default tools/gpu-kit/build/rehearsal)
# The libtorch: TORCH_INCLUDE, TORCH_LIB and PYTORCH_VERSION (the kit builds DJL's JNI against
# it with its build-jni.sh, as on the GPU machine), else DJL's own libtorch 2.7.1 in ~/.djl.ai
# (its JNI lies beside it: nothing is built, every step runs), else (or with REHEARSE_DEBIAN=1)
# Debian's libtorch-dev where it is installed (libtorch 1.13: the JNI builds, in minutes, and DJL
# alone runs; the project's steps cannot); with none it says so and exits 0 (skipped). Exit status: the kit's (0 when every step passed).
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
root="$(cd "$here/../.." && pwd)"
results="${1:-$here/build/rehearsal}"
kit="${KIT_DIR:-$here/build/kit}"

djl_libtorch="$(ls -d "$HOME"/.djl.ai/pytorch/2.7.1-*-cpu-linux-x86_64 2>/dev/null | head -n 1)"
if [[ -z "${TORCH_INCLUDE:-}" && -z "${REHEARSE_DEBIAN:-}" && -f "$djl_libtorch/0.35.0-libdjl_torch.so" ]]; then
    if [[ ! -x "$kit/run-on-gpu.sh" ]]; then
        (cd "$root" && mvn -B -q -DskipTests -Pcuda13 clean package)
        "$here/pack.sh" "$kit"
    fi
    echo "rehearse-cpu.sh: DJL's libtorch 2.7.1 ($djl_libtorch), its JNI beside it: nothing to build"
    exec env KIT_DEVICE=cpu KIT_CALL="${KIT_CALL:-one}" PYTORCH_LIBRARY_PATH="$djl_libtorch" \
        PYTORCH_VERSION=2.7.1 "$kit/run-on-gpu.sh" "$results/kit"
fi
if [[ -z "${TORCH_INCLUDE:-}" ]]; then
    debian=/usr/lib/x86_64-linux-gnu
    if [[ -f /usr/include/torch/csrc/api/include/torch/torch.h && -f "$debian/libtorch_cpu.so" ]]; then
        TORCH_INCLUDE=/usr/include
        TORCH_LIB="$debian"
        PYTORCH_VERSION="$(dpkg-query -W -f='${Version}' libtorch-dev | sed 's/[+~-].*//')"
    else
        echo "rehearse-cpu.sh: SKIPPED: no libtorch with headers here. Set TORCH_INCLUDE, TORCH_LIB and"
        echo "PYTORCH_VERSION, or install Debian's: apt-get install libtorch-dev"
        exit 0
    fi
fi
: "${TORCH_LIB:?TORCH_LIB must name the folder holding libtorch_cpu.so}"
: "${PYTORCH_VERSION:?PYTORCH_VERSION must name the libtorch version}"
mkdir -p "$results"

# DJL loads every library in PYTORCH_LIBRARY_PATH's folder tree: it gets a folder of libtorch's own.
libtorch="$results/libtorch"
rm -rf "$libtorch" && mkdir -p "$libtorch"
for name in libtorch.so libtorch_cpu.so libc10.so; do
    [[ -f "$TORCH_LIB/$name" ]] || { echo "rehearse-cpu.sh: $TORCH_LIB has no $name" >&2; exit 1; }
    ln -s "$(readlink -f "$TORCH_LIB/$name")" "$libtorch/$name"
done
if (( $(nm -D --defined-only "$libtorch/libtorch_cpu.so" | grep -c ' aoti_torch_get_data_ptr$') == 0 )); then
    echo "rehearse-cpu.sh: note: libtorch $PYTORCH_VERSION has no AOTInductor C shim (aoti_torch_*, libtorch 2.x):"
    echo "  DJL's JNI builds and DJL alone runs on it, the project's own steps cannot (docs/gpu.md)"
fi

if [[ ! -x "$kit/run-on-gpu.sh" ]]; then
    (cd "$root" && mvn -B -q -DskipTests -Pcuda13 clean package)
    "$here/pack.sh" "$kit"
fi
rm -rf "$results/engine-cache" "$results/kit"
KIT_DEVICE=cpu KIT_CALL="${KIT_CALL:-one}" PYTORCH_LIBRARY_PATH="$libtorch" TORCH_INCLUDE="$TORCH_INCLUDE" \
    PYTORCH_VERSION="$PYTORCH_VERSION" PYTORCH_FLAVOR=cpu ENGINE_CACHE_DIR="$results/engine-cache" \
    "$kit/run-on-gpu.sh" "$results/kit"
