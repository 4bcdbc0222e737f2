#!/usr/bin/env python3
"""PyTorch's own figures for one training step, to put beside `bench_gpu` / `remat run` /
`remat simulate`: eager step time (median) and torch.cuda.max_memory_allocated, for a torchvision
model on CUDA.
  python3 scripts/torch_step_reference.py MODEL BATCH [SIDE] [--optimizer none|adam]
                                          [--precision fp32|bf16-mixed|autocast-bf16] [--tf32] [--json]
  python3 scripts/torch_step_reference.py MODEL BATCH --config OPT:PRECISION[:tf32]... --out-dir D
      (several set-ups in one process, one after another, each written as JSON to
      D/torch-MODEL-OPT-PRECISION[-tf32].json)
The step is forward + a sum loss + backward (+ the optimizer step). The measured step is one in
the steady state, as the simulator counts it: parameters, their gradients and the optimizer's
state already exist before it.
- fp32: the model in float32; TF32 off unless --tf32 (the CUDA backend computes plain float32).
- bf16-mixed: what `--precision bf16-mixed` models (Megatron / DeepSpeed style): bfloat16 weights
  and activations, a float32 master copy of every weight, float32 gradients (each bfloat16
  gradient is added into the master's as soon as autograd finishes it) and float32 optimizer state.
- autocast-bf16: torch.autocast(bfloat16) over float32 weights, the common PyTorch recipe; it is
  not what bf16-mixed models (weights stay float32, autocast caches bfloat16 copies per step)."""
import argparse
import gc
import json
import time

import torch


def build(name, side, batch, device):
    import torchvision
    model = getattr(torchvision.models, name)().to(device).train()
    x = torch.randn(batch, 3, side, side, device=device)
    return model, x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--out-dir")
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("side", type=int, nargs="?", default=224)
    ap.add_argument("--optimizer", default="none", choices=["none", "adam"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16-mixed", "autocast-bf16"])
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--math-attention", action="store_true",
                    help="scaled_dot_product_attention through its math path (it saves the "
                         "attention probabilities, as the ONNX export's MatMul-Softmax-MatMul "
                         "does), not the fused kernels torch 2 picks by default")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu only checks the script (no memory figures)")
    a = ap.parse_args()
    if not a.config:
        report(measure(a), a.json)
        return
    for c in a.config:
        parts = c.split(":")
        a.optimizer, a.precision, a.tf32 = parts[0], parts[1], parts[2:] == ["tf32"]
        name = (f"torch-{a.model}-{a.optimizer}-{a.precision}{'-tf32' if a.tf32 else ''}"
                f"{'-math' if a.math_attention else ''}.json")
        try:
            r = measure(a)
        except Exception as e:  # one set-up failing (out of memory, say) leaves the others
            r = {"model": a.model, "error": f"{type(e).__name__}: {e}"}
        with open(f"{a.out_dir}/{name}", "w") as f:
            json.dump(r, f)
        print(name, json.dumps(r)[:300], flush=True)
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def measure(a):
    if a.math_attention:
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
            torch.backends.cuda.enable_cudnn_sdp(False)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(0)
    model, x = build(a.model, a.side, a.batch, a.device)
    cuda = a.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    params = list(model.parameters())
    weights = sum(p.numel() * p.element_size() for p in params)
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    masters = None
    if a.precision == "bf16-mixed":
        model = model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
        params = list(model.parameters())
        masters = [p.detach().float().clone().requires_grad_(True) for p in params]
        for p, m in zip(params, masters):
            m.grad = torch.zeros_like(m)

            def hook(p, m=m):  # bf16 gradient into the float32 master's, then freed
                m.grad.add_(p.grad.float())
                p.grad = None
            p.register_post_accumulate_grad_hook(hook)
    else:
        for p in params:
            p.grad = torch.zeros_like(p)
    trained = masters if masters is not None else params
    opt = torch.optim.Adam(trained, lr=1e-6) if a.optimizer == "adam" else None

    def step():
        if a.precision == "autocast-bf16":
            with torch.autocast(a.device, dtype=torch.bfloat16):
                loss = model(x).float().sum()
        else:
            loss = model(x).float().sum()
        loss.backward()
        if opt is not None:
            opt.step()
            if masters is not None:
                with torch.no_grad():
                    for p, m in zip(params, masters):
                        p.copy_(m)

    times, peak, base = [], 0, 0
    for i in range(a.steps):
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        step()
        sync()
        if i > 0:
            times.append(time.perf_counter() - t0)
        if cuda:
            peak = torch.cuda.max_memory_allocated()
    times.sort()
    state = 0
    if opt is not None:
        state = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
                    if torch.is_tensor(t) and t.dim() > 0)
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if cuda else "cpu", "model": a.model,
         "batch": a.batch, "side": a.side, "optimizer": a.optimizer, "precision": a.precision,
         "tf32": a.tf32, "math_attention": a.math_attention, "param_bytes": weights, "buffer_bytes": buffers,
         "optimizer_state_bytes": state, "allocated_before_step_bytes": base,
         "max_memory_allocated_bytes": peak, "median_step_seconds": times[len(times) // 2],
         "steps_timed": len(times), "input_bytes": x.numel() * x.element_size()}
    del model, x, params, masters, trained, opt
    return r


def report(r, as_json):
    if as_json:
        print(json.dumps(r))
        return
    mib = 1 << 20
    print(f"torch {r['torch']} {r['device']} {r['model']} batch {r['batch']} {r['side']}x{r['side']} "
          f"optimizer {r['optimizer']} precision {r['precision']}{' tf32' if r['tf32'] else ''}")
    print(f"  params {r['param_bytes'] / mib:.1f} MiB, buffers {r['buffer_bytes'] / mib:.1f} MiB, "
          f"optimizer state {r['optimizer_state_bytes'] / mib:.1f} MiB, "
          f"input {r['input_bytes'] / mib:.1f} MiB")
    print(f"  max_memory_allocated {r['max_memory_allocated_bytes'] / mib:.1f} MiB "
          f"(before the step {r['allocated_before_step_bytes'] / mib:.1f} MiB)")
    print(f"  step median {r['median_step_seconds'] * 1e3:.2f} ms over {r['steps_timed']} steps")


if __name__ == "__main__":
    main()
