"""The optimizer step as `remat run --optimizer` executes it, against torch.optim, on every corpus
model with weights (../shared/corpus/with_weights: an MLP, MobileNetV2, a small ViT): for SGD,
SGD with momentum, Adam and AdamW, one step from the ONNX initializers on the gradients our CPU
backend computed for the corpus feed (dumped beside the updated weights), so the update alone is
compared. Every updated parameter must equal torch.optim's within 1e-6, and `run` must report
measured peak = predicted with the optimizer state resident. Hyperparameters as the CLI's
defaults: lr 1e-3, momentum 0.9, betas (0.9, 0.999), eps 1e-8, AdamW weight decay 1e-2.

Run by CTest (python/optimizer_step) with REMAT_CLI set; exits 77 (skipped) without
python3-torch or without ../shared.
"""

import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import torch
except ImportError:  # pragma: no cover
    print("python3-torch / onnx is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("REMAT_SHARED_DIR") or os.path.join(HERE, "..", "..", "..", "shared")
WEIGHTS = os.path.join(SHARED, "corpus", "with_weights")
REMAT = os.environ.get("REMAT_CLI", "remat")
MODELS = ["mlp", "mobilenet_v2_b2_64", "tiny_vit"]

OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3, foreach=False),
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=False),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                        foreach=False),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                          weight_decay=1e-2, foreach=False),
}


class OptimizerStep(unittest.TestCase):
    def test_updates_equal_torch_optim(self):
        worst_overall = 0.0
        for model in MODELS:
            onnx_path = os.path.join(WEIGHTS, model + ".onnx")
            feed = os.path.join(WEIGHTS, model + ".npz")
            initial = {i.name: onnx.numpy_helper.to_array(i).astype(np.float32)
                       for i in onnx.load(onnx_path).graph.initializer}
            for name, make in OPTIMIZERS.items():
                with self.subTest(model=model, optimizer=name), \
                        tempfile.TemporaryDirectory() as tmp:
                    grads_path = os.path.join(tmp, "g.npz")
                    params_path = os.path.join(tmp, "p.npz")
                    out = subprocess.run(
                        [REMAT, "run", onnx_path, "--feed", feed, "--optimizer", name,
                         "--dump-gradients", grads_path, "--dump-parameters", params_path],
                        capture_output=True, text=True, check=False)
                    self.assertEqual(out.returncode, 0, out.stderr)
                    self.assertIn("= predicted", out.stdout)  # measured peak = predicted
                    grads = dict(np.load(grads_path))
                    updated = dict(np.load(params_path))
                    names = [n for n in initial if "grad:" + n in grads]
                    self.assertTrue(names, "no parameter gradients dumped")
                    params = [torch.nn.Parameter(torch.from_numpy(initial[n].copy()))
                              for n in names]
                    for p, n in zip(params, names):
                        p.grad = torch.from_numpy(grads["grad:" + n].astype(np.float32))
                    make(params).step()
                    worst = 0.0
                    for p, n in zip(params, names):
                        self.assertIn(n, updated)
                        ours = updated[n].astype(np.float64).reshape(p.shape)
                        diff = float(np.max(np.abs(ours - p.detach().numpy().astype(np.float64))))
                        worst = max(worst, diff)
                        self.assertLessEqual(diff, 1e-6, f"{model} {name} {n}")
                    # The update changed the weights (a step that does nothing cannot pass).
                    moved = max(float(np.max(np.abs(updated[n] - initial[n]))) for n in names)
                    self.assertGreater(moved, 1e-6)
                    print(f"{model:20s} {name:13s} {len(names):3d} parameters, "
                          f"max |ours - torch.optim| = {worst:.3g}")
                    worst_overall = max(worst_overall, worst)
        print(f"worst difference over every model and optimizer: {worst_overall:.3g}")


if __name__ == "__main__":
    if not os.path.isdir(WEIGHTS):
        print(f"{WEIGHTS} not found: skipped")
        sys.exit(77)
    unittest.main(verbosity=1)
