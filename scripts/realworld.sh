#!/usr/bin/env bash
# Runs remat on every real-world ONNX file in tests/data/realworld (files from other exporters:
# paddle2onnx, tf2onnx, spox, onnxruntime-saved, torch.onnx 1.11-2.9; see its README.md) and
# prints one markdown table: file | info | train-graph | solve | run --check | first error line.
#
#   bash scripts/realworld.sh [REMAT_BINARY]        (default: build/app/remat, then ../main/build/app/remat)
#
# Environment: REMAT_RW_TIMEOUT (seconds per command, default 120), REMAT_RW_LOGS (folder for the
# full output of every command, default a temporary folder, printed at the end), REMAT_RW_ONLY
# (a substring: only files whose name contains it).
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
data="$here/tests/data/realworld"
remat="${1:-}"
if [[ -z "$remat" ]]; then
  for c in "$here/build/app/remat" "$here/../main/build/app/remat"; do
    [[ -x "$c" ]] && { remat="$c"; break; }
  done
fi
[[ -n "$remat" && -x "$remat" ]] || { echo "usage: $0 REMAT_BINARY (no remat binary found)" >&2; exit 2; }
limit="${REMAT_RW_TIMEOUT:-120}"
logs="${REMAT_RW_LOGS:-$(mktemp -d /tmp/remat-realworld.XXXXXX)}"
mkdir -p "$logs"

# Per-file import settings: the sizes (and sample rate) the shipping package feeds the model,
# as --batch / --dim / --input-shape / --input-value (see README.md, "The remat CLI").
declare -A args
args[gru_classifier_torch113]="--batch 2 --dim frames=50"
args[hello_deepa]=""   # fully static 1x25x96
args[swin_t_torch113]=""   # static 2x3x224x224 (graph only: run --check refuses, no weights)
args[oww_embedding_tf2onnx]="--dim unk__314=1"   # NHWC 1x76x32x1
args[oww_melspectrogram]="--batch 1 --dim samples=1280"   # 80 ms at 16 kHz
args[ppocr_mobile_v2_cls]="--input-shape x=1x3x48x192"   # PaddleOCR cls_image_shape
args[ppocrv4_det]="--input-shape x=1x3x640x640"   # sides multiple of 32
args[silero_vad_16k_op15]="--batch 1 --dim sequence=576 --input-value sr=16000"   # 64 context + 512
args[silero_vad_half]="--batch 1 --dim sequence=576"   # 16 kHz only, no sr input
args[silero_vad_legacy_ort]="--batch 1 --dim sequence=512 --input-value sr=16000"
args[silero_vad_op18_ifless]="--batch 1 --dim sequence=576 --input-value sr=16000"
args[silero_vad_v5_spox]="--input-shape input=1x576 --input-shape state=2x1x128 --input-value sr=16000"   # dims unnamed
args[silero_vad_v6_spox]="--input-shape input=1x576 --input-shape state=2x1x128 --input-value sr=16000"   # dims unnamed

cell() {  # cell NAME CMD... : runs, writes the log, prints "ok" / "FAIL (rc)" and sets $firsterr
  local log="$1"; shift
  timeout "$limit" nice "$@" >"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]]; then echo "ok"
  elif [[ $rc -eq 124 ]]; then echo "timeout"
  elif [[ $rc -ge 128 ]]; then echo "crash ($rc)"
  else echo "FAIL ($rc)"; fi
}

firsterror() {  # the first line that looks like an error, else the last line
  local log="$1" line
  line="$(grep -m1 -iE 'error|fail|unsupported|cannot|missing|mismatch|abort|terminate' "$log" || true)"
  [[ -z "$line" ]] && line="$(tail -n1 "$log")"
  line="${line//$data\//}"
  line="${line//|/\\|}"
  echo "${line:0:300}"
}

echo "| file | info | train-graph | solve | run --check | first error line |"
echo "|---|---|---|---|---|---|"
for f in "$data"/*.onnx; do
  name="$(basename "$f" .onnx)"
  [[ -n "${REMAT_RW_ONLY:-}" && "$name" != *"$REMAT_RW_ONLY"* ]] && continue
  # shellcheck disable=SC2206
  a=(${args[$name]-})
  ri="$(cell "$logs/$name.info.log" "$remat" info "$f" "${a[@]}")"
  rt="$(cell "$logs/$name.train.log" "$remat" train-graph "$f" "${a[@]}")"
  rs="$(cell "$logs/$name.solve.log" "$remat" solve "$f" --compare --time-limit 5 "${a[@]}")"
  rr="$(cell "$logs/$name.run.log" "$remat" run "$f" --check "${a[@]}")"
  err=""
  for s in info train solve run; do
    l="$logs/$name.$s.log"
    case "$s" in info) r=$ri;; train) r=$rt;; solve) r=$rs;; run) r=$rr;; esac
    if [[ "$r" != ok ]]; then err="$s: $(firsterror "$l")"; break; fi
  done
  # run --check succeeded but the gradients differ: say so
  if [[ -z "$err" ]] && grep -qiE 'mismatch|differ|FAILED' "$logs/$name.run.log"; then
    err="run: $(firsterror "$logs/$name.run.log")"
  fi
  echo "| $name${args:+ \`$args\`} | $ri | $rt | $rs | $rr | ${err:--} |"
done
echo
echo "logs: $logs"
