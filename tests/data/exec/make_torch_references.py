"""PyTorch references for kernels PyTorch runs through other code paths (tests/exec/tst_torch_reference.cpp).

Each model is exported with torch.onnx (weights as initializers) beside two npz files in the corpus
format (../shared/corpus/README.md): <name>.npz (float32 run: input, R, output, loss, gradients) and
<name>.f64.npz (the same in float64). Gradients are keyed by ONNX initializer: torch's exporter
reorders the gate blocks (LSTM ifgo -> iofc, GRU rzn -> zrn) and concatenates biases and directions,
so each initializer is matched to the transform of the PyTorch parameters that reproduces it, and
the same transform (a permutation) is applied to their gradients. `saved_activation_bytes` is what
autograd saves on the CPU (saved_tensors_hooks, by storage), without the input and parameters.

Run with Debian's python3-torch 1.13: /usr/bin/python3 make_torch_references.py
"""
import io
import numpy as np
import onnx
import onnx.numpy_helper
import torch

torch.manual_seed(0)


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 4, bidirectional=True)
        self.gru = torch.nn.GRU(8, 3, batch_first=True)
        self.rnn = torch.nn.RNN(3, 2)

    def forward(self, x):
        y, _ = self.lstm(x)                 # [T, B, 8]
        z, _ = self.gru(y.transpose(0, 1))  # batch-first [B, T, 3]
        w, _ = self.rnn(z.transpose(0, 1))  # [T, B, 2]
        return w


class Transposed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up2d = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up1d = torch.nn.ConvTranspose1d(6, 2, 3, stride=2, padding=2, output_padding=1, dilation=2)
        self.up3d = torch.nn.ConvTranspose3d(2, 2, (2, 1, 2), stride=(1, 2, 1), padding=(0, 0, 1))

    def forward(self, x):
        y = self.up2d(x)                        # [2, 6, 6, 6]
        z = self.up1d(y.flatten(2))             # [2, 2, 72]
        return self.up3d(z.reshape(2, 2, 2, 6, 6))


class Reductions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 8, 1)

    def forward(self, x):
        z = torch.nn.functional.pixel_shuffle(self.conv(x), 2)  # DepthToSpace CRD [2, 2, 6, 6]
        a = torch.norm(z, p=2, dim=1, keepdim=True)             # ReduceL2 [2, 1, 6, 6]
        b = torch.norm(z, p=1, dim=(2, 3))                      # ReduceL1 [2, 2]
        return a.reshape(2, 36)[:, :2] + b


class NormsResize(torch.nn.Module):
    """Video and audio windows, group / instance norm, bilinear resizes, repeat and cumsum."""

    def __init__(self):
        super().__init__()
        self.conv3d = torch.nn.Conv3d(2, 4, 3, stride=(2, 1, 1), padding=1)
        self.pool3d = torch.nn.MaxPool3d((1, 2, 2))
        self.gn = torch.nn.GroupNorm(2, 4)
        self.inorm = torch.nn.InstanceNorm2d(4)
        self.conv1d = torch.nn.Conv1d(4, 4, 3, padding=1)
        self.avg1d = torch.nn.AvgPool1d(2)
        with torch.no_grad():  # distinct values, so each initializer matches one parameter
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.normal_()

    def forward(self, x):                                     # [2, 2, 4, 6, 6]
        h = self.pool3d(torch.relu(self.conv3d(x)))           # Conv 3-D, MaxPool 3-D [2, 4, 2, 3, 3]
        g = self.inorm(h.flatten(2, 3))                       # InstanceNormalization [2, 4, 6, 3]
        u = torch.nn.functional.interpolate(g, scale_factor=2, mode="bilinear", align_corners=False)
        v = self.gn(u)                                        # GroupNorm (exported as InstanceNorm) [2, 4, 12, 6]
        w = torch.nn.functional.interpolate(v, size=(5, 7), mode="bilinear", align_corners=True)
        s = torch.cumsum(w.repeat(1, 1, 1, 2), dim=3)         # Tile, CumSum [2, 4, 5, 14]
        return self.avg1d(self.conv1d(s.flatten(2)))          # Conv 1-D, AveragePool 1-D [2, 4, 35]


class ResizeCubic(torch.nn.Module):
    """Bicubic interpolate (align_corners False and True), or with antialias=True bicubic and
    bilinear that shrink one dim and grow the other. torch 1.13 cannot export antialias: the
    model is exported with plain interpolation (`export_plain`) and its Resize nodes are then
    given ONNX's antialias form (opset 18): antialias=1, exclude_outside=1 (torch leaves taps
    outside the input out and renormalises) and, for bicubic, cubic_coeff_a=-0.5 (torch's
    antialiased bicubic uses PIL's a = -0.5; plain bicubic uses -0.75)."""

    def __init__(self, antialias):
        super().__init__()
        self.c1 = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.c2 = torch.nn.Conv2d(3, 2, 3, padding=1)
        self.antialias = antialias
        self.export_plain = False

    def forward(self, x):                                     # [2, 2, 6, 7]
        aa = self.antialias and not self.export_plain
        y = self.c1(x)
        if not self.antialias:
            u = torch.nn.functional.interpolate(y, scale_factor=2, mode="bicubic", align_corners=False)
            v = self.c2(u)                                    # [2, 2, 12, 14]
            return torch.nn.functional.interpolate(v, size=(5, 9), mode="bicubic", align_corners=True)
        u = torch.nn.functional.interpolate(y, size=(3, 10), mode="bicubic", align_corners=False,
                                            antialias=aa)
        v = self.c2(u)                                        # [2, 2, 3, 10]
        return torch.nn.functional.interpolate(v, size=(2, 4), mode="bilinear", align_corners=False,
                                               antialias=aa)


