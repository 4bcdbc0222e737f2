#include "core/ir/constant_nodes.h"

#include <string_view>

namespace remat::core::ir {

namespace {

bool isDefaultDomain(const Node &n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool neverConstant(std::string_view op)
{
    // Control flow carries subgraphs we do not look into; random ops differ on every run.
    return op == "If" || op == "Loop" || op == "Scan" || op == "RandomNormal" ||
           op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
           op == "Multinomial" || op == "Bernoulli" || op == "Dropout";
}

} // namespace

std::vector<char> constantNodes(const Graph &g)
{
    std::vector<char> constValue(g.valueCount(), 0), constant(g.nodeCount(), 0);
    for (const Value &v : g.values())
        constValue[v.id.index()] = v.kind == ValueKind::Constant && !v.producer.valid();
    for (NodeId id : g.topologicalOrder()) {
        const Node &n = g.node(id);
        if (!isDefaultDomain(n) || neverConstant(n.opType))
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
        constant[id.index()] = 1;
        for (ValueId out : n.outputs)
            if (out.valid())
                constValue[out.index()] = 1;
    }
    return constant;
}

} // namespace remat::core::ir
