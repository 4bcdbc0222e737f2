#!/usr/bin/env bash
# The desk on laptop screens, in a real X session as walkthrough.sh is (Xvfb and openbox, xdotool,
# ImageMagick's `import`; README.md beside this script says what each screenshot shows). Two
# sessions: a 1366x768 screen and a 1080x700 one, each with the corpus resnet18 open in
# `remat-studio` at the size it picks for itself (nothing resized by the script): solve, click the
# first row and press End (the Plans table scrolled to its right-hand columns), Compare all, the
# Pareto tab.
#   tests/ui/walkthrough/laptop_screens.sh [BUILD_DIR] [OUT_DIR]
# Environment: WALK_DISPLAY (default :25), WALK_MODEL (default ../shared/corpus/graph_only/
# resnet18.onnx); clicks at WALK_ROW_X/Y (a row of the Plans table) and WALK_PARETO_X/Y (the
# Pareto tab) per screen, defaults for the layout each screen gets.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$HERE/build}
TOP=${2:-$(mktemp -d /tmp/remat-laptop.XXXXXX)}
MODEL=${WALK_MODEL:-$HERE/../shared/corpus/graph_only/resnet18.onnx}
STUDIO=$BUILD/app/remat-studio
[ -f "$MODEL" ] || { echo "laptop_screens: $MODEL not found" >&2; exit 2; }

if [ -z "${WALK_SCREEN:-}" ]; then # the parent: one child session per screen
    WALK_SCREEN=1366x768 WALK_ROW_X=100 WALK_ROW_Y=530 WALK_PARETO_X=748 WALK_PARETO_Y=709 \
        "$0" "$BUILD" "$TOP/1366x768"
    WALK_SCREEN=1080x700 WALK_ROW_X=100 WALK_ROW_Y=460 WALK_PARETO_X=484 WALK_PARETO_Y=641 \
        "$0" "$BUILD" "$TOP/1080x700"
    echo "laptop_screens: screenshots in $TOP"
    exit 0
fi

OUT=$TOP
DISP=${WALK_DISPLAY:-:25}
WALK_NAME="laptop_screens"
. "$(dirname "$0")/x_session.sh"
n=0
shot() { # name [wait]
    n=$((n + 1))
    sleep "${2:-0.7}"
    import -window root "$OUT/$(printf '%02d' $n)-$1.png"
    echo "laptop_screens $WALK_SCREEN: $(printf '%02d' $n)-$1.png"
}
key() { xdotool key --clearmodifiers "$@"; sleep 0.4; }

"$STUDIO" "$MODEL" >"$OUT/app.log" 2>&1 &
APP=$!
WIN=""
for _ in $(seq 240); do
    WIN=$(xdotool search --onlyvisible --name "$(basename "$MODEL") - Remat Studio" 2>/dev/null | tail -1)
    [ -n "$WIN" ] && break
    sleep 0.5
done
[ -n "$WIN" ] || { echo "laptop_screens: no window (see $OUT/app.log)" >&2; exit 1; }
# openbox may still be starting: activating fails until it runs (keys would go nowhere).
for _ in $(seq 20); do
    xdotool windowactivate --sync "$WIN" 2>/dev/null && break
    sleep 1
done
shot open 4
key ctrl+r
sleep 3
xdotool mousemove "$WALK_ROW_X" "$WALK_ROW_Y" click 1
key End
shot plans-scrolled-right
key alt+p; key c
shot compare-all 30
xdotool mousemove "$WALK_PARETO_X" "$WALK_PARETO_Y" click 1
shot pareto 2
