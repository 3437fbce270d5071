#!/usr/bin/env bash
# Runs the djl-fsdp checks and benchmarks on a GPU machine with no network, from the packed kit
# (pack.sh): DJL on the machine's own libtorch (the Python environment's torch/lib) through a JNI
# built there from DJL's sources, Bytedeco's CUDA 13 glue on its NCCL and CUDA runtime (the
# nvidia-* wheels' lib folders), then, each step logged in RESULTS_DIR and summarised in
# RESULTS_DIR/summary.txt, going on after a failed step. KIT_CALL picks the steps (docs/gpu.md
# plans each call within 10 minutes):
#  first (build, probe, NCCL, small trainings):
#   build-jni    DJL 0.35.0's libdjl_torch.so compiled against this libtorch (build-jni.sh), put
#                where DJL looks for it (skipped when already built for this libtorch)
#   probe-djl    PlainFitExample: DJL's own Trainer, nothing of the project's: does DJL run on
#                this libtorch through that JNI?
#   probe        one process, bench train --sharding NONE: DJL's Trainer on the project's GPT-2
#                (its engine code, the C shim included) on gpu(0)
#   nccl-check   NcclRankCheck on NPROC GPUs
#   collectives  the socket backend's collective checks on NCCL
#   fit-cpu/gpu  FsdpFitExample on the CPU and on the GPUs: validation accuracy side by side
#   train-small  bench train FULL_SHARD on NPROC ranks, a small GPT-2
#  second (benches and the side-by-side with PyTorch FSDP2):
#   bench-coll   bin/fsdp bench collectives, 64 MiB
#   train-f32    bench train (GPT-2, 6 x 384, FULL_SHARD) in float32, peak GPU memory sampled
#   train-bf16   the same in bfloat16 (--precision bf16: bfloat16 gathers and compute)
#   train-keep   FULL_SHARD without recompute in float32: units keep their graphs, their gathered
#                parameters released after forward (CUDA virtual memory on GPUs)
#   fsdp2-f32/bf16  PyTorch FSDP2 (fully_shard) on the same shape: tokens/s, peak GPU memory
#  ops-124m-bf16  the operators the host calls into libtorch in one step, ours (bench train
#                --op-profile, sdpa attention) and FSDP2's (fsdp2_bench.py --op-profile), side by
#                side (bin/fsdp bench ops): the 124M shape in bfloat16; ops-bf16 the default shape
#  one: every step in one run of about 15 minutes: correctness across ranks first, on one GPU
#   shared by several ranks (DJL_FSDP_RANKS_PER_GPU, real NCCL between them), then throughput,
#   each of ours beside its FSDP2 twin:
#   layout       launch --ranks-per-gpu --dry-run: the NCCL found, each rank's GPU and variables
#   nccl-check   NcclRankCheck through bin/fsdp launch on 2 ranks (sharing a GPU where there is one)
#   nccl-ranks   NcclProcessGroupTest on 2 ranks: every collective's values, every type and op,
#                empty to large arrays, several in flight, a silent rank, a SIGSTOP'd rank ended by
#                the heartbeats at the default heartbeat timeout (MEASURED against 60 s), a
#                killed rank, close(); and NcclHeartbeatTest (no GPU needed: so it runs on the CPU
#                rehearsal too, where NcclProcessGroupTest's GPU cases are skipped with the reason)
#   equiv        MultiRankTrainingTest (2 and 3 ranks, every strategy, against DJL's trainer on the
#                global batch: losses within the equivalence bound, what each rank holds and sends)
#                and ReshardWithoutRecomputeGpuTest (the gathered units' CUDA memory unmapped)
#   mem-1, mem-2 bench train FULL_SHARD, GPT-2 124M in bf16 on 1 and 2 ranks: model state per rank,
#                peak GPU memory per process
#   hybrid       HybridShardingTest: HYBRID_SHARD 2 x 2 (ncclCommSplit) against FULL_SHARD on 4
#   checkpoint   CheckpointResumeTest: sharded checkpoints resumed on the same and other rank counts,
#                on GPU ranks: 2 -> 2 bit for bit, 2 -> 1, 1 -> 2, 2 -> 4, 4 -> 2
#   qcomm-2      bench train on 2 NCCL ranks with weights gathered in int8 and gradients reduced
#                in int4 (ZeRO++'s qwZ and qgZ through the all-to-all): the loss and bytes sent
#   qlora        finetune on 2 ranks, LoRA on a 4-bit NF4 base quantized as it loads (bf16 compute)
#   t5-lora      finetune on 2 ranks of the encoder-decoder t5-tiny on sentiment-labels, LoRA on
#                all-linear, T5Block units: its losses and the generated labels' exact match; then
#                bin/fsdp generate on its output, one sentence's label
#   train-llama1b, fsdp2-llama1b: Llama 16 x 2048, 32 heads, 8 kv heads, MLP 8192, vocab 32000,
#                seq 2048, bf16, sdpa, one rank (KIT_LLAMA_BATCH, default 8); then the GPT shapes
#   (train-124m-bf16/-f32 and fsdp2-124m-bfloat16/-float32: GPT-2 124M, 12 x 768, seq 512, batch 8);
#   last, stop-socket: WatchdogProcessTest, a SIGSTOP'd rank of 2 ends the job within a minute with
#   the defaults on the socket ring (MEASURED; CPU ranks, so it proves as much off the GPU).
# KIT_STEPS="name ..." runs those steps instead; KIT_TRAIN_ARGS are added to every bench train of
# the train-* steps on GPUs (--warmup 20 --steps 30, say; not on the CPU's small shape), KIT_FSDP2_ARGS replace fsdp2_bench.py's
# "--steps 10 --warmup 2". KIT_DEADLINE=S: the call ends by S seconds from its
# start: a running step is stopped there (exit 124; killed 10 s later if it ignores that) and the
# steps after it are skipped, said so and counted.
# Usage: [KIT_CALL=first|second|all|one] run-on-gpu.sh [RESULTS_DIR]   (default all; RESULTS_DIR:
# $OUT where the machine sets it for files to bring back, else ./gpu-kit-results). PYTHON (default python3): the Python with torch. NPROC (default:
# the GPUs, at most 2). ENGINE_CACHE_DIR (default the kit's build/engine-cache): where DJL finds
# the JNI built here.
# KIT_CLASSPATH replaces the kit's class path (lib/*): another build's jars first, for an A/B run.
# KIT_DEVICE=cpu runs every step that can on the CPU (how the kit is rehearsed without a GPU:
# rehearse-cpu.sh); then, where the Python has no torch, PYTORCH_LIBRARY_PATH, TORCH_INCLUDE and
# PYTORCH_VERSION name a CPU libtorch with headers.
set -uo pipefail

