#include "core/training/builder.h"
#include "core/training/fusions/attention.h"
#include "core/training/storage_bases.h"

#include "core/ir/constant_nodes.h"
#include "core/ir/kind_reasons.h"
#include "core/ops/einsum.h"
#include "core/ops/elementwise_math.h"
#include "core/ops/op_def.h"
#include "core/ops/shape_context.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

namespace remat::core::training {

using ir::ValueKind;

namespace {

/// One forward op to be: an ONNX node, or a fused pattern described by a synthetic node.
struct WorkNode
{
    ir::Node node; ///< inputs already resolved through removed aliases
    NodeId source;
    std::shared_ptr<const ir::Node> fused; ///< `node` when it replaces a pattern (Op::fusedNode)
    const ops::OpDef *rule = nullptr; ///< the op's definition; its gradient rule is rule->derive
    std::vector<bool> inputNeedsGrad, outputHasGrad;
    bool hasBackward = false;
    ops::BackwardSpec spec;
    OpId forwardOp;
    std::vector<std::pair<int, TensorId>> outputs; ///< (position, tensor) incl. extras
};

std::string nodeLabel(const ir::Node &n)
{
    return n.name.empty() ? fmt::format("#{} ({})", n.id.value, n.opType)
                          : fmt::format("'{}' ({})", n.name, n.opType);
}

bool isDefaultDomain(const ir::Node &n) { return n.domain.empty() || n.domain == "ai.onnx"; }

class Builder
{
public:
    Builder(const ir::Graph &g, const BuildOptions &o) : m_g(g), m_opt(o) {}
    Expected<TrainingGraph> run();

private:
    void classifyConstants();
    void findAliases();
    void fuseGelu();
    void fuseGeluTanh();
    void fuseSiluMish();
    void fuseGroupNorm();
    void fuseWeightNorm();
    void fuseVariance();
    Status fuseAttention();
    /// Whether every value of a constant is `expected` (true for folded data we cannot read).
    bool constantAll(const ir::Value *v, double expected) const;
    /// The position (0 / 1) of a binary node's operand that is not `known`, or -1.
    int otherInput(const ir::Node &n, ValueId known) const
    {
        if (n.inputs.size() != 2)
            return -1;
        if (resolve(n.inputs[0]) == known)
            return 1;
        if (resolve(n.inputs[1]) == known)
            return 0;
        return -1;
    }
    /// Replaces the pattern ending at `last` by one node of `type` reading `x`; `inner` are the
    /// pattern's other nodes.
    void fuse(const ir::Node &last, const char *type, ValueId x,
              std::initializer_list<const ir::Node *> inner);
    Status collectWorkNodes();
    Status propagateRequiresGrad();
    Status planBackward();
    Expected<TensorId> tensorFor(ValueId v);
    /// A tensor the tool adds (its name made unique against the file's: m_names).
    TensorId newTensor(std::string name, TensorRole role, ir::DataType dtype,
                       const ir::Shape &shape, int64_t bytes, ValueId source);
    /// The tensor of a forward value, under the value's own name.
    TensorId addTensor(std::string name, TensorRole role, ir::DataType dtype,
                       const ir::Shape &shape, int64_t bytes, ValueId source);
    Status emitForward();
    Status emitLoss();
    Status emitBackward();
    /// The tensor receiving the next gradient contribution of `v`; queues an Accumulate.
    TensorId contribute(ValueId v, TensorRole role);
    void flushAccumulates();

    ValueId resolve(ValueId v) const
    {
        while (v.valid() && m_alias[v.index()].valid())
            v = m_alias[v.index()];
        return v;
    }
    const ir::Value *constInput(const ir::Node &n, size_t pos) const
    {
        if (pos >= n.inputs.size() || !n.inputs[pos].valid())
            return nullptr;
        const ir::Value &v = m_g.value(n.inputs[pos]);
        return m_constVal[v.id.index()] ? &v : nullptr;
    }
    /// The single consumer node of a value, or null.
    const ir::Node *soleConsumer(ValueId v) const
    {
        const ir::Value &val = m_g.value(v);
        if (val.consumers.size() != 1 || val.isGraphOutput)
            return nullptr;
        return &m_g.node(val.consumers[0]);
    }
    bool constantNear(const ir::Value *v, double expected) const;
    /// A node a fusion may take: of `type`, not folded, not already skipped or fused, one output.
    bool fusable(const ir::Node *n, const char *type) const
    {
        return n && n->opType == type && !m_constNode[n->id.index()] &&
               !m_skipNode[n->id.index()] && m_fusedAt[n->id.index()] < 0 &&
               n->outputs.size() == 1 && n->outputs[0].valid();
    }
    /// The axes a Reduce* node names (ops::reduceAxes), nullopt when its axes input is not known.
    std::optional<std::vector<int64_t>> axesOf(const ir::Node &n) const
    {
        const ir::Value *k = constInput(n, 1);
        return ops::reduceAxes(n, k ? k->initializer.get() : nullptr);
    }
    /// The node computing a value (through removed aliases), or null for inputs and weights.
    const ir::Node *producerOf(ValueId v) const
    {
        const ir::Value &val = m_g.value(resolve(v));
        return val.producer.valid() ? &m_g.node(val.producer) : nullptr;
    }

    const ir::Graph &m_g;
    BuildOptions m_opt;
    std::vector<bool> m_constNode, m_constVal, m_skipNode, m_requiresGrad;
    std::vector<ValueId> m_alias;
    std::vector<ir::Node> m_fused; // synthetic nodes replacing a pattern, by last node
    std::vector<int> m_fusedAt;    // node index -> index into m_fused, or -1
    std::vector<WorkNode> m_work;
    std::vector<int> m_gradCount, m_gradReceived;
    std::vector<TensorId> m_runningGrad;
    std::vector<ValueId> m_lossOutputs;

