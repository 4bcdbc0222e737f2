#include "core/training/fusions/attention.h"

#include "core/ops/attention.h"
#include "core/ops/op_def.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace remat::core::training::fusions {

namespace {

using ops::LogitOp;

/// The value of a constant that holds one number (a scalar, or a tensor of equal elements), through
/// the small arithmetic torch.onnx writes for a scale (ConstantOfShape + Pow, Sqrt of a Cast ...).
std::optional<double> scalarValue(const FusionView &v, ValueId id, int depth = 0)
{
    if (depth > 8 || !id.valid())
        return std::nullopt;
    id = v.resolve(id);
    const ir::Value &val = v.graph.value(id);
    // A weight is no constant, whatever its initial value. A node output the importer took for a
    // model tensor (torch.full([], sqrt(d)) in GPT-2: a ConstantOfShape the top-level-tensor rule
    // reads as a parameter) is named like a node's output, never like a state_dict key.
    if (val.kind == ir::ValueKind::Parameter && val.name.find('/') == std::string::npos)
        return std::nullopt;
    if (val.initializer && val.initializer->hasData()) {
        auto f = val.initializer->toFloats();
        if (!f || f->empty())
            return std::nullopt;
        for (float x : *f)
            if (!(x == (*f)[0]) && !(std::isnan(x) && std::isnan((*f)[0])))
                return std::nullopt;
        return double((*f)[0]);
    }
    if (!val.producer.valid())
        return std::nullopt;
    const ir::Node &n = v.graph.node(val.producer);
    const auto arg = [&](size_t k) {
        return k < n.inputs.size() ? scalarValue(v, n.inputs[k], depth + 1) : std::nullopt;
    };
    if (n.opType == "Constant") {
        const ir::Attribute *a = n.attribute("value");
        if (a && a->isTensor() && a->tensor().hasData()) {
            auto f = a->tensor().toFloats();
            return f && f->size() == 1 ? std::optional<double>((*f)[0]) : std::nullopt;
        }
        if (const ir::Attribute *vf = n.attribute("value_float"); vf && vf->isFloat())
            return vf->f();
        return std::nullopt;
    }
    if (n.opType == "ConstantOfShape") {
        const ir::Attribute *a = n.attribute("value");
        if (!a)
            return 0.0;
        if (!a->isTensor() || !a->tensor().hasData())
            return std::nullopt;
        auto f = a->tensor().toFloats();
        return f && f->size() == 1 ? std::optional<double>((*f)[0]) : std::nullopt;
    }
    if (n.opType == "Cast" || n.opType == "Reshape" || n.opType == "Unsqueeze" ||
        n.opType == "Squeeze" || n.opType == "Expand" || n.opType == "Identity")
        return arg(0);
    if (n.opType == "Sqrt") {
        auto a = arg(0);
        return a ? std::optional<double>(std::sqrt(*a)) : std::nullopt;
    }
    if (n.opType == "Reciprocal") {
        auto a = arg(0);
        return a ? std::optional<double>(1.0 / *a) : std::nullopt;
    }
    if (n.opType == "Add" || n.opType == "Sub" || n.opType == "Mul" || n.opType == "Div" ||
        n.opType == "Pow") {
        auto a = arg(0), b = arg(1);
        if (!a || !b)
            return std::nullopt;
        if (n.opType == "Add")
            return *a + *b;
        if (n.opType == "Sub")
            return *a - *b;
        if (n.opType == "Mul")
            return *a * *b;
        if (n.opType == "Div")
            return *a / *b;
        return std::pow(*a, *b);
    }
    return std::nullopt;
}

/// Whether `v` holds one element (a scalar or [1, 1, ...]).
bool oneElement(const ir::Value &v)
{
    auto n = v.shape.numElements();
    return n && *n == 1;
}

std::string label(const ir::Node &n)
{
    return n.name.empty() ? fmt::format("#{} ({})", n.id.value, n.opType) : "'" + n.name + "'";
}

class AttentionMatcher
{
public:
    explicit AttentionMatcher(const FusionView &v) : m_v(v) {}

    FusionResult run()
    {
        for (const ir::Node &n : m_v.graph.nodes())
            if (n.opType == "Softmax" && m_v.available(n) && isDefault(n))
                matchAt(n);
        return std::move(m_result);
    }

private:
    static bool isDefault(const ir::Node &n) { return n.domain.empty() || n.domain == "ai.onnx"; }