kit="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
results="${1:-${OUT:-$PWD/gpu-kit-results}}"
mkdir -p "$results"
summary="$results/summary.txt"
: > "$summary"
python="${PYTHON:-python3}"
device="${KIT_DEVICE:-gpu}"
java="$kit/runtime/bin/java"
classpath="${KIT_CLASSPATH:-$kit/lib/*}"

note() { echo "$*" | tee -a "$summary"; }

call="${KIT_CALL:-all}"
[[ "$call" =~ ^(first|second|all|one)$ ]] || { echo "KIT_CALL must be first, second, all or one, not '$call'" >&2; exit 2; }

if [[ -z "${PYTORCH_LIBRARY_PATH:-}" ]]; then
    # The Python's torch: its lib/ and include/, its version (2.11.0+cu130: 2.11.0 and cu130).
    read -r torch_dir torch_version torch_abi < <("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__), torch.__version__, int(torch.compiled_with_cxx11_abi()))') \
        || { note "no PYTORCH_LIBRARY_PATH and '$python' has no torch: nothing to run DJL on"; exit 1; }
    PYTORCH_LIBRARY_PATH="$torch_dir/lib"
    export TORCH_INCLUDE="${TORCH_INCLUDE:-$torch_dir/include}"
    export TORCH_CXX11_ABI="${TORCH_CXX11_ABI:-$torch_abi}"
    export PYTORCH_VERSION="${PYTORCH_VERSION:-${torch_version%%+*}}"
    if [[ "$torch_version" == *+* ]]; then
        export PYTORCH_FLAVOR="${PYTORCH_FLAVOR:-${torch_version#*+}}"
    fi
fi
export PYTORCH_LIBRARY_PATH TORCH_LIB="$PYTORCH_LIBRARY_PATH"
[[ -n "${PYTORCH_VERSION:-}" ]] || { note "PYTORCH_VERSION must name the libtorch in $PYTORCH_LIBRARY_PATH"; exit 1; }
if [[ "$device" == cpu ]]; then
    export PYTORCH_FLAVOR="${PYTORCH_FLAVOR:-cpu}"
else
    export PYTORCH_FLAVOR="${PYTORCH_FLAVOR:-cu130}"
fi
# DJL 0.35.0 takes its JNI from beside libtorch (0.35.0-libdjl_torch.so or libdjl_torch.so in
# PYTORCH_LIBRARY_PATH) where there is one (DJL's own libtorch 2.7.1 folder has one), else from
# $ENGINE_CACHE_DIR/pytorch/VERSION-FLAVOR-linux-x86_64/, before the pytorch-jni jar (whose
# libdjl_torch.so, built for 2.7.1, the kit leaves out). The kit builds it for the cache folder.
export ENGINE_CACHE_DIR="${ENGINE_CACHE_DIR:-$kit/build/engine-cache}"
jni="$ENGINE_CACHE_DIR/pytorch/$PYTORCH_VERSION-$PYTORCH_FLAVOR-linux-x86_64/0.35.0-libdjl_torch.so"
beside=""
for name in 0.35.0-libdjl_torch.so libdjl_torch.so; do
    if [[ -z "$beside" && -f "$PYTORCH_LIBRARY_PATH/$name" ]]; then beside="$PYTORCH_LIBRARY_PATH/$name"; fi
done
export DJL_OFFLINE=true
nvidia_libs="$("$python" - <<'PY' 2>/dev/null
import glob, os, site
bases = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(sorted({d for b in bases for d in glob.glob(os.path.join(b, "nvidia", "*", "lib"))})))
PY
)"
# DJL counts GPUs through JNA, which opens only the unversioned libcudart.so; the wheels ship
# libcudart.so.13: a link to it goes in a folder first on LD_LIBRARY_PATH.
links="$kit/build/cuda-links"
cudart="$(find ${nvidia_libs//:/ } "$PYTORCH_LIBRARY_PATH" -maxdepth 1 -name 'libcudart.so.[0-9]*' -printf '%f %p\n' 2>/dev/null \
    | sort -V | tail -n 1 | cut -d' ' -f2-)"
