// The optimizer step's update ops (training_options.h), updating a parameter and its state in
// place in float32 with torch.optim's single-tensor arithmetic (torch 1.13, foreach=False,
// maximize=False), step by step in the same order and precision, so the updated weights equal
// torch.optim's on the same gradients. The state starts at zero: each executed step is the first
// (SGD's momentum buffer then equals torch's clone of the gradient exactly).
// Half parameters and state (float16 / bfloat16) reach the kernels widened to float32 and are
// rounded back by the backend after the update. With float32 master weights (operands {parameter,
// gradient, master, state...}) the update runs on the master and the half parameter receives the
// master's rounded value, as DeepSpeed's and Megatron's bf16 optimizers copy it back.
#include "core/exec/cpu/kernel_util.h"

#include <cmath>

namespace remat::core::exec::cpu {
namespace {

using training::Optimizer;

/// The operands of one update: the weights it updates (the master copy where there is one) and
/// the first state tensor's position.
struct Operands
{
    float *weights = nullptr; ///< updated in place: the master weights, else the parameter
    const float *grad = nullptr;
    size_t state = 2; ///< index in c.in of the first state tensor
    bool master = false;
};

/// in: {parameter, gradient, [master weight,] state...}; checks that every operand is a float32
/// tensor of the parameter's size and that the graph's options are there.
Expected<Operands> checkOperands(KernelContext &c, size_t stateCount)
{
    if (!c.training)
        return c.error("an optimizer update needs the graph's training options");
    if (c.in.size() != 2 + stateCount && c.in.size() != 3 + stateCount)
        return c.error(fmt::format(
            "expects the parameter, its gradient, an optional master weight and {} state tensors",
            stateCount));
    const int64_t n = c.in[0] ? c.in[0]->numel() : 0;
    for (size_t k = 0; k < c.in.size(); ++k) {
        REMAT_RETURN_IF_ERROR(c.require(c.in[k], k == 0 ? "parameter" : "operand"));
        if (c.in[k]->dtype != ir::DataType::Float)
            return c.error("the update runs in float32 only");
        if (c.in[k]->numel() != n)
            return c.error("the parameter, its gradient and its state differ in size");
    }
    Operands o;
    o.master = c.in.size() == 3 + stateCount;
    o.weights = o.master ? c.in[2]->f() : c.in[0]->f();
    o.grad = c.in[1]->f();
    o.state = o.master ? 3 : 2;
    return o;
}

/// With master weights: the parameter takes the updated master's value (rounded to its dtype by
/// the backend when it is half).
void copyMasterToParameter(KernelContext &c, const Operands &o)
{
    if (!o.master)
        return;
    float *p = c.in[0]->f();
    for (int64_t i = 0, n = c.in[0]->numel(); i < n; ++i)
        p[i] = o.weights[i];
}

Status sgdUpdate(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(const Operands ops, checkOperands(c, 0));
    const training::TrainingOptions &o = *c.training;
    const float lr = float(o.hyper.lr), wd = float(o.hyper.effectiveWeightDecay(o.optimizer));
    float *p = ops.weights;
    const float *g = ops.grad;
    for (int64_t i = 0, n = c.in[0]->numel(); i < n; ++i) {
        const float d = wd != 0 ? g[i] + wd * p[i] : g[i];
        p[i] = p[i] + (-lr) * d;
    }
    copyMasterToParameter(c, ops);
    return Status::ok();
}

Status sgdMomentumUpdate(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(const Operands ops, checkOperands(c, 1));
    const training::TrainingOptions &o = *c.training;
    const float lr = float(o.hyper.lr), wd = float(o.hyper.effectiveWeightDecay(o.optimizer));
    const float momentum = float(o.hyper.momentum);
    float *p = ops.weights;
    const float *g = ops.grad;
    float *buf = c.in[ops.state]->f();
    for (int64_t i = 0, n = c.in[0]->numel(); i < n; ++i) {
        const float d = wd != 0 ? g[i] + wd * p[i] : g[i];
        buf[i] = buf[i] * momentum + d; // dampening 0
        p[i] = p[i] + (-lr) * buf[i];
    }
    copyMasterToParameter(c, ops);
    return Status::ok();
}

/// Adam and AdamW (decoupled weight decay), step 1.
Status adamUpdate(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(const Operands ops, checkOperands(c, 2));
    const training::TrainingOptions &o = *c.training;
    const training::OptimizerHyper &h = o.hyper;
    const bool decoupled = o.optimizer == Optimizer::AdamW;
    const double wd = h.effectiveWeightDecay(o.optimizer);
    const double step = 1;
    const double biasCorrection1 = 1 - std::pow(h.beta1, step);
    const double biasCorrection2 = 1 - std::pow(h.beta2, step);
    const float stepSize = float(h.lr / biasCorrection1);
    const float bc2Sqrt = float(std::sqrt(biasCorrection2));
    const float beta1 = float(h.beta1), beta2 = float(h.beta2);
    const float oneMinusBeta1 = float(1 - h.beta1), oneMinusBeta2 = float(1 - h.beta2);
    const float eps = float(h.eps), decay = float(1 - h.lr * wd), wdf = float(wd);
    float *p = ops.weights;
    const float *g = ops.grad;
    float *m = c.in[ops.state]->f(), *v = c.in[ops.state + 1]->f();
    for (int64_t i = 0, n = c.in[0]->numel(); i < n; ++i) {
        float grad = g[i];
        if (decoupled)
            p[i] = p[i] * decay;
        else if (wdf != 0)
            grad = grad + wdf * p[i];
        m[i] = m[i] * beta1 + oneMinusBeta1 * grad;
        v[i] = v[i] * beta2 + oneMinusBeta2 * grad * grad;
        const float denom = std::sqrt(v[i]) / bc2Sqrt + eps;
        p[i] = p[i] + (-stepSize) * m[i] / denom;
    }
    copyMasterToParameter(c, ops);
    return Status::ok();
}

} // namespace

void addOptimizerKernels(KernelTable &t)
{
    t["SgdUpdate"] = sgdUpdate;
    t["SgdMomentumUpdate"] = sgdMomentumUpdate;
    t["AdamUpdate"] = adamUpdate;
    t["AdamWUpdate"] = adamUpdate;
}

} // namespace remat::core::exec::cpu
