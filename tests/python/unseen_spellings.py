"""Networks written for issue 33 in the styles of today's reference code (timm, Mixtral, torchaudio),
none of which the memory model was tuned on, for remat_oracle.py (tests/python/test_oracle.py,
tests/bench/oracle_table.py). Each builds with no arguments, names its inputs in
`example_input_specs`, and measures in seconds on a CPU. They differ from oracle_nets.py's networks
of the same family in the spelling: a sparse top-2 mixture of experts that routes tokens by
torch.where / index_add_ (Mixtral), a Swin block written as timm writes it (window partition by
view / permute, a relative position bias table gathered by an index buffer, torch.roll and an
attention mask buffer), ConvNeXt and EfficientNet blocks with stochastic depth in training mode
(a Bernoulli mask per sample), a Perceiver cross-attention written out by hand, recurrent
cells unrolled from nn.LSTMCell / nn.GRUCell and by hand, Mixture-of-Depths token routing by
index_add, GShard-style top-2 experts by einsum over stacked weights, DiffWave's residual layers
and a bidirectional nn.LSTM from learned initial states."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def drop_path(x, p, training, style="rand"):
    """Stochastic depth: zero whole samples of a residual branch, scale the rest. "rand" is the
    Swin / DeiT reference code's spelling (keep + rand, floored), "bernoulli" torch.bernoulli of a
    filled tensor (timm's in-place bernoulli_ does not export with torch 1.13)."""
    if p == 0.0 or not training:
        return x
    keep = 1.0 - p
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    if style == "rand":
        mask = keep + torch.rand(shape, dtype=x.dtype, device=x.device)
        mask.floor_()
        return x.div(keep) * mask
    mask = torch.bernoulli(torch.full(shape, keep, dtype=x.dtype, device=x.device))
    return x * mask / keep


class DropPath(nn.Module):
    def __init__(self, p=0.0, style="rand"):
        super().__init__()
        self.p, self.style = p, style

    def forward(self, x):
        return drop_path(x, self.p, self.training, self.style)


# ---- Mixtral-style sparse mixture of experts -------------------------------------------------
class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    """Top-2 routing as Mixtral writes it: softmax over the router logits, topk, renormalised
    weights; each expert runs on the tokens routed to it (torch.where on a one-hot mask, so the
    token count is data-dependent) and its weighted output is index_add_-ed back."""
    example_input_specs = ["2x16x32"]

    def __init__(self, d=32, hidden=64, experts=4, top_k=2):
        super().__init__()
        self.top_k, self.experts = top_k, experts
        self.norm = nn.LayerNorm(d)
        self.gate = nn.Linear(d, experts, bias=False)
        self.experts_list = nn.ModuleList([Expert(d, hidden) for _ in range(experts)])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        B, T, C = x.shape
        h = self.norm(x).reshape(-1, C)
        logits = self.gate(h)
        weights = F.softmax(logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(h.dtype)
        out = torch.zeros((B * T, C), dtype=h.dtype, device=h.device)
        mask = F.one_hot(selected, num_classes=self.experts).permute(2, 1, 0)
        for i, expert in enumerate(self.experts_list):
            idx, top = torch.where(mask[i])
            current = h[None, top].reshape(-1, C)
            y = expert(current) * weights[top, idx, None]
            out.index_add_(0, top, y.to(h.dtype))
        x = x + out.reshape(B, T, C)
        return self.head(x.mean(1))


# ---- Swin (timm) -----------------------------------------------------------------------------
def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)


def window_reverse(windows, w, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // w, W // w, w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


class WindowAttention(nn.Module):
    def __init__(self, dim, window, heads):
        super().__init__()
        self.window, self.heads = window, heads
        self.scale = (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij"))
        flat = torch.flatten(coords, 1)
        rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += window - 1
        rel[:, :, 1] += window - 1
        rel[:, :, 0] *= 2 * window - 1
        self.register_buffer("relative_position_index", rel.sum(-1), persistent=False)
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(0.1)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.1)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(N, N, -1)
        attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(-1, nw, self.heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, N, N)
        attn = self.attn_drop(attn.softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj_drop(self.proj(x))


class SwinBlock(nn.Module):
    def __init__(self, dim, res, heads, window, shift, drop_path_p=0.1):
        super().__init__()
        self.res, self.window, self.shift = res, window, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window, heads)
        self.drop_path = DropPath(drop_path_p)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * dim, dim),
                                 nn.Dropout(0.1))
        if shift:
            img = torch.zeros((1, res, res, 1))
            cnt = 0
            for hs in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                for ws in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                    img[:, hs, ws, :] = cnt
                    cnt += 1
            mw = window_partition(img, window).view(-1, window * window)
            mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, float(-100.0)).masked_fill(mask == 0, float(0.0))
        else:
            mask = None
        self.register_buffer("attn_mask", mask, persistent=False)

    def forward(self, x):
        B, L, C = x.shape
        H = W = self.res
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        if self.shift:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        windows = window_partition(x, self.window).view(-1, self.window * self.window, C)
        windows = self.attn(windows, mask=self.attn_mask).view(-1, self.window, self.window, C)
        x = window_reverse(windows, self.window, H, W)
        if self.shift:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + self.drop_path(x.view(B, H * W, C))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class SwinLite(nn.Module):
    """Patch embedding, a regular and a shifted-window block (timm's code), patch merging."""
    example_input_specs = ["2x3x32x32"]

    def __init__(self, dim=32, window=4, heads=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.patch_norm = nn.LayerNorm(dim)
        self.blocks = nn.Sequential(SwinBlock(dim, 8, heads, window, 0), SwinBlock(dim, 8, heads, window, 2))
        self.merge_norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.head = nn.Linear(2 * dim, classes)

    def forward(self, x):
        x = self.patch_norm(self.patch(x).flatten(2).transpose(1, 2))
        x = self.blocks(x)
        B, L, C = x.shape
        x = x.view(B, 8, 8, C)
        x0, x1, x2, x3 = x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]
        x = torch.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)
        x = self.reduction(self.merge_norm(x))
        return self.head(x.mean(1))


