"""Seven architectures written in today's styles that the training builder was never tuned on
(issue 33, second half), for the memory-model oracle (resources/python/remat_oracle.py,
tests/python/test_oracle.py, tests/bench/oracle_table.py): linear attention (elu + 1 feature map,
Katharopoulos et al., non-causal and causal by cumsum), sliding-window attention (a banded mask
built in forward), RWKV-4 time and channel mixing (token shift, the WKV recurrence unrolled with
its running maximum), a neural ODE (fixed-step RK4 unrolled over one shared MLP), DeBERTa's
disentangled attention (content-to-position and position-to-content by a gather over relative
positions), GhostNet bottlenecks (cheap depthwise ghost features concatenated, squeeze-excitation
with a hard sigmoid) and a TCN (dilated causal conv1d, chomped, with residuals, no weight norm).

Each class builds with no arguments, names its inputs in `example_input_specs` and its trainable
head `head` (for `--trainable '^head\\.'`). Sizes are small so the CPU measures them in seconds."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- linear attention --------------------------------------------------------------------------
def elu_feature_map(x):
    return F.elu(x) + 1


class LinearAttention(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.h, self.dh, self.causal = heads, d // heads, causal
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        B, N, C = x.shape
        q = elu_feature_map(self.q(x).view(B, N, self.h, self.dh))
        k = elu_feature_map(self.k(x).view(B, N, self.h, self.dh))
        v = self.v(x).view(B, N, self.h, self.dh)
        if self.causal:
            # causal: running sums of k v^T and of k (the parallel form, memory N d^2)
            kv = torch.einsum("bnhd,bnhm->bnhdm", k, v).cumsum(1)
            z = 1 / (torch.einsum("bnhd,bnhd->bnh", q, k.cumsum(1)) + 1e-6)
            o = torch.einsum("bnhd,bnhdm,bnh->bnhm", q, kv, z)
        else:
            kv = torch.einsum("bnhd,bnhm->bhdm", k, v)
            z = 1 / (torch.einsum("bnhd,bhd->bnh", q, k.sum(1)) + 1e-6)
            o = torch.einsum("bnhd,bhdm,bnh->bnhm", q, kv, z)
        return self.out(o.reshape(B, N, C))


class LinearTransformer(nn.Module):
    """Two pre-norm layers of linear attention (the first bidirectional, the second causal by
    cumsum), GELU MLPs, a mean-pooled head."""
    example_input_specs = ["2x32:int64:100"]

    def __init__(self, vocab=100, d=32, heads=4, seq=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.layers = nn.ModuleList()
        for causal in (False, True):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "attn": LinearAttention(d, heads, causal), "ln2": nn.LayerNorm(d),
                "mlp": nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))}))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 4)

    def forward(self, ids):
        x = self.emb(ids) + self.pos[:, :ids.shape[1]]
        for layer in self.layers:
            x = x + layer["attn"](layer["ln1"](x))
            x = x + layer["mlp"](layer["ln2"](x))
        return self.head(self.norm(x).mean(1))


# ---- sliding-window attention ------------------------------------------------------------------
class LocalAttention(nn.Module):
    def __init__(self, d, heads, window):
        super().__init__()
        self.h, self.dh, self.window = heads, d // heads, window
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.h, self.dh).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        # the band |i - j| <= window, built from positions in forward (Longformer / Mistral style)
        pos = torch.arange(N, device=x.device)
        outside = (pos[None, :] - pos[:, None]).abs() > self.window
        att = att.masked_fill(outside, float("-inf"))
        att = self.drop(att.softmax(-1))
        return self.proj((att @ v).transpose(1, 2).reshape(B, N, C))


class SlidingWindowTransformer(nn.Module):
    """Two pre-norm layers of banded self-attention (window 4) over 32 tokens, a CLS-style head on
    the first token."""
    example_input_specs = ["2x32x32"]

    def __init__(self, d=32, heads=4, window=4, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln1": nn.LayerNorm(d), "attn": LocalAttention(d, heads, window), "ln2": nn.LayerNorm(d),
                           "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))})
            for _ in range(depth))
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        for b in self.blocks:
            x = x + b["attn"](b["ln1"](x))
            x = x + b["mlp"](b["ln2"](x))
        return self.head(x[:, 0])


# ---- RWKV-4 ------------------------------------------------------------------------------------
class RWKVTimeMix(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.time_decay = nn.Parameter(torch.linspace(-5, 1, d))
        self.time_first = nn.Parameter(torch.full((d,), math.log(0.3)))
        self.time_mix_k = nn.Parameter(torch.rand(1, 1, d))
        self.time_mix_v = nn.Parameter(torch.rand(1, 1, d))
        self.time_mix_r = nn.Parameter(torch.rand(1, 1, d))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key = nn.Linear(d, d, bias=False)
        self.value = nn.Linear(d, d, bias=False)
        self.receptance = nn.Linear(d, d, bias=False)
        self.output = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        xx = self.time_shift(x)
        k = self.key(x * self.time_mix_k + xx * (1 - self.time_mix_k))
        v = self.value(x * self.time_mix_v + xx * (1 - self.time_mix_v))
        r = torch.sigmoid(self.receptance(x * self.time_mix_r + xx * (1 - self.time_mix_r)))
        w = -torch.exp(self.time_decay)
        u = self.time_first
        # the WKV recurrence, unrolled, with the running maximum p that keeps exp() finite
        aa = torch.zeros(B, C)
        bb = torch.zeros(B, C)
        pp = torch.full((B, C), -1e38)
        out = []
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            ww = u + kt
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out.append((e1 * aa + e2 * vt) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kt)
            e1, e2 = torch.exp(ww - p), torch.exp(kt - p)
            aa = e1 * aa + e2 * vt
            bb = e1 * bb + e2
            pp = p
        return self.output(r * torch.stack(out, 1))


class RWKVChannelMix(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_k = nn.Parameter(torch.rand(1, 1, d))
        self.time_mix_r = nn.Parameter(torch.rand(1, 1, d))
        self.key = nn.Linear(d, 4 * d, bias=False)
        self.receptance = nn.Linear(d, d, bias=False)
        self.value = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        xx = self.time_shift(x)
        k = torch.square(torch.relu(self.key(x * self.time_mix_k + xx * (1 - self.time_mix_k))))
        return torch.sigmoid(self.receptance(x * self.time_mix_r + xx * (1 - self.time_mix_r))) * self.value(k)


class RWKV(nn.Module):
    """Two RWKV-4 blocks (LayerNorm, time mixing with the WKV recurrence unrolled over 16 tokens,
    channel mixing with squared ReLU), a language-model head."""
    example_input_specs = ["2x16:int64:100"]

    def __init__(self, vocab=100, d=32, depth=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ln0 = nn.LayerNorm(d)
        self.blocks = nn.ModuleList(nn.ModuleDict({"ln1": nn.LayerNorm(d), "att": RWKVTimeMix(d),
                                                   "ln2": nn.LayerNorm(d), "ffn": RWKVChannelMix(d)})
                                    for _ in range(depth))
        self.ln_out = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.ln0(self.emb(ids))
        for b in self.blocks:
            x = x + b["att"](b["ln1"](x))
            x = x + b["ffn"](b["ln2"](x))
        return self.head(self.ln_out(x))


# ---- neural ODE --------------------------------------------------------------------------------
class ODEFunc(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d + 1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, d))

    def forward(self, t, y):
        return self.net(torch.cat([y, t.expand(y.shape[0], 1)], 1))


class NeuralODE(nn.Module):
    """An encoder, then dy/dt = f(t, y) integrated from 0 to 1 by 4 fixed RK4 steps unrolled over
    one shared MLP (time concatenated to the state), a classifier head."""
    example_input_specs = ["8x16"]

    def __init__(self, din=16, d=32, hidden=64, steps=4):
        super().__init__()
        self.steps = steps
        self.enc = nn.Linear(din, d)
        self.func = ODEFunc(d, hidden)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        y = self.enc(x)
        h = 1.0 / self.steps
        for i in range(self.steps):
            t = torch.full((1, 1), i * h)
            k1 = self.func(t, y)
            k2 = self.func(t + h / 2, y + h / 2 * k1)
            k3 = self.func(t + h / 2, y + h / 2 * k2)
            k4 = self.func(t + h, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return self.head(y)


# ---- DeBERTa disentangled attention ------------------------------------------------------------
class DisentangledSelfAttention(nn.Module):
    def __init__(self, d, heads, span):
        super().__init__()
        self.h, self.dh, self.span = heads, d // heads, span
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.pos_query = nn.Linear(d, d)
        self.pos_key = nn.Linear(d, d, bias=False)
        self.dropout = nn.Dropout(0.1)

    def heads(self, x):
        B, N, _ = x.shape
        return x.view(B, N, self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, rel_emb):
        B, N, C = x.shape
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        pos_k = self.heads(self.pos_key(rel_emb).unsqueeze(0)).expand(B, -1, -1, -1)  # B h 2S dh
        pos_q = self.heads(self.pos_query(rel_emb).unsqueeze(0)).expand(B, -1, -1, -1)
        scale = math.sqrt(self.dh * 3)
        # relative positions i - j, bucketed to [0, 2 span)
        idx = torch.arange(N, device=x.device)
        rel = idx[:, None] - idx[None, :]
        c2p_pos = torch.clamp(rel + self.span, 0, 2 * self.span - 1)
        c2p_pos = c2p_pos.expand(B, self.h, N, N)
        c2c = q @ k.transpose(-1, -2)
        c2p = torch.gather(q @ pos_k.transpose(-1, -2), -1, c2p_pos)
        p2c = torch.gather(k @ pos_q.transpose(-1, -2), -1, c2p_pos).transpose(-1, -2)
        att = self.dropout(F.softmax((c2c + c2p + p2c) / scale, dim=-1))
        return (att @ v).permute(0, 2, 1, 3).reshape(B, N, C)


class DeBERTaLayer(nn.Module):
    def __init__(self, d, heads, span):
        super().__init__()
        self.attn = DisentangledSelfAttention(d, heads, span)
        self.attn_out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x, rel_emb):
        x = self.ln1(x + self.attn_out(self.attn(x, rel_emb)))
        return self.ln2(x + self.ffn(x))


class DeBERTa(nn.Module):
    """Two post-norm layers of DeBERTa's disentangled attention: content-to-content, c2p and p2c
    terms from shared relative position embeddings (span 8), gathered by a clamped relative index,
    scaled by sqrt(3 d); a head on the first token."""
    example_input_specs = ["2x24:int64:100"]

    def __init__(self, vocab=100, d=32, heads=4, span=8, depth=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.emb_ln = nn.LayerNorm(d)
        self.rel_embeddings = nn.Embedding(2 * span, d)
        self.rel_ln = nn.LayerNorm(d)
        self.layers = nn.ModuleList(DeBERTaLayer(d, heads, span) for _ in range(depth))
        self.head = nn.Linear(d, 2)

    def forward(self, ids):
        x = self.emb_ln(self.emb(ids))
        rel = self.rel_ln(self.rel_embeddings.weight)
        for layer in self.layers:
            x = layer(x, rel)
        return self.head(x[:, 0])


# ---- GhostNet ----------------------------------------------------------------------------------
def hard_sigmoid(x):
    return F.relu6(x + 3.0) / 6.0


class GhostModule(nn.Module):
    def __init__(self, cin, cout, relu=True, ratio=2):
        super().__init__()
        self.cout = cout
        init = math.ceil(cout / ratio)
        self.primary = nn.Sequential(nn.Conv2d(cin, init, 1, bias=False), nn.BatchNorm2d(init),
                                     nn.ReLU(inplace=True) if relu else nn.Identity())
        self.cheap = nn.Sequential(nn.Conv2d(init, init * (ratio - 1), 3, 1, 1, groups=init, bias=False),
                                   nn.BatchNorm2d(init * (ratio - 1)),
                                   nn.ReLU(inplace=True) if relu else nn.Identity())

    def forward(self, x):
        x1 = self.primary(x)
        x2 = self.cheap(x1)
        return torch.cat([x1, x2], 1)[:, :self.cout]


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.reduce = nn.Conv2d(c, c // r, 1)
        self.expand = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * hard_sigmoid(self.expand(F.relu(self.reduce(s))))


class GhostBottleneck(nn.Module):
    def __init__(self, cin, mid, cout, stride, se):
        super().__init__()
        self.ghost1 = GhostModule(cin, mid, relu=True)
        self.dw = None
        if stride > 1:
            self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid))
        self.se = SqueezeExcite(mid) if se else None
        self.ghost2 = GhostModule(mid, cout, relu=False)
        if cin == cout and stride == 1:
            self.shortcut = nn.Identity()
        else:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                                          nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 1, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.ghost1(x)
        if self.dw is not None:
            y = self.dw(y)
        if self.se is not None:
            y = self.se(y)
        return self.ghost2(y) + self.shortcut(x)


class GhostNet(nn.Module):
    """A GhostNet stem and four ghost bottlenecks (odd channel counts, so the concatenated ghost
    features are sliced; stride 2 with a depthwise conv; squeeze-excitation with a hard sigmoid
    written out), global pooling, a conv head and a classifier."""
    example_input_specs = ["2x3x32x32"]

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(GhostBottleneck(16, 16, 16, 1, False), GhostBottleneck(16, 48, 24, 2, False),
                                    GhostBottleneck(24, 72, 24, 1, True), GhostBottleneck(24, 75, 40, 2, True))
        self.conv_head = nn.Conv2d(40, 64, 1)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = F.relu(self.conv_head(F.adaptive_avg_pool2d(x, 1)))
        return self.head(F.dropout(x.flatten(1), 0.2, self.training))


# ---- TCN ---------------------------------------------------------------------------------------
class Chomp1d(nn.Module):
    def __init__(self, chomp):
        super().__init__()
        self.chomp = chomp

    def forward(self, x):
        return x[:, :, :-self.chomp].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation, p=0.1):
        super().__init__()
        pad = (k - 1) * dilation
        self.net = nn.Sequential(nn.Conv1d(cin, cout, k, padding=pad, dilation=dilation), Chomp1d(pad), nn.ReLU(),
                                 nn.Dropout(p), nn.Conv1d(cout, cout, k, padding=pad, dilation=dilation),
                                 Chomp1d(pad), nn.ReLU(), nn.Dropout(p))
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(self.net(x) + res)


class TCN(nn.Module):
    """Bai et al.'s TCN without weight norm: four temporal blocks (dilation 1, 2, 4, 8) of two
    causal dilated conv1d each (padded both sides, the future chomped off with .contiguous()),
    ReLU, dropout, a residual (1x1 conv where the width changes), a head on the last step."""
    example_input_specs = ["4x8x64"]

    def __init__(self, cin=8, channels=(16, 16, 32, 32), k=3, classes=5):
        super().__init__()
        layers, c = [], cin
        for i, cout in enumerate(channels):
            layers.append(TemporalBlock(c, cout, k, 2 ** i))
            c = cout
        self.tcn = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.tcn(x)[:, :, -1])
