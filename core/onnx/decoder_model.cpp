#include "core/onnx/decoder_model.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <vector>

namespace remat::core::onnx {

namespace {

using ::onnx::TensorProto;

/// Appends nodes, inputs and small int64 / float initializers to a GraphProto, naming outputs as
/// torch.onnx does ("/model/layers.0/self_attn/q_proj/MatMul_output_0").
class Writer
{
public:
    explicit Writer(::onnx::GraphProto *g) : m_g(g) {}

    void input(const std::string &name, int elemType, const std::vector<int64_t> &dims)
    {
        auto *vi = m_g->add_input();
        vi->set_name(name);
        auto *tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(elemType);
        auto *shape = tt->mutable_shape();
        for (int64_t d : dims)
            shape->add_dim()->set_dim_value(d);
    }
    void output(const std::string &name) { m_g->add_output()->set_name(name); }

    std::string ints(const std::vector<int64_t> &values, bool scalar = false)
    {
        const std::string name = fmt::format("/const/ints_{}", m_count++);
        auto *t = m_g->add_initializer();
        t->set_name(name);
        t->set_data_type(TensorProto::INT64);
        if (!scalar)
            t->add_dims(int64_t(values.size()));
        for (int64_t v : values)
            t->add_int64_data(v);
        return name;
    }
    /// A float32 scalar as torch.onnx writes one: a Constant node (the importer reads an
    /// initializer of floats as a weight).
    std::string scalar(float value) { return floats({}, {value}); }
    /// A float32 table of `dims` in a Constant node (rotary cos / sin).
    std::string floats(const std::vector<int64_t> &dims, const std::vector<float> &values)
    {
        auto *n = node("Constant", fmt::format("/Constant_{}", m_count++), {});
        auto *a = n->add_attribute();
        a->set_name("value");
        a->set_type(::onnx::AttributeProto::TENSOR);
        auto *t = a->mutable_t();
        t->set_data_type(TensorProto::FLOAT);
        for (int64_t d : dims)
            t->add_dims(d);
        t->set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                                    values.size() * sizeof(float)));
        return n->output(0);
    }

    /// A node named `name` with one output "<name>_output_0" (more with `outputs`).
    ::onnx::NodeProto *node(const std::string &op, const std::string &name,
                            const std::vector<std::string> &inputs, int outputs = 1)
    {
        auto *n = m_g->add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (const std::string &i : inputs)
            n->add_input(i);
        for (int k = 0; k < outputs; ++k)
            n->add_output(fmt::format("{}_output_{}", name, k));
        return n;
    }
    std::string op(const std::string &type, const std::string &name,
                   const std::vector<std::string> &inputs)
    {
        return node(type, name, inputs)->output(0);
    }
    static void attr(::onnx::NodeProto *n, const std::string &key, int64_t v)
    {
        auto *a = n->add_attribute();
        a->set_name(key);
        a->set_type(::onnx::AttributeProto::INT);
        a->set_i(v);
    }
    static void attr(::onnx::NodeProto *n, const std::string &key, float v)
    {
        auto *a = n->add_attribute();
        a->set_name(key);
        a->set_type(::onnx::AttributeProto::FLOAT);
        a->set_f(v);
    }
    static void attr(::onnx::NodeProto *n, const std::string &key, const std::vector<int64_t> &v)
    {
        auto *a = n->add_attribute();
        a->set_name(key);
        a->set_type(::onnx::AttributeProto::INTS);
        for (int64_t x : v)
            a->add_ints(x);
    }
    /// A constant table of `dims` filled with `value`, folded at import (ConstantOfShape).
    std::string filled(const std::string &name, const std::vector<int64_t> &dims, float value)
    {
        auto *n = node("ConstantOfShape", name, {ints(dims)});
        auto *a = n->add_attribute();
        a->set_name("value");
        a->set_type(::onnx::AttributeProto::TENSOR);
        auto *t = a->mutable_t();
        t->set_data_type(TensorProto::FLOAT);
        t->add_dims(1);
        t->add_float_data(value);
        return n->output(0);
    }

private:
    ::onnx::GraphProto *m_g;
    int m_count = 0;
};

