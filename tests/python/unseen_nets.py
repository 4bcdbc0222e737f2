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
