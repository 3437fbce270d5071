#!/usr/bin/env bash
# The host's cost of a training step, ours beside PyTorch eager's, in one run (issue #33).
#
# At a shape where the kernels cost next to nothing (12 layers of width 64, 4 heads, sequence 16,
# batch 2, vocabulary 512; one process, one intra-op thread, AdamW, explicit attention), a step's
# time is what the host spends issuing operators. Each round runs every configuration once, in
# turn, so the machine's load falls on all of them alike; the table gives each one's median step
# time over the rounds; its ratio to PyTorch eager's in the same precision, to eager's with the same
# recompute (eager recomputes each block with torch.utils.checkpoint, as FSDP2 with activation
# checkpointing does, where ours recomputes its units), and, where tcmalloc is installed, to eager's
# with tcmalloc preloaded and the same recompute (eager and two of ours also run with it); the
# operators the host called into libtorch in one profiled step (bin/fsdp bench ops counts ours and
# PyTorch's alike); and the final loss.
#
#   tools/host-cost/side-by-side.sh [ROUNDS] [-- extra bench train options]
#
# WARMUP (default 60) untimed and STEPS (default 200) timed steps per run: fewer leave the JVM's
# compiler at work in the timed steps (30 and 60 measured a step 10% slower than 60 and 200, or 300
# and 60; a run of 3 and 20 measured the compiler as much as the code).
#
# BUILDS="before=/path/to/other/checkout ..." runs our configurations with each of those builds as
# well (their bin/fsdp and benchmarks/target), interleaved in the same rounds, in rows labelled with
# the name: a change measured before and after against the same eager runs.
#
# Needs the build (mvn -B -DskipTests package) and a python3 with torch on an optimized BLAS (Debian:
# apt-get install python3-torch libopenblas0-pthread; PYTHON overrides which python runs it).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-5}"
shift || true
[[ "${1:-}" == "--" ]] && shift
python="${PYTHON:-/usr/bin/python3}"
if ! "$python" -c 'import torch' 2>/dev/null; then
    echo "side-by-side: $python has no torch; apt-get install python3-torch, or set PYTHON" >&2
    exit 1
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Debian's torch does its float32 products in the system's libblas.so.3. Where that is the
# reference BLAS (/usr/lib/<arch>/blas/), eager's float32 step is about 2.7x what it is on OpenBLAS
# (38.7 against 14.1 ms at this shape), a baseline no user would run; refuse it.
eager_line="$("$python" "$root/tools/host-cost/eager_gpt2.py" --steps 1 --warmup 0)" ||
    { echo "side-by-side: $python $root/tools/host-cost/eager_gpt2.py failed" >&2; exit 1; }
blas="$(sed -nE 's/.* blas=([^ ]*).*/\1/p' <<<"$eager_line")"
if [[ "$blas" == */blas/libblas.so* ]]; then
    echo "side-by-side: PyTorch eager would run its float32 products in the reference BLAS ($blas);" \
        "apt-get install libopenblas0-pthread (Debian selects it for libblas.so.3), then run again" >&2
    exit 1
fi
echo "eager's BLAS: $blas" >&2
warmup="${WARMUP:-60}" steps="${STEPS:-200}"
shape=(--layers 12 --width 64 --heads 4 --vocab 512 --seq 16 --batch 2)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# name | precision | recompute (or "-") | command (the shape and --steps/--warmup are added)
eager_py="$python $root/tools/host-cost/eager_gpt2.py --threads 1"
configs=(
    "eager fp32|fp32|-|$eager_py --precision fp32"
    "eager bf16|bf16|-|$eager_py --precision bf16"
    "eager fp32, recompute|fp32|recompute|$eager_py --precision fp32 --activation-checkpointing"
    "eager bf16, recompute|bf16|recompute|$eager_py --precision bf16 --activation-checkpointing"
)
ours=(
    "DJL Trainer fp32|fp32|-|bench train --nproc 1 --sharding NONE --precision fp32"
    "FULL_SHARD fp32|fp32|recompute|bench train --nproc 1 --sharding FULL_SHARD --precision fp32"
    "FULL_SHARD fp32 no recompute|fp32|-|bench train --nproc 1 --sharding FULL_SHARD --precision fp32 --activation-checkpointing=false"
    "FULL_SHARD bf16|bf16|recompute|bench train --nproc 1 --sharding FULL_SHARD --precision bf16"
    "FULL_SHARD bf16 no recompute|bf16|-|bench train --nproc 1 --sharding FULL_SHARD --precision bf16 --activation-checkpointing=false"
)
# Where tcmalloc is installed, eager and two of ours also run with it (ours by bin/fsdp launch's
# --allocator tcmalloc, RankAllocator), in rows of their own: each side with each allocator.
tcmalloc=""
for name in libtcmalloc_minimal.so.4 libtcmalloc.so.4; do
    for dir in "/usr/lib/$(uname -m)-linux-gnu" /usr/lib64 /usr/lib /usr/local/lib; do
        [[ -z "$tcmalloc" && -f "$dir/$name" ]] && tcmalloc="$dir/$name"
    done
