// Reductions (onnx/defs/reduction): Reduce*, ArgMax / ArgMin.
#include "core/ops/families.h"
#include "core/ops/shape_context.h"

namespace remat::core::ops {
namespace {

using namespace rules;

// ---- shape functions -------------------------------------------------------------------------
Status inferReduce(ShapeContext &c, int firstOpsetAxesInput)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    auto axes = axesOf(c, 1, firstOpsetAxesInput);
    if (!axes)
        return Status::ok();
    const bool keep = c.node.attrInt("keepdims", 1) != 0;
    const int64_t r = int64_t(x->rank());
    std::vector<bool> reduce(x->rank(), false);
    if (axes->empty()) {
        if (c.node.attrInt("noop_with_empty_axes", 0) != 0) {
            c.set(0, c.inType(0), *x);
            return Status::ok();
        }
        reduce.assign(x->rank(), true);
    }
    for (int64_t a : *axes) {
        a = normAxis(a, r);
        if (a < 0 || a >= r)
            return c.fail("axis out of range");
        reduce[size_t(a)] = true;
    }
    Shape out;
    for (size_t i = 0; i < x->rank(); ++i) {
        if (!reduce[i])
            out.dims.push_back(x->dims[i]);
        else if (keep)
            out.dims.push_back(Dim(1));
    }
    const DataType t =
        (c.node.opType == "ArgMax" || c.node.opType == "ArgMin") ? DataType::Int64 : c.inType(0);
    c.set(0, t, out);
    return Status::ok();
}

Status reduceSumShape(ShapeContext &c) { return inferReduce(c, 13); }
/// The other reductions took `axes` as an input only from opset 18.
Status reduceShape(ShapeContext &c) { return inferReduce(c, 18); }

Status argMaxShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const int64_t axis = normAxis(c.node.attrInt("axis", 0), int64_t(x->rank()));
    if (axis < 0 || axis >= int64_t(x->rank()))
        return c.fail("axis out of range");
    Shape out;
    for (size_t i = 0; i < x->rank(); ++i) {
        if (int64_t(i) != axis)
            out.dims.push_back(x->dims[i]);
        else if (c.node.attrInt("keepdims", 1))
            out.dims.push_back(Dim(1));
    }
    c.set(0, DataType::Int64, out);
    return Status::ok();
}

// ---- gradient rules --------------------------------------------------------------------------

Expected<Spec> reduceMean(const RuleContext &c)
{
    // torch 1.13's mean over given dims (MeanBackward1: x.mean(-1), RMSNorm's variance, adaptive
    // pooling to 1) keeps its input, although only its sizes are read; the mean of everything
    // (MeanBackward0, exported without axes) keeps nothing.
    Spec s = *rules::reduction(c);
    const bool axesGiven = c.node->attribute("axes") != nullptr || c.input(1) != nullptr;
    if (!s.gradInputs.empty() && axesGiven)
        saveInput(s, 0);
    return s;
}

/// ReduceSumSquare (x.pow(2).sum(): pow keeps its input), ReduceL2 and ReduceL1 (torch.norm:
/// linalg_vector_norm keeps its input and its result; L2's backward reads both).
Expected<Spec> reduceSumSquare(const RuleContext &c)
{
    Spec s = *reduction(c);
    s.forwardFlops = 2 * numel(c.input(0));
    if (!s.gradInputs.empty()) {
        saveInput(s, 0);
        s.backwardFlops = 2 * numel(c.input(0));
    }
    return s;
}

Expected<Spec> reduceNorm(const RuleContext &c)
{
    Spec s = *reduction(c);
    s.forwardFlops = 2 * numel(c.input(0));
    if (!s.gradInputs.empty()) {
        saveInput(s, 0);
        saveOutput(s, 0);
        s.backwardFlops = 3 * numel(c.input(0));
    }
    return s;
}
} // namespace

void addReductionOps(std::vector<OpDef> &t)
{
    t.push_back({.type = "ReduceSum",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceSumShape,
                 .differentiable = first,
                 .derive = reduction});
    t.push_back({.type = "ReduceMean",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceMean});
    t.push_back({.type = "ReduceMax",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceExtremum});
    t.push_back({.type = "ReduceMin",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceExtremum});
    t.push_back({.type = "ReduceProd",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .flops = perInput});
    t.push_back({.type = "ReduceL1",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceNorm});
    t.push_back({.type = "ReduceL2",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceNorm});
    t.push_back({.type = "ReduceLogSum",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .flops = perInput});
    t.push_back({.type = "ReduceLogSumExp",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .flops = perInput});
    t.push_back({.type = "ReduceSumSquare",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceSumSquare});
    t.push_back({.type = "ArgMax",
                 .family = OpFamily::Pooling,
                 .inferShape = argMaxShape,
                 .flops = perInput});
    t.push_back({.type = "ArgMin",
                 .family = OpFamily::Pooling,
                 .inferShape = argMaxShape,
                 .flops = perInput});
}

} // namespace remat::core::ops