    std::vector<Op> m_ops;
    std::vector<Tensor> m_tensors;
    TensorNames m_names;             // every forward value's name is reserved up front
    std::vector<int32_t> m_tensorOf; // ValueId -> TensorId value
    std::vector<Op> m_pendingAccumulates;
    std::vector<std::string> m_fusedPatterns, m_notFused;
    std::vector<FusionSite> m_fusedSites, m_notFusedSites;
};

void Builder::classifyConstants()
{
    // Shape arithmetic, folded out of the step (the explorer folds the same nodes).
    const std::vector<char> constant = ir::constantNodes(m_g);
    m_constVal.assign(m_g.valueCount(), false);
    m_constNode.assign(m_g.nodeCount(), false);
    for (const ir::Value &v : m_g.values())
        m_constVal[v.id.index()] = v.kind == ValueKind::Constant && !v.producer.valid();
    for (const ir::Node &n : m_g.nodes()) {
        if (!constant[n.id.index()])
            continue;
        m_constNode[n.id.index()] = true;
        for (ValueId out : n.outputs)
            if (out.valid())
                m_constVal[out.index()] = true;
    }
}

void Builder::findAliases()
{
    m_alias.assign(m_g.valueCount(), ValueId());
    m_skipNode.assign(m_g.nodeCount(), false);
    for (const ir::Node &n : m_g.nodes()) {
        if (m_constNode[n.id.index()] || !isDefaultDomain(n) || n.inputs.empty() ||
            !n.inputs[0].valid() || n.outputs.empty() || !n.outputs[0].valid())
            continue;
        // x.to(x.dtype) / softmax(dtype=float32) on float32: PyTorch returns x itself
        // (an Identity marked remat_contiguous is the copy .contiguous() made, which the export
        // dropped and remat_export.py's metadata put back: a tensor of its own, see torchLayout)
        bool identity =
            (n.opType == "Identity" && n.attrInt("remat_contiguous", 0) != 1) ||
            (n.opType == "Cast" && m_g.value(n.inputs[0]).dtype == m_g.value(n.outputs[0]).dtype);
        if (n.opType == "Dropout" && !ops::dropoutDrops(m_g, n)) {
            // The mask output must be unused for the node to vanish.
            identity = n.outputs.size() < 2 || !n.outputs[1].valid() ||
                       m_g.value(n.outputs[1]).consumers.empty();
        }
        if (!identity || m_g.value(n.outputs[0]).isGraphOutput)
            continue;
        m_alias[n.outputs[0].index()] = n.inputs[0];
        m_skipNode[n.id.index()] = true;
    }
}

bool Builder::constantNear(const ir::Value *v, double expected) const
{
    if (!v)
        return false;
    if (!v->initializer || !v->initializer->hasData())
        return true; // folded shape arithmetic without data: trust the structure
    auto f = v->initializer->toFloats();
    return f && f->size() == 1 &&
           std::abs((*f)[0] - expected) < 1e-3 * std::max(1.0, std::abs(expected));
}

void Builder::fuseGelu()
{
    m_fusedAt.assign(m_g.nodeCount(), -1);
    if (!m_opt.fuseGelu)
        return;
    // Div(x, sqrt2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5); operands of Add / Mul in
    // either order; every intermediate read once.
    for (const ir::Node &div : m_g.nodes()) {
        if (div.opType != "Div" || m_constNode[div.id.index()] || m_skipNode[div.id.index()] ||
            div.inputs.size() != 2 || div.outputs.size() != 1 || !constInput(div, 1) ||
            !constantNear(constInput(div, 1), std::sqrt(2.0)))
            continue;
        const ValueId x = resolve(div.inputs[0]);
        const ir::Node *erf = soleConsumer(div.outputs[0]);
        if (!erf || erf->opType != "Erf")
            continue;
        const ir::Node *add = soleConsumer(erf->outputs[0]);
        if (!add || add->opType != "Add")
            continue;
        const int addOther = otherInput(*add, erf->outputs[0]);
        if (addOther < 0 || !constInput(*add, size_t(addOther)) ||
            !constantNear(constInput(*add, size_t(addOther)), 1.0))
            continue;
        const ir::Node *mulX = soleConsumer(add->outputs[0]);
        if (!mulX || mulX->opType != "Mul" || otherInput(*mulX, add->outputs[0]) < 0 ||
            resolve(mulX->inputs[size_t(otherInput(*mulX, add->outputs[0]))]) != x)
            continue;
        const ir::Node *half = soleConsumer(mulX->outputs[0]);
        if (!half || half->opType != "Mul")
            continue;
        const int halfOther = otherInput(*half, mulX->outputs[0]);
        if (halfOther < 0 || !constInput(*half, size_t(halfOther)) ||
            !constantNear(constInput(*half, size_t(halfOther)), 0.5))
            continue;
        ir::Node gelu;
        gelu.id = half->id;
        gelu.name = half->name;
        gelu.opType = "Gelu";
        gelu.inputs = {x};
        gelu.outputs = {half->outputs[0]};
        gelu.ns = half->ns;
        gelu.attributes.push_back({"approximate", std::string("none")});
        m_skipNode[div.id.index()] = m_skipNode[erf->id.index()] = true;
        m_skipNode[add->id.index()] = m_skipNode[mulX->id.index()] = true;
        m_fusedAt[half->id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(gelu));
    }
}

void Builder::fuseGeluTanh()
{
    if (!m_opt.fuseGelu)
        return;
    // torch.onnx's gelu(approximate="tanh") below opset 20 writes the formula out:
    // Mul(x, Mul(x, x)) -> Mul(0.044715, .) -> Add(x, .) -> Mul(sqrt(2/pi), .) -> Tanh ->
    // Add(1, .) -> Mul(x, .) -> Mul(0.5, .). PyTorch's GeluBackward keeps x alone. The cube as two
    // Muls marks the exporter's form: GELU written out in Python (minGPT's NewGELU) uses Pow, and
    // autograd keeps its intermediates, so that form is left as it is.
    const auto usable = [&](const ir::Node *n, const char *type) {
        return fusable(n, type) && n->inputs.size() == 2;
    };
    // The non-constant operand of a binary node whose other operand is the constant `c`.
    const auto besideConstant = [&](const ir::Node &n, double c) -> ValueId {
        for (size_t k = 0; k < 2; ++k)
            if (constInput(n, k) && constantNear(constInput(n, k), c) && !constInput(n, 1 - k))
                return resolve(n.inputs[1 - k]);
        return ValueId();
    };
    for (const ir::Node &tanh : m_g.nodes()) {
        if (tanh.opType != "Tanh" || m_constNode[tanh.id.index()] || m_skipNode[tanh.id.index()] ||
            tanh.inputs.size() != 1 || tanh.outputs.size() != 1)
            continue;
        const ir::Node *scaled = producerOf(tanh.inputs[0]);
        if (!usable(scaled, "Mul") || soleConsumer(scaled->outputs[0]) != &tanh)
            continue;
        const ValueId inner = besideConstant(*scaled, std::sqrt(2.0 / M_PI));
        const ir::Node *add = inner.valid() ? producerOf(inner) : nullptr;
        if (!usable(add, "Add") || soleConsumer(add->outputs[0]) != scaled)
            continue;
        // Add(x, Mul(kappa, Mul(x, Mul(x, x)))), the operands in either order
        ValueId x;
        const ir::Node *kappa = nullptr, *cube = nullptr, *square = nullptr;
        for (size_t k = 0; k < 2 && !x.valid(); ++k) {
            const ir::Node *kap = producerOf(add->inputs[k]);
            if (!usable(kap, "Mul") || soleConsumer(kap->outputs[0]) != add)
                continue;
            const ValueId c = besideConstant(*kap, 0.044715);
            const ir::Node *cu = c.valid() ? producerOf(c) : nullptr;
            if (!usable(cu, "Mul") || soleConsumer(cu->outputs[0]) != kap)
                continue;
            const ValueId candidate = resolve(add->inputs[1 - k]);
            const int sq = otherInput(*cu, candidate);
            const ir::Node *sqn = sq >= 0 ? producerOf(cu->inputs[size_t(sq)]) : nullptr;
            if (!usable(sqn, "Mul") || soleConsumer(sqn->outputs[0]) != cu ||
                resolve(sqn->inputs[0]) != candidate || resolve(sqn->inputs[1]) != candidate)
                continue;
            x = candidate;
            kappa = kap;
            cube = cu;
            square = sqn;
        }
        if (!x.valid())
            continue;
        const ir::Node *plusOne = soleConsumer(tanh.outputs[0]);
        if (!usable(plusOne, "Add") || besideConstant(*plusOne, 1.0) != resolve(tanh.outputs[0]))
            continue;
        const ir::Node *mulX = soleConsumer(plusOne->outputs[0]);
        if (!usable(mulX, "Mul") || otherInput(*mulX, plusOne->outputs[0]) < 0 ||
            resolve(mulX->inputs[size_t(otherInput(*mulX, plusOne->outputs[0]))]) != x)
            continue;
        const ir::Node *half = soleConsumer(mulX->outputs[0]);
        if (!usable(half, "Mul") || besideConstant(*half, 0.5) != resolve(mulX->outputs[0]))
            continue;
        fuse(*half, "Gelu", x, {square, cube, kappa, add, scaled, &tanh, plusOne, mulX});
        m_fused.back().attributes.push_back({"approximate", std::string("tanh")});
    }
}

void Builder::fuse(const ir::Node &last, const char *type, ValueId x,
                   std::initializer_list<const ir::Node *> inner)
{
    ir::Node fused;
    fused.id = last.id;
    fused.name = last.name;
    fused.opType = type;
    fused.inputs = {x};
    fused.outputs = {last.outputs[0]};
    fused.ns = last.ns;
    for (const ir::Node *n : inner)
        m_skipNode[n->id.index()] = true;
    m_fusedAt[last.id.index()] = int(m_fused.size());
    m_fused.push_back(std::move(fused));
}

void Builder::fuseSiluMish()
{
    if (!m_opt.fuseActivations)
        return;
    const auto usable = [&](const ir::Node *n, const char *type) { return fusable(n, type); };
    // Mul(x, f(x)) with f's output read once: SiLU = x * Sigmoid(x), Mish = x * Tanh(Softplus(x)).
    for (const ir::Node &first : m_g.nodes()) {
        if ((first.opType != "Sigmoid" && first.opType != "Softplus") ||
            !usable(&first, first.opType.c_str()) || first.inputs.size() != 1 ||
            !first.inputs[0].valid())
            continue;
        const ValueId x = resolve(first.inputs[0]);
        const ir::Node *tanh = nullptr;
        ValueId gate = first.outputs[0];
        if (first.opType == "Softplus") {
            tanh = soleConsumer(gate);
            if (!usable(tanh, "Tanh"))
                continue;
            gate = tanh->outputs[0];
        }
        const ir::Node *mul = soleConsumer(gate);
        if (!usable(mul, "Mul") || otherInput(*mul, gate) < 0 ||
            resolve(mul->inputs[size_t(otherInput(*mul, gate))]) != x)
            continue;
        if (!(m_g.value(mul->outputs[0]).shape == m_g.value(x).shape))
            continue; // a broadcasting product is no activation
        if (tanh)
            fuse(*mul, "Mish", x, {&first, tanh});
        else
            fuse(*mul, "Silu", x, {&first});
    }
}

bool Builder::constantAll(const ir::Value *v, double expected) const
{
    if (!v)
        return false;
    if (!v->initializer || !v->initializer->hasData())
        return true;
    auto f = v->initializer->toFloats();
    return f && std::all_of(f->begin(), f->end(),
                            [&](double d) { return std::abs(d - expected) < 1e-6; });
}

void Builder::fuseGroupNorm()
{
    if (!m_opt.fuseActivations)
        return;
    const auto usable = [&](const ir::Node *n, const char *type) {
        return n && n->opType == type && !m_constNode[n->id.index()] &&
               !m_skipNode[n->id.index()] && m_fusedAt[n->id.index()] < 0 && !n->outputs.empty() &&
               n->outputs[0].valid();
    };
    // A vector of C values laid out along x's channel axis ([C, 1, 1] against [N, C, H, W]).
    const auto channelVector = [&](ValueId v, const ir::Shape &x) {
        const ir::Shape &s = m_g.value(v).shape;
        if (!s.isStatic() || s.rank() + 1 != x.rank() || x.rank() < 2 || !x.dims[1].isStatic())
            return false;
        for (size_t d = 0; d < s.rank(); ++d)
            if (s.dims[d].value != (d == 0 ? x.dims[1].value : 1))
                return false;
        return true;
    };
    // torch.onnx's group_norm: Reshape(x, [0, G, -1]) -> InstanceNormalization(., ones, zeros)
    // -> Reshape(., Shape(x)) -> Mul(., weight[C,1,1]) -> Add(., bias[C,1,1]), every
    // intermediate read once.
    for (const ir::Node &norm : m_g.nodes()) {
        if (!usable(&norm, "InstanceNormalization") || norm.inputs.size() != 3 ||
            !constantAll(constInput(norm, 1), 1.0) || !constantAll(constInput(norm, 2), 0.0))
            continue;
        const ir::Value &grouped = m_g.value(resolve(norm.inputs[0]));
        if (!grouped.producer.valid())
            continue;
        const ir::Node &split = m_g.node(grouped.producer);
        if (!usable(&split, "Reshape") || soleConsumer(grouped.id) != &norm)
            continue;
        const ValueId x = resolve(split.inputs[0]);
        const ir::Shape &xs = m_g.value(x).shape;
        // [N, G, ...] with G dividing C: groups of whole channels of each sample (not, say, a
        // batch folded into the channels)
        if (grouped.shape.rank() < 2 || xs.rank() < 2 || !grouped.shape.dims[1].isStatic() ||
            !xs.dims[1].isStatic() || grouped.shape.dims[1].value <= 0 ||
            xs.dims[1].value % grouped.shape.dims[1].value != 0 ||
            !(grouped.shape.dims[0] == xs.dims[0]))
            continue;
        const ir::Node *merge = soleConsumer(norm.outputs[0]);
        if (!usable(merge, "Reshape") || !(m_g.value(merge->outputs[0]).shape == xs))
            continue;
        const ir::Node *mul = soleConsumer(merge->outputs[0]);
        if (!usable(mul, "Mul") || otherInput(*mul, merge->outputs[0]) < 0)
            continue;
        const ValueId weight = resolve(mul->inputs[size_t(otherInput(*mul, merge->outputs[0]))]);
        const ir::Node *add = soleConsumer(mul->outputs[0]);
        if (!usable(add, "Add") || otherInput(*add, mul->outputs[0]) < 0)
            continue;
        const ValueId bias = resolve(add->inputs[size_t(otherInput(*add, mul->outputs[0]))]);
        if (!channelVector(weight, xs) || !channelVector(bias, xs) ||
            !(m_g.value(add->outputs[0]).shape == xs))
            continue;
        ir::Node gn;
        gn.id = add->id;
        gn.name = add->name;
        gn.opType = "GroupNormalization";
        gn.inputs = {x, weight, bias};
        gn.outputs = {add->outputs[0]};
        gn.ns = add->ns;
        gn.attributes.push_back({"num_groups", grouped.shape.dims[1].value});
        gn.attributes.push_back({"epsilon", norm.attrFloat("epsilon", 1e-5)});
        for (const ir::Node *n : {&split, &norm, merge, mul})
            m_skipNode[n->id.index()] = true;
        m_fusedAt[add->id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(gn));
    }
}

void Builder::fuseWeightNorm()
{
    if (!m_opt.fuseActivations)
        return;
    // torch.nn.utils.weight_norm exported: ReduceL2(v, every axis but one, keepdims) -> Div(v, .)
    // -> Mul(., g), each intermediate read once: one WeightNorm(v, g) keeping v, g and the norms,
    // as _weight_norm_interface does (the quotient v / ||v|| is recomputed, not kept).
    for (const ir::Node &r : m_g.nodes()) {
        if (r.opType != "ReduceL2" || m_constNode[r.id.index()] || m_skipNode[r.id.index()] ||
            r.inputs.empty() || !r.inputs[0].valid() || r.outputs.size() != 1 ||
            r.attrInt("keepdims", 1) != 1)
            continue;
        const ValueId v = resolve(r.inputs[0]);
        const ir::Shape &vs = m_g.value(v).shape;
        if (!vs.isStatic())
            continue;
        const std::optional<std::vector<int64_t>> given = axesOf(r);
        if (!given)
            continue;
        const std::vector<int64_t> &axes = *given;
        std::vector<bool> reduced(vs.rank(), axes.empty());
        for (int64_t a : axes) {
            const int64_t d = a < 0 ? a + int64_t(vs.rank()) : a;
            if (d >= 0 && d < int64_t(vs.rank()))
                reduced[size_t(d)] = true;
        }
        int64_t axis = -1, kept = 0;
        for (size_t d = 0; d < reduced.size(); ++d)
            if (!reduced[d]) {
                axis = int64_t(d);
                ++kept;
            }
        if (kept > 1)
            continue;
        const ir::Node *div = soleConsumer(r.outputs[0]);
        if (!div || div->opType != "Div" || m_skipNode[div->id.index()] ||
            div->inputs.size() != 2 || resolve(div->inputs[0]) != v ||
            resolve(div->inputs[1]) != resolve(r.outputs[0]))
            continue;
        const ir::Node *mul = soleConsumer(div->outputs[0]);
        if (!mul || mul->opType != "Mul" || m_skipNode[mul->id.index()] ||
            m_fusedAt[mul->id.index()] >= 0 || otherInput(*mul, div->outputs[0]) < 0)
            continue;
        const ValueId g = resolve(mul->inputs[size_t(otherInput(*mul, div->outputs[0]))]);
        if (!(m_g.value(g).shape == m_g.value(r.outputs[0]).shape) ||
            !(m_g.value(mul->outputs[0]).shape == vs))
            continue;
        ir::Node wn;
        wn.id = mul->id;
        wn.name = mul->name;
        wn.opType = "WeightNorm";
        wn.inputs = {v, g};
        wn.outputs = {mul->outputs[0]};
        wn.ns = mul->ns;
        wn.attributes.push_back({"axis", axis});
        m_skipNode[r.id.index()] = m_skipNode[div->id.index()] = true;
        m_fusedAt[mul->id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(wn));
    }
}

void Builder::fuseVariance()
{
    if (!m_opt.fuseActivations)
        return;
    // torch.var / torch.std (weight standardisation, hand-written norms) exported: m =
    // ReduceMean(x, A, keepdims) -> d = Sub(x, m) -> Mul(d, d) -> ReduceMean(., A) [-> Mul(., N)
    // -> Div(., N - 1)]: one Variance(x) keeping x alone, as VarBackward does (StdBackward's
    // result is the Sqrt after it, which keeps its output).
    const auto only = [&](ValueId v, const ir::Node *n) {
        const ir::Value &val = m_g.value(v);
        return !val.isGraphOutput && !val.consumers.empty() &&
               std::all_of(val.consumers.begin(), val.consumers.end(),
                           [&](NodeId c) { return c == n->id; });
    };
    const auto usable = [&](const ir::Node *n, const char *type) { return fusable(n, type); };
    for (const ir::Node &sq : m_g.nodes()) {
        if (!usable(&sq, "Mul") || sq.inputs.size() != 2 ||
            resolve(sq.inputs[0]) != resolve(sq.inputs[1]))
            continue;
        const ValueId d = resolve(sq.inputs[0]);
        const ir::Node *diff = producerOf(d);
        if (!usable(diff, "Sub") || !only(d, &sq))
            continue;
        const ValueId x = resolve(diff->inputs[0]);
        const ValueId m = resolve(diff->inputs[1]);
        const ir::Node *mean = producerOf(m);
        if (!usable(mean, "ReduceMean") || resolve(mean->inputs[0]) != x || !only(m, diff) ||
            mean->attrInt("keepdims", 1) != 1)
            continue;
        const ir::Node *var = soleConsumer(sq.outputs[0]);
        if (!usable(var, "ReduceMean"))
            continue;
        const auto a1 = axesOf(*mean), a2 = axesOf(*var);
        if (!a1 || !a2 || *a1 != *a2 || a1->empty())
            continue;
        // the correction: Mul by the count, then Div by the count less the correction
        const ir::Node *last = var;
        int64_t correction = 0;
        const ir::Node *mulN = soleConsumer(var->outputs[0]);
        if (usable(mulN, "Mul") && otherInput(*mulN, var->outputs[0]) >= 0 &&
            constInput(*mulN, size_t(otherInput(*mulN, var->outputs[0])))) {
            const ir::Node *divN = soleConsumer(mulN->outputs[0]);
            if (usable(divN, "Div") && resolve(divN->inputs[0]) == resolve(mulN->outputs[0]) &&
                constInput(*divN, 1)) {
                correction = 1;
                const ir::Value *n = constInput(*mulN, size_t(otherInput(*mulN, var->outputs[0])));
                const ir::Value *nm = constInput(*divN, 1);
                if (n->initializer && n->initializer->hasData() && nm->initializer &&
                    nm->initializer->hasData()) {
                    auto a = n->initializer->toFloats();
                    auto b = nm->initializer->toFloats();
                    if (a && b && a->size() == 1 && b->size() == 1)
                        correction = int64_t(std::lround((*a)[0] - (*b)[0]));
                }
                last = divN;
            }
        }
        ir::Node v;
        v.id = last->id;
        v.name = last->name;
        v.opType = "Variance";
        v.inputs = {x};
        v.outputs = {last->outputs[0]};
        v.ns = last->ns;
        v.attributes.push_back({"axes", *a1});
        v.attributes.push_back({"keepdims", var->attrInt("keepdims", 1)});
        v.attributes.push_back({"correction", correction});
        for (const ir::Node *n : {mean, diff, static_cast<const ir::Node *>(&sq), var})
            if (n != last)
                m_skipNode[n->id.index()] = true;
        if (last != var)
            m_skipNode[mulN->id.index()] = true;
        m_fusedAt[last->id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(v));
    }
}

Status Builder::fuseAttention()
{
    fusions::FusionView view{
        .graph = m_g,
        .resolve = [this](ValueId v) { return resolve(v); },
        .available =
            [this](const ir::Node &n) {
                return !m_constNode[n.id.index()] && !m_skipNode[n.id.index()] &&
                       m_fusedAt[n.id.index()] < 0;
            },
        .isConstant = [this](ValueId v) { return bool(m_constVal[v.index()]); },
        .isAlias =
            [this](const ir::Node &n) {
                return m_skipNode[n.id.index()] && !n.outputs.empty() && n.outputs[0].valid() &&
                       m_alias[n.outputs[0].index()].valid();
            },
    };
    REMAT_ASSIGN_OR_RETURN(std::vector<fusions::FusedPattern> nodes, fusions::attentionNodes(view));
    for (fusions::FusedPattern &p : nodes) {
        m_fusedSites.push_back({p.node.id, {}});
        m_fusedAt[p.node.id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(p.node));
        m_fusedPatterns.push_back(std::move(p.description));
    }
    if (m_opt.attention != Attention::Sdpa)
        return Status::ok();
    fusions::FusionResult r = fusions::fuseAttention(view);
    for (fusions::FusedPattern &p : r.fused) {
        for (NodeId n : p.absorbed)
            m_skipNode[n.index()] = true;
        m_fusedSites.push_back({p.node.id, p.absorbed});
        m_fusedAt[p.node.id.index()] = int(m_fused.size());
        m_fused.push_back(std::move(p.node));
        m_fusedPatterns.push_back(std::move(p.description));
    }
    m_notFused = std::move(r.notFused);
    for (NodeId n : r.notFusedAt)
        m_notFusedSites.push_back({n, {}});
    return Status::ok();
}

Status Builder::collectWorkNodes()
{
    for (NodeId id : m_g.topologicalOrder()) {
        if (m_constNode[id.index()] || m_skipNode[id.index()])
            continue;
        WorkNode w;
        w.node = m_fusedAt[id.index()] >= 0 ? m_fused[size_t(m_fusedAt[id.index()])] : m_g.node(id);
        w.source = id;
        for (ValueId &in : w.node.inputs)
            in = resolve(in);
        if (m_fusedAt[id.index()] >= 0)
            w.fused = std::make_shared<const ir::Node>(w.node);
        // An op with no gradient rule (or none known in its domain) is still a forward op: it
        // ends the gradient path when nothing can flow through it, which propagateRequiresGrad()
        // decides once it knows which values require a gradient.
        w.rule = isDefaultDomain(w.node) ? ops::findOp(w.node.opType) : nullptr;
        m_work.push_back(std::move(w));
    }
    return Status::ok();
}

Status Builder::propagateRequiresGrad()
{
    m_requiresGrad.assign(m_g.valueCount(), false);
    for (const ir::Value &v : m_g.values()) {
        const bool flt = ir::isFloatingPoint(v.dtype);
        if (v.kind == ValueKind::Parameter && flt)
            m_requiresGrad[v.id.index()] = true;
        if (v.kind == ValueKind::Input && flt && m_opt.inputGradients)
            m_requiresGrad[v.id.index()] = true;
    }
    for (WorkNode &w : m_work) {
        const ir::Node &n = w.node;
        w.inputNeedsGrad.assign(n.inputs.size(), false);
        bool any = false;
        ValueId carried;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
            const ValueId in = n.inputs[i];
            if (!in.valid())
                continue;
            const bool needs = m_requiresGrad[in.index()] &&
                               ir::isFloatingPoint(m_g.value(in).dtype) &&
                               (!w.rule || !w.rule->differentiable || w.rule->differentiable(n, i));
            w.inputNeedsGrad[i] = needs;
            if (needs && !carried.valid())
                carried = in;
            any = any || needs;
        }
        if (!any)
            continue;
        if (!w.rule || !w.rule->derive) {
            // No rule: the op ends the gradient path when no output can carry a gradient
            // (integer and boolean results: OneHot, NonZero, Shape, an index); a floating-point
            // result reached by a gradient needs a rule.
            bool floatOut = false;
            for (ValueId out : n.outputs)
                floatOut = floatOut || (out.valid() && ir::isFloatingPoint(m_g.value(out).dtype));
            w.inputNeedsGrad.assign(n.inputs.size(), false);
            if (!floatOut)
                continue;
            return makeError(
                StatusCode::Unsupported,
                fmt::format("no gradient rule for op type '{}' (node {}), and the gradient of '{}' "
                            "would flow through it to a floating-point result",
                            n.opType, nodeLabel(n), m_g.value(carried).name) +
                    (isDefaultDomain(n)
                         ? std::string()
                         : fmt::format(" (op domain '{}' has no gradient rules)", n.domain)));
        }
        for (ValueId out : n.outputs)
            if (out.valid() && ir::isFloatingPoint(m_g.value(out).dtype))
                m_requiresGrad[out.index()] = true;
    }
    return Status::ok();
}

Status Builder::planBackward()
{
    m_gradCount.assign(m_g.valueCount(), 0);
    for (ValueId out : m_g.outputs()) {
        const ir::Value &v = m_g.value(out);
        if (!ir::isFloatingPoint(v.dtype))
            continue;
        m_lossOutputs.push_back(out);
        if (m_requiresGrad[out.index()])
            m_gradCount[out.index()] += 1; // the loss seeds it
    }
    if (m_lossOutputs.empty())
        return makeError(StatusCode::Unsupported,
                         "the graph has no floating-point output to build a loss from");
    for (auto it = m_work.rbegin(); it != m_work.rend(); ++it) {
        WorkNode &w = *it;
        const ir::Node &n = w.node;
        w.outputHasGrad.assign(n.outputs.size(), false);
        bool anyOut = false, anyIn = false;
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            if (n.outputs[k].valid() && m_gradCount[n.outputs[k].index()] > 0) {
                w.outputHasGrad[k] = true;
                anyOut = true;
            }
        }
        for (bool b : w.inputNeedsGrad)
            anyIn = anyIn || b;
        if (!w.rule || !w.rule->derive) {
            // a forward-only op (propagateRequiresGrad let no gradient reach it)
            w.spec = ops::BackwardSpec{};
            w.spec.forwardFlops = ops::forwardFlops(m_g, n);
            w.hasBackward = false;
            continue;
        }
        ops::RuleContext ctx;
        ctx.graph = &m_g;
        ctx.node = &n;
        ctx.outputHasGrad = w.outputHasGrad;
        ctx.inputNeedsGrad = anyOut ? w.inputNeedsGrad : std::vector<bool>(n.inputs.size(), false);
        auto spec = w.rule->derive(ctx);
        if (!spec)
            return spec.status().withContext(fmt::format("node {}", nodeLabel(n)));
        w.spec = std::move(*spec);
        w.hasBackward = anyOut && anyIn && !w.spec.gradInputs.empty();
        if (!w.hasBackward) {
            w.spec.gradInputs.clear();
            w.spec.savedInputs.clear();
            w.spec.savedOutputs.clear();
            w.spec.extras.clear();
            continue;
        }
        for (int pos : w.spec.gradInputs)
            m_gradCount[n.inputs[size_t(pos)].index()] += 1;
    }
    return Status::ok();
}

