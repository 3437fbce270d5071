#!/usr/bin/env bash
# Runs `bin/fsdp bench train` for several configurations side by side, in interleaved rounds
# (round 1 runs every configuration once, then round 2, ...), so that a busy spell of the machine
# falls on all of them alike, and prints a Markdown table of the medians with ratios to the first
# configuration (the baseline; the first that finished, if all of its runs failed).
#
#   tools/bench-table.sh [--rounds R] [--log FILE] -- SHAPE_ARGS... -- CONFIG [-- CONFIG ...]
#
# SHAPE_ARGS go to every run (e.g. --steps 3 --warmup 1 --layers 4); each CONFIG is the rest of one
# run's arguments, as one quoted word (e.g. "--nproc 1 --sharding NONE"). Every report line is
# kept in the log (default: bench-table.log in the current directory), so the table can be
# checked against the raw figures.
set -euo pipefail

rounds=3
log=bench-table.log
while [[ $# -gt 0 && $1 != -- ]]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --log) log=$2; shift 2 ;;
        *) echo "bench-table: unknown option $1 (use --rounds R, --log FILE)" >&2; exit 2 ;;
    esac
done
[[ $# -gt 0 ]] || { echo "bench-table: give -- SHAPE_ARGS... -- CONFIG [-- CONFIG ...]" >&2; exit 2; }
shift
shape=()
while [[ $# -gt 0 && $1 != -- ]]; do shape+=("$1"); shift; done
configs=()
while [[ $# -gt 0 ]]; do
    shift
    [[ $# -gt 0 ]] && { configs+=("$1"); shift; }
done
[[ ${#configs[@]} -gt 0 ]] || { echo "bench-table: no CONFIG given" >&2; exit 2; }

fsdp="$(cd "$(dirname "$0")/.." && pwd)/bin/fsdp"
[[ -e $log ]] && { echo "bench-table: $log exists; give another --log (nothing is overwritten)" >&2; exit 2; }
: > "$log"
for ((round = 1; round <= rounds; round++)); do
    for index in "${!configs[@]}"; do
        # shellcheck disable=SC2086 # a CONFIG is several words on purpose
        line=$("$fsdp" bench train "${shape[@]}" ${configs[$index]} | grep '^sharding=' | tail -1) \
            || line="failed"
        echo "round=$round config=$index $line" | tee -a "$log" >&2
    done
done

# One row per configuration: the median of each figure over the rounds, and its ratio to row 0's.
awk -v n="${#configs[@]}" -v shape="${shape[*]}" '
function median(values, count,   sorted, i, j, t) {
    for (i = 1; i <= count; i++) sorted[i] = values[i]
    for (i = 1; i <= count; i++)
        for (j = i + 1; j <= count; j++)
            if (sorted[j] < sorted[i]) { t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t }
    return count % 2 ? sorted[(count + 1) / 2] : (sorted[count / 2] + sorted[count / 2 + 1]) / 2
}
{
    split($2, c, "="); config = c[2]
    for (f = 3; f <= NF; f++) { split($f, kv, "="); field[config, kv[1]] = kv[2] }
    name[config] = "sharding=" field[config, "sharding"] " nproc=" field[config, "nproc"] \
        " precision=" field[config, "precision"] \
        (field[config, "lora_rank"] + 0 == 0 ? "" : " lora_rank=" field[config, "lora_rank"]) " attention=" field[config, "attention"] \
        " reshard=" field[config, "reshard_after_forward"] " recompute=" field[config, "activation_checkpointing"]
    if ($3 == "failed") next
    runs[config]++
    tps[config, runs[config]] = field[config, "tokens_per_s"]
    rss[config, runs[config]] = field[config, "peak_rss_mb_per_rank"]
    state[config] = field[config, "model_state_mb_per_rank"]
    sent[config] = field[config, "sent_mb_per_step"]
    frac[config, runs[config]] = field[config, "peak_fraction"]
    wait[config, runs[config]] = field[config, "comm_wait_ms_per_step"]
}
END {
    print "Shape: `" shape "`, medians of the rounds (runs that finished in brackets)."
    print ""
    print "| configuration | tokens/s (runs) | median | vs first | peak RSS MB/rank | vs first | model state MB/rank | sent MB/step | comm wait ms/step | peak fraction |"
    print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for (k = 0; k < n; k++) {
        count = runs[k]
        if (count == 0) { print "| " name[k] " | all runs failed | | | | | | | | |"; continue }
        list = ""
        for (r = 1; r <= count; r++) { t[r] = tps[k, r]; m[r] = rss[k, r]; p[r] = frac[k, r]; w[r] = wait[k, r]; list = list (r > 1 ? ", " : "") tps[k, r] }
        medT = median(t, count); medM = median(m, count); medP = median(p, count); medW = median(w, count)
        if (baseT == "") { baseT = medT; baseM = medM }  # the first configuration that finished
        printf "| %s | %s (%d) | %.1f | %.2fx | %.0f | %.2fx | %s | %s | %.1f | %.3f |\n", \
            name[k], list, count, medT, medT / baseT, medM, medM / baseM, state[k], sent[k], medW, medP
    }
}' "$log"
