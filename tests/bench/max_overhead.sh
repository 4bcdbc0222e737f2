#!/usr/bin/env bash
# The lowest peak within P% of store-all's step time (issue 36), every solver, each answer
# re-simulated by `remat simulate --plan` (the simulator's figures, not the solver's):
#   tests/bench/max_overhead.sh [-p P] [-r REMAT] [-s 'solver ...'] [-m SECONDS] MODEL.onnx[:BATCH] ...
# -m: checkmate-milp's --time-limit (default 160; the other solvers run at the default 60).
# Prints one markdown table: per model and solver, the plan's total peak, its simulated step,
# the overhead over store-all's simulated step, and whether it honours the limit; then the best
# per model. The acceptance models are ResNet-152 and DenseNet-201 at batch 16, exported as
# ../shared/corpus/README.md describes (graph only, training mode, opset 17, 224x224).
set -euo pipefail
P=35
REMAT="$(cd "$(dirname "$0")/../.." && pwd)/build/app/remat"
SOLVERS="store-all chen-sqrtn chen-greedy revolve feng-huang hong-dp hong-linear rotor checkmate-milp offload"
MILP_LIMIT=160
while getopts "p:r:s:m:" o; do
    case $o in
    p) P=$OPTARG ;;
    r) REMAT=$OPTARG ;;
    s) SOLVERS=$OPTARG ;;
    m) MILP_LIMIT=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-p P] [-r REMAT] [-s 'solver ...'] [-m SECONDS] MODEL.onnx[:BATCH] ..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| model | batch | solver | status | total peak | activation peak | step s | time overhead | recompute | within ${P}% | solve s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
best_lines=()
for spec in "$@"; do
    model=${spec%%:*}
    batch=16
    [ "$spec" != "$model" ] && batch=${spec##*:}
    base=$("$REMAT" simulate "$model" --batch "$batch" --json)
    base_step=$(jq -r .total_seconds <<<"$base")
    best=""
    for s in $SOLVERS; do
        plan="$tmp/$s.json"
        limit=()
        [ "$s" = checkmate-milp ] && limit=(--time-limit "$MILP_LIMIT")
        start=$(date +%s.%N)
        if ! out=$("$REMAT" solve "$model" --batch "$batch" --solver "$s" --objective min-peak \
            --max-overhead "$P" "${limit[@]}" --out "$plan" --json 2>"$tmp/err"); then
            [ -s "$plan" ] || { echo "| $(basename "$model") | $batch | $s | error: $(head -c 120 "$tmp/err") |||||||||"; continue; }
        fi
        end=$(date +%s.%N)
        status=$(jq -r .status <<<"$out")
        # The simulator's own figures for the saved schedule.
        sim=$("$REMAT" simulate "$model" --batch "$batch" --plan "$plan" --json)
        peak=$(jq -r .peak_bytes <<<"$sim")
        act=$(jq -r .activation_peak_bytes <<<"$sim")
        step=$(jq -r .total_seconds <<<"$sim")
        rec=$(jq -r '.recompute_seconds' <<<"$sim")
        one=$(jq -r '.compute_seconds' <<<"$sim")
        line=$(awk -v p="$peak" -v a="$act" -v t="$step" -v b="$base_step" -v r="$rec" -v c="$one" \
            -v lim="$P" -v st="$status" -v m="$(basename "$model")" -v bt="$batch" -v s="$s" \
            -v secs="$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')" 'BEGIN{
                over = 100 * (t / b - 1); ok = (st == "feasible" || st == "optimal") && t <= b * (1 + lim / 100) * (1 + 1e-9);
                printf "| %s | %s | %s | %s | %.2f MiB | %.2f MiB | %.5f | %+.1f%% | %.1f%% | %s | %s |", m, bt, s, st, p / 1048576, a / 1048576, t, over, 100 * r / c, ok ? "yes" : "no", secs }')
        echo "$line"
        if awk -v l="$line" 'BEGIN{exit !(l ~ /\| yes \|/)}'; then
            if [ -z "$best" ] || [ "$peak" -lt "$(cut -d' ' -f1 <<<"$best")" ]; then
                best="$peak $s $(awk -v t="$step" -v b="$base_step" 'BEGIN{printf "%+.1f%%", 100*(t/b-1)}')"
            fi
        fi
    done
    read -r bp bs bo <<<"$best"
    best_lines+=("$(basename "$model") b$batch: lowest peak within ${P}%: $bs, $(awk -v p="$bp" 'BEGIN{printf "%.2f MiB", p/1048576}') ($bo), simulated")
done
echo
for l in "${best_lines[@]}"; do echo "$l"; done
