#!/usr/bin/env bash
# Runs `bench train`'s ranks as a job of two nodes on this machine, HYBRID_SHARD (a shard group per
# node) against FULL_SHARD on the same ranks, in interleaved rounds, and prints a Markdown table of
# the medians: tokens/s, peak RSS per rank, and the bytes that crossed the node boundary per step,
# both counted on the link and from the ranks' own accounting.
#
#   sudo tools/two-node-bench.sh [--rounds R] [--warmup W] [--steps S] [--rate RATE]
#                                [--nproc-per-node N] [--log FILE] [--config ARGS]...
#                                [-- RANK_ARGS...]
#
# The nodes are two network namespaces joined by a veth pair (10.77.0.1 and .2), each launcher with
# a private tmpfs as its temporary folder, as HybridTwoNodeTest makes them; the link is limited in
# both directions with `tc qdisc add dev VETH root tbf rate RATE burst 32kbit latency 50ms`
# (default 1gbit; --rate none leaves it unlimited). The ranks train `bench train`'s default shape
# (6 layers, width 384, vocabulary 50257, sequence 128, batch 8 per rank) for W untimed and S timed
# steps (default 1 and 2); RANK_ARGS are further TrainBenchRank options for every run (such as
# --precision bf16). Each --config ARGS (one quoted word, repeatable) replaces the two default runs
# with runs of those TrainBenchRank options, the first the baseline of the ratios (such as
# --config "--sharding FULL_SHARD" --config "--sharding FULL_SHARD --communication-quantization
# weights=int8"). Needs root and a build (mvn -B -DskipTests package).
#
# Bytes on the link: the veth pair's transmitted bytes in both directions (TCP/IP headers
# included). A run also carries its start-up (store, rings, sharded initialization), so after the
# rounds every configuration runs once more with --warmup 0 --steps 1, and a step's link bytes are
# (a round's bytes - that run's bytes) / (the round's steps - 1). The ranks' accounting: FULL_SHARD's
# ring (0, 1 | 2, 3, ...) crosses the boundary on 2 of its links, so 2 x a rank's sent bytes;
# hybrid sharding sends across only in its replicate groups: every rank's sent-across bytes.
set -euo pipefail

rounds=3
warmup=1
steps=2
rate=1gbit
per_node=2
custom=()
log=two-node-bench.log
while [[ $# -gt 0 && $1 != -- ]]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --nproc-per-node) per_node=$2; shift 2 ;;
        --log) log=$2; shift 2 ;;
        --config) custom+=("$2"); shift 2 ;;
        *) echo "two-node-bench: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] && shift