    bool usable(const ir::Node *n, const char *type) const
    {
        return n && n->opType == type && isDefault(*n) && m_v.available(*n) &&
               !n->outputs.empty() && n->outputs[0].valid();
    }
    /// A Cast to the dtype its input already has (softmax(dtype=float32) on float32, .to(q.dtype)).
    bool noOpCast(const ir::Node *n) const
    {
        return usable(n, "Cast") && !n->inputs.empty() &&
               m_v.graph.value(m_v.resolve(n->inputs[0])).dtype ==
                   m_v.graph.value(n->outputs[0]).dtype;
    }
    /// The dtype a Cast node converts to, when it is not a no-op: a near miss.
    const ir::Node *consumer(ValueId v) const { return m_v.soleConsumer(v); }

    void miss(const ir::Node &softmax, const std::string &why)
    {
        m_result.notFused.push_back(
            fmt::format("attention at Softmax {} not fused: {}", label(softmax), why));
        m_result.notFusedAt.push_back(softmax.id);
    }

    /// Walks back from a MatMul operand through constant scalings (and, for K, one Transpose
    /// swapping the last two axes): the value read, the product of the scales, the nodes passed.
    struct Operand
    {
        ValueId value;
        double scale = 1;
        bool transposed = false; ///< a Transpose of the last two axes was passed
        std::vector<NodeId> nodes;
    };
    Operand operand(ValueId start, bool allowTranspose) const
    {
        Operand o;
        o.value = m_v.resolve(start);
        for (;;) {
            const ir::Node *p = m_v.producer(o.value);
            if (!p || m_v.soleConsumer(p->outputs[0]) == nullptr)
                return o;
            if ((usable(p, "Mul") || usable(p, "Div")) && p->inputs.size() == 2) {
                const int other = constantScalarSide(*p);
                if (other < 0 || (p->opType == "Div" && other != 1))
                    return o;
                const double c = *scalarValue(m_v, p->inputs[size_t(other)]);
                o.scale *= p->opType == "Div" ? 1.0 / c : c;
                o.nodes.push_back(p->id);
                o.value = m_v.resolve(p->inputs[size_t(1 - other)]);
                continue;
            }
            if (allowTranspose && !o.transposed && usable(p, "Transpose")) {
                const std::vector<int64_t> perm = p->attrInts("perm");
                const size_t r = perm.size();
                bool swapLast = r >= 2;
                for (size_t i = 0; swapLast && i + 2 < r; ++i)
                    swapLast = perm[i] == int64_t(i);
                if (!swapLast || perm[r - 2] != int64_t(r - 1) || perm[r - 1] != int64_t(r - 2))
                    return o;
                o.transposed = true;
                o.nodes.push_back(p->id);
                o.value = m_v.resolve(p->inputs[0]);
                continue;
            }
            return o;
        }
    }
    /// The position of a binary node's operand that is a constant scalar of known value, or -1.
    int constantScalarSide(const ir::Node &n) const
    {
        for (int k = 1; k >= 0; --k) {
            const ValueId in = m_v.resolve(n.inputs[size_t(k)]);
            // folded or not (torch's ConstantOfShape + Pow is computed in the step): a number
            if (oneElement(m_v.graph.value(in)) && scalarValue(m_v, in))
                return k;
        }
        return -1;
    }
    /// transformers' repeat_kv: Unsqueeze(x, 2) -> Expand [B, Hkv, G, S, D] -> Reshape
    /// [B, Hkv * G, S, D], each read once: x itself (its heads serve G query heads each).
    ValueId unrepeated(ValueId v, std::vector<NodeId> &nodes) const
    {
        const ir::Node *reshape = m_v.producer(v);
        if (!usable(reshape, "Reshape") || !m_v.soleConsumer(reshape->outputs[0]))
            return v;
        const ir::Node *expand = m_v.producer(reshape->inputs[0]);
        if (!usable(expand, "Expand") || m_v.soleConsumer(expand->outputs[0]) != reshape)
            return v;
        const ir::Node *unsq = m_v.producer(expand->inputs[0]);
        if (!usable(unsq, "Unsqueeze") || m_v.soleConsumer(unsq->outputs[0]) != expand)
            return v;
        const ValueId x = m_v.resolve(unsq->inputs[0]);
        const ir::Shape &xs = m_v.graph.value(x).shape;
        const ir::Shape &es = m_v.graph.value(expand->outputs[0]).shape;
        const ir::Shape &rs = m_v.graph.value(reshape->outputs[0]).shape;
        if (!xs.isStatic() || !es.isStatic() || !rs.isStatic() || xs.rank() != 4 ||
            es.rank() != 5 || rs.rank() != 4)
            return v;
        const auto x4 = xs.sizes(), e5 = es.sizes(), r4 = rs.sizes();
        if (e5[0] != x4[0] || e5[1] != x4[1] || e5[3] != x4[2] || e5[4] != x4[3] ||
            r4[0] != x4[0] || r4[1] != x4[1] * e5[2] || r4[2] != x4[2] || r4[3] != x4[3])
            return v;
        nodes.insert(nodes.end(), {reshape->id, expand->id, unsq->id});
        return x;
    }

