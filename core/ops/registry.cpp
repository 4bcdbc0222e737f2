// The op table: the explicit list of family files, sorted once; lookups; forward FLOPs.
#include "core/ops/families.h"

#include <cstring>

namespace remat::core::ops {

const ir::Value *RuleContext::input(size_t pos) const
{
    if (pos >= node->inputs.size() || !node->inputs[pos].valid())
        return nullptr;
    return &graph->value(node->inputs[pos]);
}

const ir::Value *RuleContext::output(size_t pos) const
{
    if (pos >= node->outputs.size() || !node->outputs[pos].valid())
        return nullptr;
    return &graph->value(node->outputs[pos]);
}

int64_t RuleContext::inputElements(size_t pos) const { return rules::elementsOf(input(pos)); }
int64_t RuleContext::outputElements(size_t pos) const { return rules::elementsOf(output(pos)); }

const ir::TensorConstant *RuleContext::constantInput(size_t pos) const
{
    const ir::Value *v = input(pos);
    if (!v || !v->initializer || v->kind == ir::ValueKind::Parameter ||
        v->kind == ir::ValueKind::Frozen || v->kind == ir::ValueKind::Input)
        return nullptr;
    return v->initializer.get();
}

std::optional<std::vector<int64_t>> reduceAxes(const ir::Node &node,
                                               const ir::TensorConstant *axesInput)
{
    if (node.inputs.size() < 2 || !node.inputs[1].valid())
        return node.attrInts("axes");
    if (!axesInput || !axesInput->hasData())
        return std::nullopt;
    auto axes = axesInput->toInt64s();
    return axes ? std::optional(*axes) : std::nullopt;
}

const char *autocastPolicyName(AutocastPolicy p)
{
    switch (p) {
    case AutocastPolicy::Fallthrough: return "fallthrough";
    case AutocastPolicy::LowerPrecision: return "lower";
    case AutocastPolicy::Fp32: return "fp32";
    case AutocastPolicy::Promote: return "promote";
    }
    return "?";
}

AutocastPolicy autocastPolicy(const OpDef &def, const ir::Node *node, size_t rank,
                              AutocastDevice device)
{
    const AutocastPolicy listed =
        device == AutocastDevice::Cuda ? def.autocast.cuda : def.autocast.cpu;
    return def.autocast.refine ? def.autocast.refine(node, rank, device, listed) : listed;
}

const char *familyName(OpFamily family)
{
    switch (family) {
    case OpFamily::Convolution: return "Convolution";
    case OpFamily::MatrixProduct: return "Matrix product";
    case OpFamily::Normalisation: return "Normalisation";
    case OpFamily::Activation: return "Activation";
    case OpFamily::Pooling: return "Pooling";
    case OpFamily::Arithmetic: return "Arithmetic";
    case OpFamily::DataMovement: return "Shape / data movement";
    case OpFamily::Dropout: return "Dropout";
    case OpFamily::Other: return "Other";
    }
    return "Other";
}

namespace {

std::vector<OpDef> makeTable()
{
    // The explicit list: one call per family file (onnx/defs/<family>).
    std::vector<OpDef> t;
    addElementwiseOps(t);
    addNnOps(t);
    addTensorOps(t);
    addReductionOps(t);
    addControlOps(t);
    addRecurrentOps(t);
    addAttentionOps(t);
    std::sort(t.begin(), t.end(),
              [](const OpDef &a, const OpDef &b) { return std::strcmp(a.type, b.type) < 0; });
    return t;
}

} // namespace

const std::vector<OpDef> &allOps()
{
    static const std::vector<OpDef> table = makeTable();
    return table;
}

const OpDef *findOp(const std::string &type, int64_t opset)
{
    const auto &t = allOps();
    auto it =
        std::lower_bound(t.begin(), t.end(), type, [](const OpDef &d, const std::string &key) {
            return std::strcmp(d.type, key.c_str()) < 0;
        });
    if (it == t.end() || type != it->type)
        return nullptr;
    if (opset > 0 && opset < it->sinceOpset)
        return nullptr;
    return &*it;
}

double forwardFlops(const ir::Graph &graph, const ir::Node &node)
{
    if (!node.domain.empty() && node.domain != "ai.onnx")
        return 0;
    const OpDef *def = findOp(node.opType);
    if (!def)
        return 0;
    RuleContext c;
    c.graph = &graph;
    c.node = &node;
    c.inputNeedsGrad.assign(node.inputs.size(), false);
    c.outputHasGrad.assign(node.outputs.size(), false);
    if (def->derive) {
        auto spec = def->derive(c);
        return spec ? spec->forwardFlops : 0;
    }
    return def->flops ? def->flops(c) : 0;
}

} // namespace remat::core::ops
