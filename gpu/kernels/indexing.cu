#include "gpu/kernels/indexing.h"
#include "gpu/kernels/launch.cuh"

#include <cmath>

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

float dropoutUniformHost(uint64_t seed, uint64_t i) { return uniformAt(seed, i); }

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
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t gatherBackward(cudaStream_t s, const float *dOut, const long long *idx, float *dData,
                           int64_t outer, int64_t axisLen, int64_t inner, int64_t m)
{
    const int64_t n = outer * axisLen * inner;
    if (n <= 0)
        return cudaSuccess;
    gatherBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(dOut, idx, dData, outer, axisLen, inner,
                                                         m);
    return cudaGetLastError();
}

cudaError_t dropoutForward(cudaStream_t s, const float *x, float *y, unsigned char *mask, int64_t n,
                           float ratio, uint64_t seed)
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

namespace {

template <typename T>
__global__ void triluKernel(const T *x, T *y, int64_t n, int64_t rows, int64_t cols, int64_t k,
                            bool upper)
{
    REMAT_GRID_STRIDE(e, n)
    {
        const int64_t j = e % cols;
        const int64_t i = (e / cols) % rows;
        const bool keep = upper ? j - i >= k : j - i <= k;
        y[e] = keep ? x[e] : T(0);
    }
}

__global__ void reduceExtremumKernel(bool isMax, NdIter kept, NdIter red, const float *x, float *y)
{
    const int64_t nRed = red.count();
    REMAT_GRID_STRIDE(k, kept.count())
    {
        int64_t ko[1];
        offsetsOf<1>(kept, k, ko);
        float acc = isMax ? -INFINITY : INFINITY;
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[1];
            offsetsOf<1>(red, j, ro);
            const float v = x[ko[0] + ro[0]];
            acc = isMax ? (acc < v ? v : acc) : (v < acc ? v : acc);
        }
        y[k] = acc;
    }
}

__global__ void reduceExtremumBackwardKernel(NdIter kept, NdIter red, const float *x,
                                             const float *y, const float *dy, float *dx)
{
    const int64_t nRed = red.count();
    REMAT_GRID_STRIDE(k, kept.count())
    {
        int64_t ko[1];
        offsetsOf<1>(kept, k, ko);
        const float m = y[k];
        int64_t ties = 0;
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[1];
            offsetsOf<1>(red, j, ro);
            ties += x[ko[0] + ro[0]] == m;
        }
        const float share = float(double(dy[k]) / double(ties > 0 ? ties : 1));
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[1];
            offsetsOf<1>(red, j, ro);
            const int64_t o = ko[0] + ro[0];
            dx[o] = x[o] == m ? share : 0.f;
        }
    }
}

} // namespace

namespace {

template <typename T>
__global__ void gatherByMapKernel(const T *x, const long long *map, T *y, int64_t n)
{
    REMAT_GRID_STRIDE(o, n) y[o] = x[map[o]];
}

__global__ void scatterAddByMapKernel(const float *dy, const long long *map, float *dx, int64_t n)
{
    REMAT_GRID_STRIDE(o, n) atomicAdd(dx + map[o], dy[o]);
}

template <typename T>
__global__ void copySlicesKernel(const long long *offsets, int64_t count, int64_t sliceSize,
                                 const T *src, T *dst, bool intoOffsets)
{
    REMAT_GRID_STRIDE(e, count * sliceSize)
    {
        const int64_t i = e / sliceSize, t = e - i * sliceSize;
        if (intoOffsets)
            dst[offsets[i] + t] = src[e];
        else
            dst[e] = src[offsets[i] + t];
    }
}

__global__ void zeroSlicesKernel(const long long *offsets, int64_t count, int64_t sliceSize,
                                 float *dst)
{
    REMAT_GRID_STRIDE(e, count * sliceSize)
    {
        const int64_t i = e / sliceSize, t = e - i * sliceSize;
        dst[offsets[i] + t] = 0.f;
    }
}

} // namespace

