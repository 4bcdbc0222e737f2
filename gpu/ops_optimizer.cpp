// The optimizer step's update ops on the device (core/training/training_options.h): SGD,
// SGD-momentum, Adam and AdamW in float32, in place, as the CPU reference computes them
// (core/exec/cpu/kernels_optimizer.cpp), step 1 from zero state. Adafactor is simulated only.
// Half parameters and state reach the kernels widened to float32 and are rounded back by the
// backend. With float32 master weights (operands {parameter, gradient, master, state...}) the
// update runs on the master and the parameter receives the master's value (rounded to its half
// type by the backend), as the CPU reference and DeepSpeed's / Megatron's bf16 optimizers do.
#include "gpu/kernels/optimizer.h"
#include "gpu/ops_internal.h"

#include <fmt/format.h>

#include <cmath>

namespace remat::gpu {
namespace {

using core::Status;
using core::training::Optimizer;

/// The operands of one update: the weights it updates (the master copy where there is one) and
/// the first state tensor's position.
struct Operands
{
    float *weights = nullptr; ///< updated in place: the master weights, else the parameter
    const float *grad = nullptr;
    size_t state = 2; ///< index in c.in of the first state tensor
    bool master = false;
};

/// in: {parameter, gradient, [master weight,] state...}, float32, all of the parameter's size.
core::Expected<Operands> checkOperands(OpContext &c, size_t stateCount)
{
    if (!c.training)
        return c.error("an optimizer update needs the graph's training options");
    if (c.in.size() != 2 + stateCount && c.in.size() != 3 + stateCount)
        return c.error(fmt::format(
            "expects the parameter, its gradient, an optional master weight and {} state tensors",
            stateCount));
    for (DView *v : c.in) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(v, "optimizer operand"));
        if (v->numel() != c.in[0]->numel())
            return c.error("the parameter, its gradient and its state differ in size");
    }
    Operands o;
    o.master = c.in.size() == 3 + stateCount;
    o.weights = o.master ? c.in[2]->f() : c.in[0]->f();
    o.grad = c.in[1]->f();
    o.state = o.master ? 3 : 2;
    return o;
}

/// With master weights: the parameter takes the updated master's value.
Status copyMasterToParameter(OpContext &c, const Operands &o)
{
    if (!o.master)
        return Status::ok();
    return copyDevice(c, c.in[0]->data, o.weights, c.in[0]->numel() * 4);
}

Status sgdOp(OpContext &c, size_t states)
{
    REMAT_ASSIGN_OR_RETURN(const Operands ops, checkOperands(c, states));
    const core::training::TrainingOptions &o = *c.training;
    kernels::SgdParams p;
    p.lr = float(o.hyper.lr);
    p.weightDecay = float(o.hyper.effectiveWeightDecay(o.optimizer));
    p.momentum = float(o.hyper.momentum);
    REMAT_RETURN_IF_ERROR(
        c.check(kernels::sgdUpdate(c.rt->stream(), p, ops.weights, ops.grad,
                                   states ? c.in[ops.state]->f() : nullptr, c.in[0]->numel()),
                "sgd update"));
    return copyMasterToParameter(c, ops);
}

Status sgdUpdateOp(OpContext &c) { return sgdOp(c, 0); }
Status sgdMomentumUpdateOp(OpContext &c) { return sgdOp(c, 1); }

Status adamUpdateOp(OpContext &c)
{
    REMAT_ASSIGN_OR_RETURN(const Operands ops, checkOperands(c, 2));
    const core::training::TrainingOptions &o = *c.training;
    const core::training::OptimizerHyper &h = o.hyper;
    const double wd = h.effectiveWeightDecay(o.optimizer), step = 1;
    kernels::AdamParams p;
    p.decoupled = o.optimizer == Optimizer::AdamW;
    p.stepSize = float(h.lr / (1 - std::pow(h.beta1, step)));
    p.bc2Sqrt = float(std::sqrt(1 - std::pow(h.beta2, step)));
    p.beta1 = float(h.beta1);
    p.beta2 = float(h.beta2);
    p.oneMinusBeta1 = float(1 - h.beta1);
    p.oneMinusBeta2 = float(1 - h.beta2);
    p.eps = float(h.eps);
    p.weightDecay = float(wd);
    p.decay = float(1 - h.lr * wd);
    REMAT_RETURN_IF_ERROR(
        c.check(kernels::adamUpdate(c.rt->stream(), p, ops.weights, ops.grad, c.in[ops.state]->f(),
                                    c.in[ops.state + 1]->f(), c.in[0]->numel()),
                "adam update"));
    return copyMasterToParameter(c, ops);
}

} // namespace

void addOptimizerOps(OpTable &t)
{
    t["SgdUpdate"] = sgdUpdateOp;
    t["SgdMomentumUpdate"] = sgdMomentumUpdateOp;
    t["AdamUpdate"] = adamUpdateOp;
    t["AdamWUpdate"] = adamUpdateOp;
}

} // namespace remat::gpu