if [[ -n "$cudart" ]]; then
    mkdir -p "$links" && ln -sfn "$cudart" "$links/libcudart.so"
fi
export LD_LIBRARY_PATH="${cudart:+$links:}$PYTORCH_LIBRARY_PATH${nvidia_libs:+:$nvidia_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

gpus=0
if [[ "$device" == gpu ]] && command -v nvidia-smi >/dev/null; then
    gpus="$(nvidia-smi --list-gpus | wc -l)"
fi
nproc="${NPROC:-$(( gpus >= 2 ? 2 : (gpus == 1 ? 1 : 2) ))}"
# The correctness steps run 2 and 4 ranks whatever the GPUs: several ranks share a GPU where there
# are fewer (bin/fsdp launch --ranks-per-gpu's layout, through its variable).
pair_share=$(( gpus == 1 ? 2 : 1 ))
quad_share=$(( gpus == 0 || gpus >= 4 ? 1 : (4 + gpus - 1) / gpus ))
export DJL_FSDP_TEST_DEVICE="$device"

note "kit $kit, results $results, device $device, $gpus GPUs, $nproc ranks"
note "PYTORCH_LIBRARY_PATH=$PYTORCH_LIBRARY_PATH PYTORCH_VERSION=$PYTORCH_VERSION PYTORCH_FLAVOR=$PYTORCH_FLAVOR"
note "DJL's JNI: ${beside:-$jni}${beside:+ (found beside libtorch: DJL takes it, no build)}"
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
{ "$java" -version 2>&1; nvidia-smi 2>&1 || true; "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)' 2>&1; } \
    > "$results/environment.log"

# Samples the GPUs' used memory every 200 ms into $1, and each process's into $1.apps, while the
# rest of the arguments run.
with_gpu_memory() {
    local file="$1"; shift
    local samplers=()
    if (( gpus > 0 )); then
        nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 > "$file" 2>/dev/null &
        samplers+=($!)
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 > "$file.apps" 2>/dev/null &
        samplers+=($!)
    fi
    "$@"
    local rc=$?
    local sampler
    for sampler in "${samplers[@]}"; do kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; done
    return $rc
}

step() {
    local name="$1"; shift
    local start=$SECONDS
    note "== $name: $*"
    if [[ -n "${KIT_DEADLINE:-}" ]]; then
        if (( KIT_DEADLINE - SECONDS < 1 )); then
            note "   skipped: KIT_DEADLINE ($KIT_DEADLINE s) reached after $SECONDS s"
            return 0
        fi
        # The step ends (TERM, then KILL 10 s later) when the call's deadline comes.
        # (through bash: the steps run the functions below, exported).
        timeout -k 10 "$((KIT_DEADLINE - SECONDS))" bash -c '"$@"' step "$@" > "$results/$name.log" 2>&1
    else
        "$@" > "$results/$name.log" 2>&1
    fi
    local rc=$?
    note "   exit $rc after $((SECONDS - start)) s; last lines:"
    tail -n 4 "$results/$name.log" | sed 's/^/   | /' | tee -a "$summary"
    if [[ -f "$results/$name.mem" ]]; then
        note "   peak GPU memory used (MiB, per GPU, nvidia-smi): $(sort -t, -k1,1n -k2,2n "$results/$name.mem" | awk -F', *' '{m[$1]=$2} END {for (g in m) printf "gpu%s=%s ", g, m[g]}')"
    fi
    if [[ -s "$results/$name.mem.apps" ]]; then
        note "   peak GPU memory per process (MiB, pid=MiB): $(awk -F', *' '$2 + 0 > m[$1] {m[$1] = $2 + 0} END {for (p in m) printf "%s=%s ", p, m[p]}' "$results/$name.mem.apps")"
    fi
    grep -h '^MEASURED\|^SKIPPED\|^ABORTED\|^FAILED\|tests successful\|tests failed' "$results/$name.log" 2>/dev/null | sed 's/^/   > /' | tee -a "$summary"
    return 0
}

fsdp() { "$java" -Xmx4g -cp "$classpath" ai.djl.fsdp.cli.Fsdp "$@"; }
# The project's own tests (the multi-process ones start their ranks through the launcher).
tests() { "$java" -Xmx4g -cp "$classpath:$kit/test-lib/*" ai.djl.fsdp.testing.TestRun "$@"; }
launch() { fsdp launch --nproc-per-node "$nproc" --jvm-opt=-Xmx4g -- "$@"; }
# Ours and FSDP2's operators per step on the shape given, in bfloat16: traces in $1-{ours,fsdp2}.json.
ops_side_by_side() {
    local prefix="$1"; shift
    fsdp bench train --nproc "$nproc" --precision bf16 --attention sdpa --steps 3 --warmup 3 "$@" \
        --op-profile "$prefix-ours.json" \
        && "$python" -m torch.distributed.run --standalone --nproc-per-node "$nproc" "$kit/fsdp2_bench.py" \
            "$@" --steps 3 --warmup 3 --dtype bfloat16 --op-profile "$prefix-fsdp2.json" \
        && fsdp bench ops --top 60 "$prefix-ours.json" "$prefix-fsdp2.json"
}
export java classpath nproc gpus python kit
# A short LoRA finetune of t5-tiny (fresh weights) on sentiment-labels on 2 ranks, output in $1:
# the eval loss and exact match before and after, and the final train loss, as MEASURED lines.
t5_lora() {
    local out="$1"
    fsdp launch --nproc-per-node 2 --jvm-opt=-Xmx4g -- finetune --model_name_or_path t5-tiny \
        --dataset_name sentiment-labels --output_dir "$out" \
        --use_peft_lora True --lora_target_modules all-linear --lora_r 16 --lora_alpha 32 \
        --lora_dropout 0 --learning_rate 1e-2 --max_steps 160 --per_device_train_batch_size 16 \
        --warmup_ratio 0.05 --lr_scheduler_type cosine --logging_steps 40 \
        --exact_match_samples 150 2>&1 | tee "$out.log"
    local rc=${PIPESTATUS[0]}
    # Rank 0's lines, under launch's [rank0] prefix.
    grep -h 'exact_match \(before\|after\) training\|  eval loss\|final train loss' "$out.log" \
        | sed 's/^\(\[rank0\]\)\? */MEASURED t5-lora: /'
    (( rc == 0 )) || return "$rc"
    # The trained model (merged/) generates the held-out sample's label with bin/fsdp generate.
    local target
    target="$(fsdp generate --model "$out" --prompt "The concert felt very superb.")" || return
    echo "MEASURED t5-lora: generate: The concert felt very superb. -> $target"
}
export -f fsdp tests launch with_gpu_memory ops_side_by_side t5_lora
small=(--layers 2 --width 128 --heads 2 --vocab 1000 --seq 32 --batch 2 --steps 2 --warmup 1)
shape=(--layers 6 --width 384 --heads 6 --vocab 50257 --seq 128 --batch 8)
shape124m=(--layers 12 --width 768 --heads 12 --vocab 50257 --seq 512 --batch 8)
# Llama 3.2 1B's shape: ours through bench train --model llama, FSDP2's through fsdp2_bench.py.
llama1b=(--layers 16 --width 2048 --heads 32 --vocab 32000 --seq 2048 --batch "${KIT_LLAMA_BATCH:-8}")

export DJL_FSDP_DEVICE="$device"
# Builds DJL's JNI for this libtorch unless DJL already has one (either call may come first on a
# fresh machine; a warm one keeps the kit's build/ folder).
build_jni() {
    if [[ -n "$beside" ]]; then
        note "== build-jni: skipped, DJL takes $beside"
    elif [[ -f "$jni" && -z "${KIT_REBUILD_JNI:-}" ]]; then
        note "== build-jni: $jni is there (KIT_REBUILD_JNI=1 builds it again)"
    else
        step build-jni "$kit/build-jni.sh" "$jni"
        if [[ ! -f "$jni" ]]; then
            note "no DJL JNI for this libtorch, and every later step needs one: stopped (build-jni.log)"
            exit 1
        fi
    fi
}

# One step by name (the names above; train-124m-*, fsdp2-124m-*: the GPT-2 124M shape).
run_named() {
    local name="$1"
    case "$name" in
        probe-djl) step probe-djl "$java" -Xmx2g -cp "$classpath" ai.djl.fsdp.examples.PlainFitExample ;;
        probe) step probe fsdp bench train --nproc 1 --sharding NONE "${small[@]}" ;;
        nccl-check) gpu_only "$name" && DJL_FSDP_RANKS_PER_GPU=$pair_share step nccl-check fsdp launch \
            --nproc-per-node 2 --jvm-opt=-Xmx4g -- ai.djl.fsdp.dist.nccl.NcclRankCheck ;;
        collectives) gpu_only "$name" && DJL_FSDP_RANKS_PER_GPU=$pair_share step collectives fsdp launch \
            --nproc-per-node 2 --jvm-opt=-Xmx4g -- ai.djl.fsdp.dist.socket.CollectiveCheckMain ;;
        layout) DJL_FSDP_DEVICE= step layout fsdp launch --nproc-per-node 4 \
            --ranks-per-gpu "$(( quad_share > 1 ? quad_share : 2 ))" --dry-run -- ai.djl.fsdp.dist.nccl.NcclRankCheck ;;
        nccl-ranks) DJL_FSDP_RANKS_PER_GPU=$pair_share step nccl-ranks tests \
            ai.djl.fsdp.dist.nccl.NcclProcessGroupTest ai.djl.fsdp.dist.nccl.NcclHeartbeatTest ;;
        stop-socket) DJL_FSDP_TEST_DEVICE=cpu step stop-socket tests \
            'ai.djl.fsdp.dist.socket.WatchdogProcessTest#aStoppedRankEndsATwoRankJobWithinAMinuteWithTheDefaults' ;;
        equiv) DJL_FSDP_RANKS_PER_GPU=$quad_share step equiv tests ai.djl.fsdp.trainer.MultiRankTrainingTest \
            ai.djl.fsdp.trainer.ReshardWithoutRecomputeGpuTest ;;
        hybrid) DJL_FSDP_RANKS_PER_GPU=$quad_share step hybrid tests ai.djl.fsdp.trainer.HybridShardingTest ;;
        checkpoint) DJL_FSDP_RANKS_PER_GPU=$quad_share step checkpoint tests ai.djl.fsdp.trainer.CheckpointResumeTest ;;
        qcomm-2) DJL_FSDP_RANKS_PER_GPU=$pair_share step qcomm-2 with_gpu_memory "$results/qcomm-2.mem" fsdp bench \
            train --nproc 2 --communication-quantization weights=int8,gradients=int4 "${small[@]}" ;;
        qlora) DJL_FSDP_RANKS_PER_GPU=$pair_share step qlora fsdp launch --nproc-per-node 2 --jvm-opt=-Xmx4g -- \
            finetune --model_name_or_path gpt2-mini --output_dir "$results/qlora-run" --use_peft_lora True \
            --use_4bit_quantization True --bnb_4bit_compute_dtype bfloat16 --bf16 True --max_steps 4 \
            --per_device_train_batch_size 4 ;;
        t5-lora) DJL_FSDP_RANKS_PER_GPU=$pair_share step t5-lora with_gpu_memory "$results/t5-lora.mem" \
            t5_lora "$results/t5-lora-run" ;;
        mem-1|mem-2)
            local sizes
            sizes_for train-124m
            DJL_FSDP_RANKS_PER_GPU=$pair_share step "$name" with_gpu_memory "$results/$name.mem" fsdp bench train \
                --nproc "${name#mem-}" --precision bf16 "${sizes[@]}" ;;
        train-llama1b)
            gpu_only "$name" || return 0
            step "$name" with_gpu_memory "$results/$name.mem" fsdp bench train --nproc 1 --model llama \
                --intermediate 8192 --precision bf16 --attention sdpa "${llama1b[@]}" --jvm-opt=-Xmx8g ;;
        fsdp2-llama1b)
            gpu_only "$name" || return 0
            step "$name" with_gpu_memory "$results/$name.mem" "$python" -m torch.distributed.run \
                --standalone --nproc-per-node 1 "$kit/fsdp2_bench.py" --model llama --kv-heads 8 \
                --intermediate 8192 "${llama1b[@]}" --checkpoint --dtype bfloat16 ${KIT_FSDP2_ARGS:---steps 10 --warmup 2} ;;
        fit-cpu)
            DJL_FSDP_DEVICE=cpu step fit-cpu launch ai.djl.fsdp.examples.FsdpFitExample
            note "   CPU: $(grep -ho 'validation accuracy .*' "$results/fit-cpu.log" | tail -n 1)" ;;
        fit-gpu)
            gpu_only "$name" && step fit-gpu launch ai.djl.fsdp.examples.FsdpFitExample \
                && note "   GPU: $(grep -ho 'validation accuracy .*' "$results/fit-gpu.log" | tail -n 1)" ;;
        train-small) step train-small with_gpu_memory "$results/train-small.mem" fsdp bench train --nproc "$nproc" "${small[@]}" ;;
        bench-coll) step bench-coll fsdp bench collectives --nproc "$nproc" --bytes 67108864 ;;
        train-f32|train-124m-f32) train "$name" ;;
        train-bf16|train-124m-bf16) train "$name" --precision bf16 ;;
        train-keep|train-124m-keep) train "$name" --sharding FULL_SHARD --activation-checkpointing=false ;;
        fsdp2-float32|fsdp2-bfloat16|fsdp2-124m-float32|fsdp2-124m-bfloat16)
            gpu_only "$name" || return 0
            local sizes
            sizes_for "$name"
            step "$name" with_gpu_memory "$results/$name.mem" "$python" -m torch.distributed.run \
                --standalone --nproc-per-node "$nproc" "$kit/fsdp2_bench.py" "${sizes[@]}" ${KIT_FSDP2_ARGS:---steps 10 --warmup 2} \
                --dtype "${name##*-}" ;;
        ops-bf16|ops-124m-bf16)
            gpu_only "$name" || return 0
            local sizes
            sizes_for "$name"
            step "$name" ops_side_by_side "$results/$name" "${sizes[@]}" ;;
        *) note "== $name: no such step"; echo "   exit 2" >> "$summary" ;;
    esac
}

