#!/usr/bin/env bash
# Builds and runs every benchmark in tests/bench/ and prints their tables.
#   bash scripts/bench.sh            # all
#   bash scripts/bench.sh layout sim # only bench_layout and bench_sim
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --target bench >/dev/null
shopt -s nullglob
names=("$@")
if [ "${#names[@]}" -eq 0 ]; then
    for f in tests/bench/bench_*.cpp; do n=$(basename "$f" .cpp); names+=("${n#bench_}"); done
fi
for n in "${names[@]}"; do
    exe=build/tests/bench/bench_$n
    [ -x "$exe" ] || { echo "no benchmark bench_$n"; continue; }
    echo "=== bench_$n ==="
    "$exe"
    echo
done
