// Attention ops: the builder's fused ScaledDotProductAttention (core/ops/attention.h), ONNX's
// Attention (opset 23) and onnxruntime's com.microsoft MultiHeadAttention / GroupQueryAttention,
// whose shapes are inferred so files holding them open in any mode.
#include "core/ops/attention.h"
#include "core/ops/families.h"
#include "core/ops/shape_context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace remat::core::ops {

namespace {

using namespace rules;

Status bad(const ir::Node &n, const std::string &what)
{
    return makeError(
        StatusCode::InvalidArgument,
        fmt::format("{} '{}': {}", n.opType, n.name.empty() ? n.opType : n.name, what));
}

} // namespace

std::vector<int64_t> AttentionGeometry::outShape() const
{
    if (seqFirst)
        return {lead[0], sq, heads * dv};
    std::vector<int64_t> s = lead;
    s.push_back(sq);
    s.push_back(dv);
    return s;
}

std::vector<int64_t> AttentionGeometry::lseShape() const
{
    std::vector<int64_t> s = lead;
    s.push_back(sq);
    return s;
}

int64_t AttentionGeometry::matrixOf(int k, int64_t b) const
{
    const std::vector<int64_t> &own = leadOf[k];
    int64_t index = 0, stride = 1;
    for (size_t t = lead.size(); t-- > 0;) {
        const int64_t i = b % lead[t];
        b /= lead[t];
        index += (i * own[t] / lead[t]) * stride;
        stride *= own[t];
    }
    return index;
}

double AttentionGeometry::forwardFlops() const
{
    const double projection =
        projected ? 2.0 * double(lead[0]) * double(sq) * double(inHidden) * double(qkvHidden) : 0;
    return 2.0 * double(batches) * double(sq) * double(sk) * double(d + dv) +
           5.0 * double(batches) * double(sq) * double(sk) + projection;
}

double AttentionGeometry::backwardFlops() const
{
    const double projection =
        projected ? 4.0 * double(lead[0]) * double(sq) * double(inHidden) * double(qkvHidden) : 0;
    return 2.0 * double(batches) * double(sq) * double(sk) * double(3 * d + 2 * dv) +
           8.0 * double(batches) * double(sq) * double(sk) + projection;
}

