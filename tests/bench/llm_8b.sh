#!/usr/bin/env bash
# The 8B fine-tuning question at its own size (tests/bench/llm_8b.md): Llama-3-8B from its config
# (resources/configs/llama-3-8b.json) at sequence 4096, batch 1; wall times of each stage. A
# benchmark, never a timed test. Usage: bash tests/bench/llm_8b.sh [build/app/remat] [OUTDIR]
set -euo pipefail
REMAT="${1:-build/app/remat}"
OUT="${2:-$(mktemp -d)}"
M="$OUT/llama-3-8b-s4096.onnx"
# Wall and CPU (user + sys) seconds: the helper machine is shared, so wall overstates the time.
t() {
    /usr/bin/time -f '%e %U %S' -o "$OUT/time" "$@" >"$OUT/last.log" 2>&1 || true
    read -r wall user sys <"$OUT/time"
    printf '%-90s %6.2f s wall %6.2f s cpu\n' "$*" "$wall" "$(echo "$user + $sys" | bc)"
    tail -n "${TAIL:-0}" "$OUT/last.log"
}
t "$REMAT" make-decoder --config resources/configs/llama-3-8b.json --seq 4096 --out "$M"
t "$REMAT" info "$M" --attention sdpa
for a in eager sdpa; do
    TAIL=4 t "$REMAT" train-graph "$M" --attention "$a" --precision bf16-mixed --optimizer adamw
done
TAIL=4 t "$REMAT" solve "$M" --solver chen-sqrtn --attention sdpa --precision bf16-mixed --optimizer adamw
for set in "--attention eager --precision bf16-mixed --optimizer adamw" \
           "--attention sdpa --precision bf16-mixed --optimizer adamw" \
           "--attention sdpa --precision bf16-mixed --optimizer adamw --shard zero3 --ranks 8" \
           "--attention sdpa --precision bf16-true --optimizer adamw --shard zero2 --ranks 8" \
           "--attention sdpa --precision bf16-mixed --optimizer adamw --trainable (q|v)_proj"; do
    # shellcheck disable=SC2086
    TAIL=4 t "$REMAT" fit "$M" --device 80gb --solver chen-sqrtn $set
done
# The interactive defaults (--search-limit 2 per solver), then four settings, then no limit.
for lim in "--compare" "--solver chen-sqrtn --solver rotor --solver chen-greedy" \
           "--compare --search-limit 0 --time-limit 60"; do
    # shellcheck disable=SC2086
    TAIL=12 t "$REMAT" fit "$M" --memory 80GiB --attention sdpa --precision bf16-mixed \
        --optimizer adamw --shard zero3 --ranks 8 $lim
done
