#pragma once
// Our own shape inference over an imported graph, with constant propagation of small tensors so
// shape arithmetic (Shape -> Gather -> Concat -> Reshape) is seen through at any batch.
//   std::vector<InferredValue> vals = seeded from graph inputs, initializers;
//   Status s = inferShapes(graph, opset, vals);   // fills dtype, shape, small constant values
//   if (!vals[id.index()].shape.isStatic()) ... fall back to ONNX's own inference

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <memory>
#include <vector>

namespace remat::core::onnx {

/// A small constant tensor (shape arithmetic): integers in `ints`, floating point in `floats`.
struct ConstTensor
{
    ir::DataType dtype = ir::DataType::Undefined;
    std::vector<int64_t> dims;
    std::vector<int64_t> ints;   ///< for integer and bool dtypes
    std::vector<double> floats;  ///< for floating-point dtypes

    bool isInteger() const { return !ir::isFloatingPoint(dtype); }
    size_t size() const { return isInteger() ? ints.size() : floats.size(); }
    double at(size_t i) const { return isInteger() ? double(ints[i]) : floats[i]; }
    int64_t intAt(size_t i) const { return isInteger() ? ints[i] : int64_t(floats[i]); }
};

/// Constants larger than this many elements are not propagated (they are never shape data).
constexpr int64_t kMaxConstElements = 1 << 16;

struct InferredValue
{
    ir::DataType dtype = ir::DataType::Undefined;
    ir::Shape shape = ir::Shape::unknownRank();
    std::shared_ptr<const ConstTensor> constant;
    bool known() const { return dtype != ir::DataType::Undefined && shape.rankKnown; }
};

/// Reads a TensorConstant's data into a ConstTensor when small and numeric; null otherwise.
std::shared_ptr<const ConstTensor> constTensorFrom(const ir::TensorConstant &t);

/// Infers every node output of `graph` in topological order. `values` is indexed by ValueId and
/// must hold graph inputs and initializers already; entries that are already known (dtype and
/// rank) are kept. Returns an error only for contradictions the file itself contains (a Reshape
/// to a different element count, ...); ops it cannot infer are left unknown.
Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const StopToken &stop = {});

/// Exporters that trace at a fixed batch bake it into shape constants (vit_b_16's Reshape
/// targets say 32). To infer at another batch, pass the values inferred at the file's batch:
/// a Reshape whose input changed size then moves the change to the target dim that carried the
/// batch (the block of target dims matching the changed input dim; the dim equal to the file's
/// batch, else the first that scales evenly), and Concat / broadcasting reconcile a dim that
/// still holds the file's batch with one that followed the new batch.
struct BatchRewrite
{
    const std::vector<InferredValue> *atFileBatch = nullptr;
    int64_t fileBatch = 0;
    int64_t batch = 0;
};
Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const BatchRewrite &rewrite, const StopToken &stop = {});

} // namespace remat::core::onnx
