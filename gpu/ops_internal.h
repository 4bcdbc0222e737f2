#pragma once
// Internal to gpu/: the op tables of the ops_*.cpp files and helpers they share.

#include "core/exec/axes.h"
#include "core/exec/window_geometry.h"
#include "gpu/cuda_ops.h"
#include "gpu/kernels/nd.h"

#include <map>

namespace remat::gpu {

using OpTable = std::map<std::string, OpFn>;

// The op files, each adding its forward and backward types (explicit list in cuda_ops.cpp).
void addElementwiseOps(OpTable &t);
void addShapeOps(OpTable &t);
void addNnOps(OpTable &t);
void addBlasOps(OpTable &t);
void addConvOps(OpTable &t);
void addRecurrentOps(OpTable &t);
void addLossOps(OpTable &t);
void addOptimizerOps(OpTable &t);
void addAttentionOps(OpTable &t);

using core::exec::normalizeAxis;
int64_t numelOf(const std::vector<int64_t> &shape);

/// Sums `src` (shape srcShape, contiguous) into dst (shape dstShape, broadcastable to srcShape).
core::Status reduceToShape(const OpContext &c, const float *src,
                           const std::vector<int64_t> &srcShape, float *dst,
                           const std::vector<int64_t> &dstShape);
/// The node's window attributes for input shape `x` and `kernel` (core/exec/window_geometry.h:
/// the same rules as the CPU backend's); errors name the op.
core::Expected<core::exec::WindowAttributes>
windowOf(const OpContext &c, const std::vector<int64_t> &x, std::vector<int64_t> kernel);
/// Contiguous device copy of `bytes` on the op's stream.
core::Status copyDevice(const OpContext &c, void *dst, const void *src, int64_t bytes);
/// Zero-fills on the op's stream.
core::Status zeroDevice(const OpContext &c, void *dst, int64_t bytes);

} // namespace remat::gpu

#include "gpu/kernels/elementwise.h"

namespace remat::gpu {

/// out (shape `target`, broadcastable to dyShape) = scale * sum over the broadcast dims of
/// term(dy, a, b), where a and b (may be null) broadcast to dyShape with shapes aShape / bShape.
core::Status reduceTermsTo(const OpContext &c, kernels::GradTerm term,
                           const std::vector<int64_t> &dyShape, const float *dy,
                           const std::vector<int64_t> &aShape, const void *a,
                           const std::vector<int64_t> &bShape, const void *b,
                           const std::vector<int64_t> &target, float *out, float scale = 1.f,
                           bool accumulate = false);

/// Z[M,N] = alpha * op(X)[M,K] * op(Y)[K,N] + beta * Z through cuBLAS, row-major contiguous; X
/// stored [M,K] (or [K,M] when transX), Y [K,N] (or [N,K]); `batch` matrices with element
/// strides sx, sy, sz (0: the same matrix for every batch).
core::Status rowGemm(const OpContext &c, bool transX, bool transY, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *x, int64_t sx, const float *y, int64_t sy,
                     float beta, float *z, int64_t sz, int64_t batch = 1);

/// A read-only matrix operand of rowGemmEx: device data and its storage type (float32, float16
/// or bfloat16); at() offsets by elements.
struct Mat
{
    const void *p = nullptr;
    core::ir::DataType t = core::ir::DataType::Float;
    Mat at(int64_t elements) const
    {
        return {static_cast<const char *>(p) + elements * core::ir::elementSize(t), t};
    }
};
/// The written matrix of rowGemmEx.
struct MutMat
{
    void *p = nullptr;
    core::ir::DataType t = core::ir::DataType::Float;
    MutMat at(int64_t elements) const
    {
        return {static_cast<char *>(p) + elements * core::ir::elementSize(t), t};
    }
};
inline Mat matOf(const DView *v) { return {v->data, v->dtype}; }
inline MutMat mutOf(const DView *v) { return {v->data, v->dtype}; }

/// rowGemm for operands of any floating storage type: float16 / bfloat16 factors of one type go
/// to cublasGemmEx / cublasGemmStridedBatchedEx (CUDA_R_16F / CUDA_R_16BF, CUBLAS_COMPUTE_32F,
/// float alpha and beta), the result written in its own type (that half type or float32); other
/// mixes run in float32 on widened copies, the result rounded once. All float32: rowGemm.
core::Status rowGemmEx(const OpContext &c, bool transX, bool transY, int64_t m, int64_t n,
                       int64_t k, float alpha, Mat x, int64_t sx, Mat y, int64_t sy, float beta,
                       MutMat z, int64_t sz, int64_t batch = 1);

/// `v`'s values as float32: its own data when float32, else a widened copy in scratch.
core::Expected<const float *> floatOperand(const OpContext &c, const DView &v);
/// Where a kernel writes `v`'s float32 values: its own data when float32, else scratch that
/// roundResult() then rounds into `v` (to nearest even).
core::Expected<float *> floatResult(const OpContext &c, const DView &v);
core::Status roundResult(const OpContext &c, const float *values, const DView &v);

/// Error unless `v` is present and float32, float16 or bfloat16 (the dtypes the kernels that take
/// half operands read).
core::Status requireFloating(const OpContext &c, const DView *v, const char *what);

} // namespace remat::gpu