struct Names
{
    const DecoderSpec &s;
    bool gpt2() const { return s.modelType == "gpt2"; }
    std::string layer(int64_t i) const
    {
        return gpt2() ? fmt::format("transformer.h.{}", i) : fmt::format("model.layers.{}", i);
    }
    std::string scope(int64_t i) const
    {
        return gpt2() ? fmt::format("/transformer/h.{}", i) : fmt::format("/model/layers.{}", i);
    }
    std::string embed() const
    {
        return gpt2() ? "transformer.wte.weight" : "model.embed_tokens.weight";
    }
};

class DecoderWriter
{
public:
    DecoderWriter(const DecoderSpec &s, ::onnx::GraphProto *g)
        : m_s(s), m_w(g), m_n{s}, m_dh(s.headDim > 0 ? s.headDim : s.hidden / s.heads)
    {
    }

    void write()
    {
        const int64_t B = m_s.batch, S = m_s.seq, d = m_s.hidden;
        m_w.input("input_ids", TensorProto::INT64, {B, S});
        param(m_n.embed(), {m_s.vocab, d});
        std::string x =
            m_w.op("Gather", m_n.gpt2() ? "/transformer/wte/Gather" : "/model/embed_tokens/Gather",
                   {m_n.embed(), "input_ids"});
        if (!m_s.rope) {
            const std::string wpe =
                m_n.gpt2() ? "transformer.wpe.weight" : "model.embed_positions.weight";
            param(wpe, {m_s.maxPositions, d});
            std::vector<int64_t> positions(static_cast<size_t>(S));
            for (int64_t i = 0; i < S; ++i)
                positions[size_t(i)] = i;
            const std::string pos =
                m_w.op("Reshape", "/positions/Reshape", {m_w.ints(positions), m_w.ints({1, S})});
            const std::string pe = m_w.op("Gather", "/wpe/Gather", {wpe, pos});
            x = m_w.op("Add", "/embeddings/Add", {x, pe});
        }
        if (m_s.rope) {
            // transformers' rotary tables: cat(freqs, freqs) over positions 0..S-1
            std::vector<float> c(size_t(S * m_dh)), sn(size_t(S * m_dh));
            for (int64_t p = 0; p < S; ++p)
                for (int64_t j = 0; j < m_dh; ++j) {
                    const double inv =
                        std::pow(m_s.ropeTheta, -double(2 * (j % (m_dh / 2))) / double(m_dh));
                    c[size_t(p * m_dh + j)] = float(std::cos(double(p) * inv));
                    sn[size_t(p * m_dh + j)] = float(std::sin(double(p) * inv));
                }
            m_cos = m_w.floats({1, 1, S, m_dh}, c);
            m_sin = m_w.floats({1, 1, S, m_dh}, sn);
        }
        // the causal mask: finfo(float32).min above the diagonal (Trilu of a constant, folded)
        const std::string full =
            m_w.filled("/causal/full", {1, 1, S, S}, std::numeric_limits<float>::lowest());
        auto *tri = m_w.node("Trilu", "/causal/Trilu", {full, m_w.ints({1}, true)});
        Writer::attr(tri, "upper", int64_t(1));
        m_mask = tri->output(0);

        for (int64_t i = 0; i < m_s.layers; ++i)
            x = layer(i, x);
        x = norm(m_n.gpt2() ? "transformer.ln_f" : "model.norm",
                 m_n.gpt2() ? "/transformer/ln_f" : "/model/norm", x);
        const std::string head = m_s.tieEmbeddings ? m_n.embed() : "lm_head.weight";
        if (!m_s.tieEmbeddings)
            param(head, {m_s.vocab, d});
        const std::string logits = linear("/lm_head", x, head, "", d, m_s.vocab);
        m_w.output(logits);
    }

private:
    void param(const std::string &name, const std::vector<int64_t> &dims)
    {
        m_w.input(name, TensorProto::FLOAT, dims);
    }

