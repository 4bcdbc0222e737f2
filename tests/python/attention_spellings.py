"""Attention as exporters other than torch.onnx 1.x write it, for the attention fusion
(--attention sdpa) and the attention nodes that open fused (core/training/fusions/attention.h).
Only torch 1.13 is installed here, so the graphs are built with onnx.helper following each
exporter's documented output:

  dynamo   torch.onnx.export(dynamo=True), opset 18: onnxscript's torchlib decomposes
           F.scaled_dot_product_attention as Mul(Q, sqrt(scale)) and K transposed through rank 3
           (Reshape [-1, S, D] -> Transpose(0, 2, 1) -> Reshape) times sqrt(scale), MatMul, Add of
           the float mask (a boolean mask first becomes Where(mask, 0, -inf)), Softmax(-1), MatMul;
           transformers' repeat_kv as Unsqueeze -> Expand -> Reshape.
  tf2onnx  opset 13: BatchMatMulV2(adj_y) as MatMul(Q, Transpose(K, 0 1 3 2)), Mul by the scale,
           Add of the mask adder (1 - mask) * -10000, Softmax(-1), MatMul; tf.repeat as
           Unsqueeze -> Tile -> Reshape.
  ort      onnxruntime's transformer optimizer: com.microsoft MultiHeadAttention (unidirectional,
           the QKV projection's bias folded into its bias input) for GPT-2, com.microsoft GroupQueryAttention (causal, K/V at their own heads) for LLaMA.
  tf2onnx_mulmask  GPT-2 only: TF GPT-2's multiplicative causal mask w * b - 1e4 * (1 - b) (a
           near miss: not fused, and the reason is listed).
  ortattn  GPT-2 only: com.microsoft Attention (unidirectional), the QKV projection inside the
           node, as the optimizer's GPT-2 attention fusion writes it.
  onnx23   ONNX Attention (opset 23): 3-D with q_num_heads / kv_num_heads and is_causal for GPT-2,
           4-D with fewer K/V heads and a boolean attn_mask for LLaMA.
  ref      the same blocks with the attention written out (MatMul / Softmax / MatMul, an additive
           causal mask, K and V repeated), the unfused twin the node files are checked against.

Each network is two pre-norm blocks on an input x [B, S, D] (no embedding): GPT-2 style
(LayerNorm, one QKV projection with bias, 4 heads, GELU MLP) and LLaMA style (RMSNorm written out,
rotary, 4 query heads and 2 K/V heads, SwiGLU). Every file of one style has the same weights under
the same names. B 2, S 16, D 32, head size 8.

    /usr/bin/python3 tests/python/attention_spellings.py tests/data/attention
"""
import math
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, S, D, H, HKV, FFN, LAYERS = 2, 16, 32, 4, 2, 64, 2
DH = D // H


