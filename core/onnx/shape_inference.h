#pragma once
// Our own shape inference over an imported graph, with constant propagation of small tensors so
// shape arithmetic (Shape -> Gather -> Concat -> Reshape) is seen through at any batch. Each op's
// shape function is in its core/ops definition; this walks the graph and looks them up.
//   std::vector<InferredValue> vals = seeded from graph inputs, initializers;
//   Status s = inferShapes(graph, opset, vals);   // fills dtype, shape, small constant values
//   if (!vals[id.index()].shape.isStatic()) ... fall back to ONNX's own inference

#include "core/ir/graph.h"
#include "core/ops/shape_context.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <memory>
#include <vector>

namespace remat::core::onnx {

// The value types and the batch rewrite live with the shape functions in core/ops.
using ops::BatchRewrite;
using ops::ConstTensor;
using ops::constTensorFrom;
using ops::InferredValue;
using ops::kMaxConstElements;

/// Infers every node output of `graph` in topological order. `values` is indexed by ValueId and
/// must hold graph inputs and initializers already; entries that are already known (dtype and
/// rank) are kept. Returns an error only for contradictions the file itself contains (a Reshape
/// to a different element count, ...); ops it cannot infer are left unknown.
Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const StopToken &stop = {});

Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const BatchRewrite &rewrite, const StopToken &stop = {});

} // namespace remat::core::onnx
