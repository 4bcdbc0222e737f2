"""Decoder networks written as Hugging Face writes them (transformers' GPT-2 and LLaMA attention,
eager path), for the attention fusion (--attention sdpa): export with torch 1.13 and compare the
saved bytes eager vs sdpa against the hand count in README's table.

    /usr/bin/python3 tests/python/attention_nets.py OUTDIR   # writes gpt2_style.onnx, llama_style.onnx
    /usr/bin/python3 resources/python/remat_oracle.py check tests/python/attention_nets.py:Gpt2Style \
        --input 2x64:int64:512 --remat build/app/remat
"""
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Gpt2Attention(nn.Module):
    def __init__(self, d, heads, seq, p=0.0):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(p)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.h, self.dh).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        s = q.size(-2)
        causal = self.bias[:, :, :s, :s]
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = F.softmax(w, dim=-1)
        w = self.attn_dropout(w)
        o = torch.matmul(w, v)
        o = o.permute(0, 2, 1, 3).contiguous()
        return self.c_proj(o.view(o.shape[0], o.shape[1], -1))


class Gpt2Block(nn.Module):
    def __init__(self, d, heads, seq, p):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Gpt2Attention(d, heads, seq, p)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2Style(nn.Module):
    """GPT-2 (learned positions, LayerNorm, GELU tanh, causal Where mask, Div scale, tied head)."""

    def __init__(self, vocab=512, d=64, heads=4, layers=2, seq=64, p=0.0):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([Gpt2Block(d, heads, seq, p) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for b in self.h:
            x = b(x)
        return F.linear(self.ln_f(x), self.wte.weight)


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, seq):
        super().__init__()
        self.h, self.kv, self.dh = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, heads * self.dh, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(heads * self.dh, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kv
        if rep > 1:  # transformers' repeat_kv
            k = k[:, :, None, :, :].expand(b, self.kv, rep, s, self.dh).reshape(b, self.h, s, self.dh)
            v = v[:, :, None, :, :].expand(b, self.kv, rep, s, self.dh).reshape(b, self.h, s, self.dh)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v)
        o = o.transpose(1, 2).contiguous().reshape(b, s, -1)
        return self.o_proj(o)


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, ffn, seq):
        super().__init__()
        self.input_layernorm = RmsNorm(d)
        self.self_attn = LlamaAttention(d, heads, kv_heads, seq)
        self.post_attention_layernorm = RmsNorm(d)
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaStyle(nn.Module):
    """LLaMA (RMSNorm, rotary, grouped-query attention with repeat_kv, additive causal mask,
    float32 softmax, SwiGLU, untied head)."""

    def __init__(self, vocab=512, d=64, heads=4, kv_heads=2, ffn=172, layers=2, seq=64):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaBlock(d, heads, kv_heads, ffn, seq) for _ in range(layers)])
        self.norm = RmsNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        dh = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, dh, 2).float() / dh))
        t = torch.arange(seq).float()
        freqs = torch.outer(t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None], persistent=False)
        mask = torch.full((seq, seq), torch.finfo(torch.float32).min).triu(1)
        self.register_buffer("causal_mask", mask[None, None], persistent=False)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.embed_tokens(ids)
        cos, sin = self.cos_cached[:, :, :s], self.sin_cached[:, :, :s]
        mask = self.causal_mask[:, :, :s, :s]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def export(model, path, batch=2, seq=64, vocab=512):
    model.train()
    ids = torch.randint(0, vocab, (batch, seq))
    torch.onnx.export(model, (ids,), path, opset_version=17, input_names=["input"],
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      export_params=False, keep_initializers_as_inputs=True)


def small(cls, **kw):
    """The nets of tests/data/attention: batch 2, sequence 16, d 32, 4 heads, vocabulary 64."""
    return cls(vocab=64, d=32, heads=4, layers=2, seq=16, **kw)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.manual_seed(0)
    export(small(Gpt2Style), f"{out}/gpt2_style.onnx", seq=16, vocab=64)
    export(small(Gpt2Style, p=0.1), f"{out}/gpt2_style_dropout.onnx", seq=16, vocab=64)
    export(small(LlamaStyle, kv_heads=2, ffn=88), f"{out}/llama_style.onnx", seq=16, vocab=64)
    # the acceptance table's sizes (README): sequence 256, d 256, 8 heads (LLaMA: 2 K/V heads)
    if len(sys.argv) > 2 and sys.argv[2] == "--large":
        export(Gpt2Style(vocab=1024, d=256, heads=8, layers=2, seq=256), f"{out}/gpt2_256.onnx",
               batch=1, seq=256, vocab=1024)
        export(LlamaStyle(vocab=1024, d=256, heads=8, kv_heads=2, ffn=688, layers=2, seq=256),
               f"{out}/llama_256.onnx", batch=1, seq=256, vocab=1024)