    void matchAt(const ir::Node &softmax)
    {
        const ValueId probs = softmax.outputs[0];
        const ir::Value &x = m_v.graph.value(m_v.resolve(softmax.inputs[0]));
        std::vector<NodeId> inner;
        // forward: casts, one dropout, casts, then MatMul(probs, V)
        const ir::Node *next = consumer(probs);
        ValueId cur = probs;
        const ir::Node *dropout = nullptr;
        while (next && (noOpCast(next) || (!dropout && usable(next, "Dropout")))) {
            if (next->opType == "Dropout") {
                dropout = next;
                // its mask output must be unused: the fused op keeps the RNG state instead
                if (next->outputs.size() > 1 && next->outputs[1].valid() &&
                    !m_v.graph.value(next->outputs[1]).consumers.empty())
                    return miss(softmax, "the dropout mask is read by another node");
            }
            inner.push_back(next->id);
            cur = next->outputs[0];
            next = consumer(cur);
        }
        const ir::Node *pv = next;
        // backward: logit ops, then MatMul(Q', K')
        std::vector<std::pair<LogitOp, double>> revOps;
        ValueId bias, mask;
        const ir::Node *p = m_v.producer(x.id);
        ValueId logits = x.id;
        std::string why;
        while (p && m_v.soleConsumer(logits) != nullptr && p->opType != "MatMul") {
            if (noOpCast(p)) {
            } else if ((usable(p, "Mul") || usable(p, "Div")) && p->inputs.size() == 2 &&
                       constantScalarSide(*p) >= 0 &&
                       (p->opType == "Mul" || constantScalarSide(*p) == 1)) {
                const int side = constantScalarSide(*p);
                const double c = *scalarValue(m_v, p->inputs[size_t(side)]);
                revOps.emplace_back(LogitOp::Scale, p->opType == "Div" ? 1.0 / c : c);
                logits = p->inputs[size_t(1 - side)];
                inner.push_back(p->id);
                p = m_v.producer(logits);
                continue;
            } else if (usable(p, "Add") && p->inputs.size() == 2) {
                if (bias.valid()) {
                    why = "more than one additive bias before the Softmax";
                    break;
                }
                // the chain is the operand computed from a MatMul; the other is the bias
                int chain = -1;
                for (int k = 0; k < 2; ++k) {
                    const ir::Node *pk = m_v.producer(p->inputs[size_t(k)]);
                    if (pk && !m_v.isConstant(m_v.resolve(p->inputs[size_t(k)])))
                        chain = chain < 0 ? k : (pk->opType == "MatMul" ? k : chain);
                }
                if (chain < 0) {
                    why = "an Add of two constants before the Softmax";
                    break;
                }
                bias = m_v.resolve(p->inputs[size_t(1 - chain)]);
                revOps.emplace_back(LogitOp::AddBias, 0.0);
                logits = p->inputs[size_t(chain)];
                inner.push_back(p->id);
                p = m_v.producer(logits);
                continue;
            } else if (usable(p, "Where") && p->inputs.size() == 3) {
                if (mask.valid()) {
                    why = "more than one mask before the Softmax";
                    break;
                }
                const bool keepTrue = m_v.resolve(p->inputs[1]) != m_v.resolve(p->inputs[2]) &&
                                      !(m_v.isConstant(m_v.resolve(p->inputs[1])) &&
                                        oneElement(m_v.graph.value(m_v.resolve(p->inputs[1]))));
                const size_t data = keepTrue ? 1 : 2, fill = keepTrue ? 2 : 1;
                const std::optional<double> fillValue = scalarValue(m_v, p->inputs[fill]);
                if (!fillValue || !oneElement(m_v.graph.value(m_v.resolve(p->inputs[fill])))) {
                    why = "the masked fill of the Where is not a constant scalar";
                    break;
                }
                mask = m_v.resolve(p->inputs[0]);
                revOps.emplace_back(keepTrue ? LogitOp::MaskKeepTrue : LogitOp::MaskKeepFalse,
                                    *fillValue);
                logits = p->inputs[data];
                inner.push_back(p->id);
                p = m_v.producer(logits);
                continue;
            } else {
                why = fmt::format("{} ({}) between the scores' MatMul and the Softmax", label(*p),
                                  p->opType);
                break;
            }
            inner.push_back(p->id);
            logits = p->inputs[0];
            p = m_v.producer(logits);
        }
        const ir::Node *qk = p && p->opType == "MatMul" ? p : nullptr;
        const bool pvOk = usable(pv, "MatMul") && m_v.resolve(pv->inputs[0]) == m_v.resolve(cur);
        if (!qk && !pvOk)
            return; // not attention: a Softmax classifier head, a gate
        if (!why.empty())
            return miss(softmax, why);
        if (!pvOk)
            return miss(softmax, pv ? fmt::format("the probabilities go to {} ({}), not to a "
                                                  "MatMul with V",
                                                  label(*pv), pv->opType)
                                    : "the probabilities are read by several nodes (or are an "
                                      "output): the S x S tensor is needed as it is");
        if (!qk)
            return miss(softmax, "no MatMul of Q and K before the Softmax");
        if (!usable(qk, "MatMul") || m_v.soleConsumer(logits) != nextAfter(qk, inner, &softmax))
            return miss(softmax, "the scores Q K^T are read by another node too");
        // Softmax over the last axis (opset 13's default; before 13, axis 1 flattens the rest)
        const int64_t rank = int64_t(x.shape.rank());
        const int64_t opset = m_v.graph.info().opsetVersion;
        int64_t axis = softmax.attrInt("axis", opset > 0 && opset < 13 ? 1 : -1);
        if (axis < 0)
            axis += rank;
        if (axis != rank - 1)
            return miss(softmax, fmt::format("the Softmax runs over axis {} of {}, not the last",
                                             axis, rank));
        if (dropout && !ops::dropoutDrops(m_v.graph, *dropout))
            dropout = nullptr;
        double ratio = 0;
        if (dropout) {
            std::optional<double> r = dropout->inputs.size() > 1
                                          ? scalarValue(m_v, dropout->inputs[1])
                                          : std::optional<double>(dropout->attrFloat("ratio", 0.5));
            if (!r)
                return miss(softmax, "the dropout ratio is not a constant");
            ratio = *r;
        }
        Operand q = operand(qk->inputs[0], false);
        Operand k = operand(qk->inputs[1], true);
        std::vector<NodeId> absorbed = inner;
        absorbed.push_back(qk->id);
        for (const Operand *o : {&q, &k})
            absorbed.insert(absorbed.end(), o->nodes.begin(), o->nodes.end());
        ValueId kv = k.value;
        if (k.transposed)
            kv = unrepeated(kv, absorbed);
        const ValueId v = unrepeated(m_v.resolve(pv->inputs[1]), absorbed);
        for (ValueId in : {q.value, kv, v})
            if (!ir::isFloatingPoint(m_v.graph.value(in).dtype) ||
                !m_v.graph.value(in).shape.isStatic())
                return miss(softmax, "Q, K and V need floating-point types and static shapes");

        ir::Node fused;
        fused.id = pv->id;
        fused.name = pv->name;
        fused.opType = ops::kAttentionOp;
        fused.ns = pv->ns;
        fused.inputs = {q.value, kv, v, bias, mask};
        fused.outputs = {pv->outputs[0]};
        std::vector<int64_t> opCodes;
        std::vector<double> values;
        const double preScale = q.scale * k.scale;
        if (preScale != 1.0) {
            opCodes.push_back(int64_t(LogitOp::Scale));
            values.push_back(preScale);
        }
        for (auto it = revOps.rbegin(); it != revOps.rend(); ++it) {
            opCodes.push_back(int64_t(it->first));
            values.push_back(it->second);
        }
        fused.attributes.push_back({"k_transposed", int64_t(k.transposed ? 0 : 1)});
        fused.attributes.push_back({"logit_ops", opCodes});
        fused.attributes.push_back({"logit_values", values});
        fused.attributes.push_back({"dropout", ratio});
        // drop trailing absent optional inputs
        while (!fused.inputs.empty() && !fused.inputs.back().valid())
            fused.inputs.pop_back();
        std::vector<std::vector<int64_t>> shapes;
        for (ValueId in : fused.inputs)
            shapes.push_back(in.valid() ? m_v.graph.value(in).shape.sizes()
                                        : std::vector<int64_t>{});
        auto geometry = ops::attentionGeometry(fused, shapes);
        if (!geometry)
            return miss(softmax, geometry.status().message());
        if (geometry->outShape() != m_v.graph.value(pv->outputs[0]).shape.sizes())
            return miss(softmax, "the fused output's shape differs from the MatMul's");
        FusedPattern pattern;
        pattern.description =
            fmt::format("attention {} .. {} -> {} (Q {}, K {}, V {}{}{}{})", label(*qk), label(*pv),
                        ops::kAttentionOp, m_v.graph.value(q.value).shape.toString(),
                        m_v.graph.value(kv).shape.toString(), m_v.graph.value(v).shape.toString(),
                        bias.valid() ? ", bias" : "", mask.valid() ? ", mask" : "",
                        ratio > 0 ? fmt::format(", dropout {}", ratio) : std::string());
        pattern.node = std::move(fused);
        pattern.absorbed = std::move(absorbed);
        pattern.absorbed.push_back(softmax.id);
        m_result.fused.push_back(std::move(pattern));
    }

