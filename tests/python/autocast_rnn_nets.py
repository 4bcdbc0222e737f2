"""Networks for autocast and fine-tuning checks (issue 32, "train as people train"), run with
resources/python/remat_oracle.py check FILE.py:Class [--autocast bf16] [--trainable / --freeze].

- Recurrent layers under CPU autocast: torch 1.13 runs nn.LSTM / nn.GRU / nn.RNN on the CPU as
  ATen's composite (no list names lstm or gru on the CPU): the projections are linear / addmm, on
  the lower-precision list, so the gates are bfloat16, while the hidden and cell state that start
  as float32 zeros stay float32 by type promotion.
- Networks people fine-tune: LoRA adapters on a conv net, a half-frozen U-Net, an autocast decoder
  with tied embeddings, a frozen encoder under a trainable cross-attention head.
- GPT2Decoder: a GPT-2-style decoder at training sizes (tests/bench/autocast_ratios.md).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- recurrent layers ------------------------------------------------------------------------
class LSTMSeq(nn.Module):
    """nn.LSTM, time-major, one layer, fed by a linear projection (a non-leaf input)."""

    example_input_specs = ["16x4x24"]

    def __init__(self, d=24, hidden=32):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.lstm = nn.LSTM(d, hidden)
        self.head = nn.Linear(hidden, 10)

    def forward(self, x):
        y, _ = self.lstm(self.proj(x))
        return self.head(y)


class GRUSeq(nn.Module):
    """nn.GRU, batch-first, one layer, fed by an embedding."""

    example_input_specs = ["4x16:int64:100"]

    def __init__(self, vocab=100, d=24, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.gru = nn.GRU(d, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.gru(self.emb(ids))
        return self.head(y)


class BiLSTMTagger(nn.Module):
    """Bidirectional nn.LSTM, batch-first: each direction projects the input on its own."""

    example_input_specs = ["4x12:int64:80"]

    def __init__(self, vocab=80, d=32, hidden=24, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.head(y)


class StackedBiGRU(nn.Module):
    """Two-layer bidirectional nn.GRU, time-major (no dropout between the layers: torch.onnx
    cannot export an RNN's dropout in training mode)."""

    example_input_specs = ["10x3x20"]

    def __init__(self, d=20, hidden=28):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.gru = nn.GRU(d, hidden, num_layers=2, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 5)

    def forward(self, x):
        y, h = self.gru(torch.tanh(self.inp(x)))
        return self.head(y)


class DeepLSTM(nn.Module):
    """Three-layer nn.LSTM reading the network's input directly, last step classified."""

    example_input_specs = ["2x20x16"]

    def __init__(self, d=16, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(d, hidden, num_layers=3, batch_first=True)
        self.head = nn.Linear(hidden, 4)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.head(y[:, -1])


class ElmanRNN(nn.Module):
    """nn.RNN (tanh), two layers."""

    example_input_specs = ["12x4x16"]

    def __init__(self, d=16, hidden=32):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.rnn = nn.RNN(d, hidden, num_layers=2)
        self.head = nn.Linear(hidden, 3)

    def forward(self, x):
        y, _ = self.rnn(self.proj(x))
        return self.head(y)


# ---- train as people train -------------------------------------------------------------------
class LoRAConv2d(nn.Module):
    """A frozen 3x3 convolution plus a trainable low-rank path: 1x1 down to `rank` channels after
    a 3x3 (lora_down), 1x1 back up (lora_up), scaled."""

    def __init__(self, cin, cout, rank=4, alpha=8.0):
        super().__init__()
        self.base = nn.Conv2d(cin, cout, 3, padding=1)
        self.lora_down = nn.Conv2d(cin, rank, 3, padding=1, bias=False)
        self.lora_up = nn.Conv2d(rank, cout, 1, bias=False)
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_up(self.lora_down(x)) * self.scale


class LoRAConvNet(nn.Module):
    """A small VGG-style classifier with LoRA adapters on every conv (train with
    --trainable 'lora_|^fc\\.')."""

    example_input_specs = ["4x3x32x32"]

    def __init__(self, width=32, classes=10):
        super().__init__()
        self.c1 = LoRAConv2d(3, width)
        self.c2 = LoRAConv2d(width, width)
        self.c3 = LoRAConv2d(width, 2 * width)
        self.c4 = LoRAConv2d(2 * width, 2 * width)
        self.bn1 = nn.BatchNorm2d(width)
        self.bn2 = nn.BatchNorm2d(2 * width)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.c2(F.relu(self.c1(x)))))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.bn2(self.c4(F.relu(self.c3(x)))))
        return self.fc(x.mean(dim=(2, 3)))


