// The fused attention kernels (attention.h): one block of 128 threads per (batch, tile of 32
// query rows) forward and per (batch, tile of 32 keys) backward, every step one of
// attention_tile.h's functions, which tests/exec/tst_attention_tiles.cpp runs on the CPU against
// the CPU reference. Shared memory holds the block's Q, K, V, dO tiles and accumulators as float
// (attention_tile.h's forwardSharedFloats / backwardSharedFloats: 69 KiB forward, 101 KiB backward
// at head size 128), above the 48 KiB default, so the kernels opt in to the larger carve-out.
// Straightforward CUDA-core arithmetic, no tensor cores: it runs what the fused op stores; the
// cost model's time is flash attention's, not this kernel's.
#include "gpu/kernels/attention.h"
#include "gpu/kernels/launch.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace remat::gpu::kernels {

namespace {

constexpr int kAttnThreads = 128;

template <typename T, typename B>
__global__ void forwardKernel(attn::Problem p, int64_t tiles, const T *q, const T *k, const T *v,
                              const B *bias, const bool *mask, T *o, float *lse)
{
    extern __shared__ float smem[];
    const int64_t block = blockIdx.x, b = block / tiles, i0 = (block % tiles) * attn::kBr;
    attn::forwardBlock(p, b, i0, q, k, v, bias, mask, o, lse, smem, int(threadIdx.x),
                       int(blockDim.x));
}

template <typename T>
__global__ void rowDeltaKernel(attn::Problem p, const T *o, const T *dO, float *delta)
{
    REMAT_GRID_STRIDE(idx, p.batches * p.sq)
    {
        const int64_t b = idx / p.sq, i = idx - b * p.sq;
        delta[idx] = attn::rowDelta(p, o, dO, b, i);
    }
}

template <typename T, typename B>
__global__ void backwardKernel(attn::Problem p, int64_t tiles, const T *q, const T *k, const T *v,
                               const B *bias, const bool *mask, const T *dO, const float *lse,
                               const float *delta, float *dq, float *dk, float *dv, float *dbias)
{
    extern __shared__ float smem[];
    const int64_t block = blockIdx.x, b = block / tiles, j0 = (block % tiles) * attn::kBc;
    attn::backwardBlock(p, b, j0, q, k, v, bias, mask, dO, lse, delta, dq, dk, dv, dbias, smem,
                        int(threadIdx.x), int(blockDim.x));
}

template <typename T> __global__ void storeKernel(const float *src, T *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    attn::fromF(src[i], &dst[i]);
}

/// Launches `kernel` on `blocks` blocks with `bytes` of dynamic shared memory (opting in above
/// the 48 KiB default).
template <typename Kernel, typename... Args>
cudaError_t launchTiles(cudaStream_t s, Kernel kernel, int64_t blocks, int64_t bytes, Args... args)
{
    if (blocks <= 0)
        return cudaSuccess;
    if (blocks > int64_t(0x7fffffff))
        return cudaErrorInvalidConfiguration;
    if (bytes > 48 * 1024) {
        const cudaError_t err =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
        if (err != cudaSuccess)
            return err;
    }
    kernel<<<unsigned(blocks), kAttnThreads, size_t(bytes), s>>>(args...);
    return cudaGetLastError();
}

template <typename T, typename B>
cudaError_t forwardAs(cudaStream_t s, const attn::Problem &p, const void *q, const void *k,
                      const void *v, const void *bias, const bool *mask, void *o, float *lse)
{
    const int64_t tiles = (p.sq + attn::kBr - 1) / attn::kBr;
    return launchTiles(s, forwardKernel<T, B>, p.batches * tiles,
                       attentionSharedBytes(p.d, p.dv, false), p, tiles, static_cast<const T *>(q),
                       static_cast<const T *>(k), static_cast<const T *>(v),
                       static_cast<const B *>(bias), mask, static_cast<T *>(o), lse);
}

template <typename T, typename B>
cudaError_t backwardAs(cudaStream_t s, const attn::Problem &p, const void *q, const void *k,
                       const void *v, const void *bias, const bool *mask, const void *dO,
                       const float *lse, const float *delta, float *dq, float *dk, float *dv,
                       float *dbias)
{
    const int64_t tiles = (p.sk + attn::kBc - 1) / attn::kBc;
    return launchTiles(s, backwardKernel<T, B>, p.batches * tiles,
                       attentionSharedBytes(p.d, p.dv, true), p, tiles, static_cast<const T *>(q),
                       static_cast<const T *>(k), static_cast<const T *>(v),
                       static_cast<const B *>(bias), mask, static_cast<const T *>(dO), lse, delta,
                       dq, dk, dv, dbias);
}

} // namespace

