#!/usr/bin/env bash
# Runs the djl-fsdp checks and benchmarks on a GPU machine with no network, from the packed kit
# (pack.sh): DJL on the machine's own libtorch (the Python environment's torch/lib), Bytedeco's
# glue on its NCCL and CUDA runtime (the nvidia-* wheels' lib folders), then, each step logged in
# RESULTS_DIR and summarised in RESULTS_DIR/summary.txt, going on after a failed step:
#   probe        one process, DJL's plain Trainer on gpu(0): does DJL's JNI run on this libtorch?
#   nccl-check   NcclRankCheck on NPROC GPUs
#   collectives  the socket backend's collective checks on NCCL
#   bench-coll   bin/fsdp bench collectives, 64 MiB
#   fit-cpu/gpu  FsdpFitExample on the CPU and on the GPUs: validation accuracy side by side
#   train-f32    bench train (GPT-2, 6 x 384, FULL_SHARD) in float32, peak GPU memory sampled
#   train-bf16   the same in bfloat16 (--precision bf16: bfloat16 gathers and compute)
#   train-keep   FULL_SHARD without recompute in float32: units keep their graphs, their gathered
#                parameters released after forward (CUDA virtual memory on GPUs)
#   fsdp2        PyTorch FSDP2 (fully_shard) on the same shape: tokens/s and peak GPU memory
# Usage: run-on-gpu.sh [RESULTS_DIR]       (default: $OUT, else ./gpu-kit-results)
# PYTHON (default python3): the Python with torch. NPROC (default: the GPUs, at most 2).
# KIT_DEVICE=cpu runs every step that can on the CPU (how the kit is tested without a GPU); then
# PYTORCH_LIBRARY_PATH must name a CPU libtorch 2.7.1 folder, as the Python may have no torch.
set -uo pipefail

kit="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
results="${1:-${OUT:-$PWD/gpu-kit-results}}"
mkdir -p "$results"
summary="$results/summary.txt"
: > "$summary"
python="${PYTHON:-python3}"
device="${KIT_DEVICE:-gpu}"
java="$kit/runtime/bin/java"
classpath="$kit/lib/*"

note() { echo "$*" | tee -a "$summary"; }

if [[ -z "${PYTORCH_LIBRARY_PATH:-}" ]]; then
    PYTORCH_LIBRARY_PATH="$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')" \
        || { note "no PYTORCH_LIBRARY_PATH and '$python' has no torch: nothing to run DJL on"; exit 1; }
fi
export PYTORCH_LIBRARY_PATH
# DJL takes libdjl_torch.so from the pytorch-jni jar only for the version it was built for (2.7.1);
# another version would make it download one. Whether that JNI runs on this libtorch is what the
# probe step finds out.
export PYTORCH_VERSION="${PYTORCH_VERSION:-2.7.1}"
if [[ "$device" == cpu ]]; then
    export PYTORCH_FLAVOR="${PYTORCH_FLAVOR:-cpu}"
else
    export PYTORCH_FLAVOR="${PYTORCH_FLAVOR:-cu128}"
fi
export DJL_OFFLINE=true
nvidia_libs="$("$python" - <<'PY' 2>/dev/null
import glob, os, site
bases = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(sorted({d for b in bases for d in glob.glob(os.path.join(b, "nvidia", "*", "lib"))})))
PY
)"
export LD_LIBRARY_PATH="$PYTORCH_LIBRARY_PATH${nvidia_libs:+:$nvidia_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

gpus=0
if [[ "$device" == gpu ]] && command -v nvidia-smi >/dev/null; then
    gpus="$(nvidia-smi --list-gpus | wc -l)"
fi
nproc="${NPROC:-$(( gpus >= 2 ? 2 : (gpus == 1 ? 1 : 2) ))}"

