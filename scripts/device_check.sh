#!/usr/bin/env bash
# Runs on the GPU machine over the bundle scripts/device_bundle.sh made: the gpu-labelled tests,
# `remat run --backend cuda` on every corpus model with weights (store-all and three plans, the
# gradients dumped and compared with PyTorch's float64 references), and bench_gpu on resnet50 b32.
# Every step has its own time limit and log, so one failure does not hide the rest.
# Steps truth and torch (issues "true numbers" and "will it fit"): on resnet50 and vit_b_16 at batch 32,
# a CUDA profile from the store-all run predicts store-all and three plans (and a batch-16 profile
# predicts batch 32), Adam fp32 runs on the device, and PyTorch's eager step time and
# torch.cuda.max_memory_allocated are taken for the same networks (fp32, Adam, bf16-mixed, autocast);
# scripts/device_truth_table.py turns the JSON they leave in the log archive into tables.
# Usage: bash device-bundle/check.sh OUTDIR [STEPS...]
#        (steps: env ops models truth torch run profile bench, and recompute; default all but recompute)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:?usage: check.sh OUTDIR [steps]}"
shift
steps="${*:-env ops models truth torch run profile bench}"
# Logs gather in one folder and come back as one archive (the device returns few files).
out="$(mktemp -d)"
trap 'tar -C "$out" -czf "$dest/logs-${steps%% *}.tgz" --exclude="*.npz" .' EXIT
trap 'exit 143' TERM
if [[ -f "$here/bundle.tar.xz" && ! -d "$here/bin" ]]; then
    tar -C "$here/.." -xJf "$here/bundle.tar.xz"
fi
bin="$here/bin"
export REMAT_SHARED_DIR="$here/shared"
export REMAT_SOURCE_DIR="${REMAT_SOURCE_DIR:-$here/..}"  # tests/data (the optimizer test's torch.optim reference)
cudnn="$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)"
export LD_LIBRARY_PATH="$here/lib:$here/bin:/usr/local/cuda/lib64:${cudnn}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
models=(mlp tiny_vit mobilenet_v2_b2_64)
ww="$REMAT_SHARED_DIR/corpus/with_weights"

