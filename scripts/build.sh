#!/usr/bin/env bash
# Configures and builds Remat Studio into build/ (Ninja, ccache). Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED_DIR="${REMAT_SHARED_DIR:-$(cd .. && pwd)/shared}"
JOBS="${REMAT_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
    cmake --preset default -DREMAT_SHARED_DIR="$SHARED_DIR" >/dev/null
fi
cmake --build build -j "$JOBS" "$@"