    /// F.linear(x, W, b) on [B, S, in] as torch.onnx writes a 2-D linear: Reshape to [B S, in],
    /// Gemm(transB), Reshape back (views: nothing copied). GPT-2's Conv1D keeps W as [in, out].
    std::string linear(const std::string &scope, const std::string &x, const std::string &w,
                       const std::string &b, int64_t in, int64_t out, bool conv1d = false)
    {
        const int64_t B = m_s.batch, S = m_s.seq;
        const std::string flat = m_w.op("Reshape", scope + "/Reshape", {x, m_w.ints({B * S, in})});
        std::vector<std::string> args = {flat, w};
        if (!b.empty())
            args.push_back(b);
        auto *g = m_w.node("Gemm", scope + "/Gemm", args);
        Writer::attr(g, "transB", int64_t(conv1d ? 0 : 1));
        return m_w.op("Reshape", scope + "/Reshape_1", {g->output(0), m_w.ints({B, S, out})});
    }

    std::string norm(const std::string &key, const std::string &scope, const std::string &x)
    {
        const int64_t d = m_s.hidden;
        param(key + ".weight", {d});
        if (!m_s.rmsNorm) {
            param(key + ".bias", {d});
            auto *ln = m_w.node("LayerNormalization", scope + "/LayerNormalization",
                                {x, key + ".weight", key + ".bias"});
            Writer::attr(ln, "axis", int64_t(-1));
            Writer::attr(ln, "epsilon", float(m_s.normEps));
            return ln->output(0);
        }
        const std::string sq = m_w.op("Pow", scope + "/Pow", {x, m_w.scalar(2.0f)});
        auto *mean = m_w.node("ReduceMean", scope + "/ReduceMean", {sq});
        Writer::attr(mean, "axes", std::vector<int64_t>{-1});
        Writer::attr(mean, "keepdims", int64_t(1));
        const std::string eps =
            m_w.op("Add", scope + "/Add", {mean->output(0), m_w.scalar(float(m_s.normEps))});
        const std::string root = m_w.op("Sqrt", scope + "/Sqrt", {eps});
        const std::string inv = m_w.op("Reciprocal", scope + "/Reciprocal", {root});
        const std::string normed = m_w.op("Mul", scope + "/Mul", {x, inv});
        return m_w.op("Mul", scope + "/Mul_1", {key + ".weight", normed});
    }

    /// [B, S, h * Dh] -> [B, h, S, Dh]
    std::string heads(const std::string &scope, const std::string &x, int64_t h)
    {
        const std::string r =
            m_w.op("Reshape", scope + "/Reshape", {x, m_w.ints({m_s.batch, m_s.seq, h, m_dh})});
        auto *t = m_w.node("Transpose", scope + "/Transpose", {r});
        Writer::attr(t, "perm", std::vector<int64_t>{0, 2, 1, 3});
        return t->output(0);
    }

    /// x * cos + rotate_half(x) * sin
    std::string rotary(const std::string &scope, const std::string &x)
    {
        const int64_t half = m_dh / 2;
        const std::string axis = m_w.ints({3});
        const std::string x1 =
            m_w.op("Slice", scope + "/Slice", {x, m_w.ints({0}), m_w.ints({half}), axis});
        const std::string x2 =
            m_w.op("Slice", scope + "/Slice_1", {x, m_w.ints({half}), m_w.ints({m_dh}), axis});
        const std::string neg = m_w.op("Neg", scope + "/Neg", {x2});
        auto *cat = m_w.node("Concat", scope + "/Concat", {neg, x1});
        Writer::attr(cat, "axis", int64_t(-1));
        const std::string a = m_w.op("Mul", scope + "/Mul", {x, m_cos});
        const std::string b = m_w.op("Mul", scope + "/Mul_1", {cat->output(0), m_sin});
        return m_w.op("Add", scope + "/Add", {a, b});
    }

