"""remat_export.py (resources/python): the metadata_props it writes say which graph inputs are
parameters, frozen parameters and buffers, from the module itself, and `remat` reads them: a
module whose buffer is named like a parameter (`pos_embed`) and whose frozen weight is named like
any other is classified exactly, without any CLI flag.

Run by CTest (python/remat_export) with REMAT_CLI set; exits 77 (skipped) without torch / onnx."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import onnx
    import torch
    import torch.nn as nn
except ImportError:  # pragma: no cover
    print("python3-torch / python3-onnx is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "resources", "python"))
import remat_export  # noqa: E402

REMAT = os.environ.get("REMAT_CLI")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)
        self.register_buffer("pos_embed", torch.randn(1, 8))            # a fixed table, named like a weight
        self.register_buffer("scratch", torch.zeros(3), persistent=False)  # folded into a Constant

    def forward(self, x):
        return self.head(torch.relu(self.body(x + self.pos_embed)))


class TwiceCentred(nn.Module):
    """A LayerNorm written by hand (x - mean twice, merged by torch.onnx) and a transposed tensor
    made contiguous before a product."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(8))
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        y = ((x - mean) ** 2).mean(-1, keepdim=True) + self.weight * (x - mean)
        return self.proj(y.transpose(1, 2).contiguous())


class RematExport(unittest.TestCase):
    def test_what_onnx_drops(self):
        net = TwiceCentred().train()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "net.onnx")
            props = remat_export.export(net, (torch.randn(2, 4, 8),), path, input_names=["input"])
            merged = json.loads(props["remat.merged"])
            # Expected: the Sub the exporter merged, its second copy read by the Mul with the weight
            self.assertEqual(len(merged), 1, merged)
            self.assertTrue(merged[0]["node"].endswith("Sub"), merged)
            self.assertEqual(len(merged[0]["readers"]), 1)
            self.assertTrue(merged[0]["readers"][0][0].endswith("Mul"), merged)
            contiguous = json.loads(props["remat.contiguous"])
            self.assertEqual(len(contiguous), 1, contiguous)
            self.assertTrue(contiguous[0]["value"].endswith("Transpose_output_0"), contiguous)
            # the file is torch.onnx's own graph: no Identity left for the contiguous copy
            self.assertFalse(any(n.op_type == "Identity" for n in onnx.load(path).graph.node))
            if not REMAT:
                return
            r = subprocess.run([REMAT, "info", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("remat.merged", r.stdout)
            self.assertIn("remat.contiguous", r.stdout)


    def test_metadata(self):
        net = Net().train()
        net.body.weight.requires_grad_(False)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "net.onnx")
            props = remat_export.export(net, (torch.randn(2, 8),), path, input_names=["input"])
            # Expected: pos_embed a buffer; body.weight frozen; the rest trainable; the
            # non-persistent buffer is not a graph input, so it is not listed.
            self.assertEqual(json.loads(props["remat.buffers"]), ["pos_embed"])
            self.assertEqual(json.loads(props["remat.frozen"]), ["body.weight"])
            self.assertEqual(sorted(json.loads(props["remat.parameters"])), ["body.bias", "head.bias", "head.weight"])
            written = {p.key: p.value for p in onnx.load(path).metadata_props}
            self.assertEqual(written["remat.format"], "1")
            if not REMAT:
                return
            r = subprocess.run([REMAT, "train-graph", path, "--json"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertEqual(j["frozen_param_bytes"], 16 * 8 * 4)
            self.assertEqual(j["param_bytes"], (16 + 4 * 16 + 4) * 4)
            self.assertEqual(j["buffer_bytes"], 8 * 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
