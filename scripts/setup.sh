#!/usr/bin/env bash
# Installs every Debian package Remat Studio needs to build, test and run.
# Idempotent; runs as root with no prompt (uses sudo when not root).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
    build-essential cmake ninja-build ccache pkg-config git lld
    clang libclang-rt-14-dev clang-format
    qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev libvulkan-dev
    libprotobuf-dev protobuf-compiler libonnx-dev
    coinor-libcbc-dev
    nlohmann-json3-dev libcli11-dev libfmt-dev
    libopenblas-dev zlib1g-dev libssl-dev
    xvfb xauth
    python3 python3-numpy python3-torch python3-torchvision python3-onnx
)

# Only touch apt when something is missing, so a second run is fast.
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"
