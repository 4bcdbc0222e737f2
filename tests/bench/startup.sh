#!/usr/bin/env bash
# Whole-process start-up of the CLI (issue 35): wall time (median of N runs) and peak RSS
# (/usr/bin/time -v) of `remat --help`, `remat info` on ViT-B/16 and a Feng & Huang solve of
# ResNet-152 at batch 16; with --studio also remat-studio's open-to-first-frame on the sample and
# DenseNet-201 (offscreen, REMAT_TIME_FIRST_FRAME). Prints a Markdown table (tests/bench/startup.md).
#   bash tests/bench/startup.sh [--bin build/app] [--runs 5] [--models DIR] [--studio] [--eager-cuda]
# --eager-cuda preloads libcudart, libcublas(Lt) and libcudnn into each measured process, as a
# build that links the CUDA backend into the executables did (the "before" of issue 35 for
# remat-studio, whose old binary has no first-frame timer).
# DIR holds resnet152_b16.onnx and densenet201_b16.onnx (exported as ../shared/corpus/README.md
# says: torchvision, training mode, opset 17, batch 16); rows whose model is missing are skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/app
RUNS=5
MODELS=""
STUDIO=0
PRE=()
SHARED="${REMAT_SHARED_DIR:-$(cd .. && pwd)/shared}"
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --studio) STUDIO=1; shift ;;
    --eager-cuda)
        cudalib=/usr/local/cuda/lib64
        PRE=(env "LD_PRELOAD=$cudalib/libcudart.so $cudalib/libcublas.so $cudalib/libcublasLt.so $cudalib/libcudnn.so")
        shift ;;
    *) echo "usage: $0 [--bin DIR] [--runs N] [--models DIR] [--studio]" >&2; exit 2 ;;
    esac
done
[ -x "$BIN/remat" ] || { echo "no $BIN/remat: build it first (scripts/build.sh --target remat)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# median of the numbers on stdin
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# measure CMD...: one run; prints "wall_ms cpu_ms maxrss_kib" (wait4's rusage, as /usr/bin/time -v
# reads it; the CPU time says what the wall time is on an idle machine when the cores are shared).
measure() {
    /usr/bin/python3 -c '
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = (time.perf_counter() - t0) * 1000
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
print(f"{wall:.1f} {cpu:.1f} {r1.ru_maxrss}")' "$@"
}

# row LABEL TARGET_MS TARGET_MIB CMD...: runs CMD RUNS times (after one warm-up run), prints
# "| label | wall ms | cpu ms | MiB | target |" with the medians.
row() {
    local label="$1" tms="$2" tmib="$3"
    shift 3
    "${PRE[@]}" "$@" >/dev/null 2>&1 || { echo "| $label | failed: $* | | | |"; return; }
    : >"$TMP/m"
    for _ in $(seq "$RUNS"); do measure "${PRE[@]}" "$@" >>"$TMP/m"; done
    printf '| %s | %s | %s | %.1f | <= %s ms%s |\n' "$label" "$(cut -d' ' -f1 "$TMP/m" | median)" \
        "$(cut -d' ' -f2 "$TMP/m" | median)" "$(echo "$(cut -d' ' -f3 "$TMP/m" | median) / 1024" | bc -l)" \
        "$tms" "${tmib:+, <= $tmib MiB}"
}

echo "| process | wall ms | CPU ms | peak RSS MiB | target |"
echo "|---|---|---|---|---|"
row "remat --help" 20 30 "$BIN/remat" --help
VIT="$SHARED/corpus/graph_only/vit_b_16.onnx"
if [ -f "$VIT" ]; then row "remat info vit_b_16" 60 "" "$BIN/remat" info "$VIT"; fi
if [ -n "$MODELS" ] && [ -f "$MODELS/resnet152_b16.onnx" ]; then
    row "remat solve resnet152_b16 --solver feng-huang" 60 "" \
        "$BIN/remat" solve "$MODELS/resnet152_b16.onnx" --solver feng-huang
fi

# remat-studio: launch to the first paint of the opened model's graph (REMAT_TIME_FIRST_FRAME=exit
# prints the wall clock of that paint, then quits), offscreen, median of RUNS; the CPU time and
# peak RSS are the whole process's, which ends right after that frame.
frame_row() {
    local label="$1" target="$2" model="$3"
    : >"$TMP/m"
    for i in $(seq $((RUNS + 1))); do
        # prints "open-to-first-frame_ms cpu_ms maxrss_kib"; the process exits after that frame
        QT_QPA_PLATFORM=offscreen REMAT_TIME_FIRST_FRAME=exit /usr/bin/python3 -c '
import re, resource, subprocess, sys, time
t0 = time.time()
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
m = re.search(r"^first frame: .* at (\d+) us$", p.stdout, re.M)
if not m:
    sys.exit(1)
cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
print(f"{int(m.group(1)) / 1000 - t0 * 1000:.1f} {cpu:.1f} {r1.ru_maxrss}")' \
            "${PRE[@]}" "$BIN/remat-studio" "$model" >"$TMP/one" ||
            { echo "| $label | no first frame ($BIN/remat-studio $model) | | | |"; return; }
        [ "$i" = 1 ] || cat "$TMP/one" >>"$TMP/m" # the first run warms the page cache
    done
    printf '| %s | %s | %s | %.1f | <= %s ms |\n' "$label" "$(cut -d' ' -f1 "$TMP/m" | median)" \
        "$(cut -d' ' -f2 "$TMP/m" | median)" "$(echo "$(cut -d' ' -f3 "$TMP/m" | median) / 1024" | bc -l)" "$target"
}
if [ "$STUDIO" = 1 ] && [ -x "$BIN/remat-studio" ]; then
    frame_row "remat-studio tiny_vit.onnx, first frame" 300 resources/models/tiny_vit.onnx
    if [ -n "$MODELS" ] && [ -f "$MODELS/densenet201_b16.onnx" ]; then
        frame_row "remat-studio densenet201_b16, first frame" 500 "$MODELS/densenet201_b16.onnx"
    fi
fi