cudaError_t gatherByMap(cudaStream_t s, const void *x, const long long *map, void *y, int64_t n,
                        int elementBytes)
{
    if (n <= 0)
        return cudaSuccess;
    const unsigned int g = gridFor(n);
    switch (elementBytes) {
    case 1:
        gatherByMapKernel<<<g, kThreads, 0, s>>>(static_cast<const uint8_t *>(x), map,
                                                 static_cast<uint8_t *>(y), n);
        break;
    case 2:
        gatherByMapKernel<<<g, kThreads, 0, s>>>(static_cast<const uint16_t *>(x), map,
                                                 static_cast<uint16_t *>(y), n);
        break;
    case 4:
        gatherByMapKernel<<<g, kThreads, 0, s>>>(static_cast<const uint32_t *>(x), map,
                                                 static_cast<uint32_t *>(y), n);
        break;
    case 8:
        gatherByMapKernel<<<g, kThreads, 0, s>>>(static_cast<const uint64_t *>(x), map,
                                                 static_cast<uint64_t *>(y), n);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t scatterAddByMap(cudaStream_t s, const float *dy, const long long *map, float *dx,
                            int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    scatterAddByMapKernel<<<gridFor(n), kThreads, 0, s>>>(dy, map, dx, n);
    return cudaGetLastError();
}

namespace {

template <typename T, typename Acc>
__global__ void cumSumKernel(const T *x, T *y, int64_t outer, int64_t len, int64_t inner,
                             bool exclusive, bool reverse)
{
    REMAT_GRID_STRIDE(line, outer * inner)
    {
        const int64_t base = (line / inner) * len * inner + line % inner;
        Acc acc = 0;
        for (int64_t step = 0; step < len; ++step) {
            const int64_t at = base + (reverse ? len - 1 - step : step) * inner;
            const Acc v = Acc(x[at]);
            if (!exclusive)
                acc += v;
            y[at] = T(acc);
            if (exclusive)
                acc += v;
        }
    }
}

} // namespace

namespace {

__global__ void gatherWeightedKernel(const float *x, const long long *offsets, const float *weights,
                                     float *y, int64_t n, int64_t taps)
{
    REMAT_GRID_STRIDE(o, n)
    {
        float acc = 0.f;
        for (int64_t t = o * taps; t < (o + 1) * taps; ++t)
            acc += weights[t] * x[offsets[t]];
        y[o] = acc;
    }
}

__global__ void scatterWeightedKernel(const float *dy, const long long *offsets,
                                      const float *weights, float *dx, int64_t n, int64_t taps)
{
    REMAT_GRID_STRIDE(k, n * taps) atomicAdd(dx + offsets[k], weights[k] * dy[k / taps]);
}

} // namespace

namespace {
__global__ void lossBackwardKernel(const float *logp, const long long *labels, const float *scale,
                                   float *dx, int64_t outer, int64_t classes, int64_t inner)
{
    REMAT_GRID_STRIDE(e, outer * classes * inner)
    {
        const int64_t i = e % inner, c = (e / inner) % classes, o = e / (inner * classes);
        const int64_t k = o * inner + i;
        const float hot = labels[k] == c ? 1.f : 0.f;
        dx[e] = scale[k] * ((logp ? expf(logp[e]) : 0.f) - hot);
    }
}
} // namespace

namespace {
__global__ void varianceKernel(NdIter kept, NdIter red, const float *x, float *y, double denom,
                               const float *dy, float *dx)
{
    const int64_t nRed = red.count();
    REMAT_GRID_STRIDE(k, kept.count())
    {
        int64_t ko[1];
        offsetsOf<1>(kept, k, ko);
        double mean = 0;
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[1];
            offsetsOf<1>(red, j, ro);
            mean += x[ko[0] + ro[0]];
        }
        mean /= double(nRed > 0 ? nRed : 1);
        if (dx) { // backward
            for (int64_t j = 0; j < nRed; ++j) {
                int64_t ro[1];
                offsetsOf<1>(red, j, ro);
                const int64_t o = ko[0] + ro[0];
                dx[o] = float(double(dy[k]) * 2.0 * (double(x[o]) - mean) / denom);
            }
            continue;
        }
        double sq = 0;
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[1];
            offsetsOf<1>(red, j, ro);
            const double d = double(x[ko[0] + ro[0]]) - mean;
            sq += d * d;
        }
        y[k] = float(sq / denom);
    }
}
} // namespace

