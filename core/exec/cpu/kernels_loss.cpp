// The training-step ops that have no ONNX node: Loss (L = sum(output * R), and the seed gradient
// dL/doutput = R) and Accumulate (the sum of gradient partials, in input order, in double).
#include "core/exec/cpu/kernel_util.h"

namespace remat::core::exec::cpu {
namespace {

/// in: (output, R) pairs; out: the scalar loss, then optionally one seed per pair (= R).
Status lossKernel(KernelContext &c)
{
    if (c.in.size() < 2 || c.in.size() % 2 != 0)
        return c.error("Loss expects (output, R) pairs");
    KView *loss = c.output(0);
    std::vector<KView *> seeds(c.out.size() > 1 ? c.out.begin() + 1 : c.out.end(), c.out.end());
    REMAT_RETURN_IF_ERROR(c.require(loss, "loss"));
    double total = 0;
    for (size_t p = 0; p + 1 < c.in.size(); p += 2) {
        KView *y = c.in[p], *r = c.in[p + 1];
        REMAT_RETURN_IF_ERROR(c.require(y, "output"));
        REMAT_RETURN_IF_ERROR(c.require(r, "R"));
        if (y->numel() != r->numel())
            return c.error("output and R differ in size");
        for (int64_t i = 0; i < y->numel(); ++i)
            total += double(y->f()[i]) * double(r->f()[i]);
        if (p / 2 < seeds.size() && seeds[p / 2]) {
            if (seeds[p / 2]->numel() != r->numel())
                return c.error("seed gradient and R differ in size");
            copyBytes(*r, *seeds[p / 2]);
        }
    }
    if (loss->dtype == ir::DataType::Double)
        loss->as<double>()[0] = total;
    else
        loss->f()[0] = float(total);
    return Status::ok();
}

Status accumulateKernel(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "sum"));
    const int64_t n = y->numel();
    std::vector<double> acc(size_t(n), 0.0);
    for (KView *x : c.in) {
        REMAT_RETURN_IF_ERROR(c.require(x, "partial"));
        if (x->numel() != n)
            return c.error("partials differ in size");
        for (int64_t i = 0; i < n; ++i)
            acc[size_t(i)] += x->f()[i];
    }
    for (int64_t i = 0; i < n; ++i)
        y->f()[i] = float(acc[size_t(i)]);
    return Status::ok();
}

} // namespace

void addLossKernels(KernelTable &t)
{
    t["Loss"] = lossKernel;
    t["Accumulate"] = accumulateKernel;
}

} // namespace remat::core::exec::cpu