    /// transformers' repeat_kv: [B, kv, S, Dh] -> [B, kv * g, S, Dh]
    std::string repeatKv(const std::string &scope, const std::string &x)
    {
        const int64_t g = m_s.heads / m_s.kvHeads;
        if (g == 1)
            return x;
        const std::string u = m_w.op("Unsqueeze", scope + "/Unsqueeze", {x, m_w.ints({2})});
        const std::string e = m_w.op("Expand", scope + "/Expand",
                                     {u, m_w.ints({m_s.batch, m_s.kvHeads, g, m_s.seq, m_dh})});
        return m_w.op("Reshape", scope + "/Reshape",
                      {e, m_w.ints({m_s.batch, m_s.heads, m_s.seq, m_dh})});
    }

    std::string layer(int64_t i, const std::string &x)
    {
        const int64_t d = m_s.hidden, H = m_s.heads, KV = m_s.kvHeads;
        const std::string key = m_n.layer(i), sc = m_n.scope(i);
        const bool gpt2 = m_n.gpt2();
        const std::string h = norm(key + (gpt2 ? ".ln_1" : ".input_layernorm"),
                                   sc + (gpt2 ? "/ln_1" : "/input_layernorm"), x);
        const std::string at = sc + (gpt2 ? "/attn" : "/self_attn");
        const std::string atKey = key + (gpt2 ? ".attn" : ".self_attn");
        std::string q, k, v;
        if (gpt2) {
            param(atKey + ".c_attn.weight", {d, 3 * d});
            param(atKey + ".c_attn.bias", {3 * d});
            const std::string qkv = linear(at + "/c_attn", h, atKey + ".c_attn.weight",
                                           atKey + ".c_attn.bias", d, 3 * d, true);
            auto *split = m_w.node("Split", at + "/Split", {qkv, m_w.ints({d, d, d})}, 3);
            Writer::attr(split, "axis", int64_t(2));
            q = split->output(0);
            k = split->output(1);
            v = split->output(2);
        } else {
            const auto proj = [&](const char *name, int64_t out) {
                const std::string w = fmt::format("{}.{}.weight", atKey, name);
                const std::string b = fmt::format("{}.{}.bias", atKey, name);
                param(w, {out, d});
                const bool bias = m_s.qkvBias || m_s.linearBias;
                if (bias)
                    param(b, {out});
                return linear(fmt::format("{}/{}", at, name), h, w, bias ? b : "", d, out);
            };
            q = proj("q_proj", H * m_dh);
            k = proj("k_proj", KV * m_dh);
            v = proj("v_proj", KV * m_dh);
        }
        q = heads(at + "/q", q, H);
        k = heads(at + "/k", k, KV);
        v = heads(at + "/v", v, KV);
        if (m_s.rope) {
            q = rotary(at + "/rotary_q", q);
            k = rotary(at + "/rotary_k", k);
        }
        k = repeatKv(at + "/repeat_k", k);
        v = repeatKv(at + "/repeat_v", v);
        auto *kt = m_w.node("Transpose", at + "/Transpose_k", {k});
        Writer::attr(kt, "perm", std::vector<int64_t>{0, 1, 3, 2});
        const std::string scores = m_w.op("MatMul", at + "/MatMul", {q, kt->output(0)});
        const std::string scaled =
            m_w.op("Div", at + "/Div", {scores, m_w.scalar(float(std::sqrt(double(m_dh))))});
        const std::string masked = m_w.op("Add", at + "/Add", {scaled, m_mask});
        auto *sm = m_w.node("Softmax", at + "/Softmax", {masked});
        Writer::attr(sm, "axis", int64_t(-1));
        const std::string o = m_w.op("MatMul", at + "/MatMul_1", {sm->output(0), v});
        auto *ot = m_w.node("Transpose", at + "/Transpose_o", {o});
        Writer::attr(ot, "perm", std::vector<int64_t>{0, 2, 1, 3});
        const std::string merged =
            m_w.op("Reshape", at + "/Reshape_o",
                   {ot->output(0), m_w.ints({m_s.batch, m_s.seq, H * m_dh})});
        std::string attnOut;
        if (gpt2) {
            param(atKey + ".c_proj.weight", {d, d});
            param(atKey + ".c_proj.bias", {d});
            attnOut = linear(at + "/c_proj", merged, atKey + ".c_proj.weight",
                             atKey + ".c_proj.bias", d, d, true);
        } else {
            param(atKey + ".o_proj.weight", {d, H * m_dh});
            if (m_s.linearBias)
                param(atKey + ".o_proj.bias", {d});
            attnOut = linear(at + "/o_proj", merged, atKey + ".o_proj.weight",
                             m_s.linearBias ? atKey + ".o_proj.bias" : "", H * m_dh, d);
        }
        const std::string x1 = m_w.op("Add", sc + "/Add", {x, attnOut});
        const std::string h2 = norm(key + (gpt2 ? ".ln_2" : ".post_attention_layernorm"),
                                    sc + (gpt2 ? "/ln_2" : "/post_attention_layernorm"), x1);
        return m_w.op("Add", sc + "/Add_1", {x1, mlp(key + ".mlp", sc + "/mlp", h2)});
    }

