#pragma once
// Gather along an axis and its gradient, and Dropout's mask (counter-based, so a recompute with
// the same seed replays the same mask).
//   gatherForward(stream, data, idx, out, outer, axisLen, inner, m, elementBytes);
//   dropoutForward(stream, x, y, mask, n, ratio, seed);

#include "gpu/kernels/nd.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

/// out[o, j, i] = data[o, idx[j], i] for data [outer, axisLen, inner], m indices (negative ones
/// count from the end). Out-of-range indices write zeros and set *bad (device int) to 1.
cudaError_t gatherForward(cudaStream_t s, const void *data, const long long *idx, void *out,
                          int64_t outer, int64_t axisLen, int64_t inner, int64_t m,
                          int elementBytes, int *bad);
/// dData[o, a, i] = sum over j with idx[j] == a of dOut[o, j, i] (fully written, no atomics).
cudaError_t gatherBackward(cudaStream_t s, const float *dOut, const long long *idx, float *dData,
                           int64_t outer, int64_t axisLen, int64_t inner, int64_t m);

/// The uniform number in [0, 1) element `i` draws under `seed` (also used on the host side for
/// tests): the top 24 bits of splitmix64(seed + i * golden ratio).
float dropoutUniformHost(uint64_t seed, uint64_t i);

/// mask[i] = uniform(seed, i) >= ratio; y = x * mask / (1 - ratio). `mask` may be null.
cudaError_t dropoutForward(cudaStream_t s, const float *x, float *y, unsigned char *mask, int64_t n,
                           float ratio, uint64_t seed);
/// dx = dy * mask / (1 - ratio); without a mask the mask is regenerated from the seed.
cudaError_t dropoutBackward(cudaStream_t s, const float *dy, const unsigned char *mask, float *dx,
                            int64_t n, float ratio, uint64_t seed);

/// Trilu: y = x on the kept triangle of each [rows, cols] matrix (upper: j - i >= k; lower:
/// j - i <= k), 0 elsewhere; `mats` matrices of `elementBytes` (1, 2, 4 or 8) bytes each. The
/// gradient is the same mask applied to dy.
cudaError_t triluMask(cudaStream_t s, const void *x, void *y, int64_t mats, int64_t rows,
                      int64_t cols, int64_t k, bool upper, int elementBytes);

/// ReduceMax / ReduceMin: y[k] = max (min) of x over `reduced` for every position k of `kept`
/// (operand 0 = x's offsets; y contiguous over kept). NaN handling is std::max / std::min's (the
/// CPU reference's).
cudaError_t reduceExtremum(cudaStream_t s, bool isMax, const NdIter &kept, const NdIter &reduced,
                           const float *x, float *y);
/// Its gradient (torch.amax's rule): dx = dy[k] / ties[k] where x equals y[k], else 0; every
/// element of dx is written once (one thread per output position).
cudaError_t reduceExtremumBackward(cudaStream_t s, const NdIter &kept, const NdIter &reduced,
                                   const float *x, const float *y, const float *dy, float *dx);

/// Resize (nearest): y[o] = x[map[o]] for n elements of `elementBytes` (1, 2, 4 or 8) bytes.
cudaError_t gatherByMap(cudaStream_t s, const void *x, const long long *map, void *y, int64_t n,
                        int elementBytes);
/// Its gradient: dx[map[o]] += dy[o] over n floats (atomic adds; dx zeroed by the caller).
cudaError_t scatterAddByMap(cudaStream_t s, const float *dy, const long long *map, float *dx,
                            int64_t n);

/// CumSum over [outer, len, inner] (core/exec/index_maps.h ScanGeometry): one thread per line,
/// floats summed in double as the CPU reference does. `kind`: 0 float32, 1 int32, 2 int64.
cudaError_t cumSum(cudaStream_t s, const void *x, void *y, int64_t outer, int64_t len,
                   int64_t inner, bool exclusive, bool reverse, int kind);

/// Linear Resize (core/exec/index_maps.h LinearResizeMap): y[o] = sum over t < taps of
/// weights[o * taps + t] * x[offsets[o * taps + t]] for n outputs (float32).
cudaError_t gatherWeighted(cudaStream_t s, const float *x, const long long *offsets,
                           const float *weights, float *y, int64_t n, int64_t taps);
