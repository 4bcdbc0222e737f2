#!/usr/bin/env python3
"""PyTorch's own figures for one training step, to put beside `bench_gpu` / `remat run`:
eager step time (median) and torch.cuda.max_memory_allocated, for a torchvision model.
  python3 scripts/torch_step_reference.py resnet50 32 [224]
The step is forward + a sum loss + backward with the parameters' gradients allocated before the
measured step (as the simulator counts them), no optimizer."""
import sys
import time

import torch


def main():
    name, batch = sys.argv[1], int(sys.argv[2])
    side = int(sys.argv[3]) if len(sys.argv) > 3 else 224
    import torchvision
    model = getattr(torchvision.models, name)().cuda().train()
    x = torch.randn(batch, 3, side, side, device="cuda")
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    times = []
    for i in range(6):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        model(x).sum().backward()
        torch.cuda.synchronize()
        if i > 0:
            times.append(time.perf_counter() - t0)
        peak = torch.cuda.max_memory_allocated()
    times.sort()
    mib = 1 << 20
    print(f"torch {torch.__version__} {torch.cuda.get_device_name()} {name} batch {batch} {side}x{side}")
    print(f"  params {weights / mib:.1f} MiB, grads {weights / mib:.1f} MiB, buffers {buffers / mib:.1f} MiB, input {x.numel() * 4 / mib:.1f} MiB")
    print(f"  max_memory_allocated {peak / mib:.1f} MiB (before the step {base / mib:.1f} MiB)")
    print(f"  step median {times[len(times) // 2] * 1e3:.2f} ms over {len(times)} steps")


if __name__ == "__main__":
    main()