class _UBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm1 = nn.BatchNorm2d(cout)  # torch 1.13's CPU group_norm refuses a bf16 input
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.norm2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.silu(self.norm1(self.conv1(x)))
        return F.silu(self.norm2(self.conv2(x)))


class HalfFrozenUNet(nn.Module):
    """A two-level U-Net; fine-tuned with the encoder frozen (--freeze '^down|^mid')."""

    example_input_specs = ["2x3x32x32"]

    def __init__(self, c=32):
        super().__init__()
        self.down1 = _UBlock(3, c)
        self.down2 = _UBlock(c, 2 * c)
        self.mid = _UBlock(2 * c, 2 * c)
        self.up2 = nn.ConvTranspose2d(2 * c, 2 * c, 2, stride=2)
        self.dec2 = _UBlock(4 * c, 2 * c)
        self.up1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec1 = _UBlock(2 * c, c)
        self.out = nn.Conv2d(c, 3, 1)

    def forward(self, x):
        s1 = self.down1(x)
        s2 = self.down2(F.max_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2))
        y = self.dec2(torch.cat([self.up2(m), s2], dim=1))
        y = self.dec1(torch.cat([self.up1(y), s1], dim=1))
        return self.out(y)


class _DecoderBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_out = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))


class TiedDecoder(nn.Module):
    """A decoder whose output projection is the token embedding (weight tying: one parameter
    read by Gather and by the final MatMul), with a causal mask buffer."""

    example_input_specs = ["2x64:int64:500"]

    def __init__(self, vocab=500, d=64, heads=4, layers=2, seq=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([_DecoderBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq),
                             persistent=False)

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.ln_f(x) @ self.wte.weight.t()


class FrozenEncoderCrossAttn(nn.Module):
    """A frozen transformer encoder (nn.TransformerEncoder, a stand-in for a pretrained one) read by
    a trainable cross-attention head with learned queries (train with --trainable '^head\\.')."""

    example_input_specs = ["2x32x64"]

    def __init__(self, d=64, heads=4, layers=2, queries=8, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = _CrossHead(d, heads, queries, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


class _CrossHead(nn.Module):
    def __init__(self, d, heads, queries, classes):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(1, queries, d) * 0.02)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, classes)

    def forward(self, mem):
        q = self.queries.expand(mem.size(0), -1, -1)
        y, _ = self.attn(q, mem, mem, need_weights=False)
        # the residual makes the norm's input float32 (torch 1.13's CPU layer_norm refuses a
        # bf16 input with float32 weights)
        return self.out(self.norm(q + y).mean(dim=1))


class ConvLSTMCaptioner(nn.Module):
    """A frozen conv backbone whose pooled features start an LSTM decoder over caption tokens
    (initial states from the image: the LSTM's h0 / c0 are activations), trained end to end or
    with the backbone frozen (--freeze '^backbone')."""

    example_input_specs = ["2x3x32x32", "2x12:int64:200"]

    def __init__(self, vocab=200, d=48):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.init_h = nn.Linear(32, d)
        self.init_c = nn.Linear(32, d)
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, img, ids):
        f = self.backbone(img).mean(dim=(2, 3))
        h0 = torch.tanh(self.init_h(f)).unsqueeze(0)
        c0 = self.init_c(f).unsqueeze(0)
        y, _ = self.lstm(self.emb(ids), (h0, c0))
        return self.out(y)


# ---- training sizes --------------------------------------------------------------------------
class GPT2Decoder(nn.Module):
    """A GPT-2-style decoder (pre-norm blocks, GELU MLP, untied lm_head) at GPT-2 small's width,
    vocabulary and context; `layers` blocks (12 in GPT-2 small)."""

    example_input_specs = ["2x512:int64:50257"]

    def __init__(self, vocab=50257, d=768, heads=12, layers=4, seq=512):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([_DecoderBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq),
                             persistent=False)

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for blk in self.h:
            x = blk(x, self.mask)
        return self.lm_head(self.ln_f(x))
