"""Small networks written in plain PyTorch in the styles people train today, for the memory-model
oracle (resources/python/remat_oracle.py, tests/python/test_oracle.py, tests/bench/oracle_table.py).
Each class builds with no arguments and names its inputs in `example_input_specs` (remat_oracle's
--input syntax). Sizes are small so the CPU measures them in seconds; the patterns are the real
ones: GPT-2 (learned positions, fused qkv, causal mask, tanh GELU written out as minGPT does),
LLaMA (RMSNorm, rotary embeddings, SwiGLU, no biases), BERT (post-norm, erf GELU, padding mask),
T5 (pre-RMSNorm without mean, relative position bias, encoder-decoder with cross-attention),
U-Net (ConvTranspose up-sampling, skip concatenation), MLP-Mixer, Conformer (macaron FFN with
SiLU, convolution module with GLU, depthwise conv and BatchNorm), MViT-style token pooling
(torch.tensor_split, exported as a Loop over a tensor sequence), PVT / Segformer spatial-reduction
attention (views by permute and reshape that a convolution saves as they are), a bidirectional
GRU and a two-layer LSTM."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, SEQ, D, HEADS = 256, 32, 64, 4


# ---- GPT-2 -----------------------------------------------------------------------------------
class NewGELU(nn.Module):
    """minGPT's GELU, the tanh form written out (autograd saves its intermediates)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, d=D, heads=HEADS, seq=SEQ, p=0.1):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class GPT2Block(nn.Module):
    def __init__(self, d=D):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), NewGELU(), nn.Linear(4 * d, d), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    example_input_specs = [f"2x{SEQ}:int64:{VOCAB}"]

    def __init__(self, layers=2):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block() for _ in range(layers)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- LLaMA -----------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d=D, heads=HEADS, seq=SEQ):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)

    def forward(self, x, mask):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[:, :, :T], self.sin[:, :, :T]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + mask
        att = F.softmax(att.float(), dim=-1).type_as(q)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, d=D, hidden=172):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(D)
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = RMSNorm(D)
        self.mlp = LlamaMLP()

    def forward(self, x, mask):
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    example_input_specs = [f"2x{SEQ}:int64:{VOCAB}"]

    def __init__(self, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([LlamaBlock() for _ in range(layers)])
        self.norm = RMSNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("mask", torch.full((SEQ, SEQ), float("-inf")).triu(1)[None, None], persistent=False)

    def forward(self, idx):
        x = self.embed_tokens(idx)
        mask = self.mask[:, :, : idx.size(1), : idx.size(1)]
        for layer in self.layers:
            x = layer(x, mask)
        return self.lm_head(self.norm(x))


# ---- BERT ------------------------------------------------------------------------------------
class BertLayer(nn.Module):
    def __init__(self, d=D, heads=HEADS, p=0.1):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(p)
        self.attn_out = nn.Linear(d, d)
        self.attn_out_dropout = nn.Dropout(p)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d)
        self.out_dropout = nn.Dropout(p)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.hd).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + ext_mask
        probs = self.attn_dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size(0), ctx.size(1), -1)
        h = self.attn_norm(self.attn_out_dropout(self.attn_out(ctx)) + x)
        inter = F.gelu(self.intermediate(h))
        return self.out_norm(self.out_dropout(self.output(inter)) + h)


class Bert(nn.Module):
    example_input_specs = [f"2x{SEQ}:int64:{VOCAB}", f"2x{SEQ}:int64:2"]

    def __init__(self, layers=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, D)
        self.position_embeddings = nn.Embedding(SEQ, D)
        self.token_type_embeddings = nn.Embedding(2, D)
        self.emb_norm = nn.LayerNorm(D, eps=1e-12)
        self.emb_dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList([BertLayer() for _ in range(layers)])
        self.pooler = nn.Linear(D, D)
        self.classifier = nn.Linear(D, 2)
        self.register_buffer("position_ids", torch.arange(SEQ).expand((1, -1)))

    def forward(self, input_ids, attention_mask):
        T = input_ids.size(1)
        x = self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids[:, :T])
        x = x + self.token_type_embeddings(torch.zeros_like(input_ids))
        x = self.emb_dropout(self.emb_norm(x))
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, ext)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


# ---- T5 --------------------------------------------------------------------------------------
class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def relative_buckets(q_len, k_len, bidirectional, buckets=32, max_distance=128):
    rel = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
    out = torch.zeros_like(rel)
    if bidirectional:
        buckets //= 2
        out += (rel > 0).long() * buckets
        rel = rel.abs()
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    exact = buckets // 2
    large = exact + (torch.log(rel.float().clamp(min=1) / exact) / math.log(max_distance / exact)
                     * (buckets - exact)).long()
    large = torch.min(large, torch.full_like(large, buckets - 1))
    return out + torch.where(rel < exact, rel, large)


