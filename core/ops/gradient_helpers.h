#pragma once
// Internal to core/ops: the building blocks of the gradient rules in the family files
// (differentiability masks, "save this input", the element-wise FLOP pattern) and the rules
// several families share.

#include "core/ops/op_def.h"

#include <algorithm>
#include <optional>

namespace remat::core::ops::rules {

using Spec = BackwardSpec;

inline int64_t elementsOf(const ir::Value *v)
{
    if (!v)
        return 0;
    auto n = v->shape.numElements();
    return n ? *n : 0;
}

// ---- differentiability masks -------------------------------------------------------------
inline bool all(const ir::Node &, size_t) { return true; }
inline bool first(const ir::Node &, size_t pos) { return pos == 0; }
inline bool firstTwo(const ir::Node &, size_t pos) { return pos <= 1; }
inline bool firstThree(const ir::Node &, size_t pos) { return pos <= 2; }
inline bool whereData(const ir::Node &, size_t pos) { return pos == 1 || pos == 2; }
inline bool scatterData(const ir::Node &, size_t pos) { return pos == 0 || pos == 2; }

// ---- helpers -----------------------------------------------------------------------------
inline double numel(const ir::Value *v) { return double(elementsOf(v)); }

/// Adds `pos` to the gradient inputs when it needs a gradient; returns whether it did.
inline bool wantGrad(const RuleContext &c, Spec &s, int pos)
{
    if (!c.needs(size_t(pos)))
        return false;
    s.gradInputs.push_back(pos);
    return true;
}

inline void saveInput(Spec &s, int pos)
{
    if (std::find(s.savedInputs.begin(), s.savedInputs.end(), pos) == s.savedInputs.end())
        s.savedInputs.push_back(pos);
}

inline void saveOutput(Spec &s, int pos)
{
    if (std::find(s.savedOutputs.begin(), s.savedOutputs.end(), pos) == s.savedOutputs.end())
        s.savedOutputs.push_back(pos);
}

/// Gradients for every differentiable input that needs one.
inline void gradsForAll(const RuleContext &c, Spec &s)
{
    for (size_t i = 0; i < c.node->inputs.size(); ++i)
        wantGrad(c, s, int(i));
}

/// Elementwise op: `fwd` FLOPs per output element forward, `bwd` per element and gradient.
inline Spec elementwise(const RuleContext &c, double fwd, double bwd)
{
    Spec s;
    gradsForAll(c, s);
    const double n = numel(c.output(0));
    s.forwardFlops = fwd * n;
    s.backwardFlops = bwd * n * double(s.gradInputs.size());
    return s;
}

// ---- rules shared by several families ------------------------------------------------------
inline Expected<Spec> noGradient(const RuleContext &c)
{
    Spec s;
    s.forwardFlops = numel(c.output(0));
    return s;
}

inline Expected<Spec> layoutOnly(const RuleContext &c)
{
    // Reshape, Transpose, Slice, Concat, Pad ...: data movement; the backward needs shapes only.
    Spec s;
    gradsForAll(c, s);
    s.backwardFlops = 0;
    (void)c;
    return s;
}

inline Expected<Spec> reduction(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.input(0));
    s.backwardFlops = s.gradInputs.empty() ? 0 : numel(c.input(0));
    return s;
}

/// The one axis a Reduce* node reduces (attribute before opset 18, constant input after), if it
/// reduces exactly one.
inline std::optional<int64_t> singleReducedAxis(const RuleContext &c)
{
    const auto axes = reduceAxes(*c.node, c.constantInput(1));
    if (!axes || axes->size() != 1)
        return std::nullopt;
    return (*axes)[0];
}

inline Expected<Spec> reduceExtremum(const RuleContext &c)
{
    // ReduceMax / ReduceMin over one axis is torch.max(x, dim) / min (torch.onnx drops the
    // unused indices output): autograd keeps only the int64 indices, and the backward puts each
    // gradient at its index. Over several axes or all of them (torch.amax, x.max()) the gradient
    // goes to the elements equal to the result, shared evenly among ties: the backward compares
    // the input with the output, so both are saved (as autograd's amax saves self and result).
    Spec s = *reduction(c);
    if (s.gradInputs.empty())
        return s;
    const ir::Value *y = c.output(0);
    if (singleReducedAxis(c) && y && y->shape.rankKnown) {
        s.extras.push_back({1, "indices", ir::DataType::Int64, y->shape});
        s.savedOutputs.push_back(1);
        s.backwardFlops = numel(c.input(0));
        return s;
    }
    saveInput(s, 0);
    saveOutput(s, 0);
    s.backwardFlops = 3 * numel(c.input(0));
    return s;
}

} // namespace remat::core::ops::rules
