// The training-step ops that have no ONNX node: Loss (L = sum(output * R), seed dL/doutput = R)
// and Accumulate (the sum of gradient partials).
#include "gpu/kernels/elementwise.h"
#include "gpu/ops_internal.h"

#include <fmt/format.h>

namespace remat::gpu {
namespace {

using core::Status;
using namespace kernels;

/// in: (output, R) pairs; out: the scalar loss, then one seed per pair (= R) where present.
Status lossOp(OpContext &c)
{
    if (c.in.size() < 2 || c.in.size() % 2 != 0)
        return c.error("Loss expects (output, R) pairs");
    DView *loss = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(loss, "loss"));
    for (size_t p = 0; p + 1 < c.in.size(); p += 2) {
        DView *y = c.in[p], *r = c.in[p + 1];
        REMAT_RETURN_IF_ERROR(c.requireFloat(y, "output"));
        REMAT_RETURN_IF_ERROR(c.requireFloat(r, "R"));
        if (y->numel() != r->numel())
            return c.error("output and R differ in size");
        const std::vector<int64_t> flat{y->numel()};
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::DyTimesA, flat, y->f(), flat, r->data, {},
                                            nullptr, {1}, loss->f(), 1.f, p > 0));
        if (DView *seed = c.output(1 + p / 2)) {
            if (seed->numel() != r->numel())
                return c.error("seed gradient and R differ in size");
            REMAT_RETURN_IF_ERROR(copyDevice(c, seed->data, r->data, r->numel() * 4));
        }
    }
    return Status::ok();
}

Status accumulateOp(OpContext &c)
{
    DView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "sum"));
    std::vector<const float *> parts;
    for (DView *x : c.in) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "partial"));
        if (x->numel() != y->numel())
            return c.error("partials differ in size from the sum");
        parts.push_back(x->f());
    }
    if (parts.empty())
        return c.error("nothing to accumulate");
    // Partials are added in the op's input order, eight at a time: the same order every run.
    size_t at = 0;
    bool first = true;
    while (at < parts.size()) {
        std::vector<const float *> chunk;
        if (!first)
            chunk.push_back(y->f());
        while (at < parts.size() && chunk.size() < 8)
            chunk.push_back(parts[at++]);
        REMAT_RETURN_IF_ERROR(
            c.check(sumArrays(c.rt->stream(), chunk.data(), int(chunk.size()), y->f(), y->numel()),
                    "accumulate"));
        first = false;
    }
    return Status::ok();
}

} // namespace

void addLossOps(OpTable &t)
{
    t["Loss"] = lossOp;
    t["Accumulate"] = accumulateOp;
}

} // namespace remat::gpu