has() { [[ " $steps " == *" $1 "* ]]; }
step() { # name limit command...
    local name="$1" limit="$2"
    shift 2
    echo "== $name"
    local t0=$SECONDS
    timeout --foreground "$limit" "$@" >"$out/$name.log" 2>&1
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
has ops && step optimizer 60 "$bin/gpu_tst_cuda_optimizer" -v1
# --attention sdpa on CUDA (GPT-2 / LLaMA styles, tests/data/attention under REMAT_SOURCE_DIR)
has ops && step attention 120 "$bin/gpu_tst_cuda_attention" -v1
has ops && step half 120 "$bin/gpu_tst_cuda_half" -v1
has models && step models 180 "$bin/gpu_tst_cuda_models" -v1
if has truth; then
    for m in resnet50 vit_b_16; do
        g="$REMAT_SHARED_DIR/corpus/graph_only/$m.onnx"
        t="$out/truth-$m"
        TAIL_LINES=2 step "truth-$m-profile" 120 "$bin/remat" run "$g" --backend cuda --batch 32 --iters 6 \
            --profile-out "$t.prof32.json" --json
        cp "$out/truth-$m-profile.log" "$t.storeall.json"
        TAIL_LINES=2 step "truth-$m-profile16" 90 "$bin/remat" run "$g" --backend cuda --batch 16 --iters 6 \
            --profile-out "$t.prof16.json" --json
        "$bin/remat" simulate "$g" --batch 32 --profile "$t.prof16.json" --json >"$t.from16.json" 2>&1
        "$bin/remat" simulate "$g" --batch 32 --profile "$t.prof32.json" --json >"$t.from32.json" 2>&1
        for s in chen-sqrtn feng-huang rotor; do
            obj=(--objective min-peak)
            [[ $s == rotor ]] && obj=(--objective min-time --budget-ratio 0.5)
            "$bin/remat" solve "$g" --batch 32 --solver "$s" "${obj[@]}" --profile "$t.prof32.json" \
                --out "$t.$s.plan.json" >"$out/truth-$m-solve-$s.log" 2>&1
            TAIL_LINES=2 step "truth-$m-$s" 90 "$bin/remat" run "$g" --backend cuda --batch 32 --iters 5 \
                --plan "$t.$s.plan.json" --profile "$t.prof32.json" --json
            cp "$out/truth-$m-$s.log" "$t.$s.json"
        done
        TAIL_LINES=2 step "truth-$m-adam" 90 "$bin/remat" run "$g" --backend cuda --batch 32 --iters 3 --optimizer adam --json
        cp "$out/truth-$m-adam.log" "$t.adam.json"
        # bf16-master: torch_step_reference's bf16-mixed layout; bf16-mixed: its autocast-bf16
        for p in fp32 bf16-master bf16-mixed; do
            "$bin/remat" simulate "$g" --batch 32 --optimizer adam --precision "$p" --json >"$t.sim-adam-$p.json" 2>&1
        done
        "$bin/remat" simulate "$g" --batch 32 --json >"$t.sim-none-fp32.json" 2>&1
    done
fi
if has recompute; then
    # Each op's recompute time beside its first compute's: plans' runs with --profile-out record both
    for m in resnet50 vit_b_16; do
        g="$REMAT_SHARED_DIR/corpus/graph_only/$m.onnx"
        for s in chen-sqrtn feng-huang; do
            "$bin/remat" solve "$g" --batch 32 --solver "$s" --objective min-peak --out "$out/rc-$m.$s.plan.json" >/dev/null 2>&1
            TAIL_LINES=2 step "recompute-$m-$s" 90 "$bin/remat" run "$g" --backend cuda --batch 32 --iters 6 \
                --plan "$out/rc-$m.$s.plan.json" --profile-out "$out/rc-$m.$s.prof.json" --profile-one-batch --json
        done
    done
fi
if has torch; then
    for m in resnet50 vit_b_16; do
        step "torch-$m" 240 python3 "$here/../scripts/torch_step_reference.py" "$m" 32 --out-dir "$out" \
            --config none:fp32 --config adam:fp32 --config adam:bf16-mixed --config adam:autocast-bf16 \
            --config none:fp32:tf32
    done
    # vit_b_16 again with attention through torch's math path, the computation the ONNX export holds
    step "torch-vit_b_16-math" 120 python3 "$here/../scripts/torch_step_reference.py" vit_b_16 32 \
        --math-attention --out-dir "$out" --config none:fp32 --config adam:fp32 --config adam:bf16-mixed
fi
if has run; then
    for m in "${models[@]}"; do
        [[ -f "$ww/$m.onnx" ]] || { echo "== run-$m: not in the bundle"; continue; }
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
        # the half path (autocast bf16 / fp16, all-bfloat16): measured peak = predicted, --check
        for p in bf16-mixed 16-mixed bf16-true; do
            TAIL_LINES=4 step "run-$m-$p" 60 "$bin/remat" run "$ww/$m.onnx" --backend cuda \
                --precision "$p" --feed "$ww/$m.npz" --check --json
        done
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
# A profile's prediction with the profile and the plans run in one process, interleaved (the CUDA
# rows of bench_profile): resnet50 and vit_b_16 at batch 32, and a batch-16 profile predicting 32.
has profile && TAIL_LINES=40 step profile 240 "$bin/bench_profile" 5 --backend cuda --batch 32 \
    --model "$REMAT_SHARED_DIR/corpus/graph_only/resnet50.onnx" \
    --model "$REMAT_SHARED_DIR/corpus/graph_only/vit_b_16.onnx"
has bench && step bench 150 "$bin/bench_gpu" "$REMAT_SHARED_DIR/corpus/graph_only/resnet50.onnx" 32
if has truth || has torch; then
    python3 "$here/../scripts/device_truth_table.py" "$out" | tee "$out/truth-table.md"
fi
exit 0