# ---- ConvNeXt (timm) with stochastic depth ---------------------------------------------------
class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, drop_path_p=0.2, ls_init=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(ls_init * torch.ones(dim))
        self.drop_path = DropPath(drop_path_p, "bernoulli")

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        x = (self.gamma * x).permute(0, 3, 1, 2)
        return shortcut + self.drop_path(x)


class LayerNorm2d(nn.LayerNorm):
    """timm's channels-first LayerNorm: permute to channels-last, normalise, permute back."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtLite(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, dims=(24, 48), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], eps=1e-6))
        self.stage1 = nn.Sequential(ConvNeXtBlock(dims[0], 0.1), ConvNeXtBlock(dims[0], 0.1))
        self.down = nn.Sequential(LayerNorm2d(dims[0], eps=1e-6), nn.Conv2d(dims[0], dims[1], 2, stride=2))
        self.stage2 = nn.Sequential(ConvNeXtBlock(dims[1], 0.2), ConvNeXtBlock(dims[1], 0.2))
        self.norm = nn.LayerNorm(dims[1], eps=1e-6)
        self.head = nn.Linear(dims[1], classes)

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x.mean([-2, -1])))


# ---- EfficientNet MBConv (timm) ----------------------------------------------------------------
class SqueezeExcite(nn.Module):
    def __init__(self, ch, rd):
        super().__init__()
        self.conv_reduce = nn.Conv2d(ch, rd, 1)
        self.act1 = nn.SiLU(inplace=True)
        self.conv_expand = nn.Conv2d(rd, ch, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        s = self.conv_expand(self.act1(self.conv_reduce(s)))
        return x * s.sigmoid()


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, k, stride, drop_path_p=0.0):
        super().__init__()
        mid = cin * expand
        self.has_skip = stride == 1 and cin == cout
        self.conv_pw = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.act1 = nn.SiLU(inplace=True)
        self.conv_dw = nn.Conv2d(mid, mid, k, stride=stride, padding=k // 2, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.act2 = nn.SiLU(inplace=True)
        self.se = SqueezeExcite(mid, max(1, cin // 4))
        self.conv_pwl = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.drop_path = DropPath(drop_path_p)

    def forward(self, x):
        shortcut = x
        x = self.act1(self.bn1(self.conv_pw(x)))
        x = self.act2(self.bn2(self.conv_dw(x)))
        x = self.bn3(self.conv_pwl(self.se(x)))
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class EfficientNetLite(nn.Module):
    example_input_specs = ["2x3x32x32"]

    def __init__(self, classes=10):
        super().__init__()
        self.conv_stem = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.act1 = nn.SiLU(inplace=True)
        self.blocks = nn.Sequential(MBConv(16, 24, 4, 3, 2), MBConv(24, 24, 4, 3, 1, 0.1),
                                    MBConv(24, 40, 6, 5, 2), MBConv(40, 40, 6, 5, 1, 0.2))
        self.conv_head = nn.Conv2d(40, 128, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(128)
        self.act2 = nn.SiLU(inplace=True)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(128, classes))

    def forward(self, x):
        x = self.act1(self.bn1(self.conv_stem(x)))
        x = self.act2(self.bn2(self.conv_head(self.blocks(x))))
        return self.classifier(x.mean((2, 3)))


# ---- Perceiver cross-attention written out ---------------------------------------------------
class PerceiverCross(nn.Module):
    """A learned latent array (a Parameter on a submodule) attends to a long input through
    hand-written cross-attention (separate q / k / v projections, a scaled softmax), then one
    latent self-attention block and a mean over the latents."""
    example_input_specs = ["2x96x24"]

    def __init__(self, d_in=24, d=48, latents=16, heads=4, classes=10):
        super().__init__()
        self.heads = heads
        self.latents = nn.Parameter(torch.randn(latents, d) * 0.02)
        self.norm_x, self.norm_l = nn.LayerNorm(d_in), nn.LayerNorm(d)
        self.to_q = nn.Linear(d, d, bias=False)
        self.to_kv = nn.Linear(d_in, 2 * d, bias=False)
        self.to_out = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.self_attn = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.head = nn.Linear(d, classes)

    def split(self, t):
        B, N, C = t.shape
        return t.view(B, N, self.heads, C // self.heads).transpose(1, 2)

    def forward(self, x):
        B = x.shape[0]
        lat = self.latents.unsqueeze(0).expand(B, -1, -1)
        q = self.split(self.to_q(self.norm_l(lat)))
        k, v = self.to_kv(self.norm_x(x)).chunk(2, dim=-1)
        k, v = self.split(k), self.split(v)
        att = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", att.softmax(dim=-1), v)
        lat = lat + self.to_out(out.transpose(1, 2).reshape(B, -1, q.shape[1] * q.shape[-1]))
        lat = lat + self.ff(lat)
        return self.head(self.self_attn(lat).mean(1))


# ---- recurrent cells unrolled ----------------------------------------------------------------
class LSTMCellLoop(nn.Module):
    """nn.LSTMCell stepped in a Python loop (as in seq2seq decoders and RL agents): torch.onnx
    writes each step out as Gemm + Add + Split + sigmoid / tanh."""
    example_input_specs = ["2x12x20"]

    def __init__(self, feats=20, hidden=32, classes=10):
        super().__init__()
        self.cell = nn.LSTMCell(feats, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        B, T, _ = x.shape
        h = x.new_zeros(B, self.cell.hidden_size)
        c = x.new_zeros(B, self.cell.hidden_size)
        for t in range(T):
            h, c = self.cell(x[:, t], (h, c))
        return self.out(h)


class GRUCellLoop(nn.Module):
    example_input_specs = ["2x12x20"]

    def __init__(self, feats=20, hidden=32, classes=10):
        super().__init__()
        self.cell = nn.GRUCell(feats, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        B, T, _ = x.shape
        h = x.new_zeros(B, self.cell.hidden_size)
        for t in range(T):
            h = self.cell(x[:, t], h)
        return self.out(h)


class GRUHandWritten(nn.Module):
    """The GRU cell written out as papers and tutorials write it (out of place: new gates each
    step), beside GRUCellLoop whose ATen kernel works in place on the hidden projection."""
    example_input_specs = ["2x12x20"]

    def __init__(self, feats=20, hidden=32, classes=10):
        super().__init__()
        self.hidden = hidden
        self.x2h = nn.Linear(feats, 3 * hidden)
        self.h2h = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        B, T, _ = x.shape
        h = x.new_zeros(B, self.hidden)
        for t in range(T):
            i_r, i_z, i_n = self.x2h(x[:, t]).chunk(3, 1)
            h_r, h_z, h_n = self.h2h(h).chunk(3, 1)
            r = torch.sigmoid(i_r + h_r)
            z = torch.sigmoid(i_z + h_z)
            n = torch.tanh(i_n + r * h_n)
            h = (1 - z) * n + z * h
        return self.out(h)


# ---- top-k token routing with index_add (Mixture-of-Depths) ----------------------------------
class MoDRouting(nn.Module):
    """Mixture-of-Depths: a router scores every token, the top k of each sequence go through the
    block (gathered by index_select on the flattened tokens), and their outputs, weighted by the
    router's sigmoid, are index_add-ed back onto the residual stream; the rest skip the block."""
    example_input_specs = ["2x32x32"]

    def __init__(self, d=32, k=8, heads=2, classes=10):
        super().__init__()
        self.k = k
        self.router = nn.Linear(d, 1)
        self.block = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        B, T, C = x.shape
        scores = self.router(x).squeeze(-1)
        top, idx = torch.topk(scores, self.k, dim=1)
        flat = (idx + torch.arange(B, device=x.device).unsqueeze(1) * T).reshape(-1)
        h = x.reshape(B * T, C)
        sel = h.index_select(0, flat).reshape(B, self.k, C)
        y = (self.block(sel) - sel) * torch.sigmoid(top).unsqueeze(-1)
        h = h.index_add(0, flat, y.reshape(-1, C))
        return self.head(self.norm(h.reshape(B, T, C)).mean(1))


