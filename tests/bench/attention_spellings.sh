#!/usr/bin/env bash
# Saved-for-backward bytes of the exporters' attention spellings (tests/data/attention, written by
# tests/python/attention_spellings.py), eager vs sdpa, as tests/bench/attention_spellings.md
# tabulates them; tests/training/tst_attention_fusion checks the same figures against the hand
# count. Usage: bash tests/bench/attention_spellings.sh [build/app/remat]
set -euo pipefail
cd "$(dirname "$0")/../.."
REMAT="${1:-build/app/remat}"
saved() { "$REMAT" train-graph "$1" --attention "$2" | sed -n 's/.*saved_for_backward_bytes.*(\([0-9]*\) B).*/\1/p'; }
echo "| network | spelling | eager B | sdpa B | (eager - sdpa) / layer |"
echo "|---|---|---:|---:|---:|"
for style in gpt2 llama; do
    for spelling in ref dynamo tf2onnx tf2onnx_mulmask ort ortattn onnx23; do
        [ -f tests/data/attention/${style}_${spelling}.onnx ] || continue
        f=tests/data/attention/${style}_${spelling}.onnx
        e=$(saved "$f" eager)
        s=$(saved "$f" sdpa)
        echo "| $style | $spelling | $e | $s | $(((e - s) / 2)) |"
    done
done
