#pragma once
// What a kernel sees of one op call, for every backend: operands aligned to the ONNX slots of the
// forward node (operand_slots.h), the node's attributes, and small operands read on the host.
// The CPU reference's KernelContext (views of host memory) and the CUDA backend's OpContext (views
// of device memory) are this template with their own view type; bindCall() fills either from an
// OpCall, so both backends bind operands the same way.
//   struct KernelContext : OperandContext<KView> { ... hostInts reads in place ... };
//   REMAT_RETURN_IF_ERROR(bindCall(ctx, slots, call, views, makeView));
//   REMAT_ASSIGN_OR_RETURN(SliceGeometry g, ctx.sliceGeometry(x->shape));

#include "core/exec/backend.h"
#include "core/exec/operand_slots.h"
#include "core/exec/slice_geometry.h"
#include "core/exec/static_eval.h"
#include "core/ir/graph.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace remat::core::exec {

/// Operands of one kernel call, aligned to ONNX slots of the forward node (null: absent).
///  - forward kernels: `in` = node inputs, `out` = node outputs (BatchNormalization and
///    LayerNormalization also write saved statistics at output slots 3, 4 / 1, 2).
///  - backward kernels: `in` / `out` = the forward inputs / outputs the backward reads,
///    `dOut` = gradients of forward outputs, `dIn` = gradients of forward inputs to write.
///  - Loss / Accumulate: `in`, `out` in the training op's order.
///  - optimizer updates ("<Type>Update", Phase::Optimizer): `in` in the op's order {parameter,
///    gradient, state...}, updated in place; hyperparameters in `training`.
/// `View` has `data` (null: not present) and `shape`.
template <typename View> struct OperandContext
{
    const ir::Node *node = nullptr; ///< attributes; null for Loss / Accumulate
    std::string opName;             ///< for messages
    std::vector<View *> in, out, dOut, dIn;
    /// Static shapes of the forward node's inputs and outputs (every slot, present or not), so a
    /// backward kernel knows the sizes of operands it was not given (Concat, Slice, Split).
    std::vector<std::vector<int64_t>> inShapes, outShapes;
    bool recompute = false;
    uint64_t seed = 0;
    /// The training options of the graph (optimizer update ops read their hyperparameters).
    const training::TrainingOptions *training = nullptr;

    OperandContext() = default;
    OperandContext(const OperandContext &) = default;
    OperandContext &operator=(const OperandContext &) = default;
    virtual ~OperandContext() = default;

    View *input(size_t k) const { return k < in.size() ? in[k] : nullptr; }
    View *output(size_t k) const { return k < out.size() ? out[k] : nullptr; }
    View *outputGrad(size_t k) const { return k < dOut.size() ? dOut[k] : nullptr; }
    View *inputGrad(size_t k) const { return k < dIn.size() ? dIn[k] : nullptr; }

    int64_t attrInt(const char *name, int64_t fallback) const
    {
        return node ? node->attrInt(name, fallback) : fallback;
    }
    double attrFloat(const char *name, double fallback) const
    {
        return node ? node->attrFloat(name, fallback) : fallback;
    }
    std::vector<int64_t> attrInts(const char *name, std::vector<int64_t> fallback = {}) const
    {
        return node ? node->attrInts(name, std::move(fallback)) : fallback;
    }
    std::string attrString(const char *name, std::string fallback = {}) const
    {
        return node ? node->attrString(name, std::move(fallback)) : fallback;
    }
    bool hasAttr(const char *name) const { return node && node->attribute(name) != nullptr; }

    /// InvalidArgument "<op>: <what>".
    Status error(const std::string &what) const
    {
        return makeError(StatusCode::InvalidArgument, fmt::format("{}: {}", opName, what));
    }
    /// Error unless `v` is present (naming `what`). An empty tensor is present without data
    /// (Swin's window arithmetic slices shapes down to zero elements).
    Status require(const View *v, const char *what) const
    {
        if (v && (v->data || v->numel() == 0))
            return Status::ok();
        return error(fmt::format("missing operand: {}", what));
    }

    /// The values of a small operand (shape vectors, indices, bounds) on the host: read in place
    /// on the CPU, copied from the device (and cached for constants) on CUDA.
    virtual Expected<std::vector<int64_t>> hostInts(const View &v) const = 0;
    virtual Expected<std::vector<double>> hostDoubles(const View &v) const = 0;

    /// Slice's starts, ends, axes, steps: inputs 1..4 from opset 10, attributes before.
    Expected<SliceGeometry> sliceGeometryFor(const std::vector<int64_t> &dataShape) const
    {
        std::vector<int64_t> starts, ends, axes, steps;
        if (input(1)) {
            REMAT_ASSIGN_OR_RETURN(starts, hostInts(*input(1)));
            if (!input(2))
                return error("missing ends");
            REMAT_ASSIGN_OR_RETURN(ends, hostInts(*input(2)));
            if (input(3)) {
                REMAT_ASSIGN_OR_RETURN(axes, hostInts(*input(3)));
            }
            if (input(4)) {
                REMAT_ASSIGN_OR_RETURN(steps, hostInts(*input(4)));
            }
        } else {
            starts = attrInts("starts");
            ends = attrInts("ends");
            axes = attrInts("axes");
        }
        auto g = sliceGeometry(std::move(starts), std::move(ends), std::move(axes),
                               std::move(steps), dataShape);
        if (!g)
            return error(g.status().message());
        return g;
    }
};