cudaError_t variance(cudaStream_t s, const NdIter &kept, const NdIter &reduced, const float *x,
                     float *y, double denom)
{
    if (kept.count() <= 0)
        return cudaSuccess;
    varianceKernel<<<gridFor(kept.count()), kThreads, 0, s>>>(kept, reduced, x, y, denom, nullptr,
                                                              nullptr);
    return cudaGetLastError();
}

cudaError_t varianceBackward(cudaStream_t s, const NdIter &kept, const NdIter &reduced,
                             const float *x, const float *dy, float *dx, double denom)
{
    if (kept.count() <= 0)
        return cudaSuccess;
    varianceKernel<<<gridFor(kept.count()), kThreads, 0, s>>>(kept, reduced, x, nullptr, denom, dy,
                                                              dx);
    return cudaGetLastError();
}

cudaError_t lossBackward(cudaStream_t s, const float *logp, const long long *labels,
                         const float *scale, float *dx, int64_t outer, int64_t classes,
                         int64_t inner)
{
    const int64_t n = outer * classes * inner;
    if (n <= 0)
        return cudaSuccess;
    lossBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(logp, labels, scale, dx, outer, classes,
                                                       inner);
    return cudaGetLastError();
}

cudaError_t gatherWeighted(cudaStream_t s, const float *x, const long long *offsets,
                           const float *weights, float *y, int64_t n, int64_t taps)
{
    if (n <= 0)
        return cudaSuccess;
    gatherWeightedKernel<<<gridFor(n), kThreads, 0, s>>>(x, offsets, weights, y, n, taps);
    return cudaGetLastError();
}

cudaError_t scatterWeighted(cudaStream_t s, const float *dy, const long long *offsets,
                            const float *weights, float *dx, int64_t n, int64_t taps)
{
    if (n * taps <= 0)
        return cudaSuccess;
    scatterWeightedKernel<<<gridFor(n * taps), kThreads, 0, s>>>(dy, offsets, weights, dx, n, taps);
    return cudaGetLastError();
}

cudaError_t cumSum(cudaStream_t s, const void *x, void *y, int64_t outer, int64_t len,
                   int64_t inner, bool exclusive, bool reverse, int kind)
{
    const int64_t lines = outer * inner;
    if (lines * len <= 0)
        return cudaSuccess;
    if (kind == 0)
        cumSumKernel<float, double><<<gridFor(lines), kThreads, 0, s>>>(
            static_cast<const float *>(x), static_cast<float *>(y), outer, len, inner, exclusive,
            reverse);
    else if (kind == 1)
        cumSumKernel<int32_t, long long><<<gridFor(lines), kThreads, 0, s>>>(
            static_cast<const int32_t *>(x), static_cast<int32_t *>(y), outer, len, inner,
            exclusive, reverse);
    else
        cumSumKernel<long long, long long><<<gridFor(lines), kThreads, 0, s>>>(
            static_cast<const long long *>(x), static_cast<long long *>(y), outer, len, inner,
            exclusive, reverse);
    return cudaGetLastError();
}