class T5Attention(nn.Module):
    def __init__(self, bidirectional, has_bias, d=D, heads=HEADS, seq=SEQ):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.has_bias = has_bias
        if has_bias:
            self.relative_attention_bias = nn.Embedding(32, heads)
            self.register_buffer("buckets", relative_buckets(seq, seq, bidirectional), persistent=False)

    def forward(self, x, kv=None, bias=None, mask=None):
        B, T, C = x.shape
        kv = x if kv is None else kv
        q = self.q(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k(kv).view(B, -1, self.heads, self.hd).transpose(1, 2)
        v = self.v(kv).view(B, -1, self.heads, self.hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2))
        if bias is None and self.has_bias:
            bias = self.relative_attention_bias(self.buckets).permute(2, 0, 1).unsqueeze(0)
            if mask is not None:
                bias = bias + mask
        if bias is not None:
            scores = scores + bias
        w = F.dropout(F.softmax(scores.float(), dim=-1).type_as(scores), p=0.1, training=self.training)
        y = torch.matmul(w, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o(y), bias


class T5FF(nn.Module):
    def __init__(self, d=D):
        super().__init__()
        self.layer_norm = T5LayerNorm(d)
        self.wi = nn.Linear(d, 4 * d, bias=False)
        self.wo = nn.Linear(4 * d, d, bias=False)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        h = self.wo(self.dropout(F.relu(self.wi(self.layer_norm(x)))))
        return x + self.dropout(h)


class T5Block(nn.Module):
    def __init__(self, decoder, first):
        super().__init__()
        self.decoder = decoder
        self.ln_self = T5LayerNorm(D)
        self.self_attn = T5Attention(bidirectional=not decoder, has_bias=first)
        if decoder:
            self.ln_cross = T5LayerNorm(D)
            self.cross_attn = T5Attention(bidirectional=True, has_bias=False)
        self.ff = T5FF()
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, bias, mask=None, enc=None):
        h, bias = self.self_attn(self.ln_self(x), bias=bias, mask=mask)
        x = x + self.dropout(h)
        if self.decoder:
            h, _ = self.cross_attn(self.ln_cross(x), kv=enc)
            x = x + self.dropout(h)
        return self.ff(x), bias


class T5(nn.Module):
    example_input_specs = [f"2x{SEQ}:int64:{VOCAB}", f"2x{SEQ}:int64:{VOCAB}"]

    def __init__(self, layers=2):
        super().__init__()
        self.shared = nn.Embedding(VOCAB, D)
        self.encoder = nn.ModuleList([T5Block(False, i == 0) for i in range(layers)])
        self.enc_norm = T5LayerNorm(D)
        self.decoder = nn.ModuleList([T5Block(True, i == 0) for i in range(layers)])
        self.dec_norm = T5LayerNorm(D)
        self.dropout = nn.Dropout(0.1)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("causal", torch.full((SEQ, SEQ), -1e9).triu(1)[None, None], persistent=False)

    def forward(self, input_ids, decoder_input_ids):
        x, bias = self.dropout(self.shared(input_ids)), None
        for block in self.encoder:
            x, bias = block(x, bias)
        enc = self.dropout(self.enc_norm(x))
        y, bias = self.dropout(self.shared(decoder_input_ids)), None
        for block in self.decoder:
            y, bias = block(y, bias, mask=self.causal, enc=enc)
        y = self.dropout(self.dec_norm(y)) * (D ** -0.5)
        return self.lm_head(y)


# ---- U-Net -----------------------------------------------------------------------------------
class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    example_input_specs = ["2x3x64x64"]

    def __init__(self, c=16, classes=2):
        super().__init__()
        self.inc = DoubleConv(3, c)
        self.down1, self.down2 = DoubleConv(c, 2 * c), DoubleConv(2 * c, 4 * c)
        self.up1 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.conv1 = DoubleConv(4 * c, 2 * c)
        self.up2 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.conv2 = DoubleConv(2 * c, c)
        self.outc = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(F.max_pool2d(x1, 2))
        x3 = self.down2(F.max_pool2d(x2, 2))
        y = self.conv1(torch.cat([x2, self.up1(x3)], dim=1))
        y = self.conv2(torch.cat([x1, self.up2(y)], dim=1))
        return self.outc(y)


class UNetUpsample(UNet):
    """The same U-Net with bilinear up-sampling and a 1x1 conv instead of ConvTranspose."""

    def __init__(self, c=16, classes=2):
        super().__init__(c, classes)
        self.up1 = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                 nn.Conv2d(4 * c, 2 * c, 1))
        self.up2 = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                 nn.Conv2d(2 * c, c, 1))


