#include "core/layout/collapse_policy.h"

#include <algorithm>

namespace remat::core::layout {

int boxesAtDepth(const GraphLayouter &lay, int depth)
{
    const ir::Graph &g = lay.graph();
    if (depth <= 0)
        return int(g.nodeCount()) - lay.hiddenCount();
    int boxes = 0;
    for (const ir::Node &n : g.nodes())
        if (!lay.isHidden(n.id) && lay.groupDepth(lay.groupOfNode(n.id)) < depth)
            ++boxes;
    for (NamespaceId ns : lay.groups())
        if (lay.groupDepth(ns) == depth)
            ++boxes;
    return boxes;
}

int autoCollapseDepth(const GraphLayouter &lay, const CollapsePolicy &policy)
{
    if (boxesAtDepth(lay, 0) <= policy.expandedNodeLimit)
        return 0;
    int maxDepth = 0;
    for (NamespaceId ns : lay.groups())
        maxDepth = std::max(maxDepth, lay.groupDepth(ns));
    for (int d = maxDepth; d >= 1; --d)
        if (boxesAtDepth(lay, d) <= policy.boxLimit)
            return d;
    return 1;
}

} // namespace remat::core::layout
