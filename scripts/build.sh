#!/usr/bin/env bash
# Configures and builds Remat Studio into build/ (Ninja, ccache). Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED_DIR="${REMAT_SHARED_DIR:-$(cd .. && pwd)/shared}"
JOBS="${REMAT_JOBS:-$(nproc)}"
# Let ccache share objects between checkouts in different folders (CI builds a fresh clone).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# The test executables use precompiled headers: ccache caches those compiles only with these.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
EXTRA=()
# CI has no GPU and only has to prove the CUDA code compiles: one architecture is enough.
if [ "${CI:-}" = "true" ]; then EXTRA+=(-DREMAT_CUDA_ARCHITECTURES=90); fi
if [ ! -f build/build.ninja ]; then
    cmake --preset default -DREMAT_SHARED_DIR="$SHARED_DIR" "${EXTRA[@]}" >/dev/null
fi
cmake --build build -j "$JOBS" "$@"