/// Its gradient: dx[offsets[k]] += weights[k] * dy[k / taps] (atomic adds; dx zeroed by the
/// caller).
cudaError_t scatterWeighted(cudaStream_t s, const float *dy, const long long *offsets,
                            const float *weights, float *dx, int64_t n, int64_t taps);

/// Variance over the `reduced` elements of each `kept` one: y = sum((x - mean)^2) / denom.
cudaError_t variance(cudaStream_t s, const NdIter &kept, const NdIter &reduced, const float *x,
                     float *y, double denom);
/// Its gradient: dx = dy 2 (x - mean) / denom (the mean recomputed).
cudaError_t varianceBackward(cudaStream_t s, const NdIter &kept, const NdIter &reduced,
                             const float *x, const float *dy, float *dx, double denom);

/// SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss backward over scores [outer, classes,
/// inner]: dx = scale[o, i] * ((logp ? exp(logp) : 0) - (c == labels[o, i])); labels of -1
/// (ignored) match no class.
cudaError_t lossBackward(cudaStream_t s, const float *logp, const long long *labels,
                         const float *scale, float *dx, int64_t outer, int64_t classes,
                         int64_t inner);

/// ScatterND's slice moves: for slice i < count and t < sliceSize, either
/// dst[offsets[i] + t] = src[i * sliceSize + t] (intoOffsets) or dst[i * sliceSize + t] =
/// src[offsets[i] + t]; elements of `elementBytes` bytes.
cudaError_t copySlices(cudaStream_t s, const long long *offsets, int64_t count, int64_t sliceSize,
                       const void *src, void *dst, int elementBytes, bool intoOffsets);
/// dst[offsets[i] + t] = 0 for every slice (floats): ScatterND's data gradient.
cudaError_t zeroSlices(cudaStream_t s, const long long *offsets, int64_t count, int64_t sliceSize,
                       float *dst);

/// ArgMax / ArgMin over x [outer, n, inner] along n: y[o, i] = index of the first extremum (the
/// last with `last`), as the CPU reference picks it. One thread per line.
cudaError_t argExtremum(cudaStream_t s, bool isMax, bool last, const float *x, long long *y,
                        int64_t outer, int64_t n, int64_t inner);
/// TopK along n of x [outer, n, inner]: values and indices [outer, k, inner], largest (smallest)
/// first, equal values lower index first (the CPU reference's order). One thread per line, k
/// selection passes (k is small where TopK appears in training graphs).
cudaError_t topK(cudaStream_t s, bool largest, const float *x, float *values, long long *indices,
                 int64_t outer, int64_t n, int64_t inner, int64_t k);
/// Its gradient: dx = 0 except dx[o, indices[o, t, i], i] = dValues[o, t, i] (the indices of a
/// line are distinct: no atomics). Out-of-range indices are skipped and set *bad (a device int,
/// may be null) to 1.
cudaError_t topKBackward(cudaStream_t s, const float *dValues, const long long *indices, float *dx,
                         int64_t outer, int64_t n, int64_t inner, int64_t k, int *bad);

/// One einsum-shaped computation (core/ops/einsum.h EinsumLoop), at most kEinsumLetters letters
/// on each side and kEinsumFactors factors: out[outer] = sum over inner of the factors' product,
/// accumulated in double like the CPU reference. One thread per output element.
inline constexpr int kEinsumLetters = 12;
inline constexpr int kEinsumFactors = 4;
struct EinsumGeometry
{
    int outerRank = 0, innerRank = 0, factors = 0;
    int64_t outerSize[kEinsumLetters] = {}, innerSize[kEinsumLetters] = {};
    int64_t outStride[kEinsumLetters] = {};
    int64_t factorOuter[kEinsumFactors][kEinsumLetters] = {};
    int64_t factorInner[kEinsumFactors][kEinsumLetters] = {};
    int64_t outerCount = 1, innerCount = 1;
};
struct EinsumFactors
{
    const float *data[kEinsumFactors] = {};
};
cudaError_t einsumLoop(cudaStream_t s, const EinsumGeometry &g, const EinsumFactors &f, float *out);

} // namespace remat::gpu::kernels
