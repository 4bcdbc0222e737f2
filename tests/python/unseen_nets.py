"""Architectures of issue 33 that nobody had tuned the training builder on, written as people write
them today (small: each measures in seconds on a CPU). For resources/python/remat_oracle.py:

    /usr/bin/python3 resources/python/remat_oracle.py check tests/python/unseen_nets.py:FTTransformer \
        --remat build/app/remat [--metadata] [--autocast bf16]

FTTransformer   numeric features tokenised by a per-feature weight and bias, categorical features
                by one embedding table with per-column offsets (an int64 buffer), a CLS token,
                pre-norm transformer layers, a head on the CLS token.
DCNv2           cross network x0 * (W x + b) + x beside a deep tower (stacked DCN-v2).
RealNVP         affine coupling with checkerboard masks registered as buffers, ActNorm, tanh-scaled
                log-scales, the log-determinant, the negative log-likelihood as the output.
HyperNet        an MLP generating a convolution's and a linear layer's weights from layer
                embeddings, used through F.conv2d / F.linear.
DiT             DiT blocks: adaLN-Zero modulation from a sinusoidal timestep embedding and a class
                embedding, a frozen sin-cos position table (nn.Parameter, requires_grad=False),
                patchify / unpatchify.
HandLayerNorm   a residual MLP whose LayerNorm is written by hand, computing x - mean twice (the
                exporter's common-subexpression pass merges the two; autograd keeps both).
CLIPHead        image and text towers, F.normalize, a learned temperature (logit_scale.exp()),
                symmetric cross-entropy over the similarity matrix, the loss as the output.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- (a) FT-Transformer ----------------------------------------------------------------------

class _FTLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(),
                                nn.Dropout(0.1), nn.Linear(2 * d, d))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        B, T, D = x.shape
        h = self.norm1(x)
        q, k, v = self.qkv(h).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // self.heads), dim=-1)
        a = (self.drop(a) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(a)
        return x + self.ff(self.norm2(x))


class FTTransformer(nn.Module):
    example_input_specs = ["8x6", "8x3:int64:5"]

    def __init__(self, n_num=6, cards=(5, 4, 3), d=32, heads=4, layers=2):
        super().__init__()
        self.num_weight = nn.Parameter(torch.randn(n_num, d) / math.sqrt(d))
        self.num_bias = nn.Parameter(torch.zeros(n_num, d))
        self.register_buffer("category_offsets", torch.tensor([0] + list(cards[:-1])).cumsum(0))
        self.cat_emb = nn.Embedding(sum(cards), d)
        self.cat_bias = nn.Parameter(torch.zeros(len(cards), d))
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.layers = nn.ModuleList([_FTLayer(d, heads) for _ in range(layers)])
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x_num, x_cat):
        # clamp: the oracle's int inputs are in [0, 5); the last columns have fewer categories
        x_cat = torch.minimum(x_cat, torch.tensor([4, 3, 2]))
        num = x_num.unsqueeze(-1) * self.num_weight + self.num_bias
        cat = self.cat_emb(x_cat + self.category_offsets) + self.cat_bias
        x = torch.cat([self.cls.expand(x_num.shape[0], -1, -1), num, cat], 1)
        for layer in self.layers:
            x = layer(x)
        return self.head(x[:, 0])


# ---- (b) DCN-v2 ------------------------------------------------------------------------------

class CrossLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x0, x):
        return x0 * self.lin(x) + x


class DCNv2(nn.Module):
    example_input_specs = ["16x13", "16x4:int64:20"]

    def __init__(self, n_dense=13, n_sparse=4, vocab=20, e=8, cross=3, hidden=64):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(vocab, e) for _ in range(n_sparse)])
        d = n_dense + n_sparse * e
        self.bn = nn.BatchNorm1d(n_dense)
        self.cross = nn.ModuleList([CrossLayer(d) for _ in range(cross)])
        self.deep = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Dropout(0.2), nn.Linear(hidden, hidden),
                                  nn.ReLU())
        self.out = nn.Linear(d + hidden, 1)

    def forward(self, dense, sparse):
        x0 = torch.cat([self.bn(dense)] + [m(sparse[:, i]) for i, m in enumerate(self.embs)], 1)
        x = x0
        for layer in self.cross:
            x = layer(x0, x)
        return torch.sigmoid(self.out(torch.cat([x, self.deep(x0)], 1)))


# ---- (c) RealNVP / Glow-style flow -----------------------------------------------------------

class ActNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, c, 1, 1))
        self.logs = nn.Parameter(torch.zeros(1, c, 1, 1))

    def forward(self, x):
        hw = x.shape[2] * x.shape[3]
        return (x + self.loc) * torch.exp(self.logs), self.logs.sum() * hw


class Coupling(nn.Module):
    def __init__(self, c, hidden, parity):
        super().__init__()
        yy, xx = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
        self.register_buffer("mask", ((yy + xx + parity) % 2).float().view(1, 1, 8, 8))
        self.net = nn.Sequential(nn.Conv2d(c, hidden, 3, padding=1), nn.ReLU(), nn.Conv2d(hidden, hidden, 1),
                                 nn.ReLU(), nn.Conv2d(hidden, 2 * c, 3, padding=1))
        self.scale = nn.Parameter(torch.ones(1, c, 1, 1))

    def forward(self, x):
        s, t = self.net(x * self.mask).chunk(2, 1)
        s = self.scale * torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        y = x * torch.exp(s) + t
        return y, s.flatten(1).sum(1)


class RealNVP(nn.Module):
    example_input_specs = ["4x3x8x8"]

    def __init__(self, c=3, hidden=32, steps=3):
        super().__init__()
        self.norms = nn.ModuleList([ActNorm(c) for _ in range(steps)])
        self.couplings = nn.ModuleList([Coupling(c, hidden, i % 2) for i in range(steps)])

    def forward(self, x):
        logdet = torch.zeros(x.shape[0])
        for norm, coupling in zip(self.norms, self.couplings):
            x, ld = norm(x)
            logdet = logdet + ld
            x, ld = coupling(x)
            logdet = logdet + ld
        log_pz = (-0.5 * x ** 2 - 0.5 * math.log(2 * math.pi)).flatten(1).sum(1)
        return -(log_pz + logdet).mean()


# ---- (d) hypernetwork ------------------------------------------------------------------------

class HyperNet(nn.Module):
    """Weights of two conv layers and the classifier are generated from per-layer embeddings."""
    example_input_specs = ["4x3x16x16"]

    def __init__(self, c=16, z=8, classes=10):
        super().__init__()
        self.c = c
        self.layer_z = nn.Parameter(torch.randn(3, z))
        self.hyper_conv = nn.Sequential(nn.Linear(z, 64), nn.ReLU(), nn.Linear(64, c * c * 9))
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.hyper_fc = nn.Linear(z, classes * c)
        self.classes = classes

    def forward(self, x):
        x = F.relu(self.stem(x))
        for i in range(2):
            w = self.hyper_conv(self.layer_z[i]).view(self.c, self.c, 3, 3)
            x = F.relu(F.conv2d(x, w, padding=1)) + x
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        w_fc = self.hyper_fc(self.layer_z[2]).view(self.classes, self.c)
        return F.linear(x, w_fc)


# ---- (e) DiT ---------------------------------------------------------------------------------

def _sincos_2d(d, n):
    grid = torch.arange(n, dtype=torch.float32)
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(d // 4, dtype=torch.float32) / (d // 4))
    out = [torch.sin(xx.flatten()[:, None] * omega), torch.cos(xx.flatten()[:, None] * omega),
           torch.sin(yy.flatten()[:, None] * omega), torch.cos(yy.flatten()[:, None] * omega)]
    return torch.cat(out, 1).unsqueeze(0)


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, d, freq=64):
        super().__init__()
        self.freq = freq
        self.mlp = nn.Sequential(nn.Linear(freq, d), nn.SiLU(), nn.Linear(d, d))

    def forward(self, t):
        half = self.freq // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], -1))


class DiTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        # LayerNorm(d, elementwise_affine=False) as DiT writes it; torch 1.13 exports that as a
        # LayerNormalization without its Scale input (invalid ONNX), so the ones go in a buffer.
        self.register_buffer("ln_ones", torch.ones(d), persistent=False)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))
        nn.init.zeros_(self.adaLN_modulation[-1].weight)
        nn.init.zeros_(self.adaLN_modulation[-1].bias)

    def norm(self, x):
        return F.layer_norm(x, x.shape[-1:], self.ln_ones, eps=1e-6)

    def attn(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm(x), shift_msa, scale_msa))
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm(x), shift_mlp, scale_mlp))


class DiT(nn.Module):
    example_input_specs = ["2x4x16x16", "2", "2:int64:10"]

    def __init__(self, c=4, size=16, p=2, d=64, heads=4, depth=2, classes=10):
        super().__init__()
        self.c, self.p, self.n = c, p, size // p
        self.x_embedder = nn.Conv2d(c, d, p, stride=p)
        self.t_embedder = TimestepEmbedder(d)
        self.y_embedder = nn.Embedding(classes + 1, d)
        self.pos_embed = nn.Parameter(_sincos_2d(d, self.n), requires_grad=False)
        self.blocks = nn.ModuleList([DiTBlock(d, heads) for _ in range(depth)])
        self.final_mod = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.final = nn.Linear(d, p * p * c)

    def forward(self, x, t, y):
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y)
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.final_mod(c).chunk(2, dim=1)
        x = self.final(modulate(self.blocks[-1].norm(x), shift, scale))
        B = x.shape[0]
        x = x.reshape(B, self.n, self.n, self.p, self.p, self.c)
        return torch.einsum("nhwpqc->nchpwq", x).reshape(B, self.c, self.n * self.p, self.n * self.p)


# ---- (f) hand-written LayerNorm --------------------------------------------------------------

class MyLayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


class HandLayerNorm(nn.Module):
    example_input_specs = ["4x16x64"]

    def __init__(self, d=64, layers=3):
        super().__init__()
        self.norms = nn.ModuleList([MyLayerNorm(d) for _ in range(layers)])
        self.fcs = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                  for _ in range(layers)])
        self.norm_out = MyLayerNorm(d)

    def forward(self, x):
        for norm, fc in zip(self.norms, self.fcs):
            x = x + fc(norm(x))
        return self.norm_out(x)


# ---- (g) contrastive head (CLIP-style) -------------------------------------------------------

class CLIPHead(nn.Module):
    example_input_specs = ["8x3x16x16", "8x12:int64:50"]
    example_output_names = ["loss"]

    def __init__(self, d=32, vocab=50):
        super().__init__()
        self.image = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                   nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.tok = nn.Embedding(vocab, d)
        self.text = nn.TransformerEncoderLayer(d, 4, 64, 0.0, batch_first=True, norm_first=True)
        self.image_proj = nn.Linear(32, d, bias=False)
        self.text_proj = nn.Linear(d, d, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, images, tokens):
        img = F.normalize(self.image_proj(self.image(images)), dim=-1)
        txt = F.normalize(self.text_proj(self.text(self.tok(tokens)).mean(1)), dim=-1)
        logits = self.logit_scale.exp() * img @ txt.t()
        labels = torch.arange(logits.shape[0])
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


class ContigSplit(nn.Module):
    """nn.MultiheadAttention's spelling at batch 1: one in-projection, q / k / v sliced from it, k
    and v made .contiguous() before the head reshape. At batch 1 that reshape could be a view of
    the slice, so the file alone reads no copy (-25% without metadata); remat_export records the
    copies (remat.contiguous) and the figure is exact. vit_b_16's +1.45% at batch 1 is this class."""

    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.d = h, d
        self.proj = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        s = x.shape[1]
        q, k, v = self.proj(x).split(self.d, dim=-1)
        q = q.reshape(s, self.h, self.d // self.h).transpose(0, 1)
        k = k.contiguous().view(s, self.h, self.d // self.h).transpose(0, 1)
        v = v.contiguous().view(s, self.h, self.d // self.h).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(1, 2), dim=-1)
        o = (a @ v).transpose(0, 1).reshape(1, s, self.d)
        return self.out(o)

    example_input_specs = ["1x16x32"]

# =================================================================================================
# The second half, written beside the first:
# Seven architectures written in today's styles that the training builder was never tuned on
# (issue 33, second half), for the memory-model oracle (resources/python/remat_oracle.py,
# tests/python/test_oracle.py, tests/bench/oracle_table.py): linear attention (elu + 1 feature map,
# Katharopoulos et al., non-causal and causal by cumsum), sliding-window attention (a banded mask
# built in forward), RWKV-4 time and channel mixing (token shift, the WKV recurrence unrolled with
# its running maximum), a neural ODE (fixed-step RK4 unrolled over one shared MLP), DeBERTa's
# disentangled attention (content-to-position and position-to-content by a gather over relative
# positions), GhostNet bottlenecks (cheap depthwise ghost features concatenated, squeeze-excitation
# with a hard sigmoid) and a TCN (dilated causal conv1d, chomped, with residuals, no weight norm).
#
# Each class builds with no arguments, names its inputs in `example_input_specs` and its trainable
# head `head` (for `--trainable '^head\\.'`). Sizes are small so the CPU measures them in seconds.


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
