#!/usr/bin/env bash
# Autocast and fine-tuning in the GUI, in a real X session (Xvfb + openbox, xdotool, ImageMagick's
# `import`), as walkthrough.sh does. Not run by CI: a person looks at the screenshots (README.md
# beside this script says what each should show). resnet50 (../shared/corpus/graph_only) at
# batch 64 opened with --trainable '^fc\.'; the Training dialog set to adam + bf16-mixed; a
# store-all solve (memory chart with weight_casts); then the pattern cleared (full training).
#   tests/ui/walkthrough/autocast.sh [BUILD_DIR] [OUT_DIR]
# Environment: WALK_DISPLAY (default :24), WALK_MODEL (default the corpus resnet50).
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$HERE/build}
OUT=${2:-$(mktemp -d /tmp/remat-autocast-walk.XXXXXX)}
DISP=${WALK_DISPLAY:-:24}
MODEL=${WALK_MODEL:-$HERE/../shared/corpus/graph_only/resnet50.onnx}
STUDIO=$BUILD/app/remat-studio
WALK_NAME="autocast walk"
[ -f "$MODEL" ] || { echo "autocast walk: $MODEL not found (../shared beside the clone)" >&2; exit 2; }
. "$(dirname "$0")/x_session.sh"
n=0
shot() { n=$((n + 1)); sleep "${2:-0.7}"; import -window root "$OUT/$(printf '%02d' $n)-$1.png"; echo "autocast walk: $(printf '%02d' $n)-$1.png"; }
click_xy() { xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.7}"; }
"$STUDIO" "$MODEL" --batch 64 --trainable '^fc\.' >"$OUT/app.log" 2>&1 &
APP=$!
WIN=""
for _ in $(seq 60); do
    WIN=$(xdotool search --onlyvisible --name "Remat Studio" 2>/dev/null | head -1)
    [ -n "$WIN" ] && break
    sleep 0.5
done
[ -n "$WIN" ] || { echo "autocast walk: no window (see $OUT/app.log)" >&2; exit 1; }
xdotool windowmove "$WIN" 0 0 windowsize "$WIN" 1600 960 windowactivate --sync "$WIN"
shot open 4
# The toolbar's Training button; precision and optimizer by keyboard (mnemonics, first letter).
click_xy "${WALK_TRAINING_X:-299}" "${WALK_TRAINING_Y:-34}" 2
xdotool key alt+p; sleep 0.3; xdotool type b; sleep 0.5   # bf16-mixed
xdotool key alt+o; sleep 0.3; xdotool type a; sleep 0.5   # adam
shot training-bf16-mixed-head-only
xdotool key Return
sleep 6
xdotool key ctrl+r   # Planner > Solve (store-all)
shot head-only-chart 6
click_xy "${WALK_TRAINING_X:-299}" "${WALK_TRAINING_Y:-34}" 3
# Micro-batches (alt+m), then Tab to Freeze and Train only (Ranks is disabled with one rank).
xdotool key alt+m Tab Tab; sleep 0.3
xdotool key ctrl+a Delete
shot training-full 0.7
xdotool key Return
sleep 8
xdotool key ctrl+r
shot full-bf16-mixed-chart 6
# At batch 4 the weights' bfloat16 copies are a visible share of the step.
click_xy "${WALK_BATCH_X:-173}" "${WALK_BATCH_Y:-34}" 0.5
xdotool key ctrl+a; xdotool type 4; xdotool key Return
sleep 8
xdotool key ctrl+r
shot full-bf16-mixed-batch4-chart 6
echo "autocast walk: screenshots in $OUT"
