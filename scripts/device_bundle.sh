#!/usr/bin/env bash
# Packs what the GPU checks need into device-bundle/ (git-ignored) for a machine that has the CUDA
# toolkit and driver but none of our Debian packages: the Qt-widget-free binaries (remat, the
# gpu-labelled tests, bench_gpu), stripped; the shared libraries ldd lists outside the CUDA toolkit
# and the C runtime; the corpus files the checks read; and device-bundle/check.sh, which runs them.
# Usage: bash scripts/device_bundle.sh [build-dir]      (build it first: scripts/build.sh)
#        REMAT_BUNDLE_MODELS="mlp tiny_vit" bash scripts/device_bundle.sh ...   packs only those corpus
#        models with weights (the tree that travels is capped at 64 MiB; mobilenet_v2_b2_64 alone
#        is about 30 MiB of it)
#        then on the GPU machine: bash device-bundle/check.sh OUTDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shared="${REMAT_SHARED_DIR:-$root/../shared}"
out="$root/device-bundle"

# The GPU machine is an H100/H200 (sm_90): the build must carry that architecture (the default
# where the building machine has no GPU; gpu/CMakeLists.txt).
archs="$(sed -n 's/^REMAT_CUDA_ARCHITECTURES:STRING=//p' "$build/CMakeCache.txt")"
if [[ ";$archs;" != *";90;"* ]]; then
    echo "device_bundle: $build builds the CUDA module for '$archs', not 90 (H100/H200):" \
        "reconfigure with -DREMAT_CUDA_ARCHITECTURES=90" >&2
    exit 2
fi
cmake --build "$build" --target remat gpu_tst_cuda_ops gpu_tst_cuda_models gpu_tst_cuda_optimizer \
    gpu_tst_cuda_attention gpu_tst_cuda_half bench_gpu \
    bench_profile -j"$(nproc)"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/shared/corpus/with_weights" "$out/shared/corpus/graph_only"
bins=("$build/app/remat" "$build/tests/gpu_tst_cuda_ops" "$build/tests/gpu_tst_cuda_models"
      "$build/tests/gpu_tst_cuda_optimizer" "$build/tests/gpu_tst_cuda_attention"
      "$build/tests/gpu_tst_cuda_half" "$build/tests/bench/bench_gpu"
      "$build/tests/bench/bench_profile" "$build/app/libremat_cuda.so")
for b in "${bins[@]}"; do
    strip --strip-debug -o "$out/bin/$(basename "$b")" "$b"
done
# The CUDA module (libremat_cuda.so) stays in bin/ beside remat, where it looks for it; the gpu
# tests link it and find it through check.sh's LD_LIBRARY_PATH.
# Libraries: everything ldd resolves except the CUDA toolkit's (the device has its own), the driver
# and the C runtime, whose newer versions there stay compatible.
for b in "${bins[@]}"; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/usr/local/cuda|libcuda\.so|libremat_cuda\.so|/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done
ww="$shared/corpus/with_weights"
models="${REMAT_BUNDLE_MODELS:-$(cd "$ww" && ls *.onnx | sed 's/\.onnx$//' | tr '\n' ' ')}"
for m in $models; do
    cp "$ww/$m.onnx" "$ww/$m.f64.npz" "$out/shared/corpus/with_weights/"
    # The feed without the PyTorch float32 gradients the checks do not read (see device_feed.py).
    python3 "$root/scripts/device_feed.py" "$ww/$m.npz" "$ww/$m.f64.npz" "$out/shared/corpus/with_weights/$m.npz"
done
cp "$shared"/corpus/graph_only/*.onnx "$out/shared/corpus/graph_only/"
cp "$shared"/corpus/*.json "$out/shared/corpus/"
cp "$root/scripts/device_check.sh" "$out/check.sh"
# The tree that travels is capped at 64 MiB: send one compressed archive.
tar -C "$root" -cf - device-bundle | xz -T0 -9 > "$root/device-bundle.tar.xz.tmp"
rm -rf "$out"
mkdir -p "$out"
mv "$root/device-bundle.tar.xz.tmp" "$out/bundle.tar.xz"
du -h "$out/bundle.tar.xz"
