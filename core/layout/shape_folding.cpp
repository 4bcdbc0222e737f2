#include "core/layout/shape_folding.h"

#include <string_view>

namespace remat::core::layout {

namespace {

bool isDefaultDomain(const ir::Node &n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool neverFolded(std::string_view op)
{
    // Control flow carries subgraphs we do not look into; random ops differ on every run.
    return op == "If" || op == "Loop" || op == "Scan" || op == "RandomNormal" || op == "RandomUniform" ||
           op == "RandomNormalLike" || op == "RandomUniformLike" || op == "Multinomial" || op == "Bernoulli" ||
           op == "Dropout";
}

} // namespace

std::vector<char> foldableNodes(const ir::Graph &g)
{
    std::vector<char> constValue(g.valueCount(), 0), folded(g.nodeCount(), 0);
    for (const ir::Value &v : g.values())
        constValue[v.id.index()] = v.kind == ir::ValueKind::Constant && !v.producer.valid();
    for (NodeId id : g.topologicalOrder()) {
        const ir::Node &n = g.node(id);
        if (!isDefaultDomain(n) || neverFolded(n.opType))
            continue;
        bool c = false;
        if (n.opType == "Constant") {
            c = true;
        } else if (n.opType == "Shape" || n.opType == "Size") {
            c = !n.inputs.empty() && n.inputs[0].valid() && g.value(n.inputs[0]).shape.isStatic();
        } else {
            bool any = false, all = true;
            for (ValueId in : n.inputs) {
                if (!in.valid())
                    continue;
                any = true;
                all = all && constValue[in.index()];
            }
            c = any && all;
        }
        bool anyOutput = false;
        for (ValueId out : n.outputs) {
            if (!out.valid())
                continue;
            anyOutput = true;
            c = c && !g.value(out).isGraphOutput;
        }
        if (!c || !anyOutput)
            continue;
        folded[id.index()] = 1;
        for (ValueId out : n.outputs)
            if (out.valid())
                constValue[out.index()] = 1;
    }
    return folded;
}

std::vector<char> foldedValues(const ir::Graph &g, const std::vector<char> &foldedNodes)
{
    std::vector<char> out(g.valueCount(), 0);
    for (const ir::Node &n : g.nodes())
        if (n.id.index() < foldedNodes.size() && foldedNodes[n.id.index()])
            for (ValueId v : n.outputs)
                if (v.valid())
                    out[v.index()] = 1;
    return out;
}

} // namespace remat::core::layout
