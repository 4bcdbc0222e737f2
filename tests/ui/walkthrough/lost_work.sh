#!/usr/bin/env bash
# Lost work and stale state (issue #37, items 1-3), by hand in a real X session as walkthrough.sh
# is: Xvfb and openbox, xdotool keys, screenshots with ImageMagick's `import` (README.md beside
# this script says what each shows). Steps: solve tiny_vit and save it as a.rematproj; solve
# more; open mlp answering Save (a.rematproj keeps tiny_vit, mlp opens untitled); solve mlp,
# Ctrl+S asks for a file (b.rematproj); open a file that needs its input sizes and cancel the
# Model Inputs dialog (no old plan stays: empty Plans table, Solve says why); open tiny_vit
# again, solve, save as c.rematproj, open Silero VAD (its If waits for a sample rate: no
# training step) and cancel its Model Inputs dialog.
#   tests/ui/walkthrough/lost_work.sh [BUILD_DIR] [OUT_DIR]
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$HERE/build}
OUT=${2:-$(mktemp -d /tmp/remat-lost-work.XXXXXX)}
DISP=${WALK_DISPLAY:-:7}
MODEL=${WALK_MODEL:-$HERE/resources/models/tiny_vit.onnx}
OTHER=${WALK_OTHER_MODEL:-$HERE/../shared/corpus/with_weights/mlp.onnx}
INPUTS=$HERE/tests/data/realworld/ppocr_mobile_v2_cls.onnx
UNTRAINABLE=$HERE/tests/data/realworld/silero_vad_legacy_ort.onnx
STUDIO=$BUILD/app/remat-studio
WALK_NAME="lost_work"
. "$(dirname "$0")/x_session.sh"
n=0
shot() { # name [wait]
    n=$((n + 1))
    sleep "${2:-0.7}"
    import -window root "$OUT/$(printf '%02d' $n)-$1.png"
    echo "lost_work: $(printf '%02d' $n)-$1.png  title: $(xdotool getactivewindow getwindowname 2>/dev/null)"
}
key() { xdotool key --clearmodifiers "$@"; sleep 0.4; }
type_text() { xdotool type --delay 20 "$1"; sleep 0.3; }
answer_dialog() { sleep 1.5; key ctrl+a; type_text "$1"; key Return; sleep 1; }
main_title() { xdotool getwindowname "$WIN" 2>/dev/null; }

"$STUDIO" "$MODEL" >"$OUT/app.log" 2>&1 &
APP=$!
WIN=""
for _ in $(seq 60); do
    WIN=$(xdotool search --onlyvisible --name "Remat Studio" 2>/dev/null | head -1)
    [ -n "$WIN" ] && break
    sleep 0.5
done
[ -n "$WIN" ] || { echo "lost_work: no window (see $OUT/app.log)" >&2; exit 1; }
xdotool windowmove "$WIN" 0 0 windowsize "$WIN" 1600 960 windowactivate --sync "$WIN"
sleep 2

# 1. Save tiny_vit's session as a.rematproj, then solve more (unsaved again).
key ctrl+r
sleep 3
key ctrl+s
answer_dialog "$OUT/a.rematproj"
shot a-saved 1
key alt+p; key c # Compare all solvers: more plans, unsaved
shot a-more-plans 12
# Open mlp: the app asks; Return is Save (to a.rematproj, the session's file).
key ctrl+o
answer_dialog "$OTHER"
shot switch-asks 1.5
key Return
shot mlp-untitled 4
echo "lost_work: window title after opening mlp: $(main_title)"
# Solve mlp and Ctrl+S: a Save dialog (the session is untitled), not a silent a.rematproj.
key ctrl+r
sleep 3
key ctrl+s
shot save-asks-for-a-file 1.5
answer_dialog "$OUT/b.rematproj"
shot b-saved 1

# 2. A file whose input sizes are open: the Model Inputs dialog; Cancel it.
key ctrl+o
answer_dialog "$INPUTS"
shot inputs-dialog 4
key Escape
shot inputs-cancelled 2
key ctrl+r
shot solve-says-why 2

# 3. tiny_vit again, a plan, then Silero VAD (no training step until its sample rate is given).
key ctrl+o
answer_dialog "$MODEL"
sleep 3
key ctrl+r
sleep 3
key ctrl+s # untitled again: a Save dialog
answer_dialog "$OUT/c.rematproj"
shot c-saved 1
key ctrl+o
answer_dialog "$UNTRAINABLE"
shot untrainable-dialog 4
key Escape # its Model Inputs dialog (the sample rate)
shot untrainable-opened 2
key ctrl+r
shot untrainable-solve 2

grep -o '"path": *"[^"]*onnx"' "$OUT/a.rematproj" | head -1 | sed 's/^/lost_work: a.rematproj /'
grep -o '"path": *"[^"]*onnx"' "$OUT/b.rematproj" | head -1 | sed 's/^/lost_work: b.rematproj /'
grep -o '"path": *"[^"]*onnx"' "$OUT/c.rematproj" | head -1 | sed 's/^/lost_work: c.rematproj /'
echo "lost_work: screenshots in $OUT"
