"""Networks for fine-tuning and for the tensors torch.onnx cannot tell apart, for the memory-model
oracle (resources/python/remat_oracle.py --freeze / --trainable / --metadata; tests/python/
test_oracle.py). Each class builds with no arguments and names its inputs in
`example_input_specs`. Sizes are small so the CPU measures them in seconds.

Fine-tuning (head only, half frozen, LoRA): a ResNet-style CNN (`fc` head), a ViT-style encoder
(`head`), a LoRA-augmented transformer whose attention and MLP projections carry `lora_A` /
`lora_B` adapters beside frozen base weights, and a GPT-style decoder with tied embeddings.
Buffers in submodules (issue 33): a PixelCNN whose masked convolutions multiply a registered mask
onto the weight, a mel front end whose DFT matrices, window and filter bank are buffers of a
submodule, and an MAE / DiT-style encoder with a fixed 2-D sin-cos position table buffer."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- a ResNet-style CNN ------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)), inplace=True)


class ResNetLite(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, c=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))
        self.layer1 = nn.Sequential(BasicBlock(c, c), BasicBlock(c, c))
        self.layer2 = nn.Sequential(BasicBlock(c, 2 * c, 2), BasicBlock(2 * c, 2 * c))
        self.layer3 = nn.Sequential(BasicBlock(2 * c, 4 * c, 2), BasicBlock(4 * c, 4 * c))
        self.fc = nn.Linear(4 * c, classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---- a ViT-style encoder -----------------------------------------------------------------------
class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class EncoderBlock(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTEncoder(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, d=64, depth=4, patch=4, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, (32 // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.ModuleList([EncoderBlock(d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x)[:, 0])


# ---- LoRA ---------------------------------------------------------------------------------------
class LoRALinear(nn.Module):
    """A frozen-to-be base projection plus a low-rank update: W x + B (A (dropout x)) * alpha / r,
    named as peft names them (`lora_A`, `lora_B`)."""

    def __init__(self, din, dout, r=4, alpha=8, p=0.0):
        super().__init__()
        self.base = nn.Linear(din, dout)
        self.lora_A = nn.Linear(din, r, bias=False)
        self.lora_B = nn.Linear(r, dout, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scale = alpha / r
        self.drop = nn.Dropout(p) if p > 0 else nn.Identity()

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.drop(x))) * self.scale


class LoRAAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = LoRALinear(d, d), nn.Linear(d, d), LoRALinear(d, d)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        h = self.heads

        def split(t):
            return t.view(B, T, h, C // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        a = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(C // h), -1)
        return self.o((a @ v).transpose(1, 2).reshape(B, T, C))


class LoRABlock(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = LoRAAttention(d, heads)
        self.fc1 = LoRALinear(d, 4 * d, p=0.1)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class LoRATransformer(nn.Module):
    example_input_specs = ["2x32:int64:256"]

    def __init__(self, vocab=256, seq=32, d=64, depth=3, classes=5):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([LoRABlock(d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device).unsqueeze(0)
        x = self.tok(idx) + self.pos(pos)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x).mean(1))


# ---- a GPT-style decoder with tied embeddings -------------------------------------------------------
class DecoderBlock(nn.Module):
    def __init__(self, d, heads=4, seq=32):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, 2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = (F.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln_2(x))


class TiedGPT(nn.Module):
    example_input_specs = ["2x32:int64:256"]

    def __init__(self, vocab=256, seq=32, d=64, depth=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([DecoderBlock(d) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


# ---- PixelCNN: masked convolutions -------------------------------------------------------------
class MaskedConv2d(nn.Conv2d):
    """PixelCNN's masked convolution: a registered mask multiplied onto the weight every step."""

    def __init__(self, kind, cin, cout, k):
        super().__init__(cin, cout, k, padding=k // 2)
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2 + (kind == "B"):] = 0
        mask[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


class PixelCNN(nn.Module):
    example_input_specs = ["2x1x16x16"]

    def __init__(self, c=32, levels=16):
        super().__init__()
        layers = [MaskedConv2d("A", 1, c, 7), nn.BatchNorm2d(c), nn.ReLU()]
        for _ in range(4):
            layers += [MaskedConv2d("B", c, c, 3), nn.BatchNorm2d(c), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.out = nn.Conv2d(c, levels, 1)

    def forward(self, x):
        return self.out(self.body(x))


# ---- a mel front end: DFT and filter-bank buffers in a submodule ------------------------------------
class MelFrontEnd(nn.Module):
    """Framing, a Hann window, a real DFT as two matrix products, power, a mel filter bank, log:
    every table a buffer of this submodule. Frames do not overlap (a reshape): torch 1.13 exports
    `unfold` on the last dim with the frame axis last, a graph no ONNX runtime can run."""

    def __init__(self, n_fft=64, mels=16):
        super().__init__()
        self.n_fft = n_fft
        n = torch.arange(n_fft, dtype=torch.float32)
        k = torch.arange(n_fft // 2 + 1, dtype=torch.float32)
        ang = 2 * math.pi * k[:, None] * n[None, :] / n_fft
        self.register_buffer("dft_real", torch.cos(ang).t().contiguous())
        self.register_buffer("dft_imag", -torch.sin(ang).t().contiguous())
        self.register_buffer("window", torch.hann_window(n_fft))
        fb = torch.rand(n_fft // 2 + 1, mels)
        self.register_buffer("mel_filterbank", fb / fb.sum(0, keepdim=True))

    def forward(self, wav):
        frames = wav.reshape(wav.shape[0], -1, self.n_fft) * self.window  # B x T x n_fft
        re, im = frames @ self.dft_real, frames @ self.dft_imag
        power = re * re + im * im
        return torch.log(power @ self.mel_filterbank + 1e-6)               # B x T x mels


class MelClassifier(nn.Module):
    example_input_specs = ["2x2048"]

    def __init__(self, mels=16, c=32, classes=8):
        super().__init__()
        self.frontend = MelFrontEnd(mels=mels)
        self.conv = nn.Sequential(nn.Conv1d(mels, c, 3, padding=1), nn.BatchNorm1d(c), nn.ReLU(),
                                  nn.Conv1d(c, c, 3, padding=1), nn.BatchNorm1d(c), nn.ReLU())
        self.fc = nn.Linear(c, classes)

    def forward(self, wav):
        x = self.conv(self.frontend(wav).transpose(1, 2))
        return self.fc(x.mean(-1))


# ---- MAE / DiT-style encoder with a sin-cos position table buffer -----------------------------------
def sincos_2d(d, grid):
    """MAE's get_2d_sincos_pos_embed: half the channels encode rows, half columns."""
    pos = torch.arange(grid, dtype=torch.float32)
    omega = 1.0 / 10000 ** (torch.arange(d // 4, dtype=torch.float32) / (d / 4.0))
    out = []
    for axis in torch.meshgrid(pos, pos, indexing="ij"):
        a = axis.reshape(-1, 1) * omega[None]
        out.append(torch.cat([a.sin(), a.cos()], 1))
    return torch.cat(out, 1).unsqueeze(0)


class PatchEmbed(nn.Module):
    def __init__(self, d, patch, grid):
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, patch)
        self.register_buffer("pos_embed", sincos_2d(d, grid))  # fixed, as MAE and DiT keep it

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2) + self.pos_embed


class SinCosViT(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, d=64, depth=3, patch=4, classes=10):
        super().__init__()
        self.embed = PatchEmbed(d, patch, 32 // patch)
        self.blocks = nn.ModuleList([EncoderBlock(d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x).mean(1))