TensorId Builder::newTensor(std::string name, TensorRole role, ir::DataType dtype,
                            const ir::Shape &shape, int64_t bytes, ValueId source)
{
    return addTensor(m_names.claim(std::move(name)), role, dtype, shape, bytes, source);
}

TensorId Builder::addTensor(std::string name, TensorRole role, ir::DataType dtype,
                            const ir::Shape &shape, int64_t bytes, ValueId source)
{
    Tensor t;
    t.id = TensorId(m_tensors.size());
    t.name = std::move(name);
    t.role = role;
    t.dtype = dtype;
    t.shape = shape;
    t.bytes = bytes;
    t.source = source;
    switch (role) {
    case TensorRole::Parameter:
    case TensorRole::Buffer:
    case TensorRole::Frozen:
    case TensorRole::Input:
    case TensorRole::Constant: t.preloaded = true; break;
    default: break;
    }
    m_tensors.push_back(std::move(t));
    return m_tensors.back().id;
}

Expected<TensorId> Builder::tensorFor(ValueId vid)
{
    if (m_tensorOf[vid.index()] >= 0)
        return TensorId(m_tensorOf[vid.index()]);
    const ir::Value &v = m_g.value(vid);
    auto bytes = v.bytes();
    if (!bytes)
        return bytes.status().withContext(fmt::format("value '{}'", v.name));
    TensorRole role = TensorRole::Activation;
    if (m_constVal[vid.index()]) {
        role = TensorRole::Constant;
    } else {
        switch (v.kind) {
        case ValueKind::Parameter: role = TensorRole::Parameter; break;
        case ValueKind::Buffer: role = TensorRole::Buffer; break;
        case ValueKind::Frozen: role = TensorRole::Frozen; break;
        case ValueKind::Input: role = TensorRole::Input; break;
        case ValueKind::Constant: role = TensorRole::Constant; break;
        case ValueKind::Intermediate: role = TensorRole::Activation; break;
        }
    }
    const TensorId id = addTensor(v.name, role, v.dtype, v.shape, *bytes, vid);
    m_tensorOf[vid.index()] = id.value;
    return id;
}

