"""Gradients of `remat run --precision bf16-mixed --autocast-device cpu` against PyTorch's own
autocast run (`torch.autocast("cpu", dtype=torch.bfloat16)` around the forward, the backward
outside it, as the autocast docs say) on the same weights, inputs and output cotangent R
(L = sum(output * R)).

Networks: the corpus models with weights (../shared/corpus/with_weights: an MLP, a small ViT,
MobileNetV2 at 2x3x64x64), rebuilt in PyTorch and loaded with the ONNX file's initializers (the
rebuilt float32 output equals the corpus's), and networks of tests/python/oracle_nets.py written
last round (PreNormEncoder, DiffusionBlock, MixedCNN, LoRAGPT with --trainable lora_: frozen
weights cast at every use, the adapters through the weight-cast cache) and Llama, exported as
remat_oracle.py exports them (parameters as graph inputs, given through --feed).

The reference is PyTorch's autocast run with exact kernels (ExactKernels below): every decision
autocast and type promotion make (which op runs in which dtype, where the casts are, what
backward receives) is PyTorch's; each kernel that reads a half tensor is computed in float64
and rounded once to the dtype PyTorch's own result had. torch 1.13's CPU kernels round inside
some bfloat16 kernels (GEMM partial sums on some shapes, softmax backward's sum), which is the
kernel, not autocast; the distance to torch's own run is printed beside.

The measure, per gradient tensor g (every trainable parameter and the input):

    e(a, b) = ||a - b|| / ||g_fp32||      (Frobenius norms; g_fp32: PyTorch's float32 gradient;
                                           for a gradient that is zero in exact arithmetic, a
                                           conv bias before BatchNorm, the larger of the two)

bfloat16 keeps 8 significant bits (unit roundoff u = 2^-8 = 3.9e-3): autocast's own gradients sit
a few u from float32 ("autocast vs fp32": 4e-3 to 1.2e-2 median here). Ours and the reference
round the same operands at the same points, so they agree to the bit unless a rounding falls
differently; the test asks, per network,
  1. every tensor: e(ours, reference) <= 2u, and <= 0.5 * e(reference, fp32) (ours at least
     twice as close to autocast as float32 is);
  2. median over tensors of e(ours, reference) <= 0.01 * the median of e(reference, fp32)
     (0.1 where half precision changes the gradients by O(1): MobileNetV2 at this size, whose
     last BatchNorms normalize 8 values a channel; there only this condition applies).
It shows it can fail: our own 32-true run (every rule wrong) must break condition 2, and the
reference with a deliberately wrong rule (a linear's bias added after its product is rounded;
softmax on the float32 list, CUDA's rule on the CPU) must break 1 or 2 on every network whose
gradients the rule changes. DiffusionBlock is held to the 2u bound only: its linears read a
transposed view (tokens of a feature map), where torch 1.13's matmul runs a bmm against the
expanded weight and sums per-sample bfloat16 weight gradients over the batch (two roundings;
ours one; distance printed, 3.0e-3 at most, 9 of 14 gradients bitwise). Its forward (matmul, then add_: the product rounded
before the bias) is modelled, as for ChannelsLastMLP's 4-D linears.

The network reads a view of each input (a leaf that requires grad would share one cached bfloat16
copy between its readers, whose gradients PyTorch then sums in bfloat16; a training input requires
no grad). Llama's first layer differs by up to 1.6e-3 (its second layer, and a one-layer Llama, agree
to 1e-7): not explained. Variants move it (attention then a full block: 3.5e-3 in the first
layer's q_proj; two attention-only or two MLP-only blocks: below 1e-4), which suggests a rare
rounding that lands differently near a bfloat16 tie (float32 accumulation rounded again, against
the reference's one rounding) amplified through the attention scores' exp; not verified.

16-mixed is not compared: torch 1.13's CPU autocast refuses float16 ("AutocastCPU only support
Bfloat16 as the autocast_cpu_dtype").

Run by CTest (python/autocast_gradients) with REMAT_CLI set; exits 77 (skipped) without
python3-torch / torchvision / onnx or without ../shared.
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import torch
    import torch.nn as nn
    import torchvision
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten
except ImportError:  # pragma: no cover
    print("python3-torch / torchvision / onnx is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("REMAT_SHARED_DIR") or os.path.join(HERE, "..", "..", "..", "shared")
WEIGHTS = os.path.join(SHARED, "corpus", "with_weights")
REMAT = os.environ.get("REMAT_CLI", "remat")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "resources", "python"))

U_BF16 = 2.0 ** -8
TOL_TENSOR = 2 * U_BF16
RATIO = 0.01
RATIO_ILL = 0.1
TENSOR_RATIO = 0.5
ILL_CONDITIONED = 8 * U_BF16
RESULTS = {}
CAUGHT = {}  # wrong rule -> [(network, caught)]


# ---- the corpus models, rebuilt -------------------------------------------------------------

class CorpusMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class CorpusTinyViT(nn.Module):
    """tiny_vit.onnx: a patch conv, learned positions, two pre-norm torch.nn encoder layers (GELU),
    a final LayerNorm, mean over the tokens, a linear head."""

    def __init__(self, d=64):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 8, 8)
        self.pos = nn.Parameter(torch.zeros(1, 16, d))
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.enc = nn.TransformerEncoder(layer, 2)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.enc(t)).mean(1))


class ChannelsLastMLP(nn.Module):
    """Linears on a 4-D channels-last tensor (ConvNeXt's pointwise layers): torch 1.13's
    at::linear runs matmul + add_ there, the product rounded before its bias is added."""
    example_input_specs = ["2x16x6x6"]

    def __init__(self, c=16):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(torch.nn.functional.gelu(self.pw1(y)))
        return self.head((x + y.permute(0, 3, 1, 2)).mean((2, 3)))


def corpus_mobilenet():
    return torchvision.models.mobilenet_v2(dropout=0.0)


# name: (builder, corpus file stem)
CORPUS = {
    "mlp": CorpusMLP,
    "tiny_vit": CorpusTinyViT,
    "mobilenet_v2_b2_64": corpus_mobilenet,
}
# oracle_nets classes written last round (and GPT-2), with remat / PyTorch trainability
ORACLE_NETS = {
    "PreNormEncoder": [],
    "DiffusionBlock": [],
    "MixedCNN": [],
    "Llama": [],
    "LoRAGPT": ["lora_"],
    "ChannelsLastMLP": [],  # defined here
}


class ExactKernels(TorchDispatchMode if torch else object):
    """PyTorch's autocast run with every kernel that reads a half tensor computed exactly: the op
    runs as PyTorch runs it, then again on float64 copies of its floating operands, and returns
    the float64 result rounded once to the dtype PyTorch's own result had. What autocast decides
    (which op runs in which dtype, where the casts go, what backward receives) is PyTorch's,
    seen below the autocast dispatch key; only the arithmetic inside a kernel is exact. torch
    1.13's CPU kernels round inside some half kernels: its bfloat16 GEMM rounds partial sums on
    some shapes and layouts (a 4x64 @ 64x10 product is 1.4e-2 from the exactly rounded one, a
    64x4 @ 4x32 one exact) and its softmax backward rounds sum(grad * y) to bfloat16 before
    y * (grad - sum); our CPU reference rounds once, as a float32-accumulating kernel does."""

    filled = set()  # ops PyTorch could not run in half precision, computed here

    def __init__(self, wrong=None):
        super().__init__()
        self.wrong = wrong  # "bias-rounded": a deliberately wrong rule, see WRONG_RULES

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        wide = lambda a: a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
        try:
            out = func(*args, **kwargs)
        except RuntimeError as e:
            # torch 1.13 has no bfloat16 CPU kernel for a few ops (hardtanh's backward, which
            # MobileNetV2's ReLU6 needs): computed in float64, rounded to the operands' half dtype.
            flat = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            half = [a.dtype for a in flat if a.dtype in (torch.bfloat16, torch.float16)]
            if "not implemented for" not in str(e) or not half or func._schema.is_mutable:
                raise
            self.filled.add(str(func))
            return tree_map(lambda o: o.to(half[0]) if isinstance(o, torch.Tensor) and o.is_floating_point()
                            else o, func(*tree_map(wide, args), **tree_map(wide, kwargs)))
        schema = func._schema
        if schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
            return out  # in place, or a view: nothing to compute
        flat = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        if not any(a.dtype in (torch.bfloat16, torch.float16) for a in flat):
            return out
        if self.wrong == "bias-rounded" and func is torch.ops.aten.addmm.default:
            bias, m1, m2 = args[:3]  # the product rounded before the bias is added
            product = torch.mm(m1.double(), m2.double()).to(out.dtype)
            return (product.double() + bias.double()).to(out.dtype)
        try:
            exact = func(*tree_map(wide, args), **tree_map(wide, kwargs))
        except (RuntimeError, TypeError):
            return out  # no float64 kernel: PyTorch's own result
        got, spec = tree_flatten(out)
        ex, _ = tree_flatten(exact)
        if len(got) != len(ex):
            return out
        rounded = [e.to(g.dtype) if isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)
                   and g.is_floating_point() and g.shape == e.shape else g for g, e in zip(got, ex)]
        return tree_unflatten(rounded, spec)


# Networks with a linear on a non-contiguous 3-D input (tokens as a transposed view of a feature
# map): PyTorch 1.13's at::linear takes matmul + add_ there (two roundings, and a weight gradient
# summed over the batch in bfloat16) instead of one addmm; the ONNX graph has no strides and our
# executor rounds once. Only the per-tensor bound applies to them (the ratio is printed).
STRIDED = {"DiffusionBlock"}


def load_initializers(model, path):
    state = {i.name: torch.from_numpy(onnx.numpy_helper.to_array(i).copy())
             for i in onnx.load(path).graph.initializer}
    own = model.state_dict()
    missing = [k for k in own if k not in state and not k.endswith("num_batches_tracked")]
    if missing:
        raise AssertionError(f"{path}: no initializer for {missing[:4]}")
    model.load_state_dict({k: state[k].reshape(own[k].shape) if k in state else own[k] for k in own})


@contextlib.contextmanager
def softmax_in_float32():
    """CUDA's rule on the CPU: softmax on the float32 list (torch 1.13's CPU autocast runs it in
    the input's dtype)."""
    import torch.nn.functional as F
    original = F.softmax
    F.softmax = lambda x, *a, **k: original(x.float(), *a, **k)
    try:
        yield
    finally:
        F.softmax = original


# Cast rules broken on purpose in the reference, to show the test catches an executor that had
# them: the difference between the right and the wrong reference is what such an executor's
# difference from the right one would be.
WRONG_RULES = ["bias-rounded", "softmax-fp32"]


def torch_gradients(model, inputs, R, autocast, exact_kernels=False, wrong=None):
    """{'grad:<param>': ..., 'grad:<input>': ...} as float64 arrays, the loss and the output."""
    model.zero_grad(set_to_none=True)
    xs = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else torch.autocast("cpu", enabled=False)
    with (ExactKernels(wrong) if exact_kernels else contextlib.nullcontext()), \
            (softmax_in_float32() if wrong == "softmax-fp32" else contextlib.nullcontext()):
        with ctx:
            # The network reads a view of each input: autocast's cast cache keeps one bfloat16
            # copy of a leaf that requires grad (its readers' gradients then sum in bfloat16), and
            # a training input requires none; the gradient reaches the leaf all the same.
            out = model(*[x.view_as(x) if x.requires_grad else x for x in xs])
        loss = (out.float() * R).sum()
        loss.backward()
    grads = {"grad:" + n: p.grad.detach().double().numpy() for n, p in model.named_parameters()
             if p.requires_grad}
    names = ["input"] if len(xs) == 1 else [f"input{i}" for i in range(len(xs))]
    for name, x in zip(names, xs):
        if x.grad is not None:
            grads["grad:" + name] = x.grad.detach().double().numpy()
    return grads, float(loss), out


def remat_gradients(onnx_path, feed, precision, extra, tmp):
    out_path = os.path.join(tmp, f"g_{precision}.npz")
    cmd = [REMAT, "run", onnx_path, "--feed", feed, "--dump-gradients", out_path,
           "--precision", precision] + extra
    if precision.endswith("-mixed"):
        cmd += ["--autocast-device", "cpu"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed: {r.stderr.strip() or r.stdout.strip()}")
    if "= predicted" not in r.stdout:
        raise AssertionError(f"{' '.join(cmd)}: measured peak is not the predicted one:\n{r.stdout}")
    return {k: v.astype(np.float64) for k, v in np.load(out_path).items()}


def prepare_corpus(name, tmp):
    model = CORPUS[name]().train()
    path = os.path.join(WEIGHTS, name + ".onnx")
    load_initializers(model, path)
    data = np.load(os.path.join(WEIGHTS, name + ".npz"))
    inputs = [torch.from_numpy(data["input"].copy())]
    R = torch.from_numpy(data["R"].copy())
    # The rebuilt model is the file's: its float32 output equals the corpus's PyTorch output.
    with torch.no_grad():
        out = model(*inputs)
    err = float((out - torch.from_numpy(data["output"])).abs().max())
    if err > 1e-4:
        raise AssertionError(f"{name}: the rebuilt model is not the file's (output differs by {err})")
    return model, inputs, R, path, os.path.join(WEIGHTS, name + ".npz"), []


def prepare_oracle_net(name, trainable, tmp):
    import oracle_nets
    import remat_oracle
    torch.manual_seed(0)
    model = (globals().get(name) or getattr(oracle_nets, name))().train()
    gen = torch.Generator().manual_seed(0)
    inputs = [remat_oracle.make_input(s, gen) for s in model.example_input_specs]
    names = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    path = os.path.join(tmp, name + ".onnx")
    remat_oracle.export(model, inputs, path, names)
    with torch.no_grad():
        out = model(*inputs)
    R = torch.randn(out.shape, generator=gen)
    feed = {n: t.numpy() for n, t in zip(names, inputs)}
    feed.update({n: p.detach().numpy() for n, p in model.named_parameters()})
    feed.update({n: b.numpy() for n, b in model.named_buffers()})
    feed["R"] = R.numpy()
    feed_path = os.path.join(tmp, name + ".feed.npz")
    np.savez(feed_path, **feed)
    extra = []
    if trainable:
        remat_oracle.apply_trainability(model, trainable=trainable)
        for t in trainable:
            extra += ["--trainable", t]
    return model, inputs, R, path, feed_path, extra


class AutocastGradients(unittest.TestCase):
    def check(self, name, prepared, strided=False):
        model, inputs, R, path, feed, extra = prepared
        g32, _, _ = torch_gradients(model, inputs, R, autocast=False)
        try:
            gac, _, _ = torch_gradients(model, inputs, R, autocast=True)
        except RuntimeError as e:  # torch 1.13 lacks a bfloat16 CPU kernel the model needs
            gac, raw_error = None, str(e).splitlines()[0]
        gex, _, _ = torch_gradients(model, inputs, R, autocast=True, exact_kernels=True)
        with tempfile.TemporaryDirectory() as tmp:
            ours = remat_gradients(path, feed, "bf16-mixed", extra, tmp)
            ours32 = remat_gradients(path, feed, "32-true", extra, tmp)
        keys = sorted(gex)
        missing = [k for k in keys if k not in ours]
        self.assertFalse(missing, f"{name}: remat dumped no {missing[:4]}")
        frozen = [k for k in ours if k.startswith("grad:") and k not in gex and not k.startswith("grad:input")]
        self.assertFalse(frozen, f"{name}: gradients of frozen weights {frozen[:4]}")
        rows = []  # (tensor, ours vs reference, autocast vs fp32, our 32-true vs reference, ours vs raw)
        for k in keys:
            # Relative to the float32 gradient's norm; a true gradient that is zero (a conv bias
            # before BatchNorm: float32 leaves 1e-9 of noise) is measured against autocast's.
            ref = max(float(np.linalg.norm(g32[k])), float(np.linalg.norm(gex[k])))
            if ref == 0.0:
                continue
            e = lambda a, b: float(np.linalg.norm(a.reshape(-1) - b.reshape(-1))) / ref
            rows.append((k, e(ours[k], gex[k]), e(gex[k], g32[k]), e(ours32[k], gex[k]),
                         e(ours[k], gac[k]) if gac is not None else float("nan")))
        self.assertTrue(rows)
        worst = max(rows, key=lambda r: r[1])
        med = lambda i: float(np.median([r[i] for r in rows]))
        top = lambda i: max(r[i] for r in rows)
        exact = sum(1 for r in rows if r[1] == 0.0)
        raw = (f"median {med(4):.1e} max {top(4):.1e}" if gac is not None else f"PyTorch failed ({raw_error})")
        print(f"{name:28s} {len(rows):3d} tensors ({exact} bitwise) | ours vs reference: median {med(1):.1e}"
              f" max {worst[1]:.1e} ({worst[0]}) | autocast vs fp32: median {med(2):.1e} max {top(2):.1e}"
              f" | our 32-true vs reference: median {med(3):.1e} | ours vs torch's own CPU autocast: {raw}",
              flush=True)
        RESULTS[name] = rows
        for k, d, own, _, _ in rows:
            if own > ILL_CONDITIONED:
                continue  # half precision changes this gradient by O(1): only the ratio applies
            self.assertLessEqual(d, TOL_TENSOR, f"{name} {k}: {d:.3g} from PyTorch's autocast gradient "
                                                f"(autocast's own error {own:.3g})")
            if not strided:
                self.assertLessEqual(d, TENSOR_RATIO * own, f"{name} {k}: {d:.3g} from PyTorch's autocast "
                                                            f"gradient, autocast's own error {own:.3g}")
        ratio = RATIO if med(2) <= ILL_CONDITIONED else RATIO_ILL
        if not strided:
            self.assertLessEqual(med(1), ratio * med(2),
                                 f"{name}: our autocast gradients are no closer to PyTorch's autocast run "
                                 f"than float32 is")
        # The negative controls: float32 everywhere (every cast rule wrong) fails the ratio, and
        # so does each single wrong rule that the network exercises.
        self.assertGreater(med(3), ratio * med(2), f"{name}: the test cannot tell float32 from autocast")
        caught = []
        for rule in WRONG_RULES:
            gw, _, _ = torch_gradients(model, inputs, R, autocast=True, exact_kernels=True, wrong=rule)
            dist = [float(np.linalg.norm(gw[k] - gex[k])) / max(float(np.linalg.norm(g32[k])),
                                                               float(np.linalg.norm(gex[k])), 1e-30)
                    for k, *_ in rows]
            if max(dist) == 0.0:
                continue  # the network has no op the rule changes
            m = float(np.median(dist))
            hit = m > ratio * med(2) or any(d > TOL_TENSOR or (own <= ILL_CONDITIONED and d > TENSOR_RATIO * own)
                                            for d, (_, _, own, _, _) in zip(dist, rows))
            caught.append(f"{rule}: median {m:.1e} max {max(dist):.1e} {'caught' if hit else 'NOT caught'}")
            CAUGHT.setdefault(rule, []).append((name, hit))
        print(f"{'':28s} wrong rules (distance from the reference): {', '.join(caught) or 'none applies'}")
        if not strided:
            missed = [rule for rule, seen in CAUGHT.items() if (name, False) in seen]
            self.assertFalse(missed, f"{name}: the test would pass an executor with the wrong rule {missed}")

    def test_corpus_models(self):
        for name in CORPUS:
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                self.check(name, prepare_corpus(name, tmp))

    def test_oracle_nets(self):
        for name, trainable in ORACLE_NETS.items():
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                self.check(name + (" --trainable " + ",".join(trainable) if trainable else ""),
                           prepare_oracle_net(name, trainable, tmp), strided=name in STRIDED)


if __name__ == "__main__":
    if not os.path.isdir(WEIGHTS):
        print(f"{WEIGHTS} not found: skipped")
        sys.exit(77)
    unittest.main(verbosity=1)
