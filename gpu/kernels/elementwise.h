#pragma once
// Elementwise and broadcast kernels (float32 math; int64/bool for shape arithmetic). The unary and
// binary ops are the shared table of core/ops/elementwise_math.h, expanded here once for CUDA.
//   unaryForward(stream, UnaryOp::Relu, {}, x, y, n);
//   binaryForward(stream, BinaryOp::Add, ElemType::Float, it, a, b, out);  // it: out, a, b
//   reduceTerms(stream, GradTerm::MulDa, kept, reduced, dy, a, b, dA, 1.f);

#include "core/ops/elementwise_math.h"
#include "gpu/kernels/half_convert.h"
#include "gpu/kernels/nd.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

enum class ElemType : int { Float, Int64, Bool };

/// The unary ops of the shared table (core/ops/elementwise_math.h), in its order.
enum class UnaryOp : int {
#define REMAT_UNARY_ENUM(Name, HostF, HostG, Family, Since) Name,
    REMAT_EW_UNARY_OPS(REMAT_UNARY_ENUM)
#undef REMAT_UNARY_ENUM
};

/// The op's attributes (alpha, bounds, ...), read on the host.
using UnaryParams = core::ops::ew::Params;

/// y = f(x) over n contiguous floats.
cudaError_t unaryForward(cudaStream_t s, UnaryOp op, UnaryParams p, const float *x, float *y,
                         int64_t n);
/// dx = dy * f'(v), v the tensor the table's row reads: `x` (Reads::Input), `y` (Reads::Output;
/// recomputed from x when y is null) or nothing. InvalidValue when the needed operand is null.
cudaError_t unaryBackward(cudaStream_t s, UnaryOp op, UnaryParams p, const float *x, const float *y,
                          const float *dy, float *dx, int64_t n);

/// unaryForward / unaryBackward on float16 or bfloat16 storage (every operand of type `k`): each
/// value widened exactly, the math in float32, each result rounded once to nearest even.
cudaError_t unaryForwardHalf(cudaStream_t s, UnaryOp op, UnaryParams p, HalfKind k, const void *x,
                             void *y, int64_t n);
cudaError_t unaryBackwardHalf(cudaStream_t s, UnaryOp op, UnaryParams p, HalfKind k, const void *x,
                              const void *y, const void *dy, void *dx, int64_t n);

/// y = alpha * x over n contiguous floats (x == y allowed): GEMM's beta, pooling's 1/count.
cudaError_t scaleFloats(cudaStream_t s, float alpha, const float *x, float *y, int64_t n);

/// The broadcasting binary ops of the shared table: arithmetic, then comparisons and logic.
enum class BinaryOp : int {
#define REMAT_BINARY_ENUM(Name, HostT) Name,
    REMAT_EW_BINARY_OPS(REMAT_BINARY_ENUM)
#undef REMAT_BINARY_ENUM
#define REMAT_COMPARE_ENUM(Name, Since) Name,
        REMAT_EW_COMPARE_OPS(REMAT_COMPARE_ENUM)
#undef REMAT_COMPARE_ENUM
};
/// True for ops whose output is bool.
bool binaryIsComparison(BinaryOp op);

/// out[i] = a op b with `it` operands 0 = out, 1 = a, 2 = b (broadcast strides). `type` is the
/// input type; comparisons write bool (one byte), others write `type`. `p`: Mod's fmod.
cudaError_t binaryForward(cudaStream_t s, BinaryOp op, ElemType type, const NdIter &it,
                          const void *a, const void *b, void *out, UnaryParams p = {});

/// binaryForward's arithmetic ops on float16 or bfloat16 storage (a, b and out of type `k`): each
/// operand widened exactly, the op in float32, the result rounded once to nearest even.
cudaError_t binaryForwardHalf(cudaStream_t s, BinaryOp op, HalfKind k, const NdIter &it,
                              const void *a, const void *b, void *out, UnaryParams p = {});

/// out = cond ? a : b; `it` operands 0 = out, 1 = a, 2 = b, 3 = cond (bytes).
cudaError_t whereForward(cudaStream_t s, const NdIter &it, const unsigned char *cond, const void *a,
                         const void *b, void *out, int elementBytes);

/// Strided copy of `elementBytes`-sized elements: operand 0 = dst, operand 1 = src.
cudaError_t stridedCopy(cudaStream_t s, const NdIter &it, const void *src, void *dst,
                        int elementBytes);

/// Converts n elements between float, int64 and bool.
cudaError_t castElements(cudaStream_t s, ElemType from, ElemType to, const void *src, void *dst,
                         int64_t n);

/// dst[i] = value for n floats.
cudaError_t fillFloat(cudaStream_t s, float *dst, float value, int64_t n);

/// out[i] = sum of k inputs at i (k <= 8), n floats.
cudaError_t sumArrays(cudaStream_t s, const float *const *inputs, int k, float *out, int64_t n);

/// What a reduction sums for each position (dy, a, b are the iterators' operands 0, 1, 2).
enum class GradTerm : int {
    Dy,       ///< dy (plain sum; also Add's gradient)
    NegDy,    ///< -dy (Sub's second operand)
    DyTimesA, ///< dy * a (LayerNorm/BN style column sums)
    WhereA,   ///< dy where cond (a = cond as bytes)
    WhereB,   ///< dy where !cond
// The shared table's differentiable binary ops (core/ops/elementwise_math.h): NameDa is
// dy * da(a, b), NameDb is dy * db(a, b); a or b may be null where the partial does not read it.
#define REMAT_GRADTERM_ENUM(Name, HostT) Name##Da, Name##Db,
    REMAT_EW_BINARY_GRAD_OPS(REMAT_GRADTERM_ENUM)
#undef REMAT_GRADTERM_ENUM
};

/// out[k] = scale * sum over `reduced` of term(dy, a, b), for every position k of `kept`
/// (row-major, out contiguous). Pointers a and b may be null when the term does not read them.
/// When `accumulate` is true the sum is added to out.
cudaError_t reduceTerms(cudaStream_t s, GradTerm term, const NdIter &kept, const NdIter &reduced,
                        const float *dy, const void *a, const void *b, float *out, float scale,
                        bool accumulate = false);

} // namespace remat::gpu::kernels