Status Builder::emitForward()
{
    for (WorkNode &w : m_work) {
        const ir::Node &n = w.node;
        Op op;
        op.id = OpId(m_ops.size());
        op.name = n.name.empty() ? fmt::format("{}_{}", n.opType, n.id.value) : n.name;
        op.type = n.opType;
        op.phase = Phase::Forward;
        op.source = w.source;
        op.fusedNode = w.fused;
        op.flops = w.spec.forwardFlops;
        op.workspaceBytes = w.spec.forwardWorkspace;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
            if (!n.inputs[i].valid())
                continue;
            REMAT_ASSIGN_OR_RETURN(TensorId t, tensorFor(n.inputs[i]));
            op.inputs.push_back(t);
            op.inputRoles.push_back({Operand::Kind::Plain, int(i)});
            op.bytesAccessed += m_tensors[t.index()].bytes;
        }
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            if (!n.outputs[k].valid())
                continue;
            REMAT_ASSIGN_OR_RETURN(TensorId t, tensorFor(n.outputs[k]));
            w.outputs.emplace_back(int(k), t);
        }
        for (const ops::ExtraOutput &e : w.spec.extras) {
            auto existing = std::find_if(w.outputs.begin(), w.outputs.end(),
                                         [&](const auto &p) { return p.first == e.position; });
            if (existing != w.outputs.end()) {
                m_tensors[existing->second.index()].role = TensorRole::SavedState;
                continue;
            }
            auto count = e.shape.numElements();
            if (!count)
                return count.status().withContext(
                    fmt::format("node {}: saved '{}'", nodeLabel(n), e.suffix));
            const std::string base =
                n.outputs.empty() || !n.outputs[0].valid() ? op.name : m_g.value(n.outputs[0]).name;
            const TensorId t =
                newTensor(base + "::" + e.suffix,
                          e.intermediate ? TensorRole::Activation : TensorRole::SavedState, e.dtype,
                          e.shape, *count * ir::elementSize(e.dtype), ValueId());
            w.outputs.emplace_back(e.position, t);
        }
        std::sort(w.outputs.begin(), w.outputs.end());
        for (const auto &[pos, t] : w.outputs) {
            op.outputs.push_back(t);
            op.outputRoles.push_back({Operand::Kind::Plain, pos});
            op.bytesAccessed += m_tensors[t.index()].bytes;
        }
        w.forwardOp = op.id;
        m_ops.push_back(std::move(op));
    }
    // Weights no op reads are still the model's (the branch of an If not taken, a layer the
    // forward skips): PyTorch's module holds them for the whole step, so they stay resident.
    for (const ir::Value &v : m_g.values()) {
        if ((v.kind != ValueKind::Parameter && v.kind != ValueKind::Buffer) ||
            m_tensorOf[v.id.index()] >= 0 || !v.consumers.empty() || !v.bytes().hasValue())
            continue;
        if (Expected<TensorId> t = tensorFor(v.id); !t)
            return t.status();
    }
    return Status::ok();
}

TensorId Builder::contribute(ValueId vid, TensorRole role)
{
    const ir::Value &v = m_g.value(vid);
    const int total = m_gradCount[vid.index()];
    const int k = ++m_gradReceived[vid.index()];
    const bool isParam = v.kind == ValueKind::Parameter;
    const bool required = isParam || (v.kind == ValueKind::Input && m_opt.inputGradients);
    const int64_t bytes = v.bytes().hasValue() ? *v.bytes() : 0;
    const auto make = [&](std::string name, bool final) {
        const TensorId t = newTensor(std::move(name), role, v.dtype, v.shape, bytes, vid);
        m_tensors[t.index()].requiredAtEnd = final && required;
        return t;
    };
    if (total == 1) {
        m_runningGrad[vid.index()] = make("grad:" + v.name, true);
        return m_runningGrad[vid.index()];
    }
    const TensorId partial = make(fmt::format("grad:{}#{}", v.name, k - 1), false);
    if (k == 1) {
        m_runningGrad[vid.index()] = partial;
        return partial;
    }
    const bool last = k == total;
    const TensorRole sumRole = role == TensorRole::Loss ? TensorRole::ActivationGrad : role;
    const TensorId sum =
        newTensor(last ? "grad:" + v.name : fmt::format("grad:{}#sum{}", v.name, k - 1), sumRole,
                  v.dtype, v.shape, bytes, vid);
    m_tensors[sum.index()].requiredAtEnd = last && required;
    Op acc;
    acc.name = fmt::format("grad:{}/accumulate{}", v.name, k - 1);
    acc.type = "Accumulate";
    acc.phase = Phase::Backward;
    acc.inputs = {m_runningGrad[vid.index()], partial};
    acc.inputRoles = {{}, {}};
    acc.outputs = {sum};
    acc.outputRoles = {{}};
    acc.flops = double(bytes / std::max<int64_t>(1, ir::elementSize(v.dtype)));
    acc.bytesAccessed = 3 * bytes;
    m_pendingAccumulates.push_back(std::move(acc));
    m_runningGrad[vid.index()] = sum;
    return partial;
}

void Builder::flushAccumulates()
{
    for (Op &acc : m_pendingAccumulates) {
        acc.id = OpId(m_ops.size());
        m_ops.push_back(std::move(acc));
    }
    m_pendingAccumulates.clear();
}

Status Builder::emitLoss()
{
    Op loss;
    loss.id = OpId(m_ops.size());
    loss.name = "loss";
    loss.type = "Loss";
    loss.phase = Phase::Loss;
    for (ValueId out : m_lossOutputs) {
        REMAT_ASSIGN_OR_RETURN(TensorId y, tensorFor(out));
        // A copy, not a reference: newTensor() grows m_tensors, which would leave a reference
        // dangling (a model with several outputs; found by the onnx fuzzer).
        const Tensor yt = m_tensors[y.index()];
        const TensorId r =
            newTensor("R:" + yt.name, TensorRole::Constant, yt.dtype, yt.shape, yt.bytes, out);
        loss.inputs.push_back(y);
        loss.inputs.push_back(r);
        loss.flops += 2.0 * double(yt.bytes / std::max<int64_t>(1, ir::elementSize(yt.dtype)));
        loss.bytesAccessed += 2 * yt.bytes;
    }
    loss.inputRoles.resize(loss.inputs.size());
    const TensorId l = newTensor("loss", TensorRole::Loss, ir::DataType::Float,
                                 ir::Shape::fromStatic({}), 4, ValueId());
    loss.outputs.push_back(l);
    for (ValueId out : m_lossOutputs) {
        if (m_gradCount[out.index()] > 0)
            loss.outputs.push_back(contribute(out, TensorRole::Loss));
    }
    loss.outputRoles.resize(loss.outputs.size());
    for (TensorId t : loss.outputs)
        loss.bytesAccessed += m_tensors[t.index()].bytes;
    m_ops.push_back(std::move(loss));
    flushAccumulates();
    return Status::ok();
}

Status Builder::emitBackward()
{
    // After every contribution the running sum (or the single gradient) is the final one.
    const auto gradOf = [&](ValueId v) { return m_runningGrad[v.index()]; };
    for (auto it = m_work.rbegin(); it != m_work.rend(); ++it) {
        WorkNode &w = *it;
        if (!w.hasBackward)
            continue;
        const ir::Node &n = w.node;
        const Op &fwd = m_ops[w.forwardOp.index()];
        Op op;
        op.name = fwd.name + "/grad";
        op.type = n.opType + "Grad";
        op.phase = Phase::Backward;
        op.forwardOf = w.forwardOp;
        op.source = w.source;
        op.fusedNode = w.fused;
        op.flops = w.spec.backwardFlops;
        op.workspaceBytes = w.spec.backwardWorkspace;
        for (int pos : w.spec.savedInputs) {
            const ValueId v = size_t(pos) < n.inputs.size() ? n.inputs[size_t(pos)] : ValueId();
            if (!v.valid())
                continue; // an omitted optional input (Gemm without C)
            op.inputs.push_back(TensorId(m_tensorOf[v.index()]));
            op.inputRoles.push_back({Operand::Kind::FwdInput, pos});
        }
        for (int pos : w.spec.savedOutputs) {
            auto o = std::find_if(w.outputs.begin(), w.outputs.end(),
                                  [&](const auto &p) { return p.first == pos; });
            if (o == w.outputs.end())
                return makeError(StatusCode::Internal,
                                 fmt::format("node {}: rule saves output {} which does not exist",
                                             nodeLabel(n), pos));
            op.inputs.push_back(o->second);
            op.inputRoles.push_back({Operand::Kind::FwdOutput, pos});
        }
        for (size_t k = 0; k < n.outputs.size(); ++k) {
            if (!w.outputHasGrad[k])
                continue;
            const ValueId v = n.outputs[k];
            if (m_gradReceived[v.index()] != m_gradCount[v.index()])
                return makeError(StatusCode::Internal,
                                 fmt::format("gradient of '{}' used before all its contributions",
                                             m_g.value(v).name));
            op.inputs.push_back(gradOf(v));
            op.inputRoles.push_back({Operand::Kind::OutputGrad, int(k)});
        }
        for (int pos : w.spec.gradInputs) {
            const ValueId v = n.inputs[size_t(pos)];
            const TensorRole role = m_g.value(v).kind == ValueKind::Parameter
                                        ? TensorRole::ParameterGrad
                                        : TensorRole::ActivationGrad;
            op.outputs.push_back(contribute(v, role));
            op.outputRoles.push_back({Operand::Kind::InputGrad, pos});
        }
        for (TensorId t : op.inputs)
            op.bytesAccessed += m_tensors[t.index()].bytes;
        for (TensorId t : op.outputs)
            op.bytesAccessed += m_tensors[t.index()].bytes;
        op.id = OpId(m_ops.size());
        m_ops.push_back(std::move(op));
        flushAccumulates();
    }
    return Status::ok();
}

Expected<TrainingGraph> Builder::run()
{
    classifyConstants();
    findAliases();
    fuseGelu();
    fuseGeluTanh();
    fuseSiluMish();
    fuseGroupNorm();
    fuseWeightNorm();
    fuseVariance();
    REMAT_RETURN_IF_ERROR(fuseAttention());
    REMAT_RETURN_IF_ERROR(collectWorkNodes());
    REMAT_RETURN_IF_ERROR(propagateRequiresGrad());
    REMAT_RETURN_IF_ERROR(planBackward());
    for (const ir::Value &v : m_g.values())
        m_names.reserve(v.name);
    m_tensorOf.assign(m_g.valueCount(), -1);
    m_gradReceived.assign(m_g.valueCount(), 0);
    m_runningGrad.assign(m_g.valueCount(), TensorId());
    REMAT_RETURN_IF_ERROR(emitForward());
    REMAT_RETURN_IF_ERROR(emitLoss());
    REMAT_RETURN_IF_ERROR(emitBackward());

    TrainingGraphInfo info;
    info.modelPath = m_g.info().path;
    info.modelSha256 = m_g.info().sha256;
    info.batch = m_g.info().batch;
    if (info.batch == 0) {
        for (ValueId in : m_g.inputs()) {
            const ir::Value &v = m_g.value(in);
            if (v.kind == ValueKind::Input && v.shape.rank() > 0 && v.shape.dims[0].isStatic()) {
                info.batch = v.shape.dims[0].value;
                break;
            }
        }
    }
    info.lossDescription = "sum(output * R)";
    info.training.attention = m_opt.attention;
    info.fusedPatterns = std::move(m_fusedPatterns);
    info.notFused = std::move(m_notFused);
    info.fusedSites = std::move(m_fusedSites);
    info.notFusedSites = std::move(m_notFusedSites);
    auto tg = TrainingGraph::assemble(std::move(info), std::move(m_ops), std::move(m_tensors));
    if (!tg)
        return tg.status().withContext("training graph");
    return tg;
}

} // namespace

