#pragma once
// Device-side helpers shared by the kernel files (included by .cu files only).

#include "gpu/kernels/nd.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace remat::gpu::kernels::detail {

inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n items (capped: the loop covers the rest).
inline unsigned int gridFor(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1)
        b = 1;
    if (b > (int64_t(1) << 20))
        b = int64_t(1) << 20;
    return static_cast<unsigned int>(b);
}

/// Element offsets of the first `nOps` operands at linear index `idx` of `it` (row-major).
template <int nOps>
__device__ __forceinline__ void offsetsOf(const NdIter &it, int64_t idx, int64_t (&off)[nOps])
{
#pragma unroll
    for (int k = 0; k < nOps; ++k)
        off[k] = it.base[k];
    for (int d = it.rank - 1; d >= 0; --d) {
        const int64_t q = idx / it.dims[d];
        const int64_t r = idx - q * it.dims[d];
        idx = q;
#pragma unroll
        for (int k = 0; k < nOps; ++k)
            off[k] += r * it.s[k][d];
    }
}

#define REMAT_GRID_STRIDE(i, n)                                                                    \
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
         i += int64_t(blockDim.x) * gridDim.x)

/// Sum of `v` over the block (blockDim.x == kThreads); the result is valid in thread 0.
__device__ __forceinline__ float blockSum(float v, float *shared)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : 0.f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

/// blockSum for every thread: broadcasts thread 0's result through shared[0].
__device__ __forceinline__ float blockSumAll(float v, float *shared)
{
    v = blockSum(v, shared);
    if (threadIdx.x == 0)
        shared[0] = v;
    __syncthreads();
    v = shared[0];
    __syncthreads();
    return v;
}

} // namespace remat::gpu::kernels::detail
