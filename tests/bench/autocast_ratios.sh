#!/usr/bin/env bash
# What autograd saves for backward at training sizes, PyTorch 1.13 on the CPU against
# `remat train-graph MODEL --json` (saved_for_backward_bytes): float32, under
# torch.autocast("cpu", bfloat16) against `--precision bf16-mixed --autocast-device cpu`, and with
# only the head trainable (`--trainable REGEX`), as tests/bench/autocast_ratios.md tabulates them.
# Each row is one `remat_oracle.py check` (one forward, saved_tensors_hooks, by storage); about
# 10 minutes and 3 GB of memory on one core.
# Usage: bash tests/bench/autocast_ratios.sh [build/app/remat] > rows.md
set -euo pipefail
cd "$(dirname "$0")/../.."
REMAT="$(realpath "${1:-build/app/remat}")"
PY=/usr/bin/python3 # torch 1.13 and torchvision
NETS=tests/python/autocast_rnn_nets.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# saved MODEL INPUT FLAGS... -> "torch_bytes ours_bytes"
saved() {
    local model=$1 input=$2
    shift 2
    OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore "$PY" resources/python/remat_oracle.py check "$model" \
        --input "$input" --remat "$REMAT" --summary "$TMP/s.json" "$@" >/dev/null || true
    "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["torch_saved_activation_bytes"], r["ours_saved_bytes"])' "$TMP/s.json"
}
pct() { "$PY" -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{100*a/b:.4g}%' if b else '-')" "$1" "$2"; }
err() { "$PY" -c "import sys; t,o=float(sys.argv[1]),float(sys.argv[2]); print(f'{100*(o-t)/t:+.4f}%')" "$1" "$2"; }
echo "| network | input | fp32 PyTorch B | fp32 ours B | err | bf16-mixed PyTorch B | ours B | err | bf16 / fp32 PyTorch | ours | head-only PyTorch B | ours B | err | head / full PyTorch | ours |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
while read -r name model input head; do
    read -r ft fo <<<"$(saved "$model" "$input")"
    read -r bt bo <<<"$(saved "$model" "$input" --autocast bf16 --device cpu)"
    read -r ht ho <<<"$(saved "$model" "$input" --trainable "$head")"
    echo "| $name | $input | $ft | $fo | $(err "$ft" "$fo") | $bt | $bo | $(err "$bt" "$bo") |" \
        "$(pct "$bt" "$ft") | $(pct "$bo" "$fo") | $ht | $ho | $(err "$ht" "$ho") | $(pct "$ht" "$ft") | $(pct "$ho" "$fo") |"
done <<ROWS
resnet50 resnet50 8x3x224x224 ^fc\.
vit_b_16 vit_b_16 4x3x224x224 ^heads\.
GPT2Decoder $NETS:GPT2Decoder 2x512:int64:50257 ^lm_head\.
ROWS
