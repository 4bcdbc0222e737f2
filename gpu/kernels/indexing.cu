#include "gpu/kernels/indexing.h"
#include "gpu/kernels/launch.cuh"

namespace remat::gpu::kernels {
using namespace detail;

namespace {

__host__ __device__ __forceinline__ float uniformAt(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    return float(z >> 40) * (1.0f / 16777216.0f);
}

template <typename T>
__global__ void gatherKernel(const T *data, const long long *idx, T *out, int64_t outer,
                             int64_t axisLen, int64_t inner, int64_t m, int *bad)
{
    REMAT_GRID_STRIDE(t, outer * m * inner)
    {
        const int64_t i = t % inner;
        const int64_t j = (t / inner) % m;
        const int64_t o = t / (inner * m);
        int64_t a = idx[j];
        if (a < 0)
            a += axisLen;
        if (a < 0 || a >= axisLen) {
            out[t] = T(0);
            if (bad)
                *bad = 1;
            continue;
        }
        out[t] = data[(o * axisLen + a) * inner + i];
    }
}

__global__ void gatherBackwardKernel(const float *dOut, const long long *idx, float *dData,
                                     int64_t outer, int64_t axisLen, int64_t inner, int64_t m)
{
    REMAT_GRID_STRIDE(t, outer * axisLen * inner)
    {
        const int64_t i = t % inner;
        const int64_t a = (t / inner) % axisLen;
        const int64_t o = t / (inner * axisLen);
        float acc = 0.f;
        for (int64_t j = 0; j < m; ++j) {
            int64_t k = idx[j];
            if (k < 0)
                k += axisLen;
            if (k == a)
                acc += dOut[(o * m + j) * inner + i];
        }
        dData[t] = acc;
    }
}

__global__ void dropoutForwardKernel(const float *x, float *y, unsigned char *mask, int64_t n,
                                     float ratio, float scale, uint64_t seed)
{
    REMAT_GRID_STRIDE(i, n)
    {
        const bool keep = uniformAt(seed, uint64_t(i)) >= ratio;
        y[i] = keep ? x[i] * scale : 0.f;
        if (mask)
            mask[i] = keep ? 1 : 0;
    }
}

__global__ void dropoutBackwardKernel(const float *dy, const unsigned char *mask, float *dx,
                                      int64_t n, float ratio, float scale, uint64_t seed)
{
    REMAT_GRID_STRIDE(i, n)
    {
        const bool keep = mask ? mask[i] != 0 : uniformAt(seed, uint64_t(i)) >= ratio;
        dx[i] = keep ? dy[i] * scale : 0.f;
    }
}

} // namespace

float dropoutUniformHost(uint64_t seed, uint64_t i)
{
    return uniformAt(seed, i);
}

cudaError_t gatherForward(cudaStream_t s, const void *data, const long long *idx, void *out,
                          int64_t outer, int64_t axisLen, int64_t inner, int64_t m,
                          int elementBytes, int *bad)
{
    const int64_t n = outer * m * inner;
    if (n <= 0)
        return cudaSuccess;
    switch (elementBytes) {
    case 1:
        gatherKernel<unsigned char><<<gridFor(n), kThreads, 0, s>>>(
            static_cast<const unsigned char *>(data), idx, static_cast<unsigned char *>(out), outer,
            axisLen, inner, m, bad);
        break;
    case 4:
        gatherKernel<unsigned int><<<gridFor(n), kThreads, 0, s>>>(
            static_cast<const unsigned int *>(data), idx, static_cast<unsigned int *>(out), outer,
            axisLen, inner, m, bad);
        break;
    case 8:
        gatherKernel<unsigned long long><<<gridFor(n), kThreads, 0, s>>>(
            static_cast<const unsigned long long *>(data), idx,
            static_cast<unsigned long long *>(out), outer, axisLen, inner, m, bad);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t gatherBackward(cudaStream_t s, const float *dOut, const long long *idx, float *dData,
                           int64_t outer, int64_t axisLen, int64_t inner, int64_t m)
{
    const int64_t n = outer * axisLen * inner;
    if (n <= 0)
        return cudaSuccess;
    gatherBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(dOut, idx, dData, outer, axisLen, inner, m);
    return cudaGetLastError();
}

cudaError_t dropoutForward(cudaStream_t s, const float *x, float *y, unsigned char *mask,
                           int64_t n, float ratio, uint64_t seed)
{
    if (n <= 0)
        return cudaSuccess;
    const float scale = ratio < 1.f ? 1.f / (1.f - ratio) : 0.f;
    dropoutForwardKernel<<<gridFor(n), kThreads, 0, s>>>(x, y, mask, n, ratio, scale, seed);
    return cudaGetLastError();
}

cudaError_t dropoutBackward(cudaStream_t s, const float *dy, const unsigned char *mask, float *dx,
                            int64_t n, float ratio, uint64_t seed)
{
    if (n <= 0)
        return cudaSuccess;
    const float scale = ratio < 1.f ? 1.f / (1.f - ratio) : 0.f;
    dropoutBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(dy, mask, dx, n, ratio, scale, seed);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
