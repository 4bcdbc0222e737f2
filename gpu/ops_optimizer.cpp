// The optimizer step's update ops on the device (core/training/training_options.h): SGD,
// SGD-momentum, Adam and AdamW in float32, in place, as the CPU reference computes them
// (core/exec/cpu/kernels_optimizer.cpp), step 1 from zero state. Adafactor is simulated only.
#include "gpu/kernels/optimizer.h"
#include "gpu/ops_internal.h"

#include <fmt/format.h>

#include <cmath>

namespace remat::gpu {
namespace {

using core::Status;
using core::training::Optimizer;

/// in: {parameter, gradient, state...}, float32, all of the parameter's size.
Status checkOperands(OpContext &c, size_t stateCount)
{
    if (!c.training)
        return c.error("an optimizer update needs the graph's training options");
    if (c.in.size() != 2 + stateCount)
        return c.error(
            fmt::format("expects the parameter, its gradient and {} state tensors", stateCount));
    for (DView *v : c.in) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(v, "optimizer operand"));
        if (v->numel() != c.in[0]->numel())
            return c.error("the parameter, its gradient and its state differ in size");
    }
    return Status::ok();
}

Status sgdOp(OpContext &c, size_t states)
{
    REMAT_RETURN_IF_ERROR(checkOperands(c, states));
    const core::training::TrainingOptions &o = *c.training;
    kernels::SgdParams p;
    p.lr = float(o.hyper.lr);
    p.weightDecay = float(o.hyper.effectiveWeightDecay(o.optimizer));
    p.momentum = float(o.hyper.momentum);
    return c.check(kernels::sgdUpdate(c.rt->stream(), p, c.in[0]->f(), c.in[1]->f(),
                                      states ? c.in[2]->f() : nullptr, c.in[0]->numel()),
                   "sgd update");
}

Status sgdUpdateOp(OpContext &c) { return sgdOp(c, 0); }
Status sgdMomentumUpdateOp(OpContext &c) { return sgdOp(c, 1); }

Status adamUpdateOp(OpContext &c)
{
    REMAT_RETURN_IF_ERROR(checkOperands(c, 2));
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
    return c.check(kernels::adamUpdate(c.rt->stream(), p, c.in[0]->f(), c.in[1]->f(), c.in[2]->f(),
                                       c.in[3]->f(), c.in[0]->numel()),
                   "adam update");
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