Expected<AttentionGeometry> attentionGeometry(const ir::Node &node,
                                              const std::vector<std::vector<int64_t>> &shapes)
{
    AttentionGeometry g;
    g.kTransposed = node.attrInt("k_transposed", 0) != 0;
    g.dropout = node.attrFloat("dropout", 0.0);
    for (int64_t op : node.attrInts("logit_ops"))
        g.ops.push_back(LogitOp(op));
    if (const ir::Attribute *a = node.attribute("logit_values"); a && a->isFloats())
        g.values = a->floats();
    if (g.values.size() != g.ops.size())
        return bad(node, "logit_ops and logit_values differ in length");
    for (size_t k = 0; k < 5; ++k)
        g.has[k] = k < shapes.size() && !shapes[k].empty(); // absent inputs: no shape
    std::vector<std::vector<int64_t>> viewed(shapes.begin(), shapes.end());
    viewed.resize(std::max<size_t>(viewed.size(), 3));
    g.heads = node.attrInt("num_heads", 0);
    g.projected = node.attrInt("projected", 0) != 0;
    if (g.projected) {
        // X [B, S, In] W [In, Dq + Dk + Dv]: Q, K, V as [B, S, heads * D] below
        if (!g.has[0] || !g.has[1] || shapes[0].size() != 3 || shapes[1].size() != 2 ||
            shapes[1][0] != shapes[0][2])
            return bad(node, "a projected attention needs X [B, S, In] and W [In, Dq + Dk + Dv]");
        if (g.heads <= 0 || g.dropout != 0 || g.kTransposed)
            return bad(node, "a projected attention needs num_heads, no dropout, K untransposed");
        g.projectionBias = g.has[2];
        g.inHidden = shapes[0][2];
        g.qkvHidden = shapes[1][1];
        std::vector<int64_t> sizes = node.attrInts("qkv_hidden_sizes");
        if (sizes.empty())
            sizes.assign(3, g.qkvHidden / 3);
        if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != g.qkvHidden ||
            sizes[0] != sizes[1])
            return bad(node, fmt::format("qkv_hidden_sizes {} do not split W's {} columns (Q and K "
                                         "equal)",
                                         sizes, g.qkvHidden));
        if (g.projectionBias && (shapes[2].size() != 1 || shapes[2][0] != g.qkvHidden))
            return bad(node,
                       fmt::format("the projection bias {} is not [{}]", shapes[2], g.qkvHidden));
        for (size_t k = 0; k < 3; ++k)
            viewed[k] = {shapes[0][0], shapes[0][1], sizes[k]};
        g.has[2] = true;
    }
    if (!g.has[0] || !g.has[1] || !g.has[2])
        return bad(node, "needs Q, K and V of known rank >= 2");
    g.qkvBias = shapes.size() > 5 && !shapes[5].empty();
    if (g.qkvBias && (g.heads <= 0 || g.projected || shapes[5].size() != 1 ||
                      shapes[5][0] != shapes[0].back() + shapes[1].back() + shapes[2].back()))
        return bad(node, fmt::format("the Q, K, V bias {} needs num_heads and [{}]", shapes[5],
                                     shapes[0].back() + shapes[1].back() + shapes[2].back()));
    // [B, S, heads * D]: read as [B, heads, S, D]
    if (g.heads > 0) {
        g.seqFirst = true;
        g.kvHeads = node.attrInt("kv_num_heads", g.heads);
        if (g.kTransposed)
            return bad(node, "num_heads (Q, K, V as [B, S, heads * D]) with K transposed");
        if (g.kvHeads <= 0 || g.heads % g.kvHeads != 0)
            return bad(node, fmt::format("num_heads {} is not a multiple of kv_num_heads {}",
                                         g.heads, g.kvHeads));
        for (size_t k = 0; k < 3; ++k) {
            const std::vector<int64_t> s = viewed[k];
            const int64_t h = k == 0 ? g.heads : g.kvHeads;
            if (s.size() != 3 || s[2] % h != 0)
                return bad(node, fmt::format("input {} {} is not [batch, sequence, {} heads x "
                                             "head size]",
                                             k, s, h));
            viewed[k] = {s[0], h, s[1], s[2] / h};
        }
    }
    const auto &q = viewed[0], &k = viewed[1], &v = viewed[2];
    if (q.size() < 2 || k.size() < 2 || v.size() < 2)
        return bad(node, "Q, K and V need rank 2 or more");
    g.sq = q[q.size() - 2];
    g.d = q.back();
    g.sk = g.kTransposed ? k.back() : k[k.size() - 2];
    const int64_t kd = g.kTransposed ? k[k.size() - 2] : k.back();
    g.dv = v.back();
    if (kd != g.d || v[v.size() - 2] != g.sk)
        return bad(node, fmt::format("Q {}, K {} (transposed: {}) and V {} do not multiply", q, k,
                                     g.kTransposed, v));
    // Leading dims: numpy broadcasting, widened so that a K / V head count dividing Q's is a group
    size_t rank = 0;
    for (size_t i = 0; i < 5; ++i)
        if (g.has[i])
            rank = std::max(rank, viewed[i].size() - 2);
    g.lead.assign(rank, 1);
    for (size_t i = 0; i < 5; ++i) {
        if (!g.has[i])
            continue;
        const auto &s = viewed[i];
        if (s.size() < 2)
            return bad(node, fmt::format("input {} has rank {}", i, s.size()));
        const size_t off = rank - (s.size() - 2);
        g.leadOf[i].assign(rank, 1);
        for (size_t t = 0; t + 2 < s.size(); ++t) {
            g.leadOf[i][off + t] = s[t];
            g.lead[off + t] = std::max(g.lead[off + t], s[t]);
        }
        g.rowsOf[i] = s[s.size() - 2];
        g.colsOf[i] = s.back();
    }
    for (size_t i = 0; i < 5; ++i) {
        if (!g.has[i])
            continue;
        for (size_t t = 0; t < rank; ++t)
            if (g.leadOf[i][t] <= 0 || g.lead[t] % g.leadOf[i][t] != 0)
                return bad(node, fmt::format("input {}'s leading dims {} do not divide {}", i,
                                             g.leadOf[i], g.lead));
    }
    for (size_t i = 3; i < 5; ++i)
        if (g.has[i] && ((g.rowsOf[i] != 1 && g.rowsOf[i] != g.sq) ||
                         (g.colsOf[i] != 1 && g.colsOf[i] != g.sk)))
            return bad(node, fmt::format("the {} {} does not broadcast to [{}, {}]",
                                         i == 3 ? "bias" : "mask", viewed[i], g.sq, g.sk));
    for (LogitOp op : g.ops) {
        if (int64_t(op) < 1 || int64_t(op) > 5)
            return bad(node, fmt::format("logit op {} is none of 1 to 5", int64_t(op)));
        if (op == LogitOp::AddBias && !g.has[3])
            return bad(node, "adds a bias it is not given");
        if ((op == LogitOp::MaskKeepTrue || op == LogitOp::MaskKeepFalse) && !g.has[4])
            return bad(node, "masks with a mask it is not given");
    }
    if (!(g.dropout >= 0 && g.dropout < 1))
        return bad(node, fmt::format("dropout {} is not in [0, 1)", g.dropout));
    g.batches = 1;
    for (int64_t d : g.lead)
        g.batches *= d;
    return g;
}

