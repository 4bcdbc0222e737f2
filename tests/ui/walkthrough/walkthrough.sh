#!/usr/bin/env bash
# A walk through Remat Studio as a new user takes it, in a real X session: Xvfb and openbox
# (Debian packages xvfb, openbox), driven with xdotool, screenshots with ImageMagick's `import`.
# Not run by CI: a person looks at the screenshots (README.md beside this script says what each
# should show). The nine scenarios of issue 37: browse (open, search, expand, collapse), teach
# (solve, compare all, overlay, the Schedule tab's stepper), override (pin from the graph's context
# menu, undo / redo), run (on the CPU with a Stop), sessions and export (plan JSON, save, switch
# models: the app asks first, reopen), will it fit (largest batch), side by side (Open Beside),
# bring your own file (a PaddleOCR file's Model Inputs dialog), keyboard and bad input (a file that
# is not a model, the shortcuts list, search by keyboard, the window at 1080x700 and 1366x768).
#   tests/ui/walkthrough/walkthrough.sh [BUILD_DIR] [OUT_DIR]
#   apt-get install xvfb openbox xdotool imagemagick x11-utils
# Environment: WALK_DISPLAY (default :7), WALK_MODEL (default the bundled tiny_vit),
# WALK_OTHER_MODEL (the model switched to; default ../shared/corpus/with_weights/mlp.onnx),
# WALK_OWN_MODEL (the "bring your own file" model; default tests/data/realworld's PaddleOCR
# direction classifier).
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$HERE/build}
OUT=${2:-$(mktemp -d /tmp/remat-walkthrough.XXXXXX)}
DISP=${WALK_DISPLAY:-:7}
MODEL=${WALK_MODEL:-$HERE/resources/models/tiny_vit.onnx}
OTHER=${WALK_OTHER_MODEL:-$HERE/../shared/corpus/with_weights/mlp.onnx}
OWN=${WALK_OWN_MODEL:-$HERE/tests/data/realworld/ppocr_mobile_v2_cls.onnx}
STUDIO=$BUILD/app/remat-studio
WALK_NAME="walkthrough"
. "$(dirname "$0")/x_session.sh"
n=0
shot() { # name: a screenshot of the whole screen
    n=$((n + 1))
    sleep "${2:-0.7}"
    import -window root "$OUT/$(printf '%02d' $n)-$1.png"
    echo "walkthrough: $(printf '%02d' $n)-$1.png"
}
key() { xdotool key --clearmodifiers "$@"; sleep 0.4; }
type_text() { xdotool type --delay 20 "$1"; sleep 0.3; }
# Clicks at a screen point. The window is placed at 0,0 at 1600x960 with a fresh settings folder,
# so the default dock layout puts each control at a known place (override with WALK_* variables).
click_xy() { # x y [button]
    xdotool mousemove "$1" "$2" click "${3:-1}"
    sleep 0.5
}
# A file dialog is open: type the path and accept.
answer_dialog() { sleep 1; key ctrl+a; type_text "$1"; key Return; sleep 1; }

"$STUDIO" "$MODEL" >"$OUT/app.log" 2>&1 &
APP=$!
WIN=""
for _ in $(seq 60); do
    WIN=$(xdotool search --onlyvisible --name "Remat Studio" 2>/dev/null | head -1)
    [ -n "$WIN" ] && break
    sleep 0.5
done
[ -n "$WIN" ] || { echo "walkthrough: no window (see $OUT/app.log)" >&2; exit 1; }
xdotool windowmove "$WIN" 0 0 windowsize "$WIN" 1600 960 windowactivate --sync "$WIN"
shot open 2

# Browse: search, expand everything, collapse again.
key ctrl+f; type_text "Softmax"; key Return
shot search
key Escape
key alt+v; key e
shot expanded 1.5
key alt+v; key c
shot collapsed 1.5

# Solve (Planner > Solve) and compare every solver.
key ctrl+r
shot solved 3
key alt+p; key c
shot compare 20
# The offload plan (the row above the last): its copy stalls, if any, marked on its memory curve.
click_xy "${WALK_ROW_X:-80}" "${WALK_OFFLOAD_ROW_Y:-884}"
shot offload-plan 1.5
# Several plans at once: select feng-huang's row, Ctrl+click chen-sqrtn's and rotor's: the memory
# chart overlays their curves on the current plan's.
click_xy "${WALK_ROW_X:-80}" "${WALK_ROW4_Y:-791}"
for y in "${WALK_ROW2_Y:-747}" "${WALK_ROW7_Y:-857}"; do
    xdotool keydown ctrl mousemove "${WALK_ROW_X:-80}" "$y" click 1 keyup ctrl
    sleep 0.5
