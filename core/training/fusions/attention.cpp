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
            // torch 2's dynamo (onnxscript's torchlib) transposes K through rank 3: Reshape to
            // [-1, Sk, D] -> Transpose(0, 2, 1) -> Reshape to [..., D, Sk]
            if (allowTranspose && !o.transposed && usable(p, "Reshape")) {
                if (const auto chain = flattenedTranspose(*p)) {
                    o.transposed = true;
                    o.nodes.insert(o.nodes.end(), chain->second.begin(), chain->second.end());
                    o.value = chain->first;
                    continue;
                }
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
    /// Why a Mul / Div of the scores by something other than a constant scalar is not fused.
    std::string multipliedWhy(const ir::Node &p) const
    {
        // the mask: the operand that is constant or computed elsewhere (not from the scores)
        const auto outside = [&](size_t k) {
            const ValueId in = m_v.resolve(p.inputs[k]);
            return m_v.isConstant(in) || !m_v.producer(in);
        };
        const size_t other = outside(1) || !outside(0) ? 1 : 0;
        const ir::Value &b = m_v.graph.value(m_v.resolve(p.inputs[other]));
        return fmt::format("the scores are {} by '{}' {} at {} (a multiplicative mask, or a scale "
                           "that is not a constant scalar): only a constant scalar scale, an "
                           "additive mask (Add) or a Where mask is fused",
                           p.opType == "Mul" ? "multiplied" : "divided", b.name, b.shape.toString(),
                           label(p));
    }
    /// Reshape(Transpose(Reshape(x, [-1, a, b]), perm 0 2 1), [..., b, a]), each read once, with x
    /// [..., a, b] and the same leading dims: x and the three nodes.
    std::optional<std::pair<ValueId, std::vector<NodeId>>>
    flattenedTranspose(const ir::Node &outer) const
    {
        const ir::Node *t = m_v.producer(outer.inputs[0]);
        if (!usable(t, "Transpose") || m_v.soleConsumer(t->outputs[0]) != &outer ||
            t->attrInts("perm") != std::vector<int64_t>{0, 2, 1})
            return std::nullopt;
        const ir::Node *inner = m_v.producer(t->inputs[0]);
        if (!usable(inner, "Reshape") || m_v.soleConsumer(inner->outputs[0]) != t)
            return std::nullopt;
        const ValueId x = m_v.resolve(inner->inputs[0]);
        const ir::Shape &xs = m_v.graph.value(x).shape;
        const ir::Shape &os = m_v.graph.value(outer.outputs[0]).shape;
        if (!xs.isStatic() || !os.isStatic() || xs.rank() < 2 || xs.rank() != os.rank())
            return std::nullopt;
        const auto a = xs.sizes(), b = os.sizes();
        const size_t r = a.size();
        for (size_t i = 0; i + 2 < r; ++i)
            if (a[i] != b[i])
                return std::nullopt;
        if (a[r - 2] != b[r - 1] || a[r - 1] != b[r - 2])
            return std::nullopt;
        return std::make_pair(x, std::vector<NodeId>{outer.id, t->id, inner->id});
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
    /// [B, Hkv * G, S, D], each read once: x itself (its heads serve G query heads each). tf.repeat
    /// as tf2onnx writes it (Tile instead of Expand) too.
    ValueId unrepeated(ValueId v, std::vector<NodeId> &nodes) const
    {
        const ir::Node *reshape = m_v.producer(v);
        if (!usable(reshape, "Reshape") || !m_v.soleConsumer(reshape->outputs[0]))
            return v;
        const ir::Node *expand = m_v.producer(reshape->inputs[0]);
        if (!(usable(expand, "Expand") || usable(expand, "Tile")) ||
            m_v.soleConsumer(expand->outputs[0]) != reshape)
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
        // p is a logit op: record it and go on to the logits it reads
        auto stepPast = [&](LogitOp op, double value, ValueId operand) {
            revOps.emplace_back(op, value);
            logits = operand;
            inner.push_back(p->id);
            p = m_v.producer(logits);
        };
        while (p && m_v.soleConsumer(logits) != nullptr && p->opType != "MatMul") {
            if (noOpCast(p)) {
            } else if ((usable(p, "Mul") || usable(p, "Div")) && p->inputs.size() == 2 &&
                       constantScalarSide(*p) >= 0 &&
                       (p->opType == "Mul" || constantScalarSide(*p) == 1)) {
                const int side = constantScalarSide(*p);
                const double c = *scalarValue(m_v, p->inputs[size_t(side)]);
                stepPast(LogitOp::Scale, p->opType == "Div" ? 1.0 / c : c,
                         p->inputs[size_t(1 - side)]);
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
                stepPast(LogitOp::AddBias, 0.0, p->inputs[size_t(chain)]);
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
                stepPast(keepTrue ? LogitOp::MaskKeepTrue : LogitOp::MaskKeepFalse, *fillValue,
                         p->inputs[data]);
                continue;
            } else if ((usable(p, "Mul") || usable(p, "Div")) && p->inputs.size() == 2) {
                // a multiplicative mask, a learned temperature: not a constant scalar
                why = multipliedWhy(*p);
                break;
            } else if (const ir::Node *mul = usable(p, "Sub") && p->inputs.size() == 2
                                                 ? m_v.producer(p->inputs[0])
                                                 : nullptr;
                       mul && (usable(mul, "Mul") || usable(mul, "Div")) &&
                       mul->inputs.size() == 2 && constantScalarSide(*mul) < 0) {
                // TF GPT-2's w * b - 1e4 * (1 - b): the Mul is the reason
                why = multipliedWhy(*mul) + fmt::format(" (then {} subtracts)", label(*p));
                break;
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
        const bool einsum = (p && p->opType == "Einsum") || (pv && pv->opType == "Einsum");
        if (!qk && !pvOk && einsum)
            return miss(softmax, "the scores or the output are an Einsum (Keras MultiHeadAttention "
                                 "as tf2onnx writes it): only the MatMul products are fused");
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

namespace {

/// One attention node of the file (ONNX Attention, com.microsoft MultiHeadAttention /
/// GroupQueryAttention) as the fused op, or an error naming the attribute or input that is not
/// handled and the way out. In eager mode these nodes are fused already by nature: onnxruntime
/// runs them as one flash / memory-efficient kernel, so they keep what that kernel keeps (Q, K, V,
/// the output, the log-sum-exp; sdpaRule in core/ops/attention.cpp) and their gradient is the
/// fused op's.
class NodeReader
{
    /// What the fused op does to the logits: its inputs (Q, K, V, the additive bias at 3, the
    /// boolean mask at 4), the logit ops and their values, and a description of them.
    struct Logits
    {
        std::vector<ValueId> inputs;
        std::vector<int64_t> ops;
        std::vector<double> values;
        std::string what;

        Logits(std::vector<ValueId> in, double scale)
            : inputs(std::move(in)), ops{int64_t(LogitOp::Scale)}, values{scale}
        {
        }
        /// An additive bias (a float mask, attention_bias): the fused op's input 3.
        void addBias(ValueId bias, const char *name)
        {
            inputs[3] = bias;
            ops.push_back(int64_t(LogitOp::AddBias));
            values.push_back(0.0);
            what += fmt::format(", {}", name);
        }
        /// A boolean mask, true where the logit is kept: the fused op's input 4.
        void keepTrue(ValueId mask, const char *name)
        {
            inputs[4] = mask;
            ops.push_back(int64_t(LogitOp::MaskKeepTrue));
            values.push_back(-INFINITY);
            what += fmt::format(", {}", name);
        }
        void causal()
        {
            ops.push_back(int64_t(LogitOp::Causal));
            values.push_back(-INFINITY);
            what += ", causal";
        }
    };

public:
    NodeReader(const FusionView &v, const ir::Node &n) : m_v(v), m_n(n) {}

    Expected<FusedPattern> read()
    {
        const bool onnx =
            m_n.opType == "Attention" && (m_n.domain.empty() || m_n.domain == "ai.onnx");
        if (onnx)
            return readOnnx();
        if (m_n.opType == "MultiHeadAttention")
            return readMultiHead();
        if (m_n.opType == "GroupQueryAttention")
            return readGroupQuery();
        return readProjected();
    }

private:
    Status refuse(const std::string &what, const std::string &wayOut) const
    {
        return makeError(StatusCode::Unsupported,
                         fmt::format("attention node {} ({}{}): {}; way out: {}", label(m_n),
                                     m_n.domain.empty() ? "" : m_n.domain + ".", m_n.opType, what,
                                     wayOut));
    }
    bool present(size_t k) const { return k < m_n.inputs.size() && m_n.inputs[k].valid(); }
    /// An output other than the first read by something (present key / value, QK output).
    bool outputUsed(size_t k) const
    {
        if (k >= m_n.outputs.size() || !m_n.outputs[k].valid())
            return false;
        const ir::Value &v = m_v.graph.value(m_n.outputs[k]);
        return v.isGraphOutput || !v.consumers.empty();
    }
    const ir::Value &in(size_t k) const { return m_v.graph.value(m_v.resolve(m_n.inputs[k])); }
    /// Q, K, V (the node's first three inputs, resolved), then `rest`.
    template <typename... Rest> std::vector<ValueId> qkv(Rest... rest) const
    {
        return {m_v.resolve(m_n.inputs[0]), m_v.resolve(m_n.inputs[1]), m_v.resolve(m_n.inputs[2]),
                rest...};
    }
    /// The node's scale attribute, 1 / sqrt(head size) when absent.
    double scale(int64_t headSize) const
    {
        return m_n.attrFloat("scale", 1.0 / std::sqrt(double(headSize)));
    }

    Status needStatic(size_t count) const
    {
        for (size_t k = 0; k < count; ++k) {
            const ir::Value &v = in(k);
            if (!v.shape.isStatic() || !ir::isFloatingPoint(v.dtype))
                return refuse(fmt::format("input {} ('{}') needs a floating-point type and a "
                                          "static shape",
                                          k, v.name),
                              "give the input sizes (--input) so that the shapes are known");
        }
        return Status::ok();
    }

    FusedPattern make(Logits logits, int64_t heads, int64_t kvHeads) const
    {
        auto &[inputs, ops, values, what] = logits;
        ir::Node fused;
        fused.id = m_n.id;
        fused.name = m_n.name;
        fused.opType = ops::kAttentionOp;
        fused.ns = m_n.ns;
        fused.inputs = std::move(inputs);
        while (!fused.inputs.empty() && !fused.inputs.back().valid())
            fused.inputs.pop_back();
        fused.outputs = {m_n.outputs[0]};
        fused.attributes.push_back({"k_transposed", int64_t(0)});
        fused.attributes.push_back({"logit_ops", std::move(ops)});
        fused.attributes.push_back({"logit_values", std::move(values)});
        fused.attributes.push_back({"dropout", 0.0});
        if (heads > 0) {
            fused.attributes.push_back({"num_heads", heads});
            fused.attributes.push_back({"kv_num_heads", kvHeads});
        }
        FusedPattern p;
        p.description = fmt::format("{}{} {} -> {} ({})", m_n.domain.empty() ? "ONNX " : "",
                                    m_n.domain.empty() ? m_n.opType : m_n.domain + "." + m_n.opType,
                                    label(m_n), ops::kAttentionOp, what);
        p.node = std::move(fused);
        return p;
    }

    /// ONNX Attention (opset 23): 4-D Q, K, V [B, heads, S, D] or 3-D [B, S, heads * D] with
    /// q_num_heads / kv_num_heads; attn_mask (bool: keep where true; float: added), is_causal.
    Expected<FusedPattern> readOnnx() const
    {
        if (present(4) || present(5))
            return refuse("past_key / past_value (a KV cache, used for inference) are not handled",
                          "export the model for training, without the cache (use_cache=False)");
        if (present(6))
            return refuse("nonpad_kv_seqlen (padded key / value sequences) is not handled",
                          "export with full-length sequences");
        if (outputUsed(1) || outputUsed(2))
            return refuse("present_key / present_value are read", "export without the cache");
        if (outputUsed(3))
            return refuse("qk_matmul_output is read (the S x S scores are needed as they are)",
                          "drop the output, or read the graph with --attention eager on the "
                          "unfused export");
        if (m_n.attrFloat("softcap", 0.0) != 0.0)
            return refuse("softcap is not handled", "export without logit soft-capping");
        REMAT_RETURN_IF_ERROR(needStatic(3));
        const size_t rank = in(0).shape.rank();
        if (rank != 3 && rank != 4)
            return refuse(fmt::format("Q has rank {}", rank), "give Q, K, V of rank 3 or 4");
        int64_t heads = 0, kvHeads = 0, d = 0;
        if (rank == 3) {
            heads = m_n.attrInt("q_num_heads", 0);
            kvHeads = m_n.attrInt("kv_num_heads", 0);
            if (heads <= 0 || kvHeads <= 0)
                return refuse("3-D Q, K, V without q_num_heads / kv_num_heads",
                              "set both attributes");
            d = in(0).shape.dims[2].value / heads;
        } else {
            d = in(0).shape.dims[3].value;
        }
        Logits logits(qkv(ValueId(), ValueId()), scale(d));
        logits.what = fmt::format("scale {:.4g}", logits.values[0]);
        if (present(3)) {
            const ValueId mask = m_v.resolve(m_n.inputs[3]);
            if (m_v.graph.value(mask).dtype == ir::DataType::Bool)
                logits.keepTrue(mask, "boolean attn_mask");
            else
                logits.addBias(mask, "additive attn_mask");
        }
        if (m_n.attrInt("is_causal", 0) != 0)
            logits.causal();
        if (kvHeads != heads ||
            (rank == 4 && in(1).shape.dims[1].value != in(0).shape.dims[1].value))
            logits.what += ", grouped-query";
        return make(std::move(logits), heads, kvHeads);
    }

    /// com.microsoft MultiHeadAttention: query, key, value [B, S, heads * D]; attention_bias
    /// (input 5) added; unidirectional: causal.
    Expected<FusedPattern> readMultiHead() const
    {
        if (!present(1) || !present(2) || in(0).shape.rank() != 3 || in(1).shape.rank() != 3 ||
            in(2).shape.rank() != 3)
            return refuse("only separate 3-D query, key and value [batch, sequence, hidden] are "
                          "handled (packed QKV / KV or 4-D key and value are not)",
                          "export with separate Q, K, V projections");
        if (present(4))
            return refuse("key_padding_mask is not handled",
                          "give the mask as attention_bias (additive, [batch or 1, heads or 1, "
                          "S, L])");
        if (present(6) || present(7) || present(8) || present(9))
            return refuse("past_key / past_value / past_sequence_length / cache_indirection (a "
                          "KV cache, used for inference) are not handled",
                          "export the model for training, without the cache (use_cache=False)");
        if (outputUsed(1) || outputUsed(2) || outputUsed(3))
            return refuse("present_key / present_value / output_qk are read",
                          "export without the cache and without output_qk");
        REMAT_RETURN_IF_ERROR(needStatic(3));
        const int64_t heads = m_n.attrInt("num_heads", 0);
        if (heads <= 0 || in(0).shape.dims[2].value % heads != 0)
            return refuse("num_heads is missing or does not divide the hidden size",
                          "set num_heads");
        const int64_t d = in(0).shape.dims[2].value / heads;
        Logits logits(qkv(ValueId()), scale(d));
        logits.what = fmt::format("{} heads, scale {:.4g}", heads, logits.values[0]);
        if (present(3)) { // the projections' biases, folded into the node: the fused op's input 5
            const ir::Value &b = in(3);
            const int64_t width =
                in(0).shape.dims[2].value + in(1).shape.dims[2].value + in(2).shape.dims[2].value;
            if (!b.shape.isStatic() || b.shape.rank() != 1 || b.shape.dims[0].value != width)
                return refuse(fmt::format("the bias {} is not [{}] (Q, K and V's widths)",
                                          b.shape.toString(), width),
                              "give a bias of the three widths, or none");
            logits.inputs.resize(6);
            logits.inputs[5] = m_v.resolve(m_n.inputs[3]);
            logits.what += ", Q K V bias";
        }
        if (present(5))
            logits.addBias(m_v.resolve(m_n.inputs[5]), "attention_bias");
        if (m_n.attrInt("unidirectional", 0) != 0) {
            if (in(0).shape.dims[1].value != in(1).shape.dims[1].value)
                return refuse("unidirectional with query and key sequences of different length "
                              "is not handled",
                              "give key and value the query's sequence (no cache)");
            logits.causal();
        }
        return make(std::move(logits), heads, heads);
    }

    /// com.microsoft GroupQueryAttention: query [B, S, heads * D], key / value [B, S, kv_heads *
    /// D] (kept at their own size), always causal; seqlens_k / total_sequence_length must say
    /// full sequences when they are constants (a graph input is taken as full length).
    Expected<FusedPattern> readGroupQuery() const
    {
        if (!present(1) || !present(2))
            return refuse("packed QKV (key and value absent) is not handled",
                          "export with separate Q, K, V inputs");
        if (present(3) || present(4))
            return refuse("past_key / past_value (a KV cache, used for inference) are not handled",
                          "export the model for training, without the cache (use_cache=False)");
        if (m_n.attrInt("do_rotary", 0) != 0 || present(7) || present(8))
            return refuse("do_rotary (rotary embedding inside the node, cos_cache / sin_cache) is "
                          "not handled",
                          "apply the rotary embedding before the node (ordinary ops) and set "
                          "do_rotary 0");
        if (m_n.attrInt("local_window_size", -1) != -1)
            return refuse("local_window_size (sliding-window attention) is not handled",
                          "export with local_window_size -1 (full causal attention)");
        if (m_n.attrFloat("softcap", 0.0) != 0.0 || m_n.attrInt("smooth_softmax", 0) != 0)
            return refuse("softcap / smooth_softmax are not handled",
                          "export with softcap 0 and smooth_softmax 0");
        if (m_n.attrInt("qk_output", 0) != 0 || outputUsed(3))
            return refuse("qk_output (the S x S scores as an output) is not handled",
                          "export with qk_output 0");
        if (present(11))
            return refuse("head_sink is not handled", "export without attention sinks");
        if (outputUsed(1) || outputUsed(2))
            return refuse("present_key / present_value are read",
                          "export without the KV cache outputs in use");
        REMAT_RETURN_IF_ERROR(needStatic(3));
        const int64_t heads = m_n.attrInt("num_heads", 0), kvHeads = m_n.attrInt("kv_num_heads", 0);
        if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0 ||
            in(0).shape.dims[2].value % heads != 0)
            return refuse(fmt::format("num_heads {} / kv_num_heads {} do not fit the query {}",
                                      heads, kvHeads, in(0).shape.toString()),
                          "set num_heads and kv_num_heads (kv_num_heads dividing num_heads)");
        const int64_t s = in(0).shape.dims[1].value;
        if (in(1).shape.dims[1].value != s)
            return refuse("key and query sequences differ (a cache step)",
                          "export without the cache");
        // seqlens_k holds each sequence's length - 1: a constant below s - 1 pads
        if (present(5))
            if (const ir::Value &lens = in(5); lens.initializer && lens.initializer->hasData()) {
                auto f = lens.initializer->toFloats();
                for (float x : f ? *f : std::vector<float>{})
                    if (int64_t(x) != s - 1)
                        return refuse(fmt::format("seqlens_k holds {}, not the full length - 1 "
                                                  "({}): padded sequences are not handled",
                                                  int64_t(x), s - 1),
                                      "give full-length sequences");
            }
        const int64_t d = in(0).shape.dims[2].value / heads;
        Logits logits(qkv(ValueId()), scale(d));
        logits.what =
            fmt::format("{} heads, {} K/V heads, scale {:.4g}", heads, kvHeads, logits.values[0]);
        if (present(10))
            logits.addBias(m_v.resolve(m_n.inputs[10]), "attention_bias");
        logits.causal();
        return make(std::move(logits), heads, kvHeads);
    }

    /// com.microsoft Attention: input [B, S, In], weights [In, Dq + Dk + Dv], optional bias;
    /// the projection inside the node, then attention over num_heads (unidirectional: causal),
    /// attention_bias (input 5) added.
    Expected<FusedPattern> readProjected() const
    {
        if (present(3))
            return refuse("mask_index is not handled",
                          "give the mask as attention_bias (additive, [batch or 1, heads, S, S])");
        if (present(4) || present(6) || outputUsed(1))
            return refuse("past / present / past_sequence_length (a KV cache, used for "
                          "inference) are not handled",
                          "export the model for training, without the cache (use_cache=False)");
        if (m_n.attrInt("do_rotary", 0) != 0)
            return refuse("do_rotary (rotary embedding inside the node) is not handled",
                          "apply the rotary embedding outside the node (MultiHeadAttention after "
                          "the projections) and set do_rotary 0");
        if (!present(1) || in(0).shape.rank() != 3 || in(1).shape.rank() != 2)
            return refuse("input [batch, sequence, hidden] and weights [hidden, Dq + Dk + Dv] are "
                          "needed",
                          "export with the projection weights as a 2-D initializer");
        if (!in(0).shape.isStatic() || !in(1).shape.isStatic() ||
            (present(2) && !in(2).shape.isStatic()))
            return refuse("the input, weights and bias need static shapes",
                          "give the input sizes (--input)");
        const int64_t heads = m_n.attrInt("num_heads", 0);
        const int64_t total = in(1).shape.dims[1].value;
        std::vector<int64_t> sizes = m_n.attrInts("qkv_hidden_sizes");
        if (sizes.empty())
            sizes.assign(3, total / 3);
        if (heads <= 0 || sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] % heads != 0 ||
            sizes[2] % heads != 0 || sizes[0] + sizes[1] + sizes[2] != total)
            return refuse(fmt::format("num_heads {} and qkv_hidden_sizes do not split the "
                                      "weights' {} columns",
                                      heads, total),
                          "set num_heads (and qkv_hidden_sizes with Q and K equal)");
        Logits logits({m_v.resolve(m_n.inputs[0]), m_v.resolve(m_n.inputs[1]),
                       present(2) ? m_v.resolve(m_n.inputs[2]) : ValueId(), ValueId()},
                      scale(sizes[0] / heads));
        logits.what =
            fmt::format("projection inside, {} heads, scale {:.4g}", heads, logits.values[0]);
        if (present(5))
            logits.addBias(m_v.resolve(m_n.inputs[5]), "attention_bias");
        if (m_n.attrInt("unidirectional", 0) != 0)
            logits.causal();
        FusedPattern p = make(std::move(logits), heads, heads);
        p.node.attributes.push_back({"projected", int64_t(1)});
        p.node.attributes.push_back({"qkv_hidden_sizes", sizes});
        return p;
    }

    const FusionView &m_v;
    const ir::Node &m_n;
};

} // namespace

Expected<std::vector<FusedPattern>> attentionNodes(const FusionView &view)
{
    std::vector<FusedPattern> out;
    for (const ir::Node &n : view.graph.nodes()) {
        const bool onnx = (n.domain.empty() || n.domain == "ai.onnx") && n.opType == "Attention";
        const bool ms = n.domain == "com.microsoft" &&
                        (n.opType == "MultiHeadAttention" || n.opType == "GroupQueryAttention" ||
                         n.opType == "Attention");
        if (!(onnx || ms) || !view.available(n))
            continue;
        REMAT_ASSIGN_OR_RETURN(FusedPattern p, NodeReader(view, n).read());
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace remat::core::training::fusions
