#pragma once
// Which nodes compute compile-time constants once a graph is imported (shape arithmetic): the
// training builder folds them out of the step, the explorer folds them into their consumers.
//   std::vector<char> c = ir::constantNodes(graph);
//   if (c[n.index()]) foldInto(consumerOf(n));

#include "core/ir/graph.h"

#include <vector>

namespace remat::core::ir {

/// Per NodeId: 1 when every output of the node is a constant known after import: Constant
/// nodes, Shape and Size of a statically shaped value, and any default-domain op all of whose
/// inputs are constants (initializers of kind Constant, or outputs of such nodes). Parameters and
/// buffers are not constants: a Transpose of a weight stays a node. Never constant: nodes
/// producing a graph output, nodes without outputs, control flow (If, Loop, Scan) and random ops.
std::vector<char> constantNodes(const Graph &graph);

} // namespace remat::core::ir
