// Reductions (onnx/defs/reduction): Reduce*, ArgMax / ArgMin; TopK (onnx/defs/math), which
// reduces an axis to its k largest or smallest.
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

/// TopK: Values (the input's dtype) and Indices (int64), the axis cut to k (opset 1: attribute
/// `k`; 10 on: a one-element int64 input K).
Status topKShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const int64_t axis = normAxis(c.node.attrInt("axis", -1), int64_t(x->rank()));
    if (axis < 0 || axis >= int64_t(x->rank()))
        return c.fail("axis out of range");
    std::optional<int64_t> k;
    if (c.node.inputs.size() > 1) {
        if (auto ks = c.inInts(1); ks && ks->size() == 1)
            k = (*ks)[0];
    } else if (c.node.attribute("k")) {
        k = c.node.attrInt("k", 0);
    }
    Shape out = *x;
    if (k) {
        if (*k < 0)
            return c.fail("K is negative");
        const Dim &n = x->dims[size_t(axis)];
        if (n.isStatic() && *k > n.value)
            return c.fail("K (" + std::to_string(*k) + ") is larger than the axis (" +
                          std::to_string(n.value) + ")");
        out.dims[size_t(axis)] = Dim(*k);
    } else {
        out.dims[size_t(axis)] = Dim(); // unknown until K is
    }
    c.set(0, c.inType(0), out);
    c.set(1, DataType::Int64, out);
    return Status::ok();
}

// ---- gradient rules --------------------------------------------------------------------------

/// TopK (torch.topk): the gradient of Values scatters back to where Indices point, the rest is
/// zero; torch 1.13's topk keeps the indices only (value_selecting_reduction_backward).
Expected<Spec> topK(const RuleContext &c)
{
    Spec s;
    s.forwardFlops = numel(c.input(0)) * 2; // a selection pass (n log k compares, as a floor)
    const bool valuesGrad = c.outputHasGrad.empty() || c.outputHasGrad[0];
    if (valuesGrad && wantGrad(c, s, 0)) {
        saveOutput(s, 1);
        s.backwardFlops = numel(c.output(0));
    }
    return s;
}

/// Variance (torch.var / torch.std: not an ONNX op; the builder fuses torch's export, the mean,
/// the squared deviation, its mean and the correction, into it): VarBackward keeps its input.
Expected<Spec> variance(const RuleContext &c)
{
    Spec s = *rules::reduction(c);
    s.forwardFlops = 4 * numel(c.input(0));
    if (!s.gradInputs.empty()) {
        saveInput(s, 0);
        s.backwardFlops = 4 * numel(c.input(0));
    }
    return s;
}

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
                 .derive = reduction,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "ReduceMean",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceMean});
    t.push_back({.type = "Variance",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = variance});
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
                 .flops = perInput,
                 .autocast = {.cuda = AutocastPolicy::Fp32, .cpu = AutocastPolicy::Fp32}});
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
                 .flops = perInput,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    // torch.logsumexp (an NT-Xent loss): LogsumexpBackward0 keeps its input and its result
    t.push_back({.type = "ReduceLogSumExp",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceNorm,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
    t.push_back({.type = "ReduceSumSquare",
                 .family = OpFamily::Pooling,
                 .inferShape = reduceShape,
                 .differentiable = first,
                 .derive = reduceSumSquare});
    // ArgMax / ArgMin: integer results, no gradient; the builder takes them as forward-only ops
    // (a classifier's accuracy, a tokenizer's argmax inside the step).
    t.push_back({.type = "ArgMax",
                 .family = OpFamily::Pooling,
                 .inferShape = argMaxShape,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .flops = perInput});
    t.push_back({.type = "ArgMin",
                 .family = OpFamily::Pooling,
                 .inferShape = argMaxShape,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .flops = perInput});
    t.push_back({.type = "TopK",
                 .family = OpFamily::Pooling,
                 .inferShape = topKShape,
                 .differentiable = first,
                 .derive = topK});
}

} // namespace remat::core::ops