Expected<TrainingGraph> buildTrainingGraph(const ir::Graph &graph, const BuildOptions &options)
{
    // A graph imported for browsing may hold values of unknown shape; the importer said why.
    if (!graph.info().trainingBlockers.empty())
        return makeError(StatusCode::InvalidArgument, graph.info().trainingBlockers.front());
    Builder b(graph, options);
    return b.run();
}

namespace {

/// Whether what PyTorch saves for this forward op's outputs is its first input's storage: views,
/// the padding torch's exporter puts before a padded average pool, the gate of an exported GLU.
bool savesAsView(const TrainingGraph &g, const Op &op)
{
    const std::string &t = op.type;
    if (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze" || t == "Identity" ||
        t == "Split" || t == "Slice" || t == "Expand")
        return true;
    // x[:, 0]: a Gather with one scalar index is a select. A select of a permuted tensor (Swin's
    // qkv.permute(...)[2]) is not contiguous, and the matrix product that reads it saves a copy.
    if (t == "Gather") {
        const Tensor &in = g.tensor(op.inputs[0]);
        return op.inputs.size() == 2 && g.tensor(op.inputs[1]).shape.rank() == 0 &&
               !(in.producer.valid() && g.op(in.producer).type == "Transpose");
    }
    // F.glu as exported: Split(x) -> a, b; Mul(a, Sigmoid(b)). PyTorch's glu saves x alone; the
    // Sigmoid's output stands for (a part of) that storage.
    if (t == "Sigmoid" && !op.outputs.empty()) {
        const Tensor &b = g.tensor(op.inputs[0]);
        if (!b.producer.valid() || g.op(b.producer).type != "Split")
            return false;
        const Op &split = g.op(b.producer);
        for (OpId c : g.tensor(op.outputs[0]).consumers) {
            const Op &consumer = g.op(c);
            if (consumer.phase != Phase::Forward)
                continue;
            if (consumer.type != "Mul" || consumer.inputs.size() != 2)
                return false;
            const TensorId other =
                consumer.inputs[0] == op.outputs[0] ? consumer.inputs[1] : consumer.inputs[0];
            if (std::find(split.outputs.begin(), split.outputs.end(), other) == split.outputs.end())
                return false;
        }
        return true;
    }
    // avg_pool2d(x, padding=p) with count_include_pad (PyTorch's default) is exported as a zero Pad
    // and an unpadded AveragePool; PyTorch's pool saves x itself (Inception, GoogLeNet).
    if (t == "Pad" && !op.outputs.empty()) {
        const Tensor &padded = g.tensor(op.outputs[0]);
        return !padded.consumers.empty() &&
               std::all_of(padded.consumers.begin(), padded.consumers.end(), [&](OpId c) {
                   return g.op(c).type == "AveragePool" || g.op(c).type == "AveragePoolGrad";
               });
    }
    return false;
}

} // namespace

namespace {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &dims)
{
    std::vector<int64_t> st(dims.size(), 1);
    for (size_t d = dims.size(); d-- > 1;)
        st[d - 1] = st[d] * std::max<int64_t>(1, dims[d]);
    return st;
}

/// The strides a view of `shape` (with `strides`) as `target` has, when a view can be made: the
/// rule torch's view / reshape follow (a run of dims merges or splits only where it is laid out
/// contiguously in the storage); nullopt when reshape has to copy.
std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t> &shape,
                                                const std::vector<int64_t> &strides,
                                                const std::vector<int64_t> &target)
{
    int64_t numel = 1;
    for (int64_t d : shape)
        numel *= d;
    if (numel == 0 || shape.empty())
        return contiguousStrides(target);
    std::vector<int64_t> out(target.size(), 1);
    int64_t viewD = int64_t(target.size()) - 1;
    int64_t chunkBase = strides.back(), tensorNumel = 1, viewNumel = 1;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
        tensorNumel *= shape[size_t(d)];
        if (d == 0 ||
            (shape[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != tensorNumel * chunkBase)) {
            while (viewD >= 0 && (viewNumel < tensorNumel || target[size_t(viewD)] == 1)) {
                out[size_t(viewD)] = viewNumel * chunkBase;
                viewNumel *= target[size_t(viewD)];
                --viewD;
            }
            if (viewNumel != tensorNumel)
                return std::nullopt;
            if (d > 0) {
                chunkBase = strides[size_t(d - 1)];
                tensorNumel = viewNumel = 1;
            }
        }
    }
    if (viewD != -1)
        return std::nullopt;
    return out;
}

/// Per tensor: the tensor owning its storage in PyTorch and its strides in that storage (in
/// elements), and which MatMul inputs PyTorch copies before the product (torch.matmul reshapes
/// its operands to a batch of matrices, a view only where their strides allow; bmm then saves
/// the copy).
struct TorchLayout
{
    std::vector<TensorId> root;
    std::vector<std::vector<int64_t>> strides;
    std::vector<bool> copiedForMatmul;
    /// A copy even where the tensor is laid out contiguously: torch.einsum permutes an operand
    /// before reshaping it for bmm.
    std::vector<bool> forcedCopy;
    /// How many copies: torch's CPU RNN layers project the whole sequence once per direction.
    std::vector<int> copies;
    /// How much larger than the tensor its copy is: an operand broadcast over a product's batch
    /// is expanded to the whole batch before it is copied.
    std::vector<int64_t> expansion;
};

std::vector<int64_t> dimsOf(const Tensor &t)
{
    std::vector<int64_t> d;
    for (const ir::Dim &x : t.shape.dims)
        d.push_back(std::max<int64_t>(0, x.value));
    return d;
}

/// The Slice steps of `node` by axis (1 where not known), for `rank` dims.
std::vector<int64_t> sliceSteps(const ir::Node *node, const ir::Graph *forward, size_t rank)
{
    std::vector<int64_t> steps(rank, 1);
    if (!node || !forward || node->inputs.size() < 5 || !node->inputs[4].valid())
        return steps;
    auto constInts = [&](size_t i) -> std::optional<std::vector<int64_t>> {
        if (i >= node->inputs.size() || !node->inputs[i].valid())
            return std::nullopt;
        const ir::Value &v = forward->value(node->inputs[i]);
        if (!v.initializer)
            return std::nullopt;
        auto c = ops::constTensorFrom(*v.initializer);
        if (!c || !c->isInteger())
            return std::nullopt;
        return c->ints;
    };
    const auto st = constInts(4);
    if (!st)
        return steps;
    std::vector<int64_t> axes;
    if (auto a = constInts(3))
        axes = *a;
    else
        for (size_t k = 0; k < st->size(); ++k)
            axes.push_back(int64_t(k));
    for (size_t k = 0; k < axes.size() && k < st->size(); ++k) {
        int64_t ax = axes[k] < 0 ? axes[k] + int64_t(rank) : axes[k];
        if (ax >= 0 && ax < int64_t(rank))
            steps[size_t(ax)] = (*st)[k];
    }
    return steps;
}

/// Element-wise ops: torch runs them through TensorIterator, whose output takes the memory
/// order of its inputs (a permuted operand gives a permuted result).
bool isElementwise(const std::string &t)
{
    // the shared element-wise table's rows (core/ops/elementwise_math.h), and the element-wise
    // ops with rules of their own
    static const std::set<std::string> kTypes = [] {
        std::set<std::string> k = {"Where", "Cast", "Dropout", "Sign", "Floor", "Ceil", "Round"};
#define REMAT_UNARY_NAME(Name, CpuT, GradT, Family, Since) k.insert(#Name);
        REMAT_EW_UNARY_OPS(REMAT_UNARY_NAME)
#undef REMAT_UNARY_NAME
#define REMAT_BINARY_NAME(Name, HostT) k.insert(#Name);
        REMAT_EW_BINARY_OPS(REMAT_BINARY_NAME)
#undef REMAT_BINARY_NAME
        return k;
    }();
    return kTypes.count(t) > 0;
}

