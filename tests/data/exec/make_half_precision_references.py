"""PyTorch references for half-precision execution (tests/exec/tst_half_precision.cpp).

half_net_torch.onnx: Conv2d, ReLU, LayerNorm, Linear (Gemm), GELU, Linear, exported in float32,
  with half_net_torch.npz (input, R, float32 gradients, corpus layout) and
  half_net_torch.bf16.npz (the same model, input and R run with every tensor bfloat16:
  model.to(torch.bfloat16); gradients widened to float32). Input and R are rounded to bfloat16
  first, so the float32 and bfloat16 runs start from the same values.
cast_net_torch.onnx: what autocast does, written as explicit casts: LayerNorm in float32, the
  activations and the float32 weights cast to bfloat16 for a Linear, its result cast back to
  float32 for a softmax. Exported without constant folding, so the weight casts stay Cast nodes
  and the parameters stay float32 initializers. cast_net_torch.npz holds the gradients of that
  computation with exact accumulation: float64, every bfloat16 tensor (forward values and their
  gradients) rounded to bfloat16 where the graph stores it, which is what a backend that
  accumulates in float32 approaches (input, R, grad_input, grad:<initializer>).
  cast_net_torch.cpu.npz holds torch 1.13's own CPU run of the same casts, whose bfloat16 matmuls
  do not accumulate everything in float32 (up to 1.2% from the exact reference here).

Run with Debian's python3-torch 1.13: /usr/bin/python3 make_half_precision_references.py
"""
import io
import numpy as np
import onnx
import onnx.numpy_helper
import torch

torch.manual_seed(0)
bf16 = torch.bfloat16


class HalfNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.norm = torch.nn.LayerNorm(144)
        self.fc1 = torch.nn.Linear(144, 32)
        self.fc2 = torch.nn.Linear(32, 10)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_(0, 0.1)

    def forward(self, x):                        # [2, 3, 8, 8]
        h = torch.relu(self.conv(x)).flatten(1)  # [2, 144]
        return self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))


class CastNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 12)

    def forward(self, x):                                   # [4, 16] float32
        h = self.norm(x).to(bf16)                           # float32 op, cast down
        y = torch.nn.functional.linear(h, self.fc.weight.to(bf16), self.fc.bias.to(bf16))
        return torch.softmax(y.float(), dim=1)              # cast up, float32 op


def grads(model, x, r):
    model.zero_grad()
    xi = x.clone().requires_grad_(True)
    loss = (model(xi) * r).sum()
    loss.backward()
    out = {"grad_input": xi.grad.float().numpy(), "loss": np.array(loss.double().item())}
    for name, p in model.named_parameters():
        out["grad:" + name] = p.grad.float().numpy()
    return out


def export(model, x, name):
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=17, input_names=["input"],
                      output_names=["output"], do_constant_folding=False)
    m = onnx.load_from_string(buf.getvalue())
    names = {i.name for i in m.graph.initializer}
    for p, _ in model.named_parameters():
        assert p in names, f"{name}: parameter {p} is not an initializer ({sorted(names)})"
    onnx.save(m, f"{name}.onnx")


def rounded(t):
    return t.to(bf16).float()


net = HalfNet()
x = rounded(torch.randn(2, 3, 8, 8))
with torch.no_grad():
    r = rounded(torch.randn_like(net(x)))
export(net, x, "half_net_torch")
np.savez("half_net_torch.npz", input=x.numpy(), R=r.numpy(), **grads(net, x, r))
np.savez("half_net_torch.bf16.npz", input=x.numpy(), R=r.numpy(),
         **grads(net.to(bf16), x.to(bf16), r.to(bf16)))

class RoundBf16(torch.autograd.Function):
    """A bfloat16 tensor in a float64 computation: the value and its gradient rounded."""

    @staticmethod
    def forward(ctx, x):
        return x.to(bf16).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g.to(bf16).to(g.dtype)


def cast_net_exact(cnet, x, r):
    q = RoundBf16.apply
    p = {n: v.detach().double().clone().requires_grad_(True) for n, v in cnet.named_parameters()}
    xi = x.double().clone().requires_grad_(True)
    h = torch.nn.functional.layer_norm(xi, (16,), p["norm.weight"], p["norm.bias"])
    y = q(torch.nn.functional.linear(q(h), q(p["fc.weight"]), q(p["fc.bias"])))
    (torch.softmax(y, dim=1) * r.double()).sum().backward()
    out = {"grad_input": xi.grad.float().numpy()}
    for n, v in p.items():
        out["grad:" + n] = v.grad.float().numpy()
    return out


cnet = CastNet()
cx = torch.randn(4, 16)
with torch.no_grad():
    cr = torch.randn_like(cnet(cx))
export(cnet, cx, "cast_net_torch")
np.savez("cast_net_torch.npz", input=cx.numpy(), R=cr.numpy(), **cast_net_exact(cnet, cx, cr))
np.savez("cast_net_torch.cpu.npz", input=cx.numpy(), R=cr.numpy(), **grads(cnet, cx, cr))
print("done")
