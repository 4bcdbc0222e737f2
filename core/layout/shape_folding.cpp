#include "core/layout/shape_folding.h"

#include "core/ir/constant_nodes.h"

namespace remat::core::layout {

std::vector<char> foldableNodes(const ir::Graph &g) { return ir::constantNodes(g); }

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