/// TensorIterator's output strides for `outDims` from its operands' strides: dims ordered,
/// innermost first, by insertion sort where the first operand not broadcast on both dims
/// decides (larger stride outer; equal strides: the larger dim outer), then laid out densely.
std::vector<int64_t> elementwiseStrides(const std::vector<int64_t> &outDims,
                                        const std::vector<std::vector<int64_t>> &operandStrides)
{
    const size_t r = outDims.size();
    std::vector<size_t> perm(r);
    for (size_t i = 0; i < r; ++i)
        perm[i] = r - 1 - i;
    const auto shouldSwap = [&](size_t d0, size_t d1) {
        for (const std::vector<int64_t> &st : operandStrides) {
            const int64_t s0 = st[d0], s1 = st[d1];
            if (s0 == 0 || s1 == 0)
                continue;
            if (s0 < s1)
                return -1;
            if (s0 > s1)
                return 1;
            if (outDims[d0] > outDims[d1])
                return 1;
        }
        return 0;
    };
    for (size_t i = 1; i < r; ++i) {
        size_t d1 = i;
        for (size_t d0 = i; d0-- > 0;) {
            const int c = shouldSwap(perm[d0], perm[d1]);
            if (c > 0) {
                std::swap(perm[d0], perm[d1]);
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
    std::vector<int64_t> strides(r, 0);
    int64_t step = 1;
    for (size_t d : perm) {
        strides[d] = step;
        step *= std::max<int64_t>(1, outDims[d]);
    }
    return strides;
}

/// torch's GRU cell (nn.GRUCell, ATen's GRUCell on CPU) works in place on the hidden projection:
///     r = hg[0].add_(ig[0]).sigmoid_();  z = hg[1].add_(ig[1]).sigmoid_()
///     n = ig[2].add(hg[2].mul_(r)).tanh_();  h' = (h - n).mul_(z).add_(n)
/// so both gates live in the projection's storage, and mul_ keeps a copy of hg[2] as it was.
/// The tracer records those ops out of place (Split, Add, Sigmoid, Mul, Add, Tanh, with the hidden
/// chunk first in each Add): matched exactly, the gates become views of the projection and hg[2]
/// a storage of its own.
void gruCellInPlace(const TrainingGraph &g, TorchLayout &L)
{
    std::vector<std::vector<OpId>> readers(g.tensorCount());
    for (const Op &op : g.ops())
        if (op.phase == Phase::Forward)
            for (TensorId in : op.inputs)
                readers[in.index()].push_back(op.id);
    auto producerOf = [&](TensorId t, const char *type) -> const Op * {
        const OpId p = g.tensor(t).producer;
        if (!p.valid() || g.op(p).phase != Phase::Forward || g.op(p).type != type)
            return nullptr;
        return &g.op(p);
    };
    // the only reader of `t`, of `type`
    auto soleReader = [&](TensorId t, const char *type) -> const Op * {
        if (readers[t.index()].size() != 1)
            return nullptr;
        const Op &op = g.op(readers[t.index()][0]);
        return op.type == type && !op.outputs.empty() ? &op : nullptr;
    };
    // Add(hg[k], ig[k]) -> Sigmoid, the Add read by the Sigmoid alone
    auto gate = [&](const Op &hs, const Op &is, size_t k) -> const Op * {
        const Op *add = soleReader(hs.outputs[k], "Add");
        if (!add || add->inputs.size() != 2 || add->inputs[0] != hs.outputs[k] ||
            add->inputs[1] != is.outputs[k])
            return nullptr;
        return soleReader(add->outputs[0], "Sigmoid");
    };
    for (const Op &add : g.ops()) {
        if (add.phase != Phase::Forward || add.type != "Add" || add.inputs.size() != 2)
            continue;
        const Op *hs = producerOf(add.inputs[0], "Split");
        const Op *is = producerOf(add.inputs[1], "Split");
        if (!hs || !is || hs == is || hs->outputs.size() != 3 || is->outputs.size() != 3 ||
            add.inputs[0] != hs->outputs[0] || add.inputs[1] != is->outputs[0])
            continue;
        const Op *r = gate(*hs, *is, 0), *z = gate(*hs, *is, 1);
        const Op *mul = soleReader(hs->outputs[2], "Mul");
        if (!r || !z || !mul || mul->inputs.size() != 2 || mul->inputs[0] != hs->outputs[2] ||
            mul->inputs[1] != r->outputs[0])
            continue;
        const Op *cand = soleReader(mul->outputs[0], "Add");
        if (!cand || cand->inputs.size() != 2 || cand->inputs[0] != is->outputs[2] ||
            !soleReader(cand->outputs[0], "Tanh"))
            continue;
        const TensorId base = L.root[hs->outputs[0].index()];
        L.root[r->outputs[0].index()] = base;
        L.root[z->outputs[0].index()] = base;
        L.strides[r->outputs[0].index()] = L.strides[hs->outputs[0].index()];
        L.strides[z->outputs[0].index()] = L.strides[hs->outputs[1].index()];
        const TensorId n = hs->outputs[2];
        L.root[n.index()] = n;
        L.strides[n.index()] = contiguousStrides(dimsOf(g.tensor(n)));
    }
}

TorchLayout torchLayout(const TrainingGraph &g, const ir::Graph *forward)
{
    TorchLayout L;
    const size_t nt = g.tensorCount();
    L.root.resize(nt);
    L.strides.resize(nt);
    L.copiedForMatmul.assign(nt, false);
    L.forcedCopy.assign(nt, false);
    L.copies.assign(nt, 1);
    L.expansion.assign(nt, 1);
    for (size_t i = 0; i < nt; ++i) {
        L.root[i] = TensorId(static_cast<int32_t>(i));
        L.strides[i] = contiguousStrides(dimsOf(g.tensor(TensorId(static_cast<int32_t>(i)))));
    }
    for (const Op &op : g.ops()) {
        if (op.phase != Phase::Forward || op.inputs.empty())
            continue;
        const TensorId in = op.inputs[0];
        const std::vector<int64_t> inDims = dimsOf(g.tensor(in));
        const std::vector<int64_t> &inStrides = L.strides[in.index()];
        const ir::Node *node = attributeNode(op, forward);
        auto viewAs = [&](TensorId out, std::vector<int64_t> strides) {
            L.root[out.index()] = L.root[in.index()];
            L.strides[out.index()] = std::move(strides);
        };
        const std::string &t = op.type;
        if (forward && t == "Identity" && node && node->attrInt("remat_contiguous", 0) == 1) {
            // x.contiguous() (remat_export.py's remat.contiguous): x itself where it already is,
            // else a copy in row-major order
            if (!op.outputs.empty() && inStrides == contiguousStrides(inDims))
                viewAs(op.outputs[0], inStrides);
            continue;
        }
        if (forward && (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze" ||
                        t == "Identity")) {
            // torch's reshape / flatten: a view where the strides allow one, else a copy
            // (squeeze, unsqueeze and identity always allow one).
            for (TensorId out : op.outputs)
                if (auto st = viewStrides(inDims, inStrides, dimsOf(g.tensor(out))))
                    viewAs(out, *st);
            continue;
        }
        if (forward && t == "Transpose" && node && !op.outputs.empty()) {
            std::vector<int64_t> perm = node->attrInts("perm", {});
            if (perm.empty())
                for (size_t d = inDims.size(); d-- > 0;)
                    perm.push_back(int64_t(d));
            if (perm.size() != inDims.size())
                continue;
            std::vector<int64_t> st;
            for (int64_t p : perm)
                st.push_back(inStrides[size_t(p)]);
            viewAs(op.outputs[0], st);
            continue;
        }
        if (forward && (t == "Slice" || t == "Split") && !op.outputs.empty()) {
            std::vector<int64_t> st = inStrides;
            if (t == "Slice") {
                const std::vector<int64_t> steps = sliceSteps(node, forward, st.size());
                for (size_t d = 0; d < st.size(); ++d)
                    st[d] *= steps[d] < 0 ? -steps[d] : steps[d];
            }
            for (TensorId out : op.outputs)
                viewAs(out, st);
            continue;
        }
        if (forward && t == "Expand" && !op.outputs.empty()) {
            const std::vector<int64_t> outDims = dimsOf(g.tensor(op.outputs[0]));
            std::vector<int64_t> st(outDims.size(), 0);
            const size_t lead = outDims.size() - std::min(outDims.size(), inDims.size());
            for (size_t d = lead; d < outDims.size(); ++d) {
                const size_t k = d - lead;
                st[d] = inDims[k] == outDims[d] ? inStrides[k] : 0;
            }
            viewAs(op.outputs[0], st);
            continue;
        }
        if (forward && t == "Gather" && op.inputs.size() == 2 &&
            g.tensor(op.inputs[1]).shape.rank() == 0 && node && !op.outputs.empty()) {
            // x[:, i]: a select drops the axis from the strides
            int64_t axis = node->attrInt("axis", 0);
            if (axis < 0)
                axis += int64_t(inDims.size());
            std::vector<int64_t> st = inStrides;
            if (axis >= 0 && axis < int64_t(st.size()))
                st.erase(st.begin() + axis);
            viewAs(op.outputs[0], st);
            continue;
        }
        if (savesAsView(g, op)) {
            // without the forward graph's attributes (or the GLU gate, the exporter's zero pad):
            // the first input's storage, laid out as the output is
            for (TensorId out : op.outputs)
                L.root[out.index()] = L.root[in.index()];
            continue;
        }
        if (forward && isElementwise(t) && !op.outputs.empty()) {
            // a new tensor in its inputs' memory order: each operand's strides in the output's
            // dims (0 where broadcast)
            const std::vector<int64_t> outDims = dimsOf(g.tensor(op.outputs[0]));
            std::vector<std::vector<int64_t>> operands;
            for (TensorId x : op.inputs) {
                const std::vector<int64_t> d = dimsOf(g.tensor(x));
                if (d.size() > outDims.size())
                    continue;
                std::vector<int64_t> st(outDims.size(), 0);
                const size_t lead = outDims.size() - d.size();
                for (size_t k = 0; k < d.size(); ++k)
                    st[lead + k] =
                        d[k] == outDims[lead + k] && d[k] != 1 ? L.strides[x.index()][k] : 0;
                operands.push_back(std::move(st));
            }
            const std::vector<int64_t> st = elementwiseStrides(outDims, operands);
            for (TensorId out : op.outputs)
                if (dimsOf(g.tensor(out)) == outDims)
                    L.strides[out.index()] = st;
            continue;
        }
    }
    if (!forward)
        return L;
    gruCellInPlace(g, L);
    // torch.matmul: a batched product reshapes each operand to [batch, rows, cols], a product with
    // a matrix folds the other operand's leading dims into its rows; bmm / mm save what they get,
    // a copy where the reshape could not be a view.
    for (const Op &op : g.ops()) {
        if (op.phase != Phase::Forward ||
            (op.type != "GRU" && op.type != "LSTM" && op.type != "RNN") || op.inputs.empty())
            continue;
        // torch's RNN layers (ATen's CPU path) project the whole sequence X[T, B, I] at once per
        // direction (linear on X reshaped to [T * B, I]): the product keeps a copy where that
        // reshape cannot be a view (batch_first: the exporter's transposed X), one per direction.
        const TensorId x = op.inputs[0];
        const std::vector<int64_t> d = dimsOf(g.tensor(x));
        if (d.size() != 3 || viewStrides(d, L.strides[x.index()], {d[0] * d[1], d[2]}))
            continue;
        // Autocast's cast of X made for this op (core/training/autocast.h: a Cast whose node is
        // the op's) already counts one copy per direction, which is what is kept.
        if (const OpId p = g.tensor(x).producer;
            p.valid() && g.op(p).type == "Cast" && g.op(p).source == op.source)
            continue;
        const ir::Node *node = attributeNode(op, forward);
        L.copiedForMatmul[x.index()] = true;
        L.copies[x.index()] =
            node && node->attrString("direction", "forward") == "bidirectional" ? 2 : 1;
    }
    for (const Op &op : g.ops()) {
        if (op.phase != Phase::Forward || op.type != "Einsum")
            continue;
        // torch.einsum contracts pairwise (ops::torchEinsumSteps): each bmm reshapes its operand
        // permuted to [lro, lo, sum] (the left) or [lro, sum, ro] (the right), a view only where
        // the strides allow; otherwise bmm keeps a copy (q [b, n, h, d] contiguous is still
        // copied for a product batched over b and h).
        const ir::Node *node = attributeNode(op, forward);
        if (!node)
            continue;
        std::vector<std::vector<int64_t>> shapes;
        std::vector<size_t> ranks;
        for (TensorId in : op.inputs) {
            shapes.push_back(dimsOf(g.tensor(in)));
            ranks.push_back(shapes.back().size());
        }
        auto eq = ops::parseEinsum(node->attrString("equation"), ranks);
        if (!eq)
            continue;
        const std::vector<ops::TorchEinsumStep> steps = ops::torchEinsumSteps(*eq, shapes);
        // operand t as the letters `order`, reshaped to `groups` of letters: a view or not
        auto isView = [&](size_t t, const std::vector<std::string> &groups) {
            const TensorId in = op.inputs[t];
            const std::string &letters = eq->inputs[t];
            std::vector<int64_t> dims, st, target;
            for (const std::string &grp : groups) {
                int64_t n = 1;
                for (char ch : grp) {
                    const size_t at = letters.find(ch);
                    if (at == std::string::npos || shapes[t][at] <= 1)
                        continue;
                    dims.push_back(shapes[t][at]);
                    st.push_back(L.strides[in.index()][at]);
                    n *= shapes[t][at];
                }
                target.push_back(n);
            }
            return dims.empty() || viewStrides(dims, st, target).has_value();
        };
        for (const ops::TorchEinsumStep &stp : steps) {
            if (!stp.bmm)
                continue;
            if (stp.operand == 1 && !isView(0, {stp.lro, stp.lo, stp.sum}))
                L.forcedCopy[op.inputs[0].index()] = L.copiedForMatmul[op.inputs[0].index()] = true;
            if (!isView(stp.operand, {stp.lro, stp.sum, stp.ro}))
                L.forcedCopy[op.inputs[stp.operand].index()] =
                    L.copiedForMatmul[op.inputs[stp.operand].index()] = true;
        }
    }
    for (const Op &op : g.ops()) {
        if (op.phase != Phase::Forward || op.type != "MatMul" || op.inputs.size() != 2 ||
            op.outputs.empty())
            continue;
        const std::vector<int64_t> a = dimsOf(g.tensor(op.inputs[0])),
                                   b = dimsOf(g.tensor(op.inputs[1]));
        if (a.size() < 2 || b.size() < 2)
            continue;
        auto needsCopy = [&](TensorId id, const std::vector<int64_t> &dims,
                             const std::vector<int64_t> &target) {
            if (dims == target)
                return false;
            return !viewStrides(dims, L.strides[id.index()], target).has_value();
        };
        auto product = [](const std::vector<int64_t> &d, size_t until) {
            int64_t p = 1;
            for (size_t k = 0; k < until; ++k)
                p *= d[k];
            return p;
        };
        if (a.size() >= 3 && b.size() == 2) {
            // torch 1.13's should_fold: a 3-D operand whose last two dims are transposed (a
            // permute(0, 2, 1)) is not folded but multiplied by bmm as it is, the matrix
            // expanded as a view: nothing is copied (a Mamba scan's u.transpose(1, 2) @ W)
            const std::vector<int64_t> &st = L.strides[op.inputs[0].index()];
            if (a.size() == 3 && st.size() == 3 && st[2] != 1 && st[0] == a[1] * a[2])
                continue;
            const std::vector<int64_t> folded{product(a, a.size() - 1), a.back()};
            if (needsCopy(op.inputs[0], a, folded)) {
                // the folded rows are a new tensor, also where the operand is a weight's view
                // (learned queries expanded over the batch): mm keeps that copy
                L.copiedForMatmul[op.inputs[0].index()] = true;
                L.forcedCopy[op.inputs[0].index()] = true;
            }
            continue;
        }
        const std::vector<int64_t> &out = dimsOf(g.tensor(op.outputs[0]));
        const int64_t batch = product(out, out.size() - 2);
        for (int k = 0; k < 2; ++k) {
            const std::vector<int64_t> &d = k == 0 ? a : b;
            if (d.size() < 3)
                continue;
            // an operand broadcast over the batch is expanded first: stride 0, never a view
            if (product(d, d.size() - 2) != batch) {
                const TensorId x = op.inputs[size_t(k)];
                L.copiedForMatmul[x.index()] = true;
                const int64_t own = std::max<int64_t>(1, product(d, d.size() - 2));
                L.expansion[x.index()] = std::max(L.expansion[x.index()], batch / own);
                continue;
            }
            const std::vector<int64_t> target{batch, d[d.size() - 2], d.back()};
            if (needsCopy(op.inputs[size_t(k)], d, target))
                L.copiedForMatmul[op.inputs[size_t(k)].index()] = true;
        }
    }
    return L;
}

/// torch.nn.functional.cosine_similarity as torch.onnx 1.13 writes it (symbolic_opset9):
///   Div(ReduceSum(x1 * x2), Max(Sqrt(ReduceSum(x1 * x1) * ReduceSum(x2 * x2)), eps))
/// over one reduction, where ATen (Distance.cpp) normalises each operand first: sqrt(sum(x^2))
/// per row, x / norm, then the sum of the product. What autograd keeps differs: for each operand
/// that needs a gradient, the operand itself (PowBackward, DivBackward), its norm (SqrtBackward,
/// the reduced shape) and the OTHER operand divided by its norm (MulBackward, the broadcast
/// shape), a new tensor the export never computes; nothing of the products, sums or the Max.
struct CosineSimilarity
{
    std::vector<OpId> ops; ///< the pattern's forward ops, the Div last
    std::array<TensorId, 2> x;
    std::array<bool, 2> needsGrad{false, false};
    int64_t normBytes = 0;       ///< one norm: the reduced shape
    int64_t normalizedBytes = 0; ///< one normalised operand: the broadcast shape
    ir::DataType dtype = ir::DataType::Float;
    /// An operand of another type than the computation's (bfloat16 against float32 under CPU
    /// autocast, where cosine_similarity is on no list; any half operand under CUDA autocast,
    /// where it is fp32): ATen casts it first and keeps that copy, at the operand's own shape,
    /// in place of the operand.
    std::array<int64_t, 2> promotedBytes{0, 0};
};

std::vector<CosineSimilarity> cosineSimilarities(const TrainingGraph &g, const ir::Graph *forward)
{
    std::vector<CosineSimilarity> found;
    if (!forward)
        return found;
    // the forward op computing `t`, looked through autocast's casts (CUDA sums in float32)
    auto producer = [&](TensorId t, const char *type) -> const Op * {
        for (int depth = 0; depth < 4 && t.valid(); ++depth) {
            const Tensor &v = g.tensor(t);
            if (!v.producer.valid())
                return nullptr;
            const Op &p = g.op(v.producer);
            if (p.phase != Phase::Forward)
                return nullptr;
            if (p.type == type)
                return &p;
            if (p.type != "Cast" || p.inputs.empty())
                return nullptr;
            t = p.inputs[0];
        }
        return nullptr;
    };
    // read by one forward op alone (casts on the way included)
    auto readOnce = [&](const Op &op) {
        int readers = 0;
        for (OpId c : g.tensor(op.outputs[0]).consumers)
            readers += g.op(c).phase == Phase::Forward;
        return op.outputs.size() == 1 && readers == 1;
    };
    auto sumOfProduct = [&](TensorId t, std::vector<const Op *> &ops) -> const Op * {
        const Op *sum = producer(t, "ReduceSum");
        if (!sum || sum->inputs.empty() || !readOnce(*sum))
            return nullptr;
        const Op *mul = producer(sum->inputs[0], "Mul");
        if (!mul || mul->inputs.size() != 2 || !readOnce(*mul))
            return nullptr;
        ops.push_back(mul);
        ops.push_back(sum);
        return sum;
    };
    auto axesOf = [&](const Op &sum) -> std::optional<std::vector<int64_t>> {
        const ir::Node *n = attributeNode(sum, forward);
        if (!n)
            return std::nullopt;
        const ir::TensorConstant *axes = nullptr;
        if (n->inputs.size() > 1 && n->inputs[1].valid())
            axes = forward->value(n->inputs[1]).initializer.get();
        auto a = ops::reduceAxes(*n, axes);
        if (!a || a->size() != 1 || n->attrInt("keepdims", 1) != 0)
            return std::nullopt;
        return a;
    };
    for (const Op &div : g.ops()) {
        if (div.phase != Phase::Forward || div.type != "Div" || div.inputs.size() != 2 ||
            div.outputs.size() != 1)
            continue;
        std::vector<const Op *> ops;
        const Op *cross = sumOfProduct(div.inputs[0], ops);
        const Op *max = producer(div.inputs[1], "Max");
        if (!cross || !max || max->inputs.size() != 2 || !readOnce(*max))
            continue;
        // Max(sqrt, eps): eps a one-element constant
        int s = -1;
        for (int k = 0; k < 2; ++k) {
            const Tensor &e = g.tensor(max->inputs[size_t(1 - k)]);
            auto n = e.shape.numElements();
            if (producer(max->inputs[size_t(k)], "Sqrt") && e.role == TensorRole::Constant && n &&
                *n == 1)
                s = k;
        }
        if (s < 0)
            continue;
        const Op *sqrt = producer(max->inputs[size_t(s)], "Sqrt");
        const Op *prod = sqrt && readOnce(*sqrt) ? producer(sqrt->inputs[0], "Mul") : nullptr;
        if (!prod || prod->inputs.size() != 2 || !readOnce(*prod))
            continue;
        const Op *sq1 = sumOfProduct(prod->inputs[0], ops);
        const Op *sq2 = sq1 ? sumOfProduct(prod->inputs[1], ops) : nullptr;
        if (!sq2)
            continue;
        const Op &m1 = *ops[2], &m2 = *ops[4], &mc = *ops[0];
        if (m1.inputs[0] != m1.inputs[1] || m2.inputs[0] != m2.inputs[1])
            continue;
        CosineSimilarity c;
        c.x = {m1.inputs[0], m2.inputs[0]};
        if (c.x[0] == c.x[1])
            continue;
        if (!((mc.inputs[0] == c.x[0] && mc.inputs[1] == c.x[1]) ||
              (mc.inputs[0] == c.x[1] && mc.inputs[1] == c.x[0])))
            continue;
        auto a = axesOf(*cross), a1 = axesOf(*sq1), a2 = axesOf(*sq2);
        if (!a || !a1 || !a2)
            continue;
        // one dim of the broadcast shape, counted from the right (broadcasting aligns there)
        auto fromRight = [&](int64_t axis, const Op &mul) {
            return axis < 0 ? axis : axis - int64_t(g.tensor(mul.outputs[0]).shape.rank());
        };
        if (fromRight((*a)[0], mc) != fromRight((*a1)[0], m1) ||
            fromRight((*a)[0], mc) != fromRight((*a2)[0], m2))
            continue;
        for (const Op *o : ops)
            c.ops.push_back(o->id);
        c.ops.push_back(max->id);
        c.ops.push_back(sqrt->id);
        c.ops.push_back(prod->id);
        c.ops.push_back(div.id);
        // an operand needs a gradient where its square's product has a backward
        c.needsGrad = {g.backwardOf(m1.id).valid(), g.backwardOf(m2.id).valid()};
        const Tensor &full = g.tensor(mc.outputs[0]);
        const Tensor &reduced = g.tensor(div.outputs[0]);
        auto fullN = full.shape.numElements();
        auto reducedN = reduced.shape.numElements();
        if (!fullN || !reducedN)
            continue;
        // CUDA autocast lists cosine_similarity as fp32 (both operands cast to float32, the
        // whole computation in float32); elsewhere it runs in the operands' promoted type, the
        // export's product's
        const TrainingOptions &how = g.info().training;
        c.dtype = isAutocast(how.precision) && how.autocastDevice == AutocastDevice::Cuda
                      ? ir::DataType::Float
                      : full.dtype;
        const int64_t size = ir::elementSize(c.dtype);
        c.normalizedBytes = *fullN * size;
        c.normBytes = *reducedN * size;
        for (size_t k = 0; k < 2; ++k) {
            const Tensor &x = g.tensor(c.x[k]);
            auto xn = x.shape.numElements();
            if (c.needsGrad[k] && x.dtype != c.dtype && xn)
                c.promotedBytes[k] = *xn * size;
        }
        found.push_back(std::move(c));
    }
    return found;
}

} // namespace

std::vector<TensorId> pytorchStorageBases(const TrainingGraph &g, const ir::Graph *forward)
{
    return torchLayout(g, forward).root;
}

TrainingSummary summarize(const TrainingGraph &g, const ir::Graph *forward)
{
    TrainingSummary s;
    const size_t nt = g.tensorCount();
    // Laid out from parameters alone by views and the exporter's re-arrangements (a transposed
    // Linear weight, an RNN's gates reordered by Slice and Concat): the parameter itself in
    // PyTorch, which saves nothing new for it. Arithmetic on parameters (weight standardisation,
    // weight norm, relu(w) / sum, exp(A_log), a modulated kernel) makes a new tensor every step,
    // which autograd saves like any activation.
    static const std::set<std::string> kWeightLayout = {
        "Transpose", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Slice",
        "Split",     "Concat",  "Identity",  "Expand",  "Gather",  "Cast"};
    std::vector<bool> weightDerived(nt, false);
    for (const Op &op : g.ops()) {
        if (op.phase != Phase::Forward || !kWeightLayout.count(op.type))
            continue;
        bool fromWeights = !op.inputs.empty();
        bool readsParameter = false;
        for (TensorId in : op.inputs) {
            const Tensor &t = g.tensor(in);
            fromWeights = fromWeights &&
                          (t.preloaded ? t.role != TensorRole::Input : weightDerived[in.index()]);
            readsParameter = readsParameter || t.role == TensorRole::Parameter ||
                             t.role == TensorRole::Frozen || weightDerived[in.index()];
        }
        if (fromWeights && readsParameter)
            for (TensorId out : op.outputs)
                // autocast's copy of a weight is new memory that backward keeps (autocast.h)
                weightDerived[out.index()] = g.tensor(out).role != TensorRole::WeightCast;
    }
    // A tensor the forward pass creates per sample (torch.zeros(B, C, H, W) as a ConvLSTM's
    // first cell state, zeros_like(x), a capsule network's first routing logits and what is
    // computed from them alone) is a Constant node or folded arithmetic in the export, a constant
    // here; PyTorch allocates it every step and autograd keeps it like any activation when an op
    // saves it. Told from a module's tensors (buffers are broadcast against the batch, and
    // non-persistent ones are Constant nodes too) by its leading dim: the batch (above 1, which
    // a broadcast table's leading 1 could equal), as for the result of the op reading it. Only
    // with `forward` (the node that made it).
    std::vector<bool> createdInForward(nt, false);
    if (forward && g.info().batch > 1) {
        const int64_t batch = g.info().batch;
        auto leadsWithBatch = [&](const Tensor &t) {
            return t.shape.rank() >= 2 && t.shape.isStatic() && t.shape.dims[0].value == batch;
        };
        // torch.onnx writes torch.diagonal(x, k) as x * eye-like mask, summed over a dim, then
        // GatherND at the k-th diagonal: PyTorch's diagonal is a view and makes no mask.
        auto diagonalMask = [&](const Op &op) {
            if (op.type != "Mul" || op.outputs.size() != 1)
                return false;
            const std::vector<OpId> &sums = g.tensor(op.outputs[0]).consumers;
            return !sums.empty() && std::all_of(sums.begin(), sums.end(), [&](OpId s) {
                const Op &sum = g.op(s);
                if (sum.phase != Phase::Forward)
                    return true;
                if (sum.type != "ReduceSum" || sum.outputs.size() != 1)
                    return false;
                const std::vector<OpId> &reads = g.tensor(sum.outputs[0]).consumers;
                return !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](OpId r) {
                    return g.op(r).phase != Phase::Forward || g.op(r).type == "GatherND";
                });
            });
        };
        // Arithmetic on constants in the export (a band mask from arange positions, abs() > w)
        // is what torch computed in forward; a module's table is a Constant node, read through
        // views. Scalars are left out: torch keeps a Python number as no tensor.
        auto computedInForward = [&](const Tensor &t) {
            static const std::set<std::string> kViews = {
                "Constant", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
                "Slice",    "Gather",   "Expand",  "Transpose", "Split"};
            auto n = t.shape.numElements();
            if (!t.shape.isStatic() || !n || *n <= 1)
                return false;
            const ir::Node &p = forward->node(forward->value(t.source).producer);
            return !kViews.count(p.opType);
        };
        for (const Op &op : g.ops()) {
            if (op.phase != Phase::Forward || diagonalMask(op))
                continue;
            bool batchedResult = false;
            for (TensorId out : op.outputs)
                batchedResult = batchedResult || leadsWithBatch(g.tensor(out));
            for (TensorId in : op.inputs) {
                const Tensor &t = g.tensor(in);
                if (t.role != TensorRole::Constant || !t.source.valid() ||
                    t.source.index() >= forward->valueCount() ||
                    !forward->value(t.source).producer.valid())
                    continue;
                // remat_export's metadata says so (torch.arange in forward, which a
                // non-persistent buffer exports exactly as)
                const bool listed =
                    forward->value(t.source).kindReason == std::string(ir::kMadeInForwardReason);
                if (listed || (batchedResult && (leadsWithBatch(t) || computedInForward(t))))
                    createdInForward[in.index()] = true;
            }
        }
    }
    // What PyTorch allocates for a created tensor: an expand (a DeBERTa relative-position index
    // [N, N] expanded over batch and heads for a gather) is a view of the smaller tensor it was
    // made from, through view ops only.
    std::vector<int64_t> createdBytes(nt, -1);
    for (size_t i = 0; i < nt; ++i) {
        if (!createdInForward[i])
            continue;
        ValueId v = g.tensor(TensorId(static_cast<int32_t>(i))).source;
        for (int depth = 0; depth < 16; ++depth) {
            const ir::Value &val = forward->value(v);
            if (!val.producer.valid())
                break;
            const ir::Node &p = forward->node(val.producer);
            if ((p.opType != "Expand" && p.opType != "Unsqueeze") || p.inputs.empty() ||
                !p.inputs[0].valid())
                break;
            v = p.inputs[0];
        }
        if (auto b = forward->value(v).bytes(); b && *b < g.tensor(TensorId(int32_t(i))).bytes)
            createdBytes[i] = *b;
    }
    // A view saved is its base's whole storage, counted once however many views of it are saved;
    // what a matrix product saves is a copy of its own where torch.matmul had to make one.
    const TorchLayout layout = torchLayout(g, forward);
    const std::vector<TensorId> &root = layout.root;
    auto storageOf = [&](const Op &reader, TensorId in) {
        static const std::set<std::string> kCopying = {"MatMul", "Einsum", "GRU", "LSTM", "RNN"};
        if (layout.copiedForMatmul[in.index()] && reader.forwardOf.valid() &&
            kCopying.count(g.op(reader.forwardOf).type)) {
            const Op &mm = g.op(reader.forwardOf);
            if (std::find(mm.inputs.begin(), mm.inputs.end(), in) != mm.inputs.end())
                return in;
        }
        return root[in.index()];
    };
    // A copy torch made (see storageOf): of a view, or of a tensor laid out in another order
    // (an element-wise result of a permuted operand).
    auto isCopy = [&](TensorId key) {
        return layout.copiedForMatmul[key.index()] &&
               (root[key.index()] != key || layout.expansion[key.index()] > 1 ||
                layout.forcedCopy[key.index()] ||
                layout.strides[key.index()] != contiguousStrides(dimsOf(g.tensor(key))));
    };
    // A storage's bytes: a copy once per copy, expanded over the batch it was broadcast to.
    auto storageBytes = [&](TensorId key) {
        if (createdBytes[key.index()] >= 0)
            return createdBytes[key.index()];
        return g.tensor(key).bytes *
               (isCopy(key) ? layout.copies[key.index()] * layout.expansion[key.index()] : 1);
    };
    // Each product makes its own copy: the decoder layers of nn.Transformer each copy the memory
    // they project (torch.matmul reshapes a transposed operand per call).
    auto ownCopy = [&](TensorId base, TensorId in) { return base == in && isCopy(in); };
    // A weight (or a view of one) broadcast over a product's batch is expanded and copied at the
    // batch's size, and the product keeps that copy like an activation: a capsule network's
    // transformation matrices W[1, n, classes, d, 8] @ u[B, n, 1, 8, 1] (BmmBackward keeps B x W).
    auto expandedWeight = [&](const Op &reader, TensorId in) {
        const Tensor &t = g.tensor(in);
        return (t.preloaded || weightDerived[in.index()]) &&
               (layout.expansion[in.index()] > 1 || layout.forcedCopy[in.index()]) &&
               storageOf(reader, in) == in && isCopy(in);
    };
    // cosine_similarity's export keeps what ATen's does not (and the reverse): within the
    // pattern only the operands that need a gradient count as read, and ATen's norms and
    // normalised operands are added per pattern (cosineSimilarities)
    const std::vector<CosineSimilarity> cosines = cosineSimilarities(g, forward);
    std::vector<int> cosineOf(g.ops().size(), -1);
    for (size_t k = 0; k < cosines.size(); ++k)
        for (OpId o : cosines[k].ops)
            cosineOf[o.index()] = int(k);
    auto cosineSkips = [&](const Op &reader, TensorId in) {
        if (!reader.forwardOf.valid() || cosineOf[reader.forwardOf.index()] < 0)
            return false;
        const CosineSimilarity &c = cosines[size_t(cosineOf[reader.forwardOf.index()])];
        for (size_t k = 0; k < 2; ++k)
            if (in == c.x[k] && c.needsGrad[k] && !c.promotedBytes[k])
                return false;
        return true;
    };
    auto cosineBytes = [](const CosineSimilarity &c) {
        int64_t b = 0;
        for (size_t k = 0; k < 2; ++k)
            b += c.needsGrad[k] ? c.normBytes + c.normalizedBytes + c.promotedBytes[k] : 0;
        return b;
    };
    std::set<std::pair<size_t, size_t>> countedCopies, attributedCopies; // (product, tensor)
    std::vector<bool> counted(nt, false), countedStorage(nt, false);
    for (const Op &op : g.ops()) {
        switch (op.phase) {
        case Phase::Forward:
            ++s.forwardOps;
            s.forwardFlops += op.flops;
            if (op.type == "Conv" || op.type == "Gemm" || op.type == "MatMul")
                s.forwardMatmulConvFlops += op.flops;
            break;
        case Phase::Loss: ++s.lossOps; break;
        case Phase::Optimizer: ++s.optimizerOps; break;
        case Phase::Backward:
            ++s.backwardOps;
            s.backwardFlops += op.flops;
            if (op.type == "Accumulate")
                ++s.accumulateOps;
            for (TensorId in : op.inputs) {
                const Tensor &t = g.tensor(in);
                const bool made = createdInForward[in.index()];
                const bool expanded = expandedWeight(op, in);
                if (!made && !expanded &&
                    (t.preloaded || !t.producer.valid() ||
                     g.op(t.producer).phase != Phase::Forward))
                    continue;
                if (!counted[in.index()]) {
                    counted[in.index()] = true;
                    // (a created tensor is a preloaded constant in this graph, not stored)
                    if (!made && !t.preloaded)
                        (weightDerived[in.index()] ? s.savedWeightDerivedBytes
                                                   : s.storedActivationBytes) += t.bytes;
                }
                if ((weightDerived[in.index()] && !expanded) || cosineSkips(op, in))
                    continue;
                // per reader: a matrix product may keep a copy where another op keeps the view
                const TensorId base = storageOf(op, in);
                const Tensor &b = g.tensor(base);
                if (ownCopy(base, in)) {
                    if (!countedCopies.insert({op.forwardOf.index(), in.index()}).second)
                        continue;
                } else {
                    if (countedStorage[base.index()] ||
                        (b.preloaded && !createdInForward[base.index()]) ||
                        weightDerived[base.index()])
                        continue; // a view of a counted storage, or of a parameter / buffer / input
                    countedStorage[base.index()] = true;
                }
                const int64_t kept = storageBytes(base);
                s.savedForBackwardBytes += kept;
                ++s.savedForBackwardTensors;
                s.savedForBackwardBytesByDtype[ir::dataTypeName(b.dtype)] += kept;
            }
            break;
        }
    }
    for (const CosineSimilarity &c : cosines) {
        for (size_t k = 0; k < 2; ++k) {
            if (!c.needsGrad[k])
                continue;
            const int64_t b = c.normBytes + c.normalizedBytes + c.promotedBytes[k];
            s.savedForBackwardBytes += b;
            s.savedForBackwardTensors += c.promotedBytes[k] ? 3 : 2;
            s.savedForBackwardBytesByDtype[ir::dataTypeName(c.dtype)] += b;
        }
    }
    // The same storages again, per forward op in forward order (the first op whose backward reads
    // each one).
    std::vector<bool> attributed(nt, false);
    for (size_t i = 0; i < g.forwardOpCount(); ++i) {
        const OpId bwd = g.backwardOf(OpId(i));
        if (!bwd.valid())
            continue;
        TrainingSummary::OpSaved entry{OpId(i), 0, {}};
        // a cosine similarity's norms and normalised operands, on its last op (the Div)
        if (cosineOf[i] >= 0 && cosines[size_t(cosineOf[i])].ops.back() == OpId(i))
            entry.bytes += cosineBytes(cosines[size_t(cosineOf[i])]);
        for (TensorId in : g.op(bwd).inputs) {
            const TensorId base = storageOf(g.op(bwd), in);
            if (cosineSkips(g.op(bwd), in))
                continue;
            if (!counted[in.index()] ||
                (weightDerived[in.index()] && !expandedWeight(g.op(bwd), in)))
                continue;
            if (ownCopy(base, in)) {
                const std::pair<size_t, size_t> key{i, in.index()};
                if (!countedCopies.count(key) || !attributedCopies.insert(key).second)
                    continue;
            } else {
                if (!countedStorage[base.index()] || attributed[base.index()])
                    continue;
                attributed[base.index()] = true;
            }
            entry.bytes += storageBytes(base);
            entry.tensors.push_back(base);
        }
        if (!entry.tensors.empty() || entry.bytes > 0)
            s.savedByForwardOp.push_back(std::move(entry));
    }
    for (const Tensor &t : g.tensors()) {
        switch (t.role) {
        case TensorRole::Parameter: s.paramBytes += t.bytes; break;
        case TensorRole::Buffer: s.bufferBytes += t.bytes; break;
        case TensorRole::Frozen: s.frozenParamBytes += t.bytes; break;
        case TensorRole::Input: s.inputBytes += t.bytes; break;
        case TensorRole::Constant: s.constantBytes += t.bytes; break;
        case TensorRole::ParameterGrad:
            if (t.requiredAtEnd)
                s.paramGradBytes += t.bytes;
            break;
        default: break;
        }
    }
    return s;
}

} // namespace remat::core::training
