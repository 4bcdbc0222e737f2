#!/usr/bin/env bash
# Whole-process start-up of the CLI (issue 35): wall time (median of N runs) and peak RSS
# (/usr/bin/time -v) of `remat --help`, `remat info` on ViT-B/16 and a Feng & Huang solve of
# ResNet-152 at batch 16; with --studio also remat-studio's open-to-first-frame on the sample and
# DenseNet-201 (offscreen, REMAT_TIME_FIRST_FRAME). Prints a Markdown table (tests/bench/startup.md).
#   bash tests/bench/startup.sh [--bin build/app] [--runs 5] [--models DIR] [--studio]
# DIR holds resnet152_b16.onnx and densenet201_b16.onnx (exported as ../shared/corpus/README.md
# says: torchvision, training mode, opset 17, batch 16); rows whose model is missing are skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/app
RUNS=5
MODELS=""
STUDIO=0
SHARED="${REMAT_SHARED_DIR:-$(cd .. && pwd)/shared}"
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --studio) STUDIO=1; shift ;;
    *) echo "usage: $0 [--bin DIR] [--runs N] [--models DIR] [--studio]" >&2; exit 2 ;;
    esac
done
[ -x "$BIN/remat" ] || { echo "no $BIN/remat: build it first (scripts/build.sh --target remat)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# median of the numbers on stdin
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# row LABEL TARGET_MS TARGET_MIB CMD...: runs CMD RUNS times, prints "| label | ms | MiB | target |"
row() {
    local label="$1" tms="$2" tmib="$3"
    shift 3
    : >"$TMP/ms"
    : >"$TMP/kb"
    "$@" >/dev/null 2>&1 || { echo "| $label | failed: $* | | |"; return; }  # warm the page cache
    for _ in $(seq "$RUNS"); do
        # /usr/bin/time prints wall time in 10 ms steps: the clock is read here instead.
        local t0=$EPOCHREALTIME
        /usr/bin/time -v -o "$TMP/t" "$@" >/dev/null 2>&1
        local t1=$EPOCHREALTIME
        echo "($t1 - $t0) * 1000" | bc -l | xargs printf '%.1f\n' >>"$TMP/ms"
        awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/t" >>"$TMP/kb"
    done
    local ms kb
    ms=$(median <"$TMP/ms")
    kb=$(median <"$TMP/kb")
    printf '| %s | %s | %.1f | <= %s ms%s |\n' "$label" "$ms" "$(echo "$kb / 1024" | bc -l)" "$tms" \
        "${tmib:+, <= $tmib MiB}"
}

echo "| process | wall ms (median of $RUNS) | peak RSS MiB | target |"
echo "|---|---|---|---|"
row "remat --help" 20 30 "$BIN/remat" --help
VIT="$SHARED/corpus/graph_only/vit_b_16.onnx"
if [ -f "$VIT" ]; then row "remat info vit_b_16" 60 "" "$BIN/remat" info "$VIT"; fi
if [ -n "$MODELS" ] && [ -f "$MODELS/resnet152_b16.onnx" ]; then
    row "remat solve resnet152_b16 --solver feng-huang" 60 "" \
        "$BIN/remat" solve "$MODELS/resnet152_b16.onnx" --solver feng-huang
fi

# remat-studio: launch to the first paint of the opened model's graph (REMAT_TIME_FIRST_FRAME=exit
# prints the wall clock of that paint, then quits), offscreen, median of RUNS.
frame_row() {
    local label="$1" target="$2" model="$3"
    : >"$TMP/ms"
    : >"$TMP/kb"
    for i in $(seq $((RUNS + 1))); do
        local t0=$EPOCHREALTIME
        QT_QPA_PLATFORM=offscreen REMAT_TIME_FIRST_FRAME=exit /usr/bin/time -v -o "$TMP/t" \
            "$BIN/remat-studio" "$model" >"$TMP/out" 2>/dev/null || true
        local at
        at=$(sed -n 's/^first frame: .* at \([0-9]*\) us$/\1/p' "$TMP/out")
        [ -n "$at" ] || { echo "| $label | no first frame (see $BIN/remat-studio $model) | | |"; return; }
        [ "$i" = 1 ] && continue  # the first run warms the page cache and Qt's caches
        echo "($at - ${t0/./}) / 1000" | bc -l | xargs printf '%.1f\n' >>"$TMP/ms"
        awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/t" >>"$TMP/kb"
    done
    printf '| %s | %s | %.1f | <= %s ms |\n' "$label" "$(median <"$TMP/ms")" \
        "$(echo "$(median <"$TMP/kb") / 1024" | bc -l)" "$target"
}
if [ "$STUDIO" = 1 ] && [ -x "$BIN/remat-studio" ]; then
    frame_row "remat-studio tiny_vit.onnx, first frame" 300 resources/models/tiny_vit.onnx
    if [ -n "$MODELS" ] && [ -f "$MODELS/densenet201_b16.onnx" ]; then
        frame_row "remat-studio densenet201_b16, first frame" 500 "$MODELS/densenet201_b16.onnx"
    fi
fi