gpu_only() {
    [[ "$device" == gpu ]] && return 0
    note "== $1: skipped (KIT_DEVICE=cpu)"
    return 1
}

# Sets sizes to step $1's shape: the GPT-2 124M shape for *-124m-*, else the default; on the CPU
# the small shape (the full shapes take many minutes on a few cores).
sizes_for() {
    if [[ "$device" != gpu ]]; then
        sizes=("${small[@]}")
    elif [[ "$1" == *-124m* ]]; then
        sizes=("${shape124m[@]}")
    else
        sizes=("${shape[@]}")
    fi
}

# bench train on step $1's shape, the rest of the arguments added.
train() {
    local name="$1"; shift
    local sizes
    sizes_for "$name"
    # KIT_TRAIN_ARGS are for the GPU shapes: the CPU's small shape already names its steps.
    local extra=()
    [[ "$device" == gpu ]] && read -r -a extra <<< "${KIT_TRAIN_ARGS:-}"
    step "$name" with_gpu_memory "$results/$name.mem" fsdp bench train --nproc "$nproc" "$@" "${sizes[@]}" \
        "${extra[@]}"
}

build_jni
first_steps="probe-djl probe nccl-check collectives fit-cpu fit-gpu train-small"
second_steps="bench-coll train-f32 train-bf16 train-keep fsdp2-float32 fsdp2-bfloat16"
case "$call" in
    first) steps="$first_steps" ;;
    second) steps="$second_steps" ;;
    all) steps="$first_steps $second_steps" ;;
    # One run of about 15 minutes: what proves most first, each side-by-side pair together.
    one) steps="probe-djl probe layout nccl-check nccl-ranks equiv mem-1 mem-2 hybrid checkpoint qcomm-2 qlora t5-lora train-llama1b fsdp2-llama1b train-124m-bf16 fsdp2-124m-bfloat16 ops-124m-bf16 train-bf16 fsdp2-bfloat16 fit-gpu bench-coll stop-socket" ;;
esac
for name in ${KIT_STEPS:-$steps}; do
    if [[ -n "${KIT_DEADLINE:-}" ]] && (( SECONDS + 20 > KIT_DEADLINE )); then
        note "== $name: skipped, KIT_DEADLINE ($KIT_DEADLINE s) reached after $SECONDS s"
        continue
    fi
    run_named "$name"
done
failed="$(grep -c '^   exit [1-9]' "$summary")"
skipped="$(grep -c 'KIT_DEADLINE (.*) reached' "$summary")"
note "done: $results ($failed failed steps, $skipped skipped at the deadline)"
[[ "$failed" == 0 ]]
