#pragma once
// Which nodes compute compile-time constants once a graph is imported (shape arithmetic), so a
// view can fold them into their consumers instead of drawing them.
//   std::vector<char> folded = layout::foldableNodes(graph);
//   layout::GraphLayouter lay(graphPtr, sizes, {}, folded);   // folded nodes are not drawn
//   if (folded[n.index()]) showInsideConsumer(n);

#include "core/ir/graph.h"

#include <vector>

namespace remat::core::layout {

/// Per NodeId: 1 when every output of the node is a constant known after import. The importer
/// makes every shape static, so Shape and Size of any value are constants, as are Constant
/// nodes and any default-domain op all of whose inputs are constants (initializers of kind
/// Constant, or outputs of folded nodes). Parameters and buffers are not constants here: a
/// Transpose of a weight stays a node. Never folded: nodes producing a graph output, nodes
/// without outputs, control flow (If, Loop, Scan) and random ops.
std::vector<char> foldableNodes(const ir::Graph &graph);

/// Per ValueId: 1 for values a folded node produces (their edges are not drawn).
std::vector<char> foldedValues(const ir::Graph &graph, const std::vector<char> &foldedNodes);

} // namespace remat::core::layout