# ---- GShard / Switch style top-2 mixture of experts (static shapes) --------------------------
class Top2DenseDispatch(nn.Module):
    """Top-2 gating as GShard / DeepSpeed write it without a data-dependent token count: softmax
    gates, topk, one_hot masks, a combine tensor, experts' weights stacked in one Parameter and
    applied to every token by einsum, the top-2 weights picked back with gather."""
    example_input_specs = ["2x16x32"]

    def __init__(self, d=32, hidden=64, experts=4, classes=10):
        super().__init__()
        self.experts = experts
        self.norm = nn.LayerNorm(d)
        self.wg = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * hidden ** -0.5)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        B, T, C = x.shape
        h = self.norm(x).reshape(B * T, C)
        gates = F.softmax(self.wg(h), dim=-1)
        w, idx = gates.topk(2, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        mask = F.one_hot(idx, self.experts).to(h.dtype)           # [N, 2, E]
        combine = torch.einsum("nk,nke->ne", w, mask)             # [N, E]
        hid = F.gelu(torch.einsum("nd,edh->neh", h, self.w1))
        out = torch.einsum("neh,ehd->ned", hid, self.w2)          # [N, E, d]
        y = torch.gather(out, 1, idx.unsqueeze(-1).expand(-1, -1, C))  # [N, 2, d]
        y = (y * torch.gather(combine, 1, idx).unsqueeze(-1)).sum(1)
        return self.head((x + y.reshape(B, T, C)).mean(1))


# ---- DiffWave residual layers ----------------------------------------------------------------
class DiffWaveLayer(nn.Module):
    def __init__(self, ch, dilation, cond):
        super().__init__()
        self.dilated_conv = nn.Conv1d(ch, 2 * ch, 3, padding=dilation, dilation=dilation)
        self.diffusion_projection = nn.Linear(64, ch)
        self.conditioner_projection = nn.Conv1d(cond, 2 * ch, 1)
        self.output_projection = nn.Conv1d(ch, 2 * ch, 1)

    def forward(self, x, cond, step):
        d = self.diffusion_projection(step).unsqueeze(-1)
        y = self.dilated_conv(x + d) + self.conditioner_projection(cond)
        gate, filt = torch.chunk(y, 2, dim=1)
        y = torch.sigmoid(gate) * torch.tanh(filt)
        residual, skip = torch.chunk(self.output_projection(y), 2, dim=1)
        return (x + residual) / 2 ** 0.5, skip


class DiffWaveLite(nn.Module):
    """DiffWave (as its reference code writes it): one dilated convolution to twice the channels,
    a diffusion-step projection added before it and a mel conditioner after, torch.chunk into
    gate and filter, sigmoid * tanh, one 1x1 convolution chunked into residual and skip, the skips
    summed and scaled by 1 / sqrt(layers)."""
    example_input_specs = ["2x1x256", "2x16x256", "2x64"]

    def __init__(self, ch=16, layers=6, cond=16):
        super().__init__()
        self.inp = nn.Conv1d(1, ch, 1)
        self.step_mlp = nn.Sequential(nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU())
        self.layers = nn.ModuleList([DiffWaveLayer(ch, 2 ** (i % 3), cond) for i in range(layers)])
        self.skip_projection = nn.Conv1d(ch, ch, 1)
        self.output_projection = nn.Conv1d(ch, 1, 1)

    def forward(self, audio, mel, step_emb):
        x = F.relu(self.inp(audio))
        step = self.step_mlp(step_emb)
        skip = None
        for layer in self.layers:
            x, s = layer(x, mel, step)
            skip = s if skip is None else skip + s
        x = F.relu(self.skip_projection(skip / len(self.layers) ** 0.5))
        return self.output_projection(x)


# ---- stacked bidirectional LSTM from learned initial states ------------------------------------
class BiLSTMLearnedInit(nn.Module):
    """A two-layer bidirectional batch-first nn.LSTM started from learned initial states expanded
    over the batch (speech and tagging models' spelling), read at every step by a linear head
    (no dropout between the layers: torch.onnx refuses it in training mode)."""
    example_input_specs = ["2x20x24"]

    def __init__(self, feats=24, hidden=32, classes=8):
        super().__init__()
        self.lstm = nn.LSTM(feats, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.h0 = nn.Parameter(torch.zeros(4, 1, hidden))
        self.c0 = nn.Parameter(torch.zeros(4, 1, hidden))
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        B = x.shape[0]
        y, _ = self.lstm(x, (self.h0.expand(-1, B, -1).contiguous(), self.c0.expand(-1, B, -1).contiguous()))
        return self.head(y)
