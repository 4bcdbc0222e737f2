#include "gpu/cuda_ops.h"

#include "core/ir/graph.h"
#include "gpu/cuda_status.h"
#include "gpu/ops_internal.h"

#include <fmt/format.h>

#include <algorithm>

namespace remat::gpu {

using core::makeError;
using core::Status;
using core::StatusCode;

Status OpContext::unsupported(const std::string &what) const
{
    return makeError(StatusCode::Unsupported, fmt::format("{} ({}): {}", opName, opType, what));
}

Status OpContext::check(cudaError_t err, const char *what) const
{
    return cudaStatus(err, fmt::format("{} ({}): {}", opName, opType, what));
}

Status OpContext::checkBlas(cublasStatus_t err, const char *what) const
{
    return cublasStatus(err, fmt::format("{} ({}): {}", opName, opType, what));
}

Status OpContext::requireFloat(const DView *v, const char *what) const
{
    REMAT_RETURN_IF_ERROR(require(v, what));
    if (v->dtype != core::ir::DataType::Float)
        return unsupported(fmt::format("{} is {}, the CUDA kernels are float32", what,
                                       core::ir::dataTypeName(v->dtype)));
    return Status::ok();
}

namespace {

const OpTable &table()
{
    static const OpTable t = [] {
        OpTable k;
        addElementwiseOps(k);
        addShapeOps(k);
        addNnOps(k);
        addBlasOps(k);
        addConvOps(k);
        addRecurrentOps(k);
        addLossOps(k);
        addOptimizerOps(k);
        addAttentionOps(k);
        return k;
    }();
    return t;
}

} // namespace

const OpFn *findCudaOp(const std::string &opType)
{
    const auto it = table().find(opType);
    return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> cudaOpTypes()
{
    std::vector<std::string> out;
    for (const auto &entry : table())
        out.push_back(entry.first);
    return out;
}

core::Expected<core::exec::WindowAttributes>
windowOf(const OpContext &c, const std::vector<int64_t> &x, std::vector<int64_t> kernel)
{
    const size_t sp = x.size() >= 2 ? x.size() - 2 : 0;
    auto a = core::exec::resolveWindow(
        x, std::move(kernel), c.attrInts("strides", std::vector<int64_t>(sp, 1)),
        c.attrInts("dilations", std::vector<int64_t>(sp, 1)),
        c.attrInts("pads", std::vector<int64_t>(2 * sp, 0)), c.attrString("auto_pad", "NOTSET"));
    if (!a)
        return c.error(a.status().message());
    return a;
}

int64_t numelOf(const std::vector<int64_t> &shape)
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

Status reduceTermsTo(const OpContext &c, kernels::GradTerm term,
                     const std::vector<int64_t> &dyShape, const float *dy,
                     const std::vector<int64_t> &aShape, const void *a,
                     const std::vector<int64_t> &bShape, const void *b,
                     const std::vector<int64_t> &target, float *out, float scale, bool accumulate)
{
    using namespace kernels;
    const size_t r = dyShape.size();
    if (target.size() > r)
        return c.error("gradient target has a higher rank than dY");
    const std::vector<int64_t> sDy = contiguousStrides(dyShape);
    const std::vector<int64_t> sA =
        a ? broadcastStrides(aShape, dyShape) : std::vector<int64_t>(r, 0);
    const std::vector<int64_t> sB =
        b ? broadcastStrides(bShape, dyShape) : std::vector<int64_t>(r, 0);
    std::vector<int64_t> keptDims(r, 1), redDims(r, 1);
    const size_t off = r - target.size();
    for (size_t k = 0; k < r; ++k) {
        const int64_t t = k < off ? 1 : target[k - off];
        if (t == dyShape[k])
            keptDims[k] = t;
        else if (t == 1)
            redDims[k] = dyShape[k];
        else
            return c.error(fmt::format("gradient shape [{}] does not broadcast to [{}]",
                                       fmt::join(target, ","), fmt::join(dyShape, ",")));
    }
    NdIter kept, red;
    if (!buildIter(keptDims, {sDy, sA, sB}, kept) || !buildIter(redDims, {sDy, sA, sB}, red))
        return c.unsupported("tensor rank above 8");
    return c.check(reduceTerms(c.rt->stream(), term, kept, red, dy, a, b, out, scale, accumulate),
                   "reduce");
}

Status reduceToShape(const OpContext &c, const float *src, const std::vector<int64_t> &srcShape,
                     float *dst, const std::vector<int64_t> &dstShape)
{
    if (numelOf(srcShape) == numelOf(dstShape))
        return copyDevice(c, dst, src, numelOf(dstShape) * 4);
    return reduceTermsTo(c, kernels::GradTerm::Dy, srcShape, src, {}, nullptr, {}, nullptr,
                         dstShape, dst);
}

Status copyDevice(const OpContext &c, void *dst, const void *src, int64_t bytes)
{
    if (bytes <= 0 || dst == src)
        return Status::ok();
    return c.check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                   c.rt->stream()),
                   "device copy");
}

Status zeroDevice(const OpContext &c, void *dst, int64_t bytes)
{
    if (bytes <= 0)
        return Status::ok();
    return c.check(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), c.rt->stream()),
                   "zero fill");
}

} // namespace remat::gpu
