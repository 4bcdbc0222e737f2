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

} // namespace remat::gpu
