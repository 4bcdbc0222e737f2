#include "gpu/cuda_ops.h"

#include "gpu/cuda_backend.h"

#include "core/exec/half.h"
#include "core/ir/graph.h"
#include "core/ops/attention.h"
#include "gpu/cuda_status.h"
#include "gpu/kernels/half.h"
#include "gpu/ops_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace remat::gpu {

using core::makeError;
using core::Status;
using core::StatusCode;

namespace {
kernels::HalfKind halfKindOf(core::ir::DataType t)
{
    return t == core::ir::DataType::BFloat16 ? kernels::HalfKind::BFloat16
                                             : kernels::HalfKind::Float16;
}
} // namespace

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

Status requireFloating(const OpContext &c, const DView *v, const char *what)
{
    REMAT_RETURN_IF_ERROR(c.require(v, what));
    if (v->dtype != core::ir::DataType::Float && v->dtype != core::ir::DataType::Float16 &&
        v->dtype != core::ir::DataType::BFloat16)
        return c.unsupported(fmt::format("{} is {}, the CUDA kernels take float32, float16 and "
                                         "bfloat16",
                                         what, core::ir::dataTypeName(v->dtype)));
    return Status::ok();
}

core::Expected<const float *> floatOperand(const OpContext &c, const DView &v)
{
    if (!core::exec::isHalfType(v.dtype))
        return static_cast<const float *>(v.data);
    REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(v.numel(), 1) * 4));
    REMAT_RETURN_IF_ERROR(c.check(kernels::widenHalf(c.rt->stream(), halfKindOf(v.dtype), v.data,
                                                     static_cast<float *>(p), v.numel()),
                                  "widen to float32"));
    return static_cast<const float *>(p);
}

core::Expected<float *> floatResult(const OpContext &c, const DView &v)
{
    if (!core::exec::isHalfType(v.dtype))
        return static_cast<float *>(v.data);
    REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(v.numel(), 1) * 4));
    return static_cast<float *>(p);
}

Status roundResult(const OpContext &c, const float *values, const DView &v)
{
    if (!core::exec::isHalfType(v.dtype) || values == v.data)
        return Status::ok();
    return c.check(
        kernels::narrowHalf(c.rt->stream(), halfKindOf(v.dtype), values, v.data, v.numel()),
        "round the result to its half type");
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

bool takesHalfOperands(const std::string &opType, bool cudnn, bool mixedFloating)
{
    if (opType == "Cast" || opType == "CastGrad" || opType == "MatMul" || opType == "MatMulGrad" ||
        opType == "Gemm" || opType == "GemmGrad")
        return true;
    // the fused attention: Q, K, V (and O) in their storage type beside its float32 log-sum-exp
    // (and a float32 or Q-typed bias), float32 accumulation (gpu/ops_attention.cpp)
    if (opType.rfind(core::ops::kAttentionOp, 0) == 0)
        return true;
    if (mixedFloating)
        return false;
    // the shared table's element-wise ops: one storage type, float32 math
    static const std::set<std::string> unary = [] {
        std::set<std::string> u;
#define REMAT_UNARY_NAME(Name, HostF, HostG, Family, Since)                                        \
    u.insert(#Name);                                                                               \
    u.insert(#Name "Grad");
        REMAT_EW_UNARY_OPS(REMAT_UNARY_NAME)
#undef REMAT_UNARY_NAME
        // the broadcasting binary arithmetic ops, forward only (their gradients are reductions)
#define REMAT_BINARY_NAME(Name, HostT) u.insert(#Name);
        REMAT_EW_BINARY_OPS(REMAT_BINARY_NAME)
#undef REMAT_BINARY_NAME
        return u;
    }();
    if (unary.count(opType))
        return true;
    return cudnn && (opType == "Conv" || opType == "ConvGrad");
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