rank_args=("$@")
[[ $(id -u) -eq 0 ]] || { echo "two-node-bench: network namespaces need root" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
target="$root/benchmarks/target"
[[ -f $target/benchmarks.jar ]] || { echo "two-node-bench: build first: mvn -B -DskipTests package" >&2; exit 2; }
[[ -e $log ]] && { echo "two-node-bench: $log exists; give another --log (nothing is overwritten)" >&2; exit 2; }

# The default bench shape (`bench train`'s defaults).
shape=(--layers 6 --width 384 --heads 6 --vocab 50257 --seq 128 --batch 8)
configs=("--sharding FULL_SHARD" "--sharding HYBRID_SHARD --shard-group-size $per_node")
[[ ${#custom[@]} -gt 0 ]] && configs=("${custom[@]}")
labels=$(printf '%s\t' "${configs[@]}")

id=$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')
ns=(tnb-$id-0 tnb-$id-1)
veth=(tnb${id}a tnb${id}b)
work=$(mktemp -d /tmp/two-node-bench.XXXXXX)
cleanup() {
    for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
    ip link del "${veth[0]}" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add "${ns[0]}"
ip netns add "${ns[1]}"
ip link add "${veth[0]}" type veth peer name "${veth[1]}"
for node in 0 1; do
    ip link set "${veth[$node]}" netns "${ns[$node]}"
    ip -n "${ns[$node]}" addr add "10.77.0.$((node + 1))/24" dev "${veth[$node]}"
    ip -n "${ns[$node]}" link set "${veth[$node]}" up
    ip -n "${ns[$node]}" link set lo up
    if [[ $rate != none ]]; then
        ip netns exec "${ns[$node]}" tc qdisc add dev "${veth[$node]}" root tbf rate "$rate" \
            burst 32kbit latency 50ms
    fi
done

link_bytes() {
    local total=0 node
    for node in 0 1; do
        total=$((total + $(ip netns exec "${ns[$node]}" cat "/sys/class/net/${veth[$node]}/statistics/tx_bytes")))
    done
    echo "$total"
}

# Runs one job: prints "link_bytes=.. seconds=.." and the ranks' report lines (rank=R ...).
run_job() {
    local config=$1; shift
    local report="$work/report-$RANDOM" before after start pids=() node
    before=$(link_bytes)
    start=$(date +%s.%N)
    for node in 0 1; do
        mkdir -p "$work/tmp$node"
        # shellcheck disable=SC2086 # a config is several words on purpose
        ip netns exec "${ns[$node]}" unshare --mount sh -c 'mount -t tmpfs tmpfs "$0" && exec "$@"' \
            "$work/tmp$node" java -Xmx128m -cp "$target/benchmarks.jar:$target/lib/*" \
            ai.djl.fsdp.cli.Fsdp launch --nnodes 2 --node-rank "$node" --nproc-per-node "$per_node" \
            --master-addr 10.77.0.1 --master-port 29500 --timeout 600 \
            --jvm-opt=-Xmx1g "--jvm-opt=-Djava.io.tmpdir=$work/tmp$node" \
            -- ai.djl.fsdp.bench.train.TrainBenchRank "${shape[@]}" $config "$@" \
            "--report=$report" > "$work/node$node.log" 2>&1 &
        pids+=($!)
    done
    local failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    after=$(link_bytes)
    if [[ $failed -ne 0 ]]; then
        echo "failed"
        tail -5 "$work/node0.log" "$work/node1.log" >&2
        return
    fi
    echo "link_bytes=$((after - before)) seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')"
    for ((rank = 0; rank < 2 * per_node; rank++)); do
        echo "rank=$rank $(cat "$report.rank$rank")"
    done
}

export DJL_FSDP_JOB_TOKEN="two-node-bench-$id" DJL_FSDP_RUN_ID="two-node-bench-$id"
: > "$log"
for ((round = 1; round <= rounds; round++)); do
    for index in "${!configs[@]}"; do
        run_job "${configs[$index]}" --warmup "$warmup" --steps "$steps" "${rank_args[@]}" | sed "s/^/round=$round config=$index /" \
            | tee -a "$log" >&2
    done
done
for index in "${!configs[@]}"; do
    run_job "${configs[$index]}" --warmup 0 --steps 1 "${rank_args[@]}" \
        | sed "s/^/round=one-step config=$index /" | tee -a "$log" >&2
done

# Tokens per rank and step: the bench's --batch x --seq (defaults 8 and 128) as passed to the ranks.
batch=8 seq=128
for ((i = 0; i < ${#rank_args[@]}; i++)); do
    case ${rank_args[i]} in
        --batch) batch=${rank_args[i + 1]} ;;
        --batch=*) batch=${rank_args[i]#--batch=} ;;
        --seq) seq=${rank_args[i + 1]} ;;
        --seq=*) seq=${rank_args[i]#--seq=} ;;
    esac
done
awk -v n="${#configs[@]}" -v steps="$((warmup + steps))" -v labels="$labels" \
    -v tokens_per_rank="$((batch * seq))" -v args="--warmup $warmup --steps $steps ${rank_args[*]}" '
function field(line, name,   m) { return match(line, " " name "=[^ ]*") ? substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 2) : "" }
function median(values, count,   sorted, i, j, t) {
    for (i = 1; i <= count; i++) sorted[i] = values[i]
    for (i = 1; i <= count; i++) for (j = i + 1; j <= count; j++) if (sorted[j] < sorted[i]) { t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t }
    return count % 2 ? sorted[(count + 1) / 2] : (sorted[count / 2] + sorted[count / 2 + 1]) / 2
}
{
    split($1, r, "="); split($2, c, "="); round = r[2]; config = c[2]
    if ($3 ~ /^link_bytes=/) { link[round, config] = field(" " $3, "link_bytes"); if (round != "one-step") rounds[config] = rounds[config] " " round; next }
    if ($3 !~ /^rank=/) next
    key = round SUBSEP config
    step = field($0, "step_ms") + 0; if (step > worst_step[key]) worst_step[key] = step
    rss = field($0, "peak_rss_mb") + 0; if (rss > worst_rss[key]) worst_rss[key] = rss
    sent[key] += field($0, "sent_mb"); across[key] += field($0, "sent_across_mb"); ranks[key]++
    if (field($0, "sent_mb") + 0 > max_sent[key]) max_sent[key] = field($0, "sent_mb") + 0
}
END {
    split(labels, label, "\t")
    print "Rank arguments: " args " (" steps " steps a round); MB = 10^6 bytes."
    print ""
    print "| run | tokens/s (rounds) | median | peak RSS MB/rank (median) | MB across per step, on the link (rounds) | median | MB across per step, ranks accounting |"
    print "| --- | --- | --- | --- | --- | --- | --- |"
    for (config = 0; config < n; config++) {
        count = split(rounds[config], list, " "); tps = ""; rs = ""; lk = ""; k = 0
        for (i = 1; i <= count; i++) {
            key = list[i] SUBSEP config
            if (!(key in worst_step)) continue
            k++
            t[k] = ranks[key] * tokens_per_rank / (worst_step[key] / 1000); tps = tps (k > 1 ? ", " : "") sprintf("%.1f", t[k])
            m[k] = worst_rss[key]
            one = link["one-step", config]
            l[k] = (steps > 1 && one != "") ? (link[list[i], config] - one) / (steps - 1) / 1e6 : link[list[i], config] / steps / 1e6
            lk = lk (k > 1 ? ", " : "") sprintf("%.1f", l[k])
            acct = (label[config + 1] !~ /HYBRID/) ? 2 * max_sent[key] : across[key]
        }
        if (k == 0) { printf "| config %d | failed | | | | | |\n", config; continue }
        med[config] = median(t, k); medl[config] = median(l, k)
        printf "| %s | %s | %.1f%s | %.1f | %s | %.1f%s | %.1f |\n", label[config + 1], tps, med[config],
            config ? sprintf(" (%.2fx)", med[config] / med[0]) : "", median(m, k), lk, medl[config],
            config ? sprintf(" (%.2fx)", medl[config] / medl[0]) : "", acct
    }
}' "$log"
