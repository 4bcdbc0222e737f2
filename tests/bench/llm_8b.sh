#!/usr/bin/env bash
# The 8B fine-tuning question at its own size (tests/bench/llm_8b.md): Llama-3-8B from its config
# (resources/configs/llama-3-8b.json) at sequence 4096, batch 1; wall times of each stage. A
# benchmark, never a timed test. Usage: bash tests/bench/llm_8b.sh [build/app/remat] [OUTDIR]
set -euo pipefail
REMAT="${1:-build/app/remat}"
OUT="${2:-$(mktemp -d)}"
M="$OUT/llama-3-8b-s4096.onnx"
t() { local s e; s=$(date +%s.%N); "$@" >"$OUT/last.log" 2>&1 || true; e=$(date +%s.%N); printf '%-90s %6.2f s\n' "$*" "$(echo "$e - $s" | bc)"; tail -n "${TAIL:-0}" "$OUT/last.log"; }
t "$REMAT" make-decoder --config resources/configs/llama-3-8b.json --seq 4096 --out "$M"
t "$REMAT" info "$M" --attention sdpa
for a in eager sdpa; do
    TAIL=4 t "$REMAT" train-graph "$M" --attention "$a" --precision bf16-mixed --optimizer adamw
done
TAIL=4 t "$REMAT" solve "$M" --solver chen-sqrtn --attention sdpa --precision bf16-mixed --optimizer adamw
for set in "--attention eager --precision bf16-mixed --optimizer adamw" \
           "--attention sdpa --precision bf16-mixed --optimizer adamw" \
           "--attention sdpa --precision bf16-mixed --optimizer adamw --shard zero3 --ranks 8" \
           "--attention sdpa --precision bf16 --optimizer adamw --shard zero2 --ranks 8"; do
    # shellcheck disable=SC2086
    TAIL=4 t "$REMAT" fit "$M" --device 80gb --solver chen-sqrtn $set
done
TAIL=12 t "$REMAT" fit "$M" --memory 80GiB --compare --attention sdpa --precision bf16-mixed \
    --optimizer adamw --shard zero3 --ranks 8 --time-limit 5
