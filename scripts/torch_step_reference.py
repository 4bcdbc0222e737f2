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
the steady state, as the simulator counts it: parameters and the optimizer's state already exist
before it; gradients are None before it (`--grads none`, what `optimizer.zero_grad()` does since
torch 2.0, so autograd hands each gradient over as it finishes it, as the simulator allocates
them) or kept zeroed from the last step (`--grads zeros`, zero_grad(set_to_none=False)).
The report also says what the libraries keep allocated between steps (cuBLAS / cuBLASLt
workspaces): memory in use before the step beyond parameters, buffers, input, kept gradients and
optimizer state. The simulator leaves it out, as it leaves out cuDNN's workspaces.
- fp32: the model in float32; TF32 off unless --tf32 (the CUDA backend computes plain float32).
- bf16-mixed: what `--precision bf16-master` models (Megatron / DeepSpeed style): bfloat16 weights
  and activations, a float32 master copy of every weight, float32 gradients (each bfloat16
  gradient is added into the master's as soon as autograd finishes it) and float32 optimizer state.
- autocast-bf16: torch.autocast(bfloat16) over float32 weights, the common PyTorch recipe: what
  `--precision bf16-mixed` models (weights stay float32, autocast caches bfloat16 copies per step)."""
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
    ap.add_argument("--grads", default="none", choices=["none", "zeros"],
                    help="gradients before each step: None (zero_grad's default since torch 2.0) "
                         "or kept and zeroed")
    ap.add_argument("--where-peak", action="store_true",
                    help="on the last step, also report where the peak happens: the memory in use "
                         "when each module's forward and each autograd node's backward starts, the "
                         "peak inside it, and the peak of the bytes asked for (before the "
                         "allocator rounds them up to its blocks)")
    ap.add_argument("--device", default="cuda", help="cpu only checks the script (no memory figures)")
    a = ap.parse_args()
    if not a.config:
        report(measure(a), a.json)
        return
    for c in a.config:
        parts = c.split(":")
        a.optimizer, a.precision, a.tf32 = parts[0], parts[1], parts[2:] == ["tf32"]
        name = (f"torch-{a.model}-{a.optimizer}-{a.precision}{'-tf32' if a.tf32 else ''}"
                f"{'-math' if a.math_attention else ''}{'-grads-zeros' if a.grads == 'zeros' else ''}"
                ".json")
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
            if a.grads == "zeros":
                m.grad = torch.zeros_like(m)

            def hook(p, m=m):  # bf16 gradient into the float32 master's, then freed
                if m.grad is None:
                    m.grad = p.grad.float()
                else:
                    m.grad.add_(p.grad.float())
                p.grad = None
            p.register_post_accumulate_grad_hook(hook)
    elif a.grads == "zeros":
        for p in params:
            p.grad = torch.zeros_like(p)
    trained = masters if masters is not None else params
    opt = torch.optim.Adam(trained, lr=1e-6) if a.optimizer == "adam" else None

    def step():
        if a.grads == "none":
            for t in trained:
                t.grad = None
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

    times, peak, base, trace = [], 0, 0, None
    for i in range(a.steps):
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        if a.grads == "none":  # counted before the step starts, as in a training loop
            for t in trained:
                t.grad = None
            if cuda:
                base = torch.cuda.memory_allocated()
        if a.where_peak and cuda and i == a.steps - 1:
            known = {t.data_ptr() for t in list(params) + list(model.buffers()) + [x] +
                     (masters or []) + [g for g in (t.grad for t in trained) if g is not None]}
            if opt is not None:
                known |= {t.data_ptr() for st in opt.state.values() for t in st.values()
                          if torch.is_tensor(t)}
            others = sorted(((o.numel() * o.element_size(), tuple(o.shape), str(o.dtype))
                             for o in gc.get_objects()
                             if torch.is_tensor(o) and o.is_cuda and o.data_ptr() not in known),
                            reverse=True)
            trace = traced_step(model, x, step)
            trace["other_tensors_before_step"] = {"count": len(others),
                                                  "bytes": sum(o[0] for o in others),
                                                  "largest": [list(o) for o in others[:6]]}
            continue
        t0 = time.perf_counter()
        step()
        sync()
        if i > 0:
            times.append(time.perf_counter() - t0)
        if cuda:
            peak = torch.cuda.max_memory_allocated()
            stats = torch.cuda.memory_stats()
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
         "steps_timed": len(times), "input_bytes": x.numel() * x.element_size(), "grads": a.grads}
    kept_grads = sum(t.numel() * 4 for t in trained) if a.grads == "zeros" else 0
    now_weights = sum(p.numel() * p.element_size() for p in params)
    r["library_held_bytes"] = max(0, base - now_weights - buffers - r["input_bytes"] - state - kept_grads -
                                  (sum(m.numel() * 4 for m in masters) if masters is not None else 0))
    if cuda:
        r["requested_bytes_peak"] = stats.get("requested_bytes.all.peak")
        r["allocated_bytes_peak"] = stats.get("allocated_bytes.all.peak")
    if trace is not None:
        r["where_peak"] = trace
    del model, x, params, masters, trained, opt
    return r


def traced_step(model, x, step):
    """One step with hooks: a list of intervals (what started, bytes in use when it started, peak
    inside it), one per leaf module forward and per autograd node backward, and the top ten by
    peak. The hooks read the allocator's counters only (no device sync), so they do not change
    what is allocated."""
    intervals = []

    def mark(label):
        intervals.append([label, torch.cuda.memory_allocated(), 0])
        if len(intervals) > 1:
            intervals[-2][2] = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()

    handles = []
    for name, m in model.named_modules():
        if not list(m.children()):
            handles.append(m.register_forward_pre_hook(lambda m, inp, name=name: mark("fwd " + name)))
    seen = set()

    def on_backward_graph(t):
        stack = [t.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            fn.register_prehook(lambda go, fn=fn: mark("bwd " + fn.name()))
            stack.extend(f for f, _ in fn.next_functions)

    handles.append(torch.nn.modules.module.register_module_forward_hook(
        lambda m, inp, out: on_backward_graph(out) if m is model and torch.is_tensor(out) else None))
    mark("step start")
    step()
    mark("step end")
    for h in handles:
        h.remove()
    intervals.pop()
    top = sorted(intervals, key=lambda r: -r[2])[:10]
    mib = 1 << 20
    return {"intervals": len(intervals),
            "top": [{"at": lab, "index": intervals.index([lab, start, pk]),
                     "in_use_at_start_mib": round(start / mib, 2), "peak_mib": round(pk / mib, 2)}
                    for lab, start, pk in top]}


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
          f"(before the step {r['allocated_before_step_bytes'] / mib:.1f} MiB, of which libraries "
          f"hold {r['library_held_bytes'] / mib:.1f} MiB; gradients {r['grads']} before the step)")
    print(f"  step median {r['median_step_seconds'] * 1e3:.2f} ms over {r['steps_timed']} steps")
    if r.get("requested_bytes_peak") is not None:
        print(f"  peak of bytes asked for {r['requested_bytes_peak'] / mib:.1f} MiB, of blocks allocated "
              f"{r['allocated_bytes_peak'] / mib:.1f} MiB")
    for t in r.get("where_peak", {}).get("top", []):
        print(f"  peak {t['peak_mib']:.1f} MiB in interval {t['index']} ({t['at']}), "
              f"{t['in_use_at_start_mib']:.1f} MiB in use when it started")


if __name__ == "__main__":
    main()