    std::string mlp(const std::string &key, const std::string &sc, const std::string &h)
    {
        const int64_t d = m_s.hidden, f = m_s.ffn;
        if (m_s.swiglu) {
            const auto proj = [&](const char *name, int64_t in, int64_t out, const std::string &x) {
                const std::string w = fmt::format("{}.{}.weight", key, name);
                param(w, {out, in});
                std::string b;
                if (m_s.linearBias) {
                    b = fmt::format("{}.{}.bias", key, name);
                    param(b, {out});
                }
                return linear(fmt::format("{}/{}", sc, name), x, w, b, in, out);
            };
            const std::string gate = proj("gate_proj", d, f, h);
            const std::string up = proj("up_proj", d, f, h);
            const std::string sig = m_w.op("Sigmoid", sc + "/act_fn/Sigmoid", {gate});
            const std::string silu = m_w.op("Mul", sc + "/act_fn/Mul", {gate, sig});
            const std::string prod = m_w.op("Mul", sc + "/Mul", {silu, up});
            return proj("down_proj", f, d, prod);
        }
        const bool gpt2 = m_n.gpt2();
        const std::string fcName = gpt2 ? "c_fc" : "fc1", projName = gpt2 ? "c_proj" : "fc2";
        const std::string fw = fmt::format("{}.{}.weight", key, fcName);
        const std::string fb = fmt::format("{}.{}.bias", key, fcName);
        const std::string pw = fmt::format("{}.{}.weight", key, projName);
        const std::string pb = fmt::format("{}.{}.bias", key, projName);
        if (gpt2) {
            param(fw, {d, f});
            param(fb, {f});
            param(pw, {f, d});
            param(pb, {d});
        } else {
            param(fw, {f, d});
            param(fb, {f});
            param(pw, {d, f});
            param(pb, {d});
        }
        const std::string a = linear(sc + "/" + fcName, h, fw, fb, d, f, gpt2);
        std::string g;
        if (m_s.geluTanh) {
            // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as torch exports gelu(tanh)
            const std::string cube = m_w.op("Pow", sc + "/act/Pow", {a, m_w.scalar(3.0f)});
            const std::string k = m_w.op("Mul", sc + "/act/Mul", {cube, m_w.scalar(0.044715f)});
            const std::string inner = m_w.op("Add", sc + "/act/Add", {a, k});
            const std::string s2 =
                m_w.op("Mul", sc + "/act/Mul_1", {inner, m_w.scalar(0.7978845608f)});
            const std::string t = m_w.op("Tanh", sc + "/act/Tanh", {s2});
            const std::string one = m_w.op("Add", sc + "/act/Add_1", {t, m_w.scalar(1.0f)});
            const std::string xm = m_w.op("Mul", sc + "/act/Mul_2", {a, one});
            g = m_w.op("Mul", sc + "/act/Mul_3", {xm, m_w.scalar(0.5f)});
        } else {
            const std::string dv = m_w.op("Div", sc + "/act/Div", {a, m_w.scalar(1.4142135f)});
            const std::string e = m_w.op("Erf", sc + "/act/Erf", {dv});
            const std::string one = m_w.op("Add", sc + "/act/Add", {e, m_w.scalar(1.0f)});
            const std::string xm = m_w.op("Mul", sc + "/act/Mul", {a, one});
            g = m_w.op("Mul", sc + "/act/Mul_1", {xm, m_w.scalar(0.5f)});
        }
        return linear(sc + "/" + projName, g, pw, pb, f, d, gpt2);
    }