# ---- MLP-Mixer -------------------------------------------------------------------------------
class MixerBlock(nn.Module):
    def __init__(self, tokens, d, tok_hidden, ch_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, tok_hidden), nn.GELU(), nn.Linear(tok_hidden, tokens))
        self.norm2 = nn.LayerNorm(d)
        self.channel_mlp = nn.Sequential(nn.Linear(d, ch_hidden), nn.GELU(), nn.Linear(ch_hidden, d))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, patch=4, d=64, depth=2, classes=10):
        super().__init__()
        tokens = (32 // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, stride=patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, d, 32, 256) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


# ---- Conformer -------------------------------------------------------------------------------
class FeedForward(nn.Module):
    def __init__(self, d, p=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(p), nn.Linear(4 * d, d),
                                 nn.Dropout(p))

    def forward(self, x):
        return self.net(x)


class ConvModule(nn.Module):
    def __init__(self, d, kernel=15, p=0.1):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.act = nn.SiLU()
        self.pointwise2 = nn.Conv1d(d, d, 1)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        x = self.norm(x).transpose(1, 2)
        x = self.act(self.bn(self.depthwise(self.glu(self.pointwise1(x)))))
        return self.dropout(self.pointwise2(x)).transpose(1, 2)


class ConformerBlock(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.ff1, self.ff2 = FeedForward(d), FeedForward(d)
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.attn_dropout = nn.Dropout(0.1)
        self.conv = ConvModule(d)
        self.final_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn_dropout(self.attn(h, h, h, need_weights=False)[0])
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.final_norm(x)


class Conformer(nn.Module):
    example_input_specs = ["2x64x40"]

    def __init__(self, feats=40, layers=2, classes=32):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2),
                                       nn.ReLU())
        self.proj = nn.Linear(16 * 9, D)
        self.blocks = nn.Sequential(*[ConformerBlock() for _ in range(layers)])
        self.head = nn.Linear(D, classes)

    def forward(self, x):
        x = self.subsample(x.unsqueeze(1))
        B, C, T, Fr = x.shape
        x = self.proj(x.permute(0, 2, 1, 3).reshape(B, T, C * Fr))
        return self.head(self.blocks(x))


class TokenPool(nn.Module):
    """MViT-style pooling attention: the class token is cut off with torch.tensor_split, which
    torch exports as a Loop building a tensor sequence (SequenceEmpty / SequenceInsert /
    SequenceAt); the rest is pooled by a depthwise convolution and put back beside it."""
    example_input_specs = ["2x17x32"]  # a class token and 4x4 patch tokens

    def __init__(self, d=32, side=4, classes=10):
        super().__init__()
        self.side = side
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.pool = nn.Conv2d(d, d, 3, stride=2, padding=1, groups=d, bias=False)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, classes)

    def pool_tokens(self, t):
        B, N, C = t.shape
        cls, rest = torch.tensor_split(t, (1,), dim=1)
        rest = rest.transpose(1, 2).reshape(B, C, self.side, self.side)
        rest = self.pool(rest).flatten(2).transpose(1, 2)
        return torch.cat([cls, self.norm(rest)], dim=1)

    def forward(self, x):
        B, N, C = x.shape
        k, v = self.kv(x).chunk(2, dim=-1)
        k, v = self.pool_tokens(k), self.pool_tokens(v)
        att = torch.softmax(self.q(x) @ k.transpose(1, 2) / C ** 0.5, dim=-1)
        return self.out((att @ v).mean(1))


class SpatialReduction(nn.Module):
    """PVT / Segformer efficient self-attention: keys and values from a copy of the tokens
    reduced by a strided convolution, reached by `permute(...).reshape(...)` with no
    `.contiguous()` (a view torch's convolution saves as it is), then LayerNorm."""
    example_input_specs = ["2x64x32"]  # 8x8 tokens of width 32

    def __init__(self, d=32, side=8, ratio=2, heads=2, classes=10):
        super().__init__()
        self.side, self.heads = side, heads
        self.norm1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.sr = nn.Conv2d(d, d, ratio, stride=ratio)
        self.norm_sr = nn.LayerNorm(d)
        self.kv = nn.Linear(d, 2 * d)
        self.proj = nn.Linear(d, d)
        self.out = nn.Linear(d, classes)

    def forward(self, x):
        B, N, C = x.shape
        h = self.norm1(x)
        q = self.q(h).reshape(B, N, self.heads, C // self.heads).permute(0, 2, 1, 3)
        r = h.permute(0, 2, 1).reshape(B, C, self.side, self.side)
        r = self.norm_sr(self.sr(r).reshape(B, C, -1).permute(0, 2, 1))
        kv = self.kv(r).reshape(B, -1, 2, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        att = torch.softmax(q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, N, C)
        return self.out((x + self.proj(y)).mean(1))


# ---- recurrent -------------------------------------------------------------------------------
class GRUClassifier(nn.Module):
    """A bidirectional GRU over batch-first features (torch's CPU path projects the whole
    sequence once per direction, through a copy of the time-major input), then the last step."""
    example_input_specs = ["2x50x40"]

    def __init__(self, feats=40, hidden=64, classes=10):
        super().__init__()
        self.emb = nn.Linear(feats, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.gru(torch.relu(self.emb(x)))
        return self.out(y[:, -1])


class LSTMTagger(nn.Module):
    """A two-layer LSTM over time-major token embeddings (no batch_first: the input projection
    reads a view), tagging every step."""
    example_input_specs = ["24x2:int64:256"]

    def __init__(self, vocab=256, d=48, hidden=64, tags=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=2)
        self.out = nn.Linear(hidden, tags)

    def forward(self, idx):
        y, _ = self.lstm(self.emb(idx))
        return self.out(torch.tanh(y))
