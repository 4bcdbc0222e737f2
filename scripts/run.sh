#!/usr/bin/env bash
# Sets up, builds and runs the main job on the bundled sample model: the app when a display is
# there; otherwise the headless pipeline and a screenshot of the main window rendered offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Only what the main job runs: the CLI, the app and the CUDA module they open (no test suites:
# scripts/test.sh builds those).
bash scripts/build.sh --target remat remat-studio
SAMPLE=resources/models/tiny_vit.onnx
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec build/app/remat-studio "$SAMPLE"
fi
echo "== no display: headless pipeline on $SAMPLE =="
set -x
build/app/remat info "$SAMPLE"
build/app/remat train-graph "$SAMPLE"
build/app/remat solve "$SAMPLE" --compare --time-limit 10
build/app/remat run "$SAMPLE" --backend cpu --check
mkdir -p out
# The window as a user sees it after one Solve: the plan's keep / recompute colours on the graph
# (collapsed attention blocks carry a summary bar), the plan table and its memory chart.
QT_QPA_PLATFORM=offscreen build/app/remat-studio "$SAMPLE" --solve hong-dp --collapse-depth 3 \
    --screenshot out/main-window.png
set +x
echo "screenshot written to out/main-window.png"