done
if [[ -n "$tcmalloc" ]]; then
    configs+=(
        "eager fp32, tcmalloc|fp32 tcmalloc|-|env LD_PRELOAD=$tcmalloc $eager_py --precision fp32"
        "eager bf16, tcmalloc|bf16 tcmalloc|-|env LD_PRELOAD=$tcmalloc $eager_py --precision bf16"
        "eager bf16, recompute, tcmalloc|bf16 tcmalloc|recompute|env LD_PRELOAD=$tcmalloc $eager_py --precision bf16 --activation-checkpointing"
    )
    ours+=(
        "FULL_SHARD bf16, tcmalloc|bf16 tcmalloc|recompute|env FSDP_ALLOCATOR=tcmalloc bench train --nproc 1 --sharding FULL_SHARD --precision bf16"
        "FULL_SHARD bf16 no recompute, tcmalloc|bf16 tcmalloc|-|env FSDP_ALLOCATOR=tcmalloc bench train --nproc 1 --sharding FULL_SHARD --precision bf16 --activation-checkpointing=false"
    )
fi
for build in "this=$root" ${BUILDS:-}; do
    label="${build%%=*}" dir="${build#*=}"
    suffix="" && [[ "$label" != this ]] && suffix=" [$label]"
    for config in "${ours[@]}"; do
        IFS='|' read -r name precision recompute command <<<"$config"
        # An "env VAR=value" prefix stays in front of bin/fsdp.
        prefix="" && [[ "$command" == env\ * ]] && prefix="${command%% bench *} " && command="bench ${command#* bench }"
        configs+=("$name$suffix|$precision|$recompute|$prefix$dir/bin/fsdp $command")
    done
done

run() { # index round [extra...]
    local name precision recompute command line
    IFS='|' read -r name precision recompute command <<<"${configs[$1]}"
    # Word splitting of the command is intended.
    # shellcheck disable=SC2086
    line="$($command "${shape[@]}" --steps "$steps" --warmup "$warmup" "${@:3}" 2>/dev/null | grep -E 'step_ms=' | tail -1)"
    [[ -n "$line" ]] || { echo "side-by-side: '$name' printed no step_ms" >&2; exit 1; }
    echo "$line" | sed -E 's/.*step_ms=([0-9.]+).*/\1/' >>"$out/$1.ms"
    echo "$line" | grep -oE 'ops_per_step=[0-9]+' | cut -d= -f2 >>"$out/$1.ops" || true
    echo "$line" | grep -oE 'loss=[0-9.]+' | cut -d= -f2 >>"$out/$1.loss" || true
}

for ((r = 1; r <= rounds; r++)); do
    for i in "${!configs[@]}"; do
        run "$i" "$r" "$@"
    done
    echo "round $r of $rounds done" >&2
done
# One profiled step each for the operator counts.
for i in "${!configs[@]}"; do
    run "$i" profile --op-profile "$out/$i.trace.json" "$@"
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '| run | step ms (median of %d) | x eager | x eager, same recompute | x eager with tcmalloc, same recompute | operators per step | final loss |\n' "$rounds"
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
# Eager's medians first, by precision (with " tcmalloc" where preloaded) and recompute.
declare -A eager
for i in "${!configs[@]}"; do
    IFS='|' read -r name precision recompute command <<<"${configs[$i]}"
    if [[ "$name" == eager* ]]; then eager[$precision|$recompute]="$(head -n "$rounds" "$out/$i.ms" | median)"; fi
done
ratio() { # ms baseline-key
    local base="${eager[$2]:-}"
    if [[ -z "$base" ]]; then echo "-"; else awk -v a="$1" -v b="$base" 'BEGIN {printf "%.2f", a / b}'; fi
}
for i in "${!configs[@]}"; do
    IFS='|' read -r name precision recompute command <<<"${configs[$i]}"
    ms="$(head -n "$rounds" "$out/$i.ms" | median)"
    ops="$("$root/bin/fsdp" bench ops --top 1 "$out/$i.trace.json" 2>/dev/null | awk -F'\t' '/all top-level/ {print $2}')"
    base="${precision%% *}"
    # The loss of the last timed round: the same in every round of one build.
    loss="$(head -n "$rounds" "$out/$i.loss" | tail -1)"
    printf '| %s | %.1f | %s | %s | %s | %s | %s |\n' "$name" "$ms" "$(ratio "$ms" "$base|-")" \
        "$(ratio "$ms" "$base|$recompute")" "$(ratio "$ms" "$base tcmalloc|$recompute")" "$ops" "$loss"
done
