#include "gpu/kernels/half.h"
#include "gpu/kernels/launch.cuh"

namespace remat::gpu::kernels {

using namespace detail;

namespace {

template <HalfKind K> __global__ void widenKernel(const uint16_t *src, float *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) dst[i] = halfToFloat(K, src[i]);
}

template <HalfKind K> __global__ void narrowKernel(const float *src, uint16_t *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) dst[i] = floatToHalf(K, src[i]);
}

template <HalfKind K>
__global__ void narrowChangedKernel(const float *src, uint16_t *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        const float v = src[i];
        const uint16_t b = floatToHalf(K, v);
        if (halfChanges(K, b, dst[i], v))
            dst[i] = b;
    }
}

__device__ __forceinline__ float loadFloat(CastType t, const void *p, int64_t i)
{
    switch (t) {
    case CastType::Float: return static_cast<const float *>(p)[i];
    case CastType::Bool: return static_cast<const unsigned char *>(p)[i] ? 1.f : 0.f;
    case CastType::Float16: return fp16ToFloat(static_cast<const uint16_t *>(p)[i]);
    case CastType::BFloat16: return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
    default: return 0.f; // Int64 is read through double (castKernel)
    }
}

__global__ void castKernel(CastType from, CastType to, const void *src, void *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        if (to == CastType::Float16 || to == CastType::BFloat16) {
            const HalfKind k = to == CastType::BFloat16 ? HalfKind::BFloat16 : HalfKind::Float16;
            uint16_t b;
            if (from == CastType::Int64)
                b = doubleToHalf(k, double(static_cast<const long long *>(src)[i]));
            else
                b = floatToHalf(k, loadFloat(from, src, i));
            static_cast<uint16_t *>(dst)[i] = b;
            continue;
        }
        // from a half type (the caller guarantees one side is half): its float32 value, exact
        const float v = loadFloat(from, src, i);
        switch (to) {
        case CastType::Float: static_cast<float *>(dst)[i] = v; break;
        case CastType::Int64: static_cast<long long *>(dst)[i] = static_cast<long long>(v); break;
        case CastType::Bool: static_cast<unsigned char *>(dst)[i] = v != 0.f ? 1 : 0; break;
        default: break;
        }
    }
}

} // namespace

cudaError_t widenHalf(cudaStream_t s, HalfKind k, const void *src, float *dst, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    const auto *p = static_cast<const uint16_t *>(src);
    if (k == HalfKind::BFloat16)
        widenKernel<HalfKind::BFloat16><<<gridFor(n), kThreads, 0, s>>>(p, dst, n);
    else
        widenKernel<HalfKind::Float16><<<gridFor(n), kThreads, 0, s>>>(p, dst, n);
    return cudaGetLastError();
}

cudaError_t narrowHalf(cudaStream_t s, HalfKind k, const float *src, void *dst, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    auto *p = static_cast<uint16_t *>(dst);
    if (k == HalfKind::BFloat16)
        narrowKernel<HalfKind::BFloat16><<<gridFor(n), kThreads, 0, s>>>(src, p, n);
    else
        narrowKernel<HalfKind::Float16><<<gridFor(n), kThreads, 0, s>>>(src, p, n);
    return cudaGetLastError();
}

cudaError_t narrowHalfChanged(cudaStream_t s, HalfKind k, const float *src, void *dst, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    auto *p = static_cast<uint16_t *>(dst);
    if (k == HalfKind::BFloat16)
        narrowChangedKernel<HalfKind::BFloat16><<<gridFor(n), kThreads, 0, s>>>(src, p, n);
    else
        narrowChangedKernel<HalfKind::Float16><<<gridFor(n), kThreads, 0, s>>>(src, p, n);
    return cudaGetLastError();
}

cudaError_t castHalfElements(cudaStream_t s, CastType from, CastType to, const void *src, void *dst,
                             int64_t n)
{
    const bool halfFrom = from == CastType::Float16 || from == CastType::BFloat16;
    const bool halfTo = to == CastType::Float16 || to == CastType::BFloat16;
    if (!halfFrom && !halfTo)
        return cudaErrorInvalidValue;
    if (n <= 0)
        return cudaSuccess;
    castKernel<<<gridFor(n), kThreads, 0, s>>>(from, to, src, dst, n);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
