#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds everything and runs the whole test suite.
# GPU tests (label "gpu") skip cleanly without a device; GUI tests run offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Unformatted code fails CI before anything is built (.clang-format, clang-format 14).
bash scripts/check_format.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
(cd build && ctest --output-on-failure -j "${REMAT_JOBS:-$(nproc)}" "$@")
# Every reader survives anything: a short libFuzzer pass per harness (docs/readers.md).
# REMAT_FUZZ_SECONDS per harness, default 5 (0 skips it; a longer run: REMAT_FUZZ_SECONDS=60, or
# scripts/fuzz.sh for a campaign). The harnesses run side by side, one per core; the regression
# inputs are replayed by ctest (fuzz/tst_replay) whatever the time.
if [ "${REMAT_FUZZ_SECONDS:-5}" -gt 0 ]; then
    REMAT_FUZZ_PARALLEL="${REMAT_FUZZ_PARALLEL:-${REMAT_JOBS:-$(nproc)}}" bash scripts/fuzz.sh "${REMAT_FUZZ_SECONDS:-5}"
fi
