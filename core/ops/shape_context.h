#pragma once
// What an op's shape function sees: the node, the values inferred so far (dtype, shape, small
// constant data for shape arithmetic), the opset, and the batch rewrite of core/onnx.
//   Status inferRelu(ShapeContext &c) { if (const Shape *x = c.inShape(0)) c.set(0, c.inType(0), *x); ... }
// The helpers below are shared by the family files' shape functions.

#include "core/ir/graph.h"
#include "core/util/status.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::ops {

using ir::DataType;
using ir::Dim;
using ir::Shape;

/// A small constant tensor (shape arithmetic): integers in `ints`, floating point in `floats`.
struct ConstTensor
{
    ir::DataType dtype = ir::DataType::Undefined;
    std::vector<int64_t> dims;
    std::vector<int64_t> ints;  ///< for integer and bool dtypes
    std::vector<double> floats; ///< for floating-point dtypes

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

int64_t product(const std::vector<int64_t> &d);

/// One node's shape inference: its inputs' inferred values in, its outputs' set through set().
struct ShapeContext
{
    const ir::Graph &g;
    const ir::Node &node;
    std::vector<InferredValue> &vals;
    int64_t opset;
    const BatchRewrite &rw;

    /// The input's shape at the file's batch (rewrite pass only).
    const Shape *inFileShape(size_t i) const
    {
        if (!rw.atFileBatch || i >= node.inputs.size() || !node.inputs[i].valid())
            return nullptr;
        const InferredValue &v = (*rw.atFileBatch)[node.inputs[i].index()];
        return v.shape.rankKnown ? &v.shape : nullptr;
    }
    /// Dim k of inputs a and b disagree: when one still holds its file-batch size and the other
    /// followed the batch, the stale one is patched and the new size returned.
    std::optional<Dim> reconcile(size_t a, size_t b, size_t ka, size_t kb)
    {
        const Shape *fa = inFileShape(a), *fb = inFileShape(b);
        const Shape *ca = inShape(a), *cb = inShape(b);
        if (!fa || !fb || !ca || !cb || ka >= fa->rank() || kb >= fb->rank() || ka >= ca->rank() ||
            kb >= cb->rank())
            return std::nullopt;
        const bool aChanged = !(ca->dims[ka] == fa->dims[ka]);
        const bool bChanged = !(cb->dims[kb] == fb->dims[kb]);
        if (aChanged == bChanged || !(fa->dims[ka] == fb->dims[kb]))
            return std::nullopt;
        const size_t stale = aChanged ? b : a;
        const size_t ks = aChanged ? kb : ka;
        const Dim fresh = aChanged ? ca->dims[ka] : cb->dims[kb];
        vals[node.inputs[stale].index()].shape.dims[ks] = fresh;
        return fresh;
    }

    const InferredValue *in(size_t i) const
    {
        if (i >= node.inputs.size() || !node.inputs[i].valid())
            return nullptr;
        return &vals[node.inputs[i].index()];
    }
    const Shape *inShape(size_t i) const
    {
        const InferredValue *v = in(i);
        return v && v->shape.rankKnown ? &v->shape : nullptr;
    }
    DataType inType(size_t i) const
    {
        const InferredValue *v = in(i);
        return v ? v->dtype : DataType::Undefined;
    }
    const ConstTensor *inConst(size_t i) const
    {
        const InferredValue *v = in(i);
        return v ? v->constant.get() : nullptr;
    }
    std::optional<std::vector<int64_t>> inInts(size_t i) const
    {
        const ConstTensor *c = inConst(i);
        if (!c)
            return std::nullopt;
        std::vector<int64_t> out(c->size());
        for (size_t k = 0; k < out.size(); ++k)
            out[k] = c->intAt(k);
        return out;
    }
    bool hasOutput(size_t i) const { return i < node.outputs.size() && node.outputs[i].valid(); }
    void set(size_t i, DataType t, Shape s, std::shared_ptr<const ConstTensor> c = nullptr)
    {
        if (!hasOutput(i))
            return;
        InferredValue &v = vals[node.outputs[i].index()];
        if (v.known() && v.shape.isStatic() && !(s.isStatic()))
            return; // keep what we were given
        if (t != DataType::Undefined)
            v.dtype = t;
        if (s.rankKnown)
            v.shape = std::move(s);
        if (c && product(c->dims) == int64_t(c->size()))
            v.constant = std::move(c);
    }
    Status fail(const std::string &problem) const
    {
        return makeError(StatusCode::ParseError, "node '" +
                                                     (node.name.empty() ? node.opType : node.name) +
                                                     "' (" + node.opType + "): " + problem);
    }
};

// ---- helpers of the shape functions (shape_context.cpp) ---------------------------------------
Dim broadcastDim(const Dim &a, const Dim &b);
std::optional<Shape> broadcast(const std::vector<const Shape *> &shapes);
int64_t normAxis(int64_t axis, int64_t rank);
/// Output size of a sliding window (Conv, pools).
Dim windowDim(const Dim &in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
              int64_t padEnd, const std::string &autoPad, bool ceilMode);
std::shared_ptr<ConstTensor> makeConst(DataType t, std::vector<int64_t> dims);
/// Element-wise op over broadcast constants (all of them small); null when not computable.
std::shared_ptr<const ConstTensor>
constBroadcast(const std::vector<const ConstTensor *> &ins, DataType outType, const Shape &outShape,
               const std::function<double(const std::vector<double> &)> &ff,
               const std::function<int64_t(const std::vector<int64_t> &)> &fi);
/// Reduction / Squeeze axes: an input from `firstOpsetAsInput` on, the `axes` attribute before.
std::optional<std::vector<int64_t>> axesOf(ShapeContext &c, size_t inputIndex,
                                           int firstOpsetAsInput);

} // namespace remat::core::ops