note "kit $kit, results $results, device $device, $gpus GPUs, $nproc ranks"
note "PYTORCH_LIBRARY_PATH=$PYTORCH_LIBRARY_PATH PYTORCH_VERSION=$PYTORCH_VERSION PYTORCH_FLAVOR=$PYTORCH_FLAVOR"
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
{ "$java" -version 2>&1; nvidia-smi 2>&1 || true; "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)' 2>&1; } \
    > "$results/environment.log"

# Samples the GPUs' used memory every 200 ms into $1 while the rest of the arguments run.
with_gpu_memory() {
    local file="$1"; shift
    local sampler=""
    if (( gpus > 0 )); then
        nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 > "$file" 2>/dev/null &
        sampler=$!
    fi
    "$@"
    local rc=$?
    if [[ -n "$sampler" ]]; then kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; fi
    return $rc
}

step() {
    local name="$1"; shift
    local start=$SECONDS
    note "== $name: $*"
    "$@" > "$results/$name.log" 2>&1
    local rc=$?
    note "   exit $rc after $((SECONDS - start)) s; last lines:"
    tail -n 4 "$results/$name.log" | sed 's/^/   | /' | tee -a "$summary"
    if [[ -f "$results/$name.mem" ]]; then
        note "   peak GPU memory used (MiB, per GPU, nvidia-smi): $(sort -t, -k1,1n -k2,2n "$results/$name.mem" | awk -F', *' '{m[$1]=$2} END {for (g in m) printf "gpu%s=%s ", g, m[g]}')"
    fi
    return 0
}

fsdp() { "$java" -Xmx4g -cp "$classpath" ai.djl.fsdp.cli.Fsdp "$@"; }
launch() { fsdp launch --nproc-per-node "$nproc" --jvm-opt=-Xmx4g -- "$@"; }
small=(--layers 2 --width 128 --heads 2 --vocab 1000 --seq 32 --batch 2 --steps 2 --warmup 1)
shape=(--layers 6 --width 384 --heads 6 --vocab 50257 --seq 128 --batch 8)

export DJL_FSDP_DEVICE="$device"
step probe fsdp bench train --nproc 1 --sharding NONE "${small[@]}"
if [[ "$device" == gpu ]]; then
    step nccl-check launch ai.djl.fsdp.dist.nccl.NcclRankCheck
    step collectives launch ai.djl.fsdp.dist.socket.CollectiveCheckMain
else
    note "== nccl-check, collectives: skipped (KIT_DEVICE=cpu)"
fi
step bench-coll fsdp bench collectives --nproc "$nproc" --bytes 67108864
DJL_FSDP_DEVICE=cpu step fit-cpu launch ai.djl.fsdp.examples.FsdpFitExample
note "   CPU: $(grep -ho 'validation accuracy .*' "$results/fit-cpu.log" | tail -n 1)"
if [[ "$device" == gpu ]]; then
    step fit-gpu launch ai.djl.fsdp.examples.FsdpFitExample
    note "   GPU: $(grep -ho 'validation accuracy .*' "$results/fit-gpu.log" | tail -n 1)"
else
    # Training the full shape on a few CPU cores takes many minutes: the kit's CPU test is small.
    shape=("${small[@]}")
fi
step train-f32 with_gpu_memory "$results/train-f32.mem" fsdp bench train --nproc "$nproc" "${shape[@]}"
step train-bf16 with_gpu_memory "$results/train-bf16.mem" fsdp bench train --nproc "$nproc" \
    --precision bf16 "${shape[@]}"
step train-keep with_gpu_memory "$results/train-keep.mem" fsdp bench train --nproc "$nproc" \
    --sharding FULL_SHARD --activation-checkpointing=false "${shape[@]}"
if [[ "$device" == gpu ]]; then
    step fsdp2 with_gpu_memory "$results/fsdp2.mem" "$python" -m torch.distributed.run \
        --standalone --nproc-per-node "$nproc" "$kit/fsdp2_bench.py" "${shape[@]}" --steps 10 --warmup 2
else
    note "== fsdp2: skipped (KIT_DEVICE=cpu: PyTorch FSDP2 needs GPUs)"
fi
note "done: $results"
