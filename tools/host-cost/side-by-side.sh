#!/usr/bin/env bash
# The host's cost of a training step, ours beside PyTorch eager's, in one run (issue #33).
#
# At a shape where the kernels cost next to nothing (12 layers of width 64, 4 heads, sequence 16,
# batch 2, vocabulary 512; one process, one intra-op thread, AdamW, explicit attention), a step's
# time is what the host spends issuing operators. Each round runs every configuration once, in
# turn, so the machine's load falls on all of them alike; the table gives each one's median step
# time over the rounds, its ratio to PyTorch eager's in the same precision (and, where tcmalloc is
# installed, to eager's with tcmalloc preloaded: eager and two of ours also run with it), the
# operators the host called into libtorch in one profiled step (bin/fsdp bench ops counts ours and
# PyTorch's alike), and the final loss.
#
#   tools/host-cost/side-by-side.sh [ROUNDS] [-- extra bench train options]
#
# WARMUP (default 30) untimed and STEPS (default 60) timed steps per run: fewer leave the JVM's
# compiler at work in the timed steps (a run of 3 and 20 measured the compiler as much as the code).
#
# BUILDS="before=/path/to/other/checkout ..." runs our configurations with each of those builds as
# well (their bin/fsdp and benchmarks/target), interleaved in the same rounds, in rows labelled with
# the name: a change measured before and after against the same eager runs.
#
# Needs the build (mvn -B -DskipTests package) and a python3 with torch (Debian: apt-get install
# python3-torch; PYTHON overrides which python runs it).
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
export OMP_NUM_THREADS=1
warmup="${WARMUP:-30}" steps="${STEPS:-60}"
shape=(--layers 12 --width 64 --heads 4 --vocab 512 --seq 16 --batch 2)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# name | precision | command (the shape and --steps/--warmup are added)
configs=(
    "eager fp32|fp32|$python $root/tools/host-cost/eager_gpt2.py --threads 1 --precision fp32"
    "eager bf16|bf16|$python $root/tools/host-cost/eager_gpt2.py --threads 1 --precision bf16"
)
ours=(
    "DJL Trainer fp32|fp32|bench train --nproc 1 --sharding NONE --precision fp32"
    "FULL_SHARD fp32|fp32|bench train --nproc 1 --sharding FULL_SHARD --precision fp32"
    "FULL_SHARD fp32 no recompute|fp32|bench train --nproc 1 --sharding FULL_SHARD --precision fp32 --activation-checkpointing=false"
    "FULL_SHARD bf16|bf16|bench train --nproc 1 --sharding FULL_SHARD --precision bf16"
    "FULL_SHARD bf16 no recompute|bf16|bench train --nproc 1 --sharding FULL_SHARD --precision bf16 --activation-checkpointing=false"
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
        "eager fp32, tcmalloc|fp32 tcmalloc|env LD_PRELOAD=$tcmalloc $python $root/tools/host-cost/eager_gpt2.py --threads 1 --precision fp32"
        "eager bf16, tcmalloc|bf16 tcmalloc|env LD_PRELOAD=$tcmalloc $python $root/tools/host-cost/eager_gpt2.py --threads 1 --precision bf16"
    )
    ours+=(
        "FULL_SHARD bf16, tcmalloc|bf16|env FSDP_ALLOCATOR=tcmalloc bench train --nproc 1 --sharding FULL_SHARD --precision bf16"
        "FULL_SHARD bf16 no recompute, tcmalloc|bf16|env FSDP_ALLOCATOR=tcmalloc bench train --nproc 1 --sharding FULL_SHARD --precision bf16 --activation-checkpointing=false"
    )
fi
for build in "this=$root" ${BUILDS:-}; do
    label="${build%%=*}" dir="${build#*=}"
    suffix="" && [[ "$label" != this ]] && suffix=" [$label]"
    for config in "${ours[@]}"; do
        IFS='|' read -r name precision command <<<"$config"
        # An "env VAR=value" prefix stays in front of bin/fsdp.
        prefix="" && [[ "$command" == env\ * ]] && prefix="${command%% bench *} " && command="bench ${command#* bench }"
        configs+=("$name$suffix|$precision|$prefix$dir/bin/fsdp $command")
    done
done

run() { # index round [extra...]
    local name precision command line
    IFS='|' read -r name precision command <<<"${configs[$1]}"
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
printf '| run | step ms (median of %d) | x eager | x eager with tcmalloc | operators per step | final loss |\n| --- | --- | --- | --- | --- | --- |\n' "$rounds"
declare -A eager
for i in "${!configs[@]}"; do
    IFS='|' read -r name precision command <<<"${configs[$i]}"
    ms="$(head -n "$rounds" "$out/$i.ms" | median)"
    ops="$("$root/bin/fsdp" bench ops --top 1 "$out/$i.trace.json" 2>/dev/null | awk -F'\t' '/all top-level/ {print $2}')"
    if [[ "$name" == eager* ]]; then eager[$precision]="$ms"; fi
    base="${precision%% *}"
    ratio="$(awk -v a="$ms" -v b="${eager[$base]}" 'BEGIN {printf "%.2f", a / b}')"
    tc_ratio="-"
    if [[ -n "${eager[$base tcmalloc]:-}" ]]; then
        tc_ratio="$(awk -v a="$ms" -v b="${eager[$base tcmalloc]}" 'BEGIN {printf "%.2f", a / b}')"
    fi
    # The loss of the last timed round: the same in every round of one build.
    loss="$(head -n "$rounds" "$out/$i.loss" | tail -1)"
    printf '| %s | %.1f | %s | %s | %s | %s |\n' "$name" "$ms" "$ratio" "$tc_ratio" "$ops" "$loss"
done