class Net:
    def __init__(self, style, spelling, seed=0):
        self.style, self.spelling = style, spelling
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0
        self.domains = {}

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def op(self, op_type, inputs, hint=None, outputs=1, domain=None, **attrs):
        outs = [self.name(hint or op_type) for _ in range(outputs)]
        kw = {}
        if domain:
            kw["domain"] = domain
            self.domains[domain] = 1
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0], **kw, **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype=np.float32, hint="const"):
        """A Constant node, as the exporters write numbers, shapes and masks (never weights)."""
        name = self.name(hint)
        t = numpy_helper.from_array(np.asarray(value, dtype=dtype), name)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=t))
        return name

    def weight(self, name, shape, scale=None, ones=False):
        if ones:
            w = np.ones(shape, np.float32)
        else:
            w = self.rng.standard_normal(shape).astype(np.float32) * (scale or 1 / math.sqrt(shape[0]))
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def linear(self, x, prefix, din, dout, bias=True):
        y = self.op("MatMul", [x, self.weight(prefix + ".weight", [din, dout])])
        if bias:
            b = self.weight(prefix + ".bias", [dout], scale=0.1)
            y = self.op("Add", [y, b])
        return y

    def shape(self, x, dims):
        return self.op("Reshape", [x, self.const(dims, np.int64, "shape")])

    def heads(self, x, n):
        """[B, S, n * DH] -> [B, n, S, DH]"""
        return self.op("Transpose", [self.shape(x, [B, S, n, DH])], perm=[0, 2, 1, 3])

    def merge(self, o):
        return self.shape(self.op("Transpose", [o], perm=[0, 2, 1, 3]), [B, S, D])

    # --- normalisations and MLPs ---------------------------------------------------------------
    def layer_norm(self, x, prefix):
        if self.opset < 17:  # written out, as tf2onnx does below opset 17
            mean = self.op("ReduceMean", [x], axes=[-1], keepdims=1)
            d = self.op("Sub", [x, mean])
            var = self.op("ReduceMean", [self.op("Pow", [d, self.const(2.0)])], axes=[-1], keepdims=1)
            n = self.op("Div", [d, self.op("Sqrt", [self.op("Add", [var, self.const(1e-5)])])])
            n = self.op("Mul", [n, self.weight(prefix + ".weight", [D], ones=True)])
            return self.op("Add", [n, self.weight(prefix + ".bias", [D], scale=0.1)])
        return self.op("LayerNormalization", [x, self.weight(prefix + ".weight", [D], ones=True),
                                              self.weight(prefix + ".bias", [D], scale=0.1)],
                       axis=-1, epsilon=1e-5)

    def rms_norm(self, x, prefix):
        sq = self.op("Pow", [x, self.const(2.0)])
        if self.opset >= 18:
            var = self.op("ReduceMean", [sq, self.const([-1], np.int64, "axes")], keepdims=1)
        else:
            var = self.op("ReduceMean", [sq], axes=[-1], keepdims=1)
        r = self.op("Reciprocal", [self.op("Sqrt", [self.op("Add", [var, self.const(1e-6)])])])
        return self.op("Mul", [self.weight(prefix + ".weight", [D], ones=True), self.op("Mul", [x, r])])

    def gelu_tanh(self, x):
        c = math.sqrt(2 / math.pi)
        cube = self.op("Mul", [self.op("Pow", [x, self.const(3.0)]), self.const(0.044715)])
        t = self.op("Tanh", [self.op("Mul", [self.op("Add", [x, cube]), self.const(c)])])
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5)]),
                               self.op("Add", [t, self.const(1.0)])])

    def rotary(self, x):
        """x * cos + rotate_half(x) * sin, x [B, n, S, DH]"""
        inv = 1.0 / (10000 ** (np.arange(0, DH, 2) / DH))
        f = np.outer(np.arange(S), inv)
        emb = np.concatenate([f, f], -1)
        if not hasattr(self, "cos"):
            self.cos = self.const(np.cos(emb)[None, None], hint="rotary_emb.cos_sinusoid")
            self.sin = self.const(np.sin(emb)[None, None], hint="rotary_emb.sin_sinusoid")
        a, b = self.op("Split", [x, self.const([DH // 2, DH // 2], np.int64, "split")]
                       if self.opset >= 13 else [x], outputs=2, axis=-1,
                       **({} if self.opset >= 13 else {"split": [DH // 2, DH // 2]}))
        rot = self.op("Concat", [self.op("Neg", [b]), a], axis=-1)
        return self.op("Add", [self.op("Mul", [x, self.cos]), self.op("Mul", [rot, self.sin])])

    # --- attention spellings (q [B, H, S, DH]; k, v [B, n, S, DH]) -------------------------------
    def repeat(self, x, n, tile):
        if n == H:
            return x
        u = self.op("Unsqueeze", [x, self.const([2], np.int64, "axes")])
        if tile:
            e = self.op("Tile", [u, self.const([1, 1, H // n, 1, 1], np.int64, "repeats")])
        else:
            e = self.op("Expand", [u, self.const([B, n, H // n, S, DH], np.int64, "shape")])
        return self.shape(e, [B, H, S, DH])

    def causal_bias(self, fill):
        m = np.triu(np.full((S, S), fill, np.float32), 1)
        return self.const(m[None, None], hint="attn.causal_mask")

    def attend(self, q, k, v, n):
        """The pattern spellings; q, k, v [B, heads, S, DH] (k, v with n heads)."""
        if self.spelling == "dynamo":
            k = self.repeat(k, n, tile=False)
            v = self.repeat(v, n, tile=False)
            half = self.const(math.sqrt(1 / math.sqrt(DH)), hint="sqrt_scale")
            flat = self.shape(k, [-1, S, DH])
            kt = self.shape(self.op("Transpose", [flat], perm=[0, 2, 1]), [B, H, DH, S])
            w = self.op("MatMul", [self.op("Mul", [q, half]), self.op("Mul", [kt, half])])
            if self.style == "gpt2":  # is_causal: the float mask, folded by the optimizer
                bias = self.causal_bias(-np.inf)
            else:  # a boolean mask: Where(mask, 0, -inf)
                mask = self.const(np.tril(np.ones((S, S), bool))[None, None], bool, "attn.attn_mask")
                bias = self.op("Where", [mask, self.const(0.0), self.const(-np.inf)])
            w = self.op("Softmax", [self.op("Add", [w, bias])], axis=-1)
            return self.op("MatMul", [w, v])
        if self.spelling == "tf2onnx_mulmask":  # TF GPT-2: w / sqrt(dk); w * b - 1e4 * (1 - b)
            w = self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])])
            w = self.op("Div", [w, self.const(math.sqrt(DH), hint="sqrt_dk")])
            b = np.tril(np.ones((S, S), np.float32))[None, None]
            w = self.op("Mul", [w, self.const(b, hint="attn.causal_mask")])
            w = self.op("Sub", [w, self.const(1e4 * (1 - b), hint="attn.mask_adder")])
            return self.op("MatMul", [self.op("Softmax", [w], axis=-1), v])
        if self.spelling in ("tf2onnx", "ref"):
            k = self.repeat(k, n, tile=self.spelling == "tf2onnx")
            v = self.repeat(v, n, tile=self.spelling == "tf2onnx")
            w = self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])])
            w = self.op("Mul", [w, self.const(1 / math.sqrt(DH), hint="scale")])
            w = self.op("Add", [w, self.adder])
            return self.op("MatMul", [self.op("Softmax", [w], axis=-1), v])
        raise ValueError(self.spelling)

    def attention_block(self, x, prefix):
        """x [B, S, D] normalised: the attention's output projection input [B, S, D]."""
        if self.spelling == "ortattn":  # the projection inside the node
            return self.op("Attention", [x, self.weight(prefix + ".c_attn.weight", [D, 3 * D]),
                                         self.weight(prefix + ".c_attn.bias", [3 * D], scale=0.1)],
                           domain="com.microsoft", num_heads=H, unidirectional=1)
        if self.style == "gpt2" and self.spelling == "ort":  # the bias folded into the node
            qkv = self.linear(x, prefix + ".c_attn", D, 3 * D, bias=False)
            self.qkv_bias = self.weight(prefix + ".c_attn.bias", [3 * D], scale=0.1)
            q, k, v = self.op("Split", [qkv, self.const([D, D, D], np.int64, "split")], outputs=3,
                              axis=-1)
            n = H
        elif self.style == "gpt2":
            qkv = self.linear(x, prefix + ".c_attn", D, 3 * D)
            q, k, v = self.op("Split", [qkv, self.const([D, D, D], np.int64, "split")]
                              if self.opset >= 13 else [qkv], outputs=3, axis=-1,
                              **({} if self.opset >= 13 else {"split": [D, D, D]}))
            n = H
        else:
            q = self.linear(x, prefix + ".q_proj", D, D, bias=False)
            k = self.linear(x, prefix + ".k_proj", D, HKV * DH, bias=False)
            v = self.linear(x, prefix + ".v_proj", D, HKV * DH, bias=False)
            n = HKV
        if self.spelling == "ort":
            if self.style == "llama":  # rotary outside (do_rotary 0), then the [B, S, hidden] layout
                q = self.merge_heads(self.rotary(self.heads(q, H)), H)
                k = self.merge_heads(self.rotary(self.heads(k, n)), n)
                lens = self.const(np.full([B], S - 1, np.int32), np.int32, "seqlens_k")
                total = self.const(S, np.int32, "total_sequence_length")
                return self.op("GroupQueryAttention", [q, k, v, "", "", lens, total],
                               domain="com.microsoft", outputs=3, num_heads=H, kv_num_heads=n)[0]
            return self.op("MultiHeadAttention", [q, k, v, self.qkv_bias], domain="com.microsoft",
                           num_heads=H, unidirectional=1)
        if self.spelling == "onnx23":
            if self.style == "gpt2":
                return self.op("Attention", [q, k, v], q_num_heads=H, kv_num_heads=H, is_causal=1)
            q, k = self.rotary(self.heads(q, H)), self.rotary(self.heads(k, n))
            mask = self.const(np.tril(np.ones((S, S), bool)), bool, "attn.attn_mask")
            o = self.op("Attention", [q, k, self.heads(v, n), mask])
            return self.merge(o)
        q, k, v = self.heads(q, H), self.heads(k, n), self.heads(v, n)
        if self.style == "llama":
            q, k = self.rotary(q), self.rotary(k)
        return self.merge(self.attend(q, k, v, n))

    def merge_heads(self, x, n):
        return self.shape(self.op("Transpose", [x], perm=[0, 2, 1, 3]), [B, S, n * DH])

    def build(self):
        self.opset = {"dynamo": 18, "tf2onnx": 13, "tf2onnx_mulmask": 13, "ort": 17, "ortattn": 17, "onnx23": 23,
                      "ref": 17}[self.spelling]
        if self.spelling in ("tf2onnx", "ref"):
            # tf2onnx: the mask adder (1 - causal) * -10000, folded to a constant by grappler
            self.adder = self.causal_bias(-10000.0)
        x = "x"
        for l in range(LAYERS):
            p = f"h.{l}"
            if self.style == "gpt2":
                a = self.attention_block(self.layer_norm(x, p + ".ln_1"), p + ".attn")
                x = self.op("Add", [x, self.linear(a, p + ".attn.c_proj", D, D)])
                m = self.gelu_tanh(self.linear(self.layer_norm(x, p + ".ln_2"), p + ".mlp.c_fc", D, FFN))
                x = self.op("Add", [x, self.linear(m, p + ".mlp.c_proj", FFN, D)])
            else:
                a = self.attention_block(self.rms_norm(x, p + ".input_layernorm"), p + ".self_attn")
                x = self.op("Add", [x, self.linear(a, p + ".self_attn.o_proj", D, D, bias=False)])
                h = self.rms_norm(x, p + ".post_attention_layernorm")
                g = self.linear(h, p + ".mlp.gate_proj", D, FFN, bias=False)
                g = self.op("Mul", [g, self.op("Sigmoid", [g])])
                u = self.linear(h, p + ".mlp.up_proj", D, FFN, bias=False)
                x = self.op("Add", [x, self.linear(self.op("Mul", [g, u]), p + ".mlp.down_proj", FFN, D,
                                                   bias=False)])
        self.nodes[-1].output[0] = "y"
        graph = helper.make_graph(
            self.nodes, f"{self.style}_{self.spelling}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])], self.inits)
        imports = [helper.make_opsetid("", self.opset)]
        imports += [helper.make_opsetid(d, 1) for d in self.domains]
        producer = {"tf2onnx": ("tf2onnx", "1.16.1"), "tf2onnx_mulmask": ("tf2onnx", "1.16.1"),
                    "ort": ("onnxruntime.transformers", "1.20"),
                    "ortattn": ("onnxruntime.transformers", "1.20"),
                    "ref": ("remat attention_spellings.py", "1")}.get(self.spelling, ("pytorch", "2.5.0"))
        model = helper.make_model(graph, opset_imports=imports, producer_name=producer[0],
                                  producer_version=producer[1])
        model.ir_version = 8
        return model


def main(out):
    nets = [(style, spelling) for style in ("gpt2", "llama")
            for spelling in ("dynamo", "tf2onnx", "ort", "onnx23", "ref")]
    for style, spelling in nets + [("gpt2", "ortattn"), ("gpt2", "tf2onnx_mulmask")]:
        model = Net(style, spelling).build()
        if spelling in ("tf2onnx", "tf2onnx_mulmask", "ref"):
            onnx.checker.check_model(model)  # the checker of onnx 1.12 knows opsets <= 17
        onnx.save(model, f"{out}/{style}_{spelling}.onnx")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
