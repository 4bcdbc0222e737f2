#pragma once
// Which nodes compute compile-time constants once a graph is imported (shape arithmetic), so a
// view can fold them into their consumers instead of drawing them.
//   std::vector<char> folded = layout::foldableNodes(graph);
//   layout::GraphLayouter lay(graphPtr, sizes, {}, folded);   // folded nodes are not drawn
//   if (folded[n.index()]) showInsideConsumer(n);

#include "core/ir/graph.h"

#include <vector>

namespace remat::core::layout {

/// Per NodeId: 1 for nodes computing compile-time constants (ir::constantNodes, what the
/// training builder folds too).
std::vector<char> foldableNodes(const ir::Graph &graph);

/// Per ValueId: 1 for values a folded node produces (their edges are not drawn).
std::vector<char> foldedValues(const ir::Graph &graph, const std::vector<char> &foldedNodes);

} // namespace remat::core::layout