    /// The node after the scores' MatMul in the chain (the first logit op, or the Softmax).
    const ir::Node *nextAfter(const ir::Node *qk, const std::vector<NodeId> &inner,
                              const ir::Node *softmax) const
    {
        const ir::Node *c = m_v.soleConsumer(qk->outputs[0]);
        if (!c)
            return nullptr;
        if (c == softmax)
            return c;
        for (NodeId id : inner)
            if (id == c->id)
                return c;
        return nullptr;
    }

    const FusionView &m_v;
    FusionResult m_result;
};

} // namespace

FusionResult fuseAttention(const FusionView &view) { return AttentionMatcher(view).run(); }

Expected<std::vector<FusedPattern>> attentionNodes(const FusionView &view)
{
    std::vector<FusedPattern> out;
    for (const ir::Node &n : view.graph.nodes()) {
        const bool onnx = (n.domain.empty() || n.domain == "ai.onnx") && n.opType == "Attention";
        const bool ms = n.domain == "com.microsoft" &&
                        (n.opType == "MultiHeadAttention" || n.opType == "GroupQueryAttention");
        if (!(onnx || ms) || !view.available(n))
            continue;
        const auto refuse = [&](const std::string &why) {
            return makeError(StatusCode::Unsupported,
                             fmt::format("attention node {}: {}; the file opens (shapes) but its "
                                         "training step is not derived",
                                         label(n), why));
        };
        if (ms)
            return refuse(fmt::format("{}.{} has no gradient rule (onnxruntime's inference op)",
                                      n.domain, n.opType));
        // ONNX Attention (opset 23): the plain 4-D form trains as the fused op
        const auto present = [&](size_t k) { return k < n.inputs.size() && n.inputs[k].valid(); };
        if (present(3) || present(4) || present(5))
            return refuse("an attn_mask or past key / value input is not supported");
        for (size_t k = 1; k < n.outputs.size(); ++k)
            if (n.outputs[k].valid() && !view.graph.value(n.outputs[k]).consumers.empty())
                return refuse("present_key / present_value / qk_matmul_output are not supported");
        if (n.attrInt("is_causal", 0) != 0 || n.attrFloat("softcap", 0.0) != 0.0 ||
            n.attrInt("qk_matmul_output_mode", 0) != 0)
            return refuse("is_causal, softcap and qk_matmul_output_mode must be 0");
        const ir::Shape &q = view.graph.value(view.resolve(n.inputs[0])).shape;
        if (q.rank() != 4 || !q.isStatic())
            return refuse("only 4-D Q, K, V [batch, heads, sequence, head size] are supported");
        ir::Node fused;
        fused.id = n.id;
        fused.name = n.name;
        fused.opType = ops::kAttentionOp;
        fused.ns = n.ns;
        fused.inputs = {view.resolve(n.inputs[0]), view.resolve(n.inputs[1]),
                        view.resolve(n.inputs[2])};
        fused.outputs = {n.outputs[0]};
        const double scale = n.attrFloat("scale", 1.0 / std::sqrt(double(q.dims[3].value)));
        fused.attributes.push_back({"k_transposed", int64_t(0)});
        fused.attributes.push_back({"logit_ops", std::vector<int64_t>{int64_t(LogitOp::Scale)}});
        fused.attributes.push_back({"logit_values", std::vector<double>{scale}});
        fused.attributes.push_back({"dropout", 0.0});
        FusedPattern p;
        p.description = fmt::format("ONNX Attention {} -> {}", label(n), ops::kAttentionOp);
        p.node = std::move(fused);
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace remat::core::training::fusions