int64_t attentionSharedBytes(int64_t d, int64_t dv, bool backward)
{
    return int64_t(sizeof(float)) *
           (backward ? attn::backwardSharedFloats(d, dv) : attn::forwardSharedFloats(d, dv));
}

cudaError_t attentionForward(cudaStream_t s, const attn::Problem &p, AttnStorage storage,
                             const void *q, const void *k, const void *v, const void *bias,
                             bool biasIsStorage, const bool *mask, void *o, float *lse)
{
    switch (storage) {
    case AttnStorage::Float: return forwardAs<float, float>(s, p, q, k, v, bias, mask, o, lse);
    case AttnStorage::Half:
        return biasIsStorage ? forwardAs<__half, __half>(s, p, q, k, v, bias, mask, o, lse)
                             : forwardAs<__half, float>(s, p, q, k, v, bias, mask, o, lse);
    case AttnStorage::BFloat16:
        return biasIsStorage
                   ? forwardAs<__nv_bfloat16, __nv_bfloat16>(s, p, q, k, v, bias, mask, o, lse)
                   : forwardAs<__nv_bfloat16, float>(s, p, q, k, v, bias, mask, o, lse);
    }
    return cudaErrorInvalidValue;
}

cudaError_t attentionRowDelta(cudaStream_t s, const attn::Problem &p, AttnStorage storage,
                              const void *o, const void *dO, float *delta)
{
    const int64_t n = p.batches * p.sq;
    if (n <= 0)
        return cudaSuccess;
    const unsigned grid = detail::gridFor(n);
    switch (storage) {
    case AttnStorage::Float:
        rowDeltaKernel<float><<<grid, detail::kThreads, 0, s>>>(
            p, static_cast<const float *>(o), static_cast<const float *>(dO), delta);
        break;
    case AttnStorage::Half:
        rowDeltaKernel<__half><<<grid, detail::kThreads, 0, s>>>(
            p, static_cast<const __half *>(o), static_cast<const __half *>(dO), delta);
        break;
    case AttnStorage::BFloat16:
        rowDeltaKernel<__nv_bfloat16>
            <<<grid, detail::kThreads, 0, s>>>(p, static_cast<const __nv_bfloat16 *>(o),
                                               static_cast<const __nv_bfloat16 *>(dO), delta);
        break;
    }
    return cudaGetLastError();
}

cudaError_t attentionBackward(cudaStream_t s, const attn::Problem &p, AttnStorage storage,
                              const void *q, const void *k, const void *v, const void *bias,
                              bool biasIsStorage, const bool *mask, const void *dO,
                              const float *lse, const float *delta, float *dq, float *dk, float *dv,
                              float *dbias)
{
    switch (storage) {
    case AttnStorage::Float:
        return backwardAs<float, float>(s, p, q, k, v, bias, mask, dO, lse, delta, dq, dk, dv,
                                        dbias);
    case AttnStorage::Half:
        return biasIsStorage ? backwardAs<__half, __half>(s, p, q, k, v, bias, mask, dO, lse, delta,
                                                          dq, dk, dv, dbias)
                             : backwardAs<__half, float>(s, p, q, k, v, bias, mask, dO, lse, delta,
                                                         dq, dk, dv, dbias);
    case AttnStorage::BFloat16:
        return biasIsStorage ? backwardAs<__nv_bfloat16, __nv_bfloat16>(
                                   s, p, q, k, v, bias, mask, dO, lse, delta, dq, dk, dv, dbias)
                             : backwardAs<__nv_bfloat16, float>(s, p, q, k, v, bias, mask, dO, lse,
                                                                delta, dq, dk, dv, dbias);
    }
    return cudaErrorInvalidValue;
}

cudaError_t attentionStore(cudaStream_t s, AttnStorage storage, const float *src, void *dst,
                           int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    const unsigned grid = detail::gridFor(n);
    switch (storage) {
    case AttnStorage::Float:
        return cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, s);
    case AttnStorage::Half:
        storeKernel<<<grid, detail::kThreads, 0, s>>>(src, static_cast<__half *>(dst), n);
        break;
    case AttnStorage::BFloat16:
        storeKernel<<<grid, detail::kThreads, 0, s>>>(src, static_cast<__nv_bfloat16 *>(dst), n);
        break;
    }
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
