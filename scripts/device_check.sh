#!/usr/bin/env bash
# Runs on the GPU machine over the bundle scripts/device_bundle.sh made: the gpu-labelled tests,
# `remat run --backend cuda` on every corpus model with weights (store-all and three plans, the
# gradients dumped and compared with PyTorch's float64 references), and bench_gpu on resnet50 b32.
# Every step has its own time limit and log, so one failure does not hide the rest.
# Usage: bash device-bundle/check.sh OUTDIR [STEPS...]   (steps: env ops models run bench; default all)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:?usage: check.sh OUTDIR [steps]}"
shift
steps="${*:-env ops models run bench}"
# Logs gather in one folder and come back as one archive (the device returns few files).
out="$(mktemp -d)"
trap 'tar -C "$out" -czf "$dest/logs.tgz" --exclude="*.npz" .' EXIT
if [[ -f "$here/bundle.tar.xz" && ! -d "$here/bin" ]]; then
    tar -C "$here/.." -xJf "$here/bundle.tar.xz"
fi
bin="$here/bin"
export REMAT_SHARED_DIR="$here/shared"
cudnn="$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)"
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${cudnn}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
models=(mlp tiny_vit mobilenet_v2_b2_64)
ww="$REMAT_SHARED_DIR/corpus/with_weights"

has() { [[ " $steps " == *" $1 "* ]]; }
step() { # name limit command...
    local name="$1" limit="$2"
    shift 2
    echo "== $name"
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "   rc=$rc in $((SECONDS - t0)) s"
    tail -n "${TAIL_LINES:-12}" "$out/$name.log"
}

if has env; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    echo "cudnn: ${cudnn:-not found}"
    ldd "$bin/remat" | grep "not found" || echo "all libraries found"
fi
has ops && step ops 120 "$bin/gpu_tst_cuda_ops" -v1
has models && step models 180 "$bin/gpu_tst_cuda_models" -v1
if has run; then
    for m in "${models[@]}"; do
        step "run-$m-storeall" 60 "$bin/remat" run "$ww/$m.onnx" --backend cuda --feed "$ww/$m.npz" \
            --dump-gradients "$out/$m.cuda.npz" --check --json
        for s in chen-sqrtn feng-huang; do
            "$bin/remat" solve "$ww/$m.onnx" --solver "$s" --objective min-peak --out "$out/$m.$s.json" >/dev/null
            step "run-$m-$s" 60 "$bin/remat" run "$ww/$m.onnx" --backend cuda --plan "$out/$m.$s.json" \
                --feed "$ww/$m.npz" --check --json
        done
        "$bin/remat" solve "$ww/$m.onnx" --solver rotor --objective min-time --budget-ratio 0.5 \
            --out "$out/$m.rotor.json" >/dev/null
        step "run-$m-rotor" 60 "$bin/remat" run "$ww/$m.onnx" --backend cuda --plan "$out/$m.rotor.json" \
            --feed "$ww/$m.npz" --check --json
    done
    # PyTorch's float64 reference against the CUDA store-all gradients: max |a-b| / max |b| per tensor
    python3 - "$ww" "$out" "${models[@]}" <<'EOF' | tee "$out/reference.log"
import sys, numpy as np
ww, out, models = sys.argv[1], sys.argv[2], sys.argv[3:]
for m in models:
    try:
        ours = np.load(f"{out}/{m}.cuda.npz"); ref = np.load(f"{ww}/{m}.f64.npz")
    except Exception as e:
        print(m, "no dump:", e); continue
    worst, name = 0.0, ""
    largest = max(np.abs(ref[k]).max() for k in ref.files if k.startswith("grad"))
    for k in ref.files:
        if not (k.startswith("grad") or k == "loss"):
            continue
        if k not in ours.files:
            print(m, "missing", k); continue
        a, b = ours[k].astype(np.float64), ref[k].astype(np.float64)
        if k != "loss" and np.abs(b).max() <= 1e-6 * largest:
            continue  # exactly zero in exact arithmetic: float noise in any float32 run
        rel = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
        if rel > worst: worst, name = rel, k
    print(f"{m}: worst relative error vs PyTorch float64 {worst:.3e} ({name}), exactly-zero gradients left out")
EOF
fi
has bench && step bench 150 "$bin/bench_gpu" "$REMAT_SHARED_DIR/corpus/graph_only/resnet50.onnx" 32
exit 0
