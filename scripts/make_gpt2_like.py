"""A GPT-2-small-like decoder (12 layers, d 768, 12 heads, context 1024, vocabulary 50257, tied
token embedding and LM head, tanh GELU, causal mask as a buffer) exported like the corpus's
graph-only models (torch 1.13, opset 17, training mode, export_params=False: the parameters are
graph inputs named by their state_dict keys), for `remat fit` measurements (README, "Will it fit?").

  /usr/bin/python3 scripts/make_gpt2_like.py OUT.onnx [BATCH] [SEQ]
"""
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.act = nn.GELU(approximate="tanh")
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


class Gpt2Like(nn.Module):
    def __init__(self, vocab=50257, ctx=1024, d=768, layers=12, heads=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList([Block(d, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


out = sys.argv[1]
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
seq = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
torch.manual_seed(0)
m = Gpt2Like().train()
idx = torch.randint(0, 50257, (batch, seq))
torch.onnx.export(m, idx, out, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False, export_params=False, input_names=["input"],
                  output_names=["output"])
print("wrote", out, sum(p.numel() for p in m.parameters()), "parameters")
