"""torch.optim references for the optimizer step (tests/exec/tst_optimizer_step.cpp).

For the corpus MLP (../shared/corpus/with_weights/mlp.onnx), one step of SGD, SGD with momentum,
Adam and AdamW from the ONNX initializers, on the gradients our CPU backend computes for the
corpus feed (remat run mlp.onnx --feed mlp.npz --dump-gradients G.npz), so the update alone is
compared: optimizer_torch.npz holds "grad:<name>" (the gradients used) and "<optimizer>/<name>"
(the parameter after torch.optim's step). Hyperparameters: lr 1e-3, momentum 0.9, betas (0.9,
0.999), eps 1e-8; weight decay 0 (SGD, Adam) and 1e-2 (AdamW, torch's default); foreach=False.

Run with Debian's python3-torch 1.13:
  /usr/bin/python3 make_optimizer_references.py ../../../../shared/corpus/with_weights/mlp.onnx G.npz
"""
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

model_path, grads_path = sys.argv[1], sys.argv[2]
weights = {i.name: onnx.numpy_helper.to_array(i).astype(np.float32)
           for i in onnx.load(model_path).graph.initializer}
grads = dict(np.load(grads_path))
names = [n for n in weights if "grad:" + n in grads]

optimizers = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3, foreach=False),
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=False),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, foreach=False),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                          weight_decay=1e-2, foreach=False),
}
out = {}
for n in names:
    out["grad:" + n] = grads["grad:" + n].astype(np.float32)
for key, make in optimizers.items():
    params = [torch.nn.Parameter(torch.from_numpy(weights[n].copy())) for n in names]
    for p, n in zip(params, names):
        p.grad = torch.from_numpy(out["grad:" + n].copy())
    make(params).step()
    for p, n in zip(params, names):
        out[key + "/" + n] = p.detach().numpy().copy()
np.savez("optimizer_torch.npz", **out)
print("wrote optimizer_torch.npz:", len(names), "parameters,", len(optimizers), "optimizers")
