#!/usr/bin/env bash
# The bound gap at the frontier's point within P% (issue 36 item 4): checkmate-milp's lowest peak
# within P% of store-all's step (recompute only: `--setting stream=off`, so the plan's peak is a
# recompute plan's and the bound below applies to it), then the proven lower bound on recompute
# at that peak (checkmate-milp min-time with the budget at the plan's peak: the cut relaxation's
# bound, plan.bound) and the gap between them, in points of store-all's step:
#   tests/bench/recompute_gap.sh [-p P] [-r REMAT] [-m SECONDS] [-t SECONDS] [-n RUNS] MODEL.onnx[:BATCH] ...
# -m: the min-peak search's --time-limit (default 160), -t: the min-time run's (default 60),
# -n: runs per model (default 1; every search is wall-clock limited, so answers vary).
# Prints one markdown table row per run.
set -euo pipefail
P=35
REMAT="$(cd "$(dirname "$0")/../.." && pwd)/build/app/remat"
PEAK_LIMIT=160
TIME_LIMIT=60
RUNS=1
while getopts "p:r:m:t:n:" o; do
    case $o in
    p) P=$OPTARG ;;
    r) REMAT=$OPTARG ;;
    m) PEAK_LIMIT=$OPTARG ;;
    t) TIME_LIMIT=$OPTARG ;;
    n) RUNS=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || {
    echo "usage: $0 [-p P] [-r REMAT] [-m SECONDS] [-t SECONDS] [-n RUNS] MODEL.onnx[:BATCH] ..." >&2
    exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| model | batch | run | lowest peak within ${P}% | its recompute | proven at that peak | gap (points) | solve s (peak, bound) |"
echo "|---|---|---|---|---|---|---|---|"
for spec in "$@"; do
    model=${spec%%:*}
    batch=16
    [ "$spec" != "$model" ] && batch=${spec##*:}
    for run in $(seq 1 "$RUNS"); do
        "$REMAT" solve "$model" --batch "$batch" --solver checkmate-milp --objective min-peak \
            --max-overhead "$P" --setting stream=off --time-limit "$PEAK_LIMIT" --json >"$tmp/peak.json"
        peak=$(jq -r .peak_bytes "$tmp/peak.json")
        "$REMAT" solve "$model" --batch "$batch" --solver checkmate-milp --objective min-time \
            --budget "$peak" --time-limit "$TIME_LIMIT" --json >"$tmp/time.json"
        jq -r -s --arg m "$(basename "$model")" --arg b "$batch" --arg r "$run" '
            .[0] as $p | .[1] as $t | ($p.store_all_step_seconds) as $s |
            (100 * $p.recompute_time / $s) as $rec | (100 * $t.bound / $s) as $bound |
            "| \($m) | \($b) | \($r) | \($p.peak_bytes / 1048576 * 100 | round / 100) MiB | " +
            "\($rec * 100 | round / 100)% | \($t.bound * 1e6 | round / 1e6) s " +
            "(\($bound * 100 | round / 100)%) | **\(($rec - $bound) * 100 | round / 100)** | " +
            "\($p.solve_seconds | round), \($t.solve_seconds | round) |"' \
            "$tmp/peak.json" "$tmp/time.json"
    done
done