/// Static sizes of `values` in `forward` ({} where unknown or absent).
std::vector<std::vector<int64_t>> staticShapesOf(const ir::Graph *forward,
                                                 const std::vector<ValueId> &values);

/// Binds an OpCall's operands into `ctx` through the op's slots: `makeView(arg, view)` makes each
/// operand's view (an error for a buffer that is not resident); views with null data are left
/// absent. Plain operands (Loss, Accumulate) keep their order. `views` owns the views and must
/// outlive the kernel call.
template <typename View, typename MakeView>
Status bindCall(OperandContext<View> &ctx, const OperandSlots &b, const OpCall &call,
                std::vector<View> &views, MakeView &&makeView)
{
    const training::Op &op = *call.op;
    ctx.node = call.node;
    ctx.opName = op.name.empty() ? op.type : op.name;
    ctx.recompute = call.recompute;
    ctx.seed = call.seed;
    ctx.training = call.graph ? &call.graph->info().training : nullptr;
    ctx.in.assign(size_t(b.inSlots), nullptr);
    ctx.out.assign(size_t(b.outSlots), nullptr);
    ctx.dOut.assign(size_t(b.dOutSlots), nullptr);
    ctx.dIn.assign(size_t(b.dInSlots), nullptr);
    views.assign(call.inputs.size() + call.outputs.size(), View{});
    size_t v = 0;
    std::vector<View *> plainIn, plainOut;
    auto place = [&](const Slot &slot, const TensorArg &arg, std::vector<View *> &plain) -> Status {
        REMAT_RETURN_IF_ERROR(makeView(arg, views[v]));
        View *p = views[v].data ? &views[v] : nullptr;
        ++v;
        switch (slot.where) {
        case Slot::Plain: plain.push_back(p); break;
        case Slot::In: ctx.in[size_t(slot.index)] = p; break;
        case Slot::Out: ctx.out[size_t(slot.index)] = p; break;
        case Slot::DOut: ctx.dOut[size_t(slot.index)] = p; break;
        case Slot::DIn: ctx.dIn[size_t(slot.index)] = p; break;
        }
        return Status::ok();
    };
    for (size_t i = 0; i < call.inputs.size() && i < b.inputs.size(); ++i)
        REMAT_RETURN_IF_ERROR(place(b.inputs[i], call.inputs[i], plainIn));
    for (size_t j = 0; j < call.outputs.size() && j < b.outputs.size(); ++j)
        REMAT_RETURN_IF_ERROR(place(b.outputs[j], call.outputs[j], plainOut));
    if (!plainIn.empty())
        ctx.in = plainIn;
    if (!plainOut.empty())
        ctx.out = plainOut;
    if (call.node) {
        ctx.inShapes = staticShapesOf(call.forward, call.node->inputs);
        ctx.outShapes = staticShapesOf(call.forward, call.node->outputs);
    }
    return Status::ok();
}

/// Constant operands the training graph did not pass (Slice starts, Pad pads, Clip bounds) are
/// data-independent: each is evaluated from the model and handed to `makeConst(hostTensor, view)`
/// (the CPU points at the host data, CUDA uploads it), then placed at its input slot. Weights
/// (Parameters) always come through the schedule. `constViews` must outlive the kernel call.
template <typename View, typename MakeConst>
Status fillStaticOperands(OperandContext<View> &ctx, const OpCall &call, StaticEvaluator *evaluator,
                          std::vector<View> &constViews, MakeConst &&makeConst)
{
    if (!call.node || !call.forward || !evaluator)
        return Status::ok();
    const ir::Node &node = *call.node;
    constViews.reserve(node.inputs.size()); // no reallocation: ctx.in points into it
    for (size_t k = 0; k < node.inputs.size() && k < ctx.in.size(); ++k) {
        if (ctx.in[k] || !node.inputs[k].valid() || !evaluator->isStatic(node.inputs[k]))
            continue;
        if (const ir::ValueKind kind = call.forward->value(node.inputs[k]).kind;
            kind == ir::ValueKind::Parameter || kind == ir::ValueKind::Frozen)
            continue;
        auto t = evaluator->evaluate(node.inputs[k]);
        if (!t)
            continue;
        View view{};
        REMAT_RETURN_IF_ERROR(makeConst(**t, view));
        constViews.push_back(std::move(view));
        ctx.in[k] = &constViews.back();
    }
    return Status::ok();
}

} // namespace remat::core::exec