cudaError_t copySlices(cudaStream_t s, const long long *offsets, int64_t count, int64_t sliceSize,
                       const void *src, void *dst, int elementBytes, bool intoOffsets)
{
    const int64_t n = count * sliceSize;
    if (n <= 0)
        return cudaSuccess;
    const unsigned int g = gridFor(n);
    switch (elementBytes) {
    case 1:
        copySlicesKernel<<<g, kThreads, 0, s>>>(offsets, count, sliceSize,
                                                static_cast<const uint8_t *>(src),
                                                static_cast<uint8_t *>(dst), intoOffsets);
        break;
    case 2:
        copySlicesKernel<<<g, kThreads, 0, s>>>(offsets, count, sliceSize,
                                                static_cast<const uint16_t *>(src),
                                                static_cast<uint16_t *>(dst), intoOffsets);
        break;
    case 4:
        copySlicesKernel<<<g, kThreads, 0, s>>>(offsets, count, sliceSize,
                                                static_cast<const uint32_t *>(src),
                                                static_cast<uint32_t *>(dst), intoOffsets);
        break;
    case 8:
        copySlicesKernel<<<g, kThreads, 0, s>>>(offsets, count, sliceSize,
                                                static_cast<const uint64_t *>(src),
                                                static_cast<uint64_t *>(dst), intoOffsets);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t zeroSlices(cudaStream_t s, const long long *offsets, int64_t count, int64_t sliceSize,
                       float *dst)
{
    const int64_t n = count * sliceSize;
    if (n <= 0)
        return cudaSuccess;
    zeroSlicesKernel<<<gridFor(n), kThreads, 0, s>>>(offsets, count, sliceSize, dst);
    return cudaGetLastError();
}

cudaError_t triluMask(cudaStream_t s, const void *x, void *y, int64_t mats, int64_t rows,
                      int64_t cols, int64_t k, bool upper, int elementBytes)
{
    const int64_t n = mats * rows * cols;
    if (n <= 0)
        return cudaSuccess;
    const unsigned int g = gridFor(n);
    switch (elementBytes) {
    case 1:
        triluKernel<<<g, kThreads, 0, s>>>(static_cast<const uint8_t *>(x),
                                           static_cast<uint8_t *>(y), n, rows, cols, k, upper);
        break;
    case 2:
        triluKernel<<<g, kThreads, 0, s>>>(static_cast<const uint16_t *>(x),
                                           static_cast<uint16_t *>(y), n, rows, cols, k, upper);
        break;
    case 4:
        triluKernel<<<g, kThreads, 0, s>>>(static_cast<const uint32_t *>(x),
                                           static_cast<uint32_t *>(y), n, rows, cols, k, upper);
        break;
    case 8:
        triluKernel<<<g, kThreads, 0, s>>>(static_cast<const uint64_t *>(x),
                                           static_cast<uint64_t *>(y), n, rows, cols, k, upper);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t reduceExtremum(cudaStream_t s, bool isMax, const NdIter &kept, const NdIter &reduced,
                           const float *x, float *y)
{
    if (kept.count() <= 0)
        return cudaSuccess;
    reduceExtremumKernel<<<gridFor(kept.count()), kThreads, 0, s>>>(isMax, kept, reduced, x, y);
    return cudaGetLastError();
}

cudaError_t reduceExtremumBackward(cudaStream_t s, const NdIter &kept, const NdIter &reduced,
                                   const float *x, const float *y, const float *dy, float *dx)
{
    if (kept.count() <= 0)
        return cudaSuccess;
    reduceExtremumBackwardKernel<<<gridFor(kept.count()), kThreads, 0, s>>>(kept, reduced, x, y, dy,
                                                                            dx);
    return cudaGetLastError();
}

// ---- ArgMax / ArgMin, TopK ------------------------------------------------------------------

__global__ void argExtremumKernel(bool isMax, bool last, const float *x, long long *y,
                                  int64_t outer, int64_t n, int64_t inner)
{
    REMAT_GRID_STRIDE(line, outer * inner)
    {
        const int64_t o = line / inner, i = line - o * inner;
        const float *p = x + o * n * inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
            const float v = p[j * inner], b = p[best * inner];
            if (isMax ? (v > b || (last && v == b)) : (v < b || (last && v == b)))
                best = j;
        }
        y[line] = best;
    }
}

__global__ void topKKernel(bool largest, const float *x, float *values, long long *indices,
                           int64_t outer, int64_t n, int64_t inner, int64_t k)
{
    REMAT_GRID_STRIDE(line, outer * inner)
    {
        const int64_t o = line / inner, i = line - o * inner;
        const float *p = x + o * n * inner + i;
        float prevV = 0;
        int64_t prevJ = -1;
        for (int64_t t = 0; t < k; ++t) {
            // The next element in (value, index) order after the previous pick.
            int64_t best = -1;
            float bestV = 0;
            for (int64_t j = 0; j < n; ++j) {
                const float v = p[j * inner];
                if (prevJ >= 0) {
                    const bool after = largest ? (v < prevV || (v == prevV && j > prevJ))
                                               : (v > prevV || (v == prevV && j > prevJ));
                    if (!after)
                        continue;
                }
                if (best < 0 || (largest ? v > bestV : v < bestV)) {
                    best = j;
                    bestV = v;
                }
            }
            const int64_t at = (o * k + t) * inner + i;
            values[at] = bestV;
            if (indices)
                indices[at] = best;
            prevV = bestV;
            prevJ = best;
        }
    }
}

__global__ void topKBackwardKernel(const float *dValues, const long long *indices, float *dx,
                                   int64_t outer, int64_t n, int64_t inner, int64_t k, int *bad)
{
    REMAT_GRID_STRIDE(at, outer * k * inner)
    {
        const int64_t i = at % inner, o = at / (k * inner);
        const long long j = indices[at];
        if (j < 0 || j >= n) {
            if (bad)
                *bad = 1;
            continue;
        }
        dx[(o * n + j) * inner + i] = dValues[at];
    }
}

cudaError_t argExtremum(cudaStream_t s, bool isMax, bool last, const float *x, long long *y,
                        int64_t outer, int64_t n, int64_t inner)
{
    if (outer * inner <= 0 || n <= 0)
        return cudaSuccess;
    argExtremumKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(isMax, last, x, y, outer, n,
                                                                  inner);
    return cudaGetLastError();
}

cudaError_t topK(cudaStream_t s, bool largest, const float *x, float *values, long long *indices,
                 int64_t outer, int64_t n, int64_t inner, int64_t k)
{
    if (outer * inner * k <= 0)
        return cudaSuccess;
    topKKernel<<<gridFor(outer * inner), kThreads, 0, s>>>(largest, x, values, indices, outer, n,
                                                           inner, k);
    return cudaGetLastError();
}

cudaError_t topKBackward(cudaStream_t s, const float *dValues, const long long *indices, float *dx,
                         int64_t outer, int64_t n, int64_t inner, int64_t k, int *bad)
{
    if (outer * inner * k <= 0)
        return cudaSuccess;
    topKBackwardKernel<<<gridFor(outer * k * inner), kThreads, 0, s>>>(dValues, indices, dx, outer,
                                                                       n, inner, k, bad);
    return cudaGetLastError();
}

// ---- Einsum ------------------------------------------------------------------------------------

__global__ void einsumKernel(EinsumGeometry g, EinsumFactors f, float *out)
{
    REMAT_GRID_STRIDE(o, g.outerCount)
    {
        int64_t base[kEinsumFactors] = {};
        int64_t outAt = 0, rest = o;
        for (int d = g.outerRank - 1; d >= 0; --d) {
            const int64_t q = rest / g.outerSize[d], r = rest - q * g.outerSize[d];
            rest = q;
            outAt += r * g.outStride[d];
            for (int k = 0; k < g.factors; ++k)
                base[k] += r * g.factorOuter[k][d];
        }
        double acc = 0;
        for (int64_t i = 0; i < g.innerCount; ++i) {
            int64_t at[kEinsumFactors];
            for (int k = 0; k < g.factors; ++k)
                at[k] = base[k];
            int64_t r2 = i;
            for (int d = g.innerRank - 1; d >= 0; --d) {
                const int64_t q = r2 / g.innerSize[d], r = r2 - q * g.innerSize[d];
                r2 = q;
                for (int k = 0; k < g.factors; ++k)
                    at[k] += r * g.factorInner[k][d];
            }
            double p = 1;
            for (int k = 0; k < g.factors; ++k)
                p *= double(f.data[k][at[k]]);
            acc += p;
        }
        out[outAt] = float(acc);
    }
}

cudaError_t einsumLoop(cudaStream_t s, const EinsumGeometry &g, const EinsumFactors &f, float *out)
{
    if (g.outerCount <= 0)
        return cudaSuccess;
    einsumKernel<<<gridFor(g.outerCount), kThreads, 0, s>>>(g, f, out);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
