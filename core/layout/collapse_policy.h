#pragma once
// How deep the explorer collapses a graph when it opens: small graphs open expanded, large ones at
// the deepest namespace depth that still shows a readable number of boxes.
//   layout::GraphLayouter lay(graph, sizes);
//   const int depth = layout::autoCollapseDepth(lay);             // 0: everything expanded
//   Expected<layout::GraphLayout> l = lay.layout(layout::collapseAtDepth(lay, depth));

#include "core/layout/graph_layout.h"

namespace remat::core::layout {

struct CollapsePolicy
{
    int expandedNodeLimit = 600; ///< at most this many drawn nodes: open expanded
    int boxLimit = 400;          ///< otherwise: the deepest depth showing at most this many boxes
};

/// The boxes collapseAtDepth(layouter, depth) draws: the drawn nodes outside every group of depth
/// `depth` or deeper, plus one box per group of that depth. depth <= 0: every drawn node.
int boxesAtDepth(const GraphLayouter &layouter, int depth);

/// 0 (expanded) when the graph has at most policy.expandedNodeLimit drawn nodes; else the
/// deepest group depth whose collapse shows at most policy.boxLimit boxes; 1 when none does.
int autoCollapseDepth(const GraphLayouter &layouter, const CollapsePolicy &policy = {});

} // namespace remat::core::layout