def to_antialias(onnx_model):
    """The exported plain Resize nodes in ONNX's antialias form (see ResizeCubic)."""
    for op in onnx_model.opset_import:
        if op.domain in ("", "ai.onnx"):
            op.version = 18
    for node in onnx_model.graph.node:
        if node.op_type != "Resize":
            continue
        attrs = {a.name: a for a in node.attribute}
        mode = attrs["mode"].s.decode()
        for name in ("antialias", "exclude_outside", "cubic_coeff_a"):
            if name in attrs:
                node.attribute.remove(attrs[name])
        node.attribute.append(onnx.helper.make_attribute("antialias", 1))
        node.attribute.append(onnx.helper.make_attribute("exclude_outside", 1))
        if mode == "cubic":
            node.attribute.append(onnx.helper.make_attribute("cubic_coeff_a", -0.5))
    return onnx_model


def blocks(t, order, n):
    parts = t.chunk(n, 0)
    return torch.cat([parts[i] for i in order], 0)


def candidates(model):
    """(transformed value, transformed gradient) per exporter transform of the recurrent parameters."""
    out = []
    for name, order, n in (("lstm", [0, 3, 1, 2], 4), ("gru", [1, 0, 2], 3), ("rnn", [0], 1)):
        for m in model.modules():
            if type(m).__name__.lower() != name:
                continue
            dirs = ["", "_reverse"] if m.bidirectional else [""]
            for layer in range(m.num_layers):
                def get(kind, suffix, grad):
                    p = getattr(m, f"{kind}_l{layer}{suffix}")
                    v = p.grad if grad else p.data
                    return blocks(v, order, n)
                def stack(kind):
                    return (torch.stack([get(kind, d, False) for d in dirs]), torch.stack([get(kind, d, True) for d in dirs]))
                out.append(stack("weight_ih"))
                out.append(stack("weight_hh"))
                if m.bias:
                    out.append((torch.stack([torch.cat([get("bias_ih", d, False), get("bias_hh", d, False)]) for d in dirs]),
                                torch.stack([torch.cat([get("bias_ih", d, True), get("bias_hh", d, True)]) for d in dirs])))
    for name, p in model.named_parameters():
        out.append((p.data, p.grad))
    return out


def saved_bytes(model, x):
    params = {p.data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        st = t.storage()
        if st.data_ptr() not in params and st.data_ptr() != x.data_ptr():
            seen[st.data_ptr()] = st.size() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(seen.values())


def run(model, x, r):
    model.zero_grad()
    xi = x.clone().requires_grad_(True)
    y = model(xi)
    loss = (y * r).sum()
    loss.backward()
    return y.detach(), loss.detach(), xi.grad


def make(name, model, x, patch=None):
    model.train()
    buf = io.BytesIO()
    if patch:
        model.export_plain = True
    torch.onnx.export(model, x, buf, opset_version=14, input_names=["input"], output_names=["output"])
    if patch:
        model.export_plain = False
    onnx_model = onnx.load_from_string(buf.getvalue())
    if patch:
        onnx_model = patch(onnx_model)
    onnx.save(onnx_model, f"{name}.onnx")
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx_model.graph.initializer}
    with torch.no_grad():
        y0 = model(x)
    r = torch.randn_like(y0)
    saved = saved_bytes(model, x.clone().requires_grad_(True))
    for dtype, suffix in ((torch.float32, ""), (torch.float64, ".f64")):
        m = model.to(dtype)
        y, loss, gx = run(m, x.to(dtype), r.to(dtype))
        entries = {"input": x.numpy(), "R": r.numpy(), "output": y.float().numpy(),
                   "loss": np.array(loss.double().item()), "loss_f32": np.array(loss.float().item(), dtype=np.float32),
                   "grad_input": gx.float().numpy(), "saved_activation_bytes": np.array(saved, dtype=np.int64)}
        cands = candidates(m)
        for iname, value in inits.items():
            if value.dtype != np.float32:
                continue
            match = [g for v, g in cands if tuple(v.shape) == value.shape and np.allclose(v.float().numpy(), value, atol=1e-6)]
            if not match:  # a parameter the exporter's constant folding unsqueezed (GroupNorm's weight)
                match = [g.reshape(value.shape) for v, g in cands
                         if v.numel() == value.size and np.allclose(v.float().numpy().reshape(value.shape), value, atol=1e-6)]
            if not match:
                raise SystemExit(f"{name}: initializer {iname} matches no parameter")
            entries[f"grad:{iname}"] = match[0].float().numpy()
        np.savez(f"{name}{suffix}.npz", **entries)
    model.float()
    print(name, "saved activation bytes", saved, "initializers", len(inits))


make("recurrent_torch", Recurrent(), torch.randn(5, 2, 3))
make("conv_transpose_torch", Transposed(), torch.randn(2, 4, 3, 3))
make("reductions_torch", Reductions(), torch.randn(2, 2, 3, 3))
make("norms_resize_torch", NormsResize(), torch.randn(2, 2, 4, 6, 6))
make("resize_cubic_torch", ResizeCubic(False), torch.randn(2, 2, 6, 7))
make("resize_antialias_torch", ResizeCubic(True), torch.randn(2, 2, 6, 7), patch=to_antialias)
