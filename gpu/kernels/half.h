#pragma once
// Half storage on the device (float16 / bfloat16 tensors in 2 bytes): the conversions the backend
// runs around a float32 kernel (widen the operands, round the results back) and Cast between half
// and the other dtypes, all through gpu/kernels/half_convert.h, so they round as the CPU reference
// (core/exec/half.h) does, bit for bit.
//   widenHalf(stream, HalfKind::BFloat16, x, xFloat, n);      // exact
//   narrowHalf(stream, HalfKind::BFloat16, yFloat, y, n);     // to nearest, ties to even

#include "gpu/kernels/half_convert.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

/// dst[i] = the float32 value of half src[i], n elements.
cudaError_t widenHalf(cudaStream_t s, HalfKind k, const void *src, float *dst, int64_t n);
/// dst[i] = src[i] rounded to the half type, n elements.
cudaError_t narrowHalf(cudaStream_t s, HalfKind k, const float *src, void *dst, int64_t n);
/// As narrowHalf, but writes only the elements whose value changes (NaN over NaN stays): the
/// write-back of an operand a kernel may have updated in place (an optimizer's parameter).
cudaError_t narrowHalfChanged(cudaStream_t s, HalfKind k, const float *src, void *dst, int64_t n);

/// The element types Cast converts half from and to.
enum class CastType : int { Float, Int64, Bool, Float16, BFloat16 };
/// dst = src converted, n elements, where `from` or `to` is a half type: from float32 or a half
/// type one rounding; from int64 through double with one rounding (core/exec/cpu's castView);
/// half to int64 truncates its float32 value, to bool tests != 0.
cudaError_t castHalfElements(cudaStream_t s, CastType from, CastType to, const void *src, void *dst,
                             int64_t n);

} // namespace remat::gpu::kernels