done
shot overlay 1.5
# The Pareto tab: every compared plan a point (the best starred, dominated ones dimmed, the
# current plan in a hollow square); a click on one selects its row. Then back to the Memory tab.
# (Named 08b so the numbers below stay.)
click_xy "${WALK_PARETO_TAB_X:-741}" "${WALK_TABS_Y:-918}"
sleep 1
import -window root "$OUT/08b-pareto-plans.png" && echo "walkthrough: 08b-pareto-plans.png"
click_xy "${WALK_MEMORY_TAB_X:-673}" "${WALK_TABS_Y:-918}"

# Pin from the graph: right-click the middle of the graph, take the menu's first entry.
click_xy "${WALK_GRAPH_X:-599}" "${WALK_GRAPH_Y:-446}" 3
shot context-menu
key Down; key Return
shot pinned 2
key ctrl+z
shot undone 1.5
key ctrl+shift+z
shot redone 1.5

# Step through: the Schedule tab (teaching view), then three steps forward. (Coordinates: the
# default layout at 1600x960; the graph point is the LayerNormalization box at collapse depth 1.)
click_xy "${WALK_SCHEDULE_TAB_X:-812}" "${WALK_TABS_Y:-918}"
shot schedule 1.5
for _ in 1 2 3; do key Right; done
shot stepped

# Run on the CPU, then Stop it. (The Schedule tab took two thirds of the bottom width from the
# Plans table: the tabs and the Run panel sit further left than the Plans table alone leaves them.)
click_xy "${WALK_RUN_TAB_X:-738}" "${WALK_TABS_Y:-918}"
shot run-tab
click_xy "${WALK_RUN_BUTTON_X:-544}" "${WALK_RUN_BUTTON_Y:-604}"
sleep 0.3
click_xy "${WALK_STOP_BUTTON_X:-629}" "${WALK_RUN_BUTTON_Y:-604}"
shot run-stopped 2

# Export the plan (File > Export > Plan JSON), save the session (Ctrl+S).
key alt+f; key e; key j
answer_dialog "$OUT/plan.json"
shot exported
key ctrl+s
answer_dialog "$OUT/walk.rematproj"
shot saved

# Switch models: the app asks before the solved plans go.
key ctrl+o
answer_dialog "$OTHER"
shot switch-asks 1.5
key Return
shot switched 3

# Reopen the session: the first model, its plans and pins come back.
key ctrl+shift+o
answer_dialog "$OUT/walk.rematproj"
shot session-reopened 4

# Will it fit: Planner > Largest batch for this GPU (the dialog, then its search run with Return).
key alt+p; key l
shot fit-dialog 1.5
key Return
shot fit-searched 8
key Escape

# Side by side: File > Open Beside with the other model.
key alt+f; key b
answer_dialog "$OTHER"
shot beside 4

# Bring your own file: a PaddleOCR classifier (its input sizes are open: the Model Inputs dialog
# proposes them), accepted with Return, then solved.
key ctrl+o
answer_dialog "$OWN"
shot own-inputs-dialog 3
key Return
shot own-opened 4
key Return # the unsaved-session question, if any, is answered by the default (Save)
key ctrl+r
shot own-solved 4

# Keyboard and bad input: a file that is not a model (a clear error, before any save question),
# the shortcuts list, search by keyboard, the window at 1080x700 (the graph keeps its share).
key ctrl+o
answer_dialog "$HERE/README.md"
shot bad-file 2
key Return
key alt+h; key k
shot shortcuts 1.5
key Escape
key ctrl+f; type_text "Conv"; key Return
shot keyboard-search 1
key Escape
xdotool windowsize "$WIN" 1080 700
shot small-window 2
xdotool windowsize "$WIN" 1366 768
shot laptop-window 2
ls "$OUT"/plan.json "$OUT"/walk.rematproj 2>/dev/null
echo "walkthrough: screenshots in $OUT"