    const DecoderSpec &m_s;
    Writer m_w;
    Names m_n;
    int64_t m_dh;
    std::string m_cos, m_sin, m_mask;
};

} // namespace

Status validateDecoderSpec(const DecoderSpec &s)
{
    auto bad = [](std::string m) { return makeError(StatusCode::InvalidArgument, std::move(m)); };
    if (s.layers <= 0 || s.hidden <= 0 || s.heads <= 0 || s.vocab <= 0 || s.ffn <= 0)
        return bad(fmt::format("num_hidden_layers {}, hidden_size {}, num_attention_heads {}, "
                               "intermediate_size {} and vocab_size {} must all be positive",
                               s.layers, s.hidden, s.heads, s.ffn, s.vocab));
    if (s.headDim <= 0 && s.hidden % s.heads != 0)
        return bad(fmt::format("hidden_size {} is not a multiple of num_attention_heads {} (or "
                               "give head_dim)",
                               s.hidden, s.heads));
    if (s.kvHeads <= 0 || s.heads % s.kvHeads != 0)
        return bad(fmt::format("num_key_value_heads {} does not divide num_attention_heads {}",
                               s.kvHeads, s.heads));
    const int64_t dh = s.headDim > 0 ? s.headDim : s.hidden / s.heads;
    if (s.rope && dh % 2 != 0)
        return bad(fmt::format("rotary positions need an even head size, not {}", dh));
    if (s.seq <= 0 || s.batch <= 0)
        return bad(fmt::format("--seq {} and --batch {} must be positive", s.seq, s.batch));
    if (!s.rope && s.seq > s.maxPositions)
        return bad(fmt::format("--seq {} is longer than the {} learned positions "
                               "(max_position_embeddings)",
                               s.seq, s.maxPositions));
    if (s.modelType == "gpt2" && (s.heads != s.kvHeads || s.rope || s.swiglu))
        return bad(
            "a gpt2 config has learned positions, a GELU MLP and as many K/V heads as heads");
    return Status::ok();
}

Status writeDecoderModel(const DecoderSpec &spec, const std::string &path)
{
    REMAT_RETURN_IF_ERROR(validateDecoderSpec(spec));
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.set_producer_name("remat make-decoder");
    m.set_producer_version("1");
    auto *opset = m.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    m.mutable_graph()->set_name(spec.modelType + "_decoder");
    DecoderWriter(spec, m.mutable_graph()).write();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(StatusCode::InvalidArgument, fmt::format("cannot write '{}'", path));
    if (!m.SerializeToOstream(&out))
        return makeError(StatusCode::InvalidArgument, fmt::format("writing '{}' failed", path));
    return Status::ok();
}

} // namespace remat::core::onnx