namespace {

std::vector<std::vector<int64_t>> inputShapes(const ShapeContext &c)
{
    std::vector<std::vector<int64_t>> out(c.node.inputs.size());
    for (size_t i = 0; i < out.size(); ++i)
        if (const Shape *s = c.inShape(i); s && s->isStatic())
            out[i] = s->sizes();
    return out;
}

Status sdpaShape(ShapeContext &c)
{
    const std::vector<std::vector<int64_t>> shapes = inputShapes(c);
    const bool projected = c.node.attrInt("projected", 0) != 0; // (its bias is optional)
    if (shapes.size() < 2 || shapes[0].empty() || shapes[1].empty() ||
        (!projected && (shapes.size() < 3 || shapes[2].empty())))
        return Status::ok(); // not known yet
    auto g = attentionGeometry(c.node, shapes);
    if (!g)
        return c.fail(g.status().message());
    c.set(0, c.inType(0), Shape::fromStatic(g->outShape()));
    return Status::ok();
}

/// The fused op keeps what flash / memory-efficient attention's backward reads
/// (derivatives.yaml, _scaled_dot_product_flash_attention): query, key, value, the output, the
/// float32 log-sum-exp per query row and the philox seed and offset; an additive bias or mask
/// (memory-efficient attention's attn_bias) is kept as given. Never the S x S scores.
Expected<Spec> sdpaRule(const RuleContext &c)
{
    std::vector<std::vector<int64_t>> shapes(c.node->inputs.size());
    for (size_t i = 0; i < shapes.size(); ++i)
        if (const ir::Value *v = c.input(i); v && v->shape.isStatic())
            shapes[i] = v->shape.sizes();
    REMAT_ASSIGN_OR_RETURN(AttentionGeometry g, attentionGeometry(*c.node, shapes));
    Spec s;
    for (int pos : {0, 1, 2, 3, 5})
        wantGrad(c, s, pos);
    s.forwardFlops = g.forwardFlops();
    if (s.gradInputs.empty())
        return s;
    if (g.projected) // Q, K, V projected inside the op: the backward reads them back
        s.extras.push_back({2, "qkv", c.input(0)->dtype, Shape::fromStatic(g.qkvShape())});
    s.backwardFlops = g.backwardFlops();
    for (int pos = 0; pos < 5; ++pos)
        if (g.has[pos])
            saveInput(s, pos);
    if (g.qkvBias)
        saveInput(s, 5);
    s.extras.push_back({1, "logsumexp", ir::DataType::Float, Shape::fromStatic(g.lseShape())});
    saveOutput(s, 0);
    saveOutput(s, 1);
    if (g.projected)
        saveOutput(s, 2);
    if (g.dropout > 0) {
        s.extras.push_back({2, "rng_state", ir::DataType::Int64, Shape::fromStatic({2})});
        saveOutput(s, 2);
    }
    return s;
}

bool sdpaDifferentiable(const ir::Node &, size_t pos) { return pos <= 3 || pos == 5; }

/// A dim of a shape, or an unknown dim when out of range.
Dim dimAt(const Shape *s, size_t k) { return s && k < s->rank() ? s->dims[k] : Dim(); }

Dim divided(const Dim &a, int64_t by) { return a.isStatic() && by > 0 ? Dim(a.value / by) : Dim(); }

Dim times(const Dim &a, int64_t by) { return a.isStatic() ? Dim(a.value * by) : Dim(); }

Dim plus(const Dim &a, const Dim &b)
{
    return a.isStatic() && b.isStatic() ? Dim(a.value + b.value) : Dim();
}

/// ONNX Attention (opset 23): Q [B, Hq, Sq, E] or [B, Sq, Hq * E] (then q_num_heads and
/// kv_num_heads say the heads), K / V likewise with Hkv heads, optional past_key / past_value
/// [B, Hkv, P, E]. Y has Q's layout with V's head size; present_key / value hold P + Skv rows;
/// qk_matmul_output is [B, Hq, Sq, P + Skv].
Status onnxAttentionShape(ShapeContext &c)
{
    const Shape *q = c.inShape(0), *k = c.inShape(1), *v = c.inShape(2);
    if (!q || !k || !v)
        return Status::ok();
    const Shape *pastK = c.inShape(4);
    const DataType t = c.inType(0);
    const bool fourD = q->rank() == 4;
    if (!fourD && q->rank() != 3)
        return c.fail(fmt::format("Q has rank {}; Attention takes rank 3 or 4", q->rank()));
    if (k->rank() != q->rank() || v->rank() != q->rank())
        return c.fail("Q, K and V must have the same rank");
    const int64_t hq = c.node.attrInt("q_num_heads", 0), hkv = c.node.attrInt("kv_num_heads", 0);
    if (c.node.attrInt("qk_matmul_output_mode", 0) < 0 ||
        c.node.attrInt("qk_matmul_output_mode", 0) > 3)
        return c.fail("qk_matmul_output_mode must be 0 to 3");
    Shape y, presentK, presentV, qk;
    const Dim batch = q->dims[0];
    if (fourD) {
        const Dim kvRows = plus(k->dims[2], pastK ? dimAt(pastK, 2) : Dim(0));
        y = Shape{{batch, q->dims[1], q->dims[2], v->dims[3]}};
        presentK = Shape{{batch, k->dims[1], kvRows, k->dims[3]}};
        presentV = Shape{{batch, v->dims[1], kvRows, v->dims[3]}};
        qk = Shape{{batch, q->dims[1], q->dims[2], kvRows}};
    } else {
        if (hq <= 0 || hkv <= 0)
            return c.fail("3-D Q, K, V need the q_num_heads and kv_num_heads attributes");
        if (hq % hkv != 0)
            return c.fail(
                fmt::format("q_num_heads {} is not a multiple of kv_num_heads {}", hq, hkv));
        const Dim headK = divided(k->dims[2], hkv), headV = divided(v->dims[2], hkv);
        const Dim kvRows = plus(k->dims[1], pastK ? dimAt(pastK, 2) : Dim(0));
        y = Shape{{batch, q->dims[1], times(headV, hq)}};
        presentK = Shape{{batch, Dim(hkv), kvRows, headK}};
        presentV = Shape{{batch, Dim(hkv), kvRows, headV}};
        qk = Shape{{batch, Dim(hq), q->dims[1], kvRows}};
    }
    c.set(0, t, y);
    c.set(1, t, presentK);
    c.set(2, t, presentV);
    c.set(3, t, qk);
    return Status::ok();
}

/// com.microsoft MultiHeadAttention: query [B, S, D] (or packed QKV [B, S, N, 3, H]), key
/// [B, L, D] or [B, N, L, H], value likewise with its head size, num_heads N; optional past_key /
/// past_value [B, N, P, H] at inputs 6 and 7. Output [B, S, Dv]; present_key / value [B, N, P + L,
/// H].
Status msMultiHeadAttentionShape(ShapeContext &c)
{
    const Shape *q = c.inShape(0);
    if (!q)
        return Status::ok();
    const int64_t n = c.node.attrInt("num_heads", 0);
    if (n <= 0)
        return c.fail("the num_heads attribute must be given and positive");
    const DataType t = c.inType(0);
    const Dim batch = q->dims.empty() ? Dim() : q->dims[0];
    if (q->rank() == 5) { // packed QKV
        const Dim hidden = q->dims[2].isStatic() && q->dims[4].isStatic()
                               ? Dim(q->dims[2].value * q->dims[4].value)
                               : Dim();
        c.set(0, t, Shape{{batch, q->dims[1], hidden}});
        return Status::ok();
    }
    if (q->rank() != 3)
        return c.fail(
            fmt::format("query has rank {}; MultiHeadAttention takes 3 (or 5, packed)", q->rank()));
    const Shape *k = c.inShape(1), *v = c.inShape(2), *pastK = c.inShape(6);
    Dim dv = q->dims[2], headK = divided(q->dims[2], n), headV = headK, rows;
    if (v && v->rank() == 3) {
        dv = v->dims[2];
        headV = divided(v->dims[2], n);
        rows = v->dims[1];
    } else if (v && v->rank() == 4) {
        dv = times(v->dims[3], n);
        headV = v->dims[3];
        rows = v->dims[2];
    } else if (k && k->rank() == 5) {
        rows = k->dims[1]; // packed KV [B, L, N, 2, H]
    }
    Shape y{{batch, q->dims[1], dv}};
    c.set(0, t, y);
    const Dim total = plus(rows, pastK ? dimAt(pastK, 2) : Dim(0));
    Shape pk{{batch, Dim(n), total, headK}}, pv{{batch, Dim(n), total, headV}};
    c.set(1, t, pk);
    c.set(2, t, pv);
    return Status::ok();
}

/// com.microsoft GroupQueryAttention: query [B, S, N * H] (or packed QKV [B, S, (N + 2 Nkv) H]
/// when key is absent), key / value [B, S, Nkv * H], past_key / past_value [B, Nkv, P, H]
/// (inputs 3, 4), num_heads N and kv_num_heads Nkv. Output [B, S, N * H]; present_key / value
/// [B, Nkv, max(P, S + 0), H] (the KV cache buffer: P when shared, else P + S).
Status msGroupQueryAttentionShape(ShapeContext &c)
{
    const Shape *q = c.inShape(0);
    if (!q)
        return Status::ok();
    const int64_t n = c.node.attrInt("num_heads", 0), nkv = c.node.attrInt("kv_num_heads", 0);
    if (n <= 0 || nkv <= 0)
        return c.fail("the num_heads and kv_num_heads attributes must be given and positive");
    if (n % nkv != 0)
        return c.fail(fmt::format("num_heads {} is not a multiple of kv_num_heads {}", n, nkv));
    if (q->rank() != 3)
        return c.fail(
            fmt::format("query has rank {}; GroupQueryAttention takes [B, S, D]", q->rank()));
    const bool packed = !c.inShape(1);
    const Dim head = divided(q->dims[2], packed ? n + 2 * nkv : n);
    const DataType t = c.inType(0);
    Shape y{{q->dims[0], q->dims[1], times(head, n)}};
    c.set(0, t, y);
    const Shape *pastK = c.inShape(3);
    const Dim total = pastK ? (dimAt(pastK, 2).isStatic() && q->dims[1].isStatic()
                                   ? Dim(std::max(dimAt(pastK, 2).value, q->dims[1].value))
                                   : Dim())
                            : q->dims[1];
    Shape present{{q->dims[0], Dim(nkv), total, head}};
    c.set(1, t, present);
    c.set(2, t, present);
    return Status::ok();
}

/// com.microsoft Attention: input [B, S, In], weights [In, Dq + Dk + Dv] (qkv_hidden_sizes, or
/// three equal parts), num_heads. Output [B, S, Dv]. The projection is inside the node: files
/// holding it open; the training builder refuses it with the way out.
Status msAttentionShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0), *w = c.inShape(1);
    if (!x || !w)
        return Status::ok();
    if (x->rank() != 3 || w->rank() != 2)
        return c.fail("Attention takes input [batch, sequence, hidden] and weights [hidden, 3 x "
                      "hidden]");
    const std::vector<int64_t> sizes = c.node.attrInts("qkv_hidden_sizes");
    Dim dv;
    if (sizes.size() == 3)
        dv = Dim(sizes[2]);
    else if (!sizes.empty())
        return c.fail("qkv_hidden_sizes must hold three sizes");
    else
        dv = divided(w->dims[1], 3);
    c.set(0, c.inType(0), Shape{{x->dims[0], x->dims[1], dv}});
    return Status::ok();
}

} // namespace

void addAttentionOps(std::vector<OpDef> &t)
{
    t.push_back({.type = kAttentionOp,
                 .family = OpFamily::MatrixProduct,
                 .inferShape = sdpaShape,
                 .differentiable = sdpaDifferentiable,
                 .derive = sdpaRule});
    t.push_back({.type = "Attention",
                 .family = OpFamily::MatrixProduct,
                 .sinceOpset = 23,
                 .inferShape = onnxAttentionShape});
    t.push_back({.type = kMsMultiHeadAttention,
                 .family = OpFamily::MatrixProduct,
                 .inferShape = msMultiHeadAttentionShape});
    t.push_back({.type = kMsGroupQueryAttention,
                 .family = OpFamily::MatrixProduct,
                 .inferShape = msGroupQueryAttentionShape});
    t.push_back(
        {.type = kMsAttention, .family = OpFamily::MatrixProduct, .inferShape = msAttentionShape});
}

} // namespace remat::core::ops
