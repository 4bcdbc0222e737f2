#include "gpu/kernels/launch.cuh"
#include "gpu/kernels/normalization.h"

namespace remat::gpu::kernels {
using namespace detail;

namespace {

// One block per (outer, inner) row; element k of the row is at base + k * inner.
__global__ void softmaxForwardKernel(const float *x, float *y, int64_t outer, int64_t len,
                                     int64_t inner, bool log)
{
    __shared__ float shared[32];
    for (int64_t row = blockIdx.x; row < outer * inner; row += gridDim.x) {
        const int64_t base = (row / inner) * len * inner + row % inner;
        float m = -INFINITY;
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
            m = fmaxf(m, x[base + k * inner]);
        // block max through the shared buffer
        for (int o = 16; o > 0; o >>= 1)
            m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
        if ((threadIdx.x & 31) == 0)
            shared[threadIdx.x >> 5] = m;
        __syncthreads();
        if (threadIdx.x == 0) {
            float mm = shared[0];
            for (unsigned w = 1; w < (blockDim.x >> 5); ++w)
                mm = fmaxf(mm, shared[w]);
            shared[0] = mm;
        }
        __syncthreads();
        m = shared[0];
        __syncthreads();
        float sum = 0.f;
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
            sum += expf(x[base + k * inner] - m);
        sum = blockSumAll(sum, shared);
        if (log) {
            const float lse = m + logf(sum);
            for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
                y[base + k * inner] = x[base + k * inner] - lse;
        } else {
            const float inv = 1.f / sum;
            for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
                y[base + k * inner] = expf(x[base + k * inner] - m) * inv;
        }
    }
}

__global__ void softmaxBackwardKernel(const float *y, const float *dy, float *dx, int64_t outer,
                                      int64_t len, int64_t inner, bool log)
{
    __shared__ float shared[32];
    for (int64_t row = blockIdx.x; row < outer * inner; row += gridDim.x) {
        const int64_t base = (row / inner) * len * inner + row % inner;
        float dot = 0.f;
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
            const int64_t i = base + k * inner;
            dot += log ? dy[i] : dy[i] * y[i];
        }
        dot = blockSumAll(dot, shared);
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
            const int64_t i = base + k * inner;
            dx[i] = log ? dy[i] - expf(y[i]) * dot : y[i] * (dy[i] - dot);
        }
    }
}

// Mean and inverse std of `count` values at base + k * stride for k in a strided 2-level layout:
// value j is at x[(j / inner) * outerStride + j % inner]. Two passes (mean, then squared
// deviations) for accuracy. Every thread of the block gets the result.
__device__ void blockStats(const float *x, int64_t count, int64_t inner, int64_t outerStride,
                           float eps, float *shared, float &mean, float &invStd, float &var)
{
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
        sum += x[(j / inner) * outerStride + j % inner];
    mean = blockSumAll(sum, shared) / float(count);
    float sq = 0.f;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const float d = x[(j / inner) * outerStride + j % inner] - mean;
        sq += d * d;
    }
    var = blockSumAll(sq, shared) / float(count);
    invStd = rsqrtf(var + eps);
}

__global__ void layerNormForwardKernel(const float *x, const float *scale, const float *bias,
                                       float *y, float *meanOut, float *invOut, int64_t rows,
                                       int64_t cols, float eps)
{
    __shared__ float shared[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols;
        float mean, inv, var;
        blockStats(xr, cols, cols, cols, eps, shared, mean, inv, var);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float v = (xr[j] - mean) * inv * scale[j];
            y[r * cols + j] = bias ? v + bias[j] : v;
        }
        if (threadIdx.x == 0) {
            if (meanOut)
                meanOut[r] = mean;
            if (invOut)
                invOut[r] = inv;
        }
    }
}

// dx for each row: inv * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale.
__global__ void layerNormBackwardDxKernel(const float *x, const float *scale, const float *dy,
                                          const float *meanIn, const float *invIn, float *dx,
                                          int64_t rows, int64_t cols, float eps)
{
    __shared__ float shared[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols;
        const float *gr = dy + r * cols;
        float mean, inv, var;
        if (meanIn && invIn) {
            mean = meanIn[r];
            inv = invIn[r];
        } else {
            blockStats(xr, cols, cols, cols, eps, shared, mean, inv, var);
        }
        float sg = 0.f, sgx = 0.f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float g = gr[j] * scale[j];
            sg += g;
            sgx += g * (xr[j] - mean) * inv;
        }
        sg = blockSumAll(sg, shared) / float(cols);
        sgx = blockSumAll(sgx, shared) / float(cols);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float xh = (xr[j] - mean) * inv;
            dx[r * cols + j] = inv * (gr[j] * scale[j] - sg - xh * sgx);
        }
    }
}

// Per-row statistics, for the column sums when they were not saved.
__global__ void rowStatsKernel(const float *x, float *meanOut, float *invOut, int64_t rows,
                               int64_t cols, float eps)
{
    __shared__ float shared[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float mean, inv, var;
        blockStats(x + r * cols, cols, cols, cols, eps, shared, mean, inv, var);
        if (threadIdx.x == 0) {
            meanOut[r] = mean;
            invOut[r] = inv;
        }
    }
}

// dScale[j] = sum_r dy * xhat, dBias[j] = sum_r dy: one thread per column, rows in order (the
// same order every run: recomputes are bitwise reproducible).
__global__ void layerNormBackwardParamKernel(const float *x, const float *dy, const float *mean,
                                             const float *inv, float *dScale, float *dBias,
                                             int64_t rows, int64_t cols)
{
    REMAT_GRID_STRIDE(j, cols)
    {
        float ss = 0.f, sb = 0.f;
        for (int64_t r = 0; r < rows; ++r) {
            const float g = dy[r * cols + j];
            ss += g * (x[r * cols + j] - mean[r]) * inv[r];
            sb += g;
        }
        if (dScale)
            dScale[j] = ss;
        if (dBias)
            dBias[j] = sb;
    }
}

// One block per channel: statistics, y, saved statistics, running update.
__global__ void batchNormForwardKernel(BatchNormShape sh, const float *x, const float *scale,
                                       const float *bias, float *y, float *savedMean,
                                       float *savedInv, float *runMean, float *runVar,
                                       float momentum, float eps)
{
    __shared__ float shared[32];
    const int64_t count = sh.n * sh.spatial;
    const int64_t outerStride = sh.c * sh.spatial;
    for (int64_t c = blockIdx.x; c < sh.c; c += gridDim.x) {
        const float *xc = x + c * sh.spatial;
        float mean, inv, var;
        blockStats(xc, count, sh.spatial, outerStride, eps, shared, mean, inv, var);
        const float g = scale ? scale[c] : 1.f;
        const float b = bias ? bias[c] : 0.f;
        for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
            const int64_t i = c * sh.spatial + (j / sh.spatial) * outerStride + j % sh.spatial;
            y[i] = (x[i] - mean) * inv * g + b;
        }
        if (threadIdx.x == 0) {
            if (savedMean)
                savedMean[c] = mean;
            if (savedInv)
                savedInv[c] = inv;
            if (runMean)
                runMean[c] = momentum * runMean[c] + (1.f - momentum) * mean;
            if (runVar) {
                const float unbiased = count > 1 ? var * float(count) / float(count - 1) : var;
                runVar[c] = momentum * runVar[c] + (1.f - momentum) * unbiased;
            }
        }
    }
}

__global__ void batchNormInferKernel(BatchNormShape sh, const float *x, const float *scale,
                                     const float *bias, const float *mean, const float *var,
                                     float *y, float eps)
{
    REMAT_GRID_STRIDE(i, sh.n * sh.c * sh.spatial)
    {
        const int64_t c = (i / sh.spatial) % sh.c;
        y[i] = (x[i] - mean[c]) * rsqrtf(var[c] + eps) * (scale ? scale[c] : 1.f) +
               (bias ? bias[c] : 0.f);
    }
}

__global__ void batchNormBackwardKernel(BatchNormShape sh, const float *x, const float *scale,
                                        const float *dy, const float *savedMean,
                                        const float *savedInv, float *dx, float *dScale,
                                        float *dBias, float eps)
{
    __shared__ float shared[32];
    const int64_t count = sh.n * sh.spatial;
    const int64_t outerStride = sh.c * sh.spatial;
    for (int64_t c = blockIdx.x; c < sh.c; c += gridDim.x) {
        float mean, inv, var;
        if (savedMean && savedInv) {
            mean = savedMean[c];
            inv = savedInv[c];
        } else {
            blockStats(x + c * sh.spatial, count, sh.spatial, outerStride, eps, shared, mean, inv,
                       var);
        }
        float sdy = 0.f, sdyx = 0.f;
        for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
            const int64_t i = c * sh.spatial + (j / sh.spatial) * outerStride + j % sh.spatial;
            sdy += dy[i];
            sdyx += dy[i] * (x[i] - mean) * inv;
        }
        sdy = blockSumAll(sdy, shared);
        sdyx = blockSumAll(sdyx, shared);
        if (threadIdx.x == 0) {
            if (dScale)
                dScale[c] = sdyx;
            if (dBias)
                dBias[c] = sdy;
        }
        if (dx) {
            const float g = (scale ? scale[c] : 1.f) * inv;
            const float mdy = sdy / float(count), mdyx = sdyx / float(count);
            for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
                const int64_t i = c * sh.spatial + (j / sh.spatial) * outerStride + j % sh.spatial;
                dx[i] = g * (dy[i] - mdy - (x[i] - mean) * inv * mdyx);
            }
        }
    }
}

__device__ __forceinline__ float lrnScaleAt(const LrnShape &p, const float *x, int64_t n,
                                            int64_t ch, int64_t i)
{
    const int64_t lo = ch - p.lo < 0 ? 0 : ch - p.lo;
    const int64_t hi = ch + p.hi > p.c - 1 ? p.c - 1 : ch + p.hi;
    float sum = 0.f;
    for (int64_t k = lo; k <= hi; ++k) {
        const float v = x[(n * p.c + k) * p.spatial + i];
        sum += v * v;
    }
    return p.bias + p.alpha / float(p.size) * sum;
}

__global__ void lrnForwardKernel(LrnShape p, const float *x, float *y)
{
    REMAT_GRID_STRIDE(t, p.n * p.c * p.spatial)
    {
        const int64_t i = t % p.spatial, ch = (t / p.spatial) % p.c, n = t / (p.spatial * p.c);
        y[t] = x[t] * powf(lrnScaleAt(p, x, n, ch, i), -p.beta);
    }
}

__global__ void lrnBackwardKernel(LrnShape p, const float *x, const float *dy, float *dx)
{
    REMAT_GRID_STRIDE(t, p.n * p.c * p.spatial)
    {
        const int64_t i = t % p.spatial, j = (t / p.spatial) % p.c, n = t / (p.spatial * p.c);
        // channels whose window holds j: j - hi <= c <= j + lo
        const int64_t lo = j - p.hi < 0 ? 0 : j - p.hi;
        const int64_t hi = j + p.lo > p.c - 1 ? p.c - 1 : j + p.lo;
        float cross = 0.f;
        for (int64_t ch = lo; ch <= hi; ++ch) {
            const int64_t at = (n * p.c + ch) * p.spatial + i;
            cross += dy[at] * x[at] * powf(lrnScaleAt(p, x, n, ch, i), -p.beta - 1.f);
        }
        const float k = -2.f * p.beta * p.alpha / float(p.size);
        dx[t] = dy[t] * powf(lrnScaleAt(p, x, n, j, i), -p.beta) + k * x[t] * cross;
    }
}

unsigned int blocksFor(int64_t rows)
{
    return static_cast<unsigned int>(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535);
}

__device__ __forceinline__ int64_t groupScaleIndex(const GroupNormShape &g, int64_t channel)
{
    return g.perChannel ? channel : channel / (g.c / g.groups);
}

__global__ void groupNormApplyKernel(GroupNormShape g, const float *x, const float *scale,
                                     const float *bias, const float *mean, const float *invStd,
                                     float *y)
{
    const int64_t total = g.n * g.c * g.spatial, cpg = g.c / g.groups;
    REMAT_GRID_STRIDE(i, total)
    {
        const int64_t nc = i / g.spatial, ch = nc % g.c;
        const int64_t row = (nc / g.c) * g.groups + ch / cpg, e = groupScaleIndex(g, ch);
        y[i] = (x[i] - mean[row]) * invStd[row] * scale[e] + bias[e];
    }
}

// One block per (sample, group) row: the two row sums, then dx.
__global__ void groupNormInputGradKernel(GroupNormShape g, const float *x, const float *scale,
                                         const float *dy, const float *mean, const float *invStd,
                                         float *dx)
{
    __shared__ float shared[32];
    const int64_t cpg = g.c / g.groups, len = cpg * g.spatial;
    for (int64_t row = blockIdx.x; row < g.n * g.groups; row += gridDim.x) {
        const int64_t base = row * len, firstChannel = (row % g.groups) * cpg;
        const float mu = mean[row], is = invStd[row];
        float sumH = 0.f, sumHX = 0.f;
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
            const float h = dy[base + k] * scale[groupScaleIndex(g, firstChannel + k / g.spatial)];
            sumH += h;
            sumHX += h * (x[base + k] - mu) * is;
        }
        const float meanH = blockSumAll(sumH, shared) / float(len);
        const float meanHX = blockSumAll(sumHX, shared) / float(len);
        for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
            const float h = dy[base + k] * scale[groupScaleIndex(g, firstChannel + k / g.spatial)];
            dx[base + k] = is * (h - meanH - (x[base + k] - mu) * is * meanHX);
        }
    }
}

// One block per scale entry: sums over every sample and every element of its channel(s).
__global__ void groupNormParamGradKernel(GroupNormShape g, const float *x, const float *dy,
                                         const float *mean, const float *invStd, float *dScale,
                                         float *dBias)
{
    __shared__ float shared[32];
    const int64_t cpg = g.c / g.groups, perEntry = g.perChannel ? 1 : cpg;
    const int64_t entries = g.perChannel ? g.c : g.groups, block = perEntry * g.spatial;
    for (int64_t e = blockIdx.x; e < entries; e += gridDim.x) {
        float sumG = 0.f, sumGX = 0.f;
        for (int64_t t = threadIdx.x; t < g.n * block; t += blockDim.x) {
            const int64_t sample = t / block, r = t % block;
            const int64_t ch = e * perEntry + r / g.spatial;
            const int64_t i = (sample * g.c + ch) * g.spatial + r % g.spatial;
            const int64_t row = sample * g.groups + ch / cpg;
            sumG += dy[i];
            sumGX += dy[i] * (x[i] - mean[row]) * invStd[row];
        }
        sumG = blockSum(sumG, shared);
        sumGX = blockSum(sumGX, shared);
        if (threadIdx.x == 0) {
            if (dBias)
                dBias[e] = sumG;
            if (dScale)
                dScale[e] = sumGX;
        }
    }
}

} // namespace

cudaError_t groupNormForward(cudaStream_t s, GroupNormShape shape, const float *x,
                             const float *scale, const float *bias, float *y, float *mean,
                             float *invStd, float eps)
{
    const int64_t n = shape.n * shape.c * shape.spatial;
    if (n <= 0)
        return cudaSuccess;
    const int64_t rows = shape.n * shape.groups, cols = n / rows;
    rowStatsKernel<<<blocksFor(rows), kThreads, 0, s>>>(x, mean, invStd, rows, cols, eps);
    groupNormApplyKernel<<<gridFor(n), kThreads, 0, s>>>(shape, x, scale, bias, mean, invStd, y);
    return cudaGetLastError();
}

cudaError_t groupNormBackward(cudaStream_t s, GroupNormShape shape, const float *x,
                              const float *scale, const float *dy, const float *mean,
                              const float *invStd, float *dx, float *dScale, float *dBias)
{
    if (shape.n * shape.c * shape.spatial <= 0)
        return cudaSuccess;
    if (dx)
        groupNormInputGradKernel<<<blocksFor(shape.n * shape.groups), kThreads, 0, s>>>(
            shape, x, scale, dy, mean, invStd, dx);
    if (dScale || dBias)
        groupNormParamGradKernel<<<blocksFor(shape.perChannel ? shape.c : shape.groups), kThreads,
                                   0, s>>>(shape, x, dy, mean, invStd, dScale, dBias);
    return cudaGetLastError();
}

cudaError_t lrnForward(cudaStream_t s, const LrnShape &p, const float *x, float *y)
{
    const int64_t n = p.n * p.c * p.spatial;
    if (n <= 0)
        return cudaSuccess;
    lrnForwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, x, y);
    return cudaGetLastError();
}

cudaError_t lrnBackward(cudaStream_t s, const LrnShape &p, const float *x, const float *dy,
                        float *dx)
{
    const int64_t n = p.n * p.c * p.spatial;
    if (n <= 0)
        return cudaSuccess;
    lrnBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, x, dy, dx);
    return cudaGetLastError();
}

cudaError_t softmaxForward(cudaStream_t s, const float *x, float *y, int64_t outer, int64_t axisLen,
                           int64_t inner, bool log)
{
    if (outer * axisLen * inner <= 0)
        return cudaSuccess;
    softmaxForwardKernel<<<blocksFor(outer * inner), kThreads, 0, s>>>(x, y, outer, axisLen, inner,
                                                                       log);
    return cudaGetLastError();
}

cudaError_t softmaxBackward(cudaStream_t s, const float *y, const float *dy, float *dx,
                            int64_t outer, int64_t axisLen, int64_t inner, bool log)
{
    if (outer * axisLen * inner <= 0)
        return cudaSuccess;
    softmaxBackwardKernel<<<blocksFor(outer * inner), kThreads, 0, s>>>(y, dy, dx, outer, axisLen,
                                                                        inner, log);
    return cudaGetLastError();
}

cudaError_t layerNormForward(cudaStream_t s, const float *x, const float *scale, const float *bias,
                             float *y, float *mean, float *invStd, int64_t rows, int64_t cols,
                             float eps)
{
    if (rows * cols <= 0)
        return cudaSuccess;
    layerNormForwardKernel<<<blocksFor(rows), kThreads, 0, s>>>(x, scale, bias, y, mean, invStd,
                                                                rows, cols, eps);
    return cudaGetLastError();
}

cudaError_t layerNormBackward(cudaStream_t s, const float *x, const float *scale, const float *dy,
                              const float *mean, const float *invStd, float *dx, float *dScale,
                              float *dBias, int64_t rows, int64_t cols, float eps)
{
    if (rows * cols <= 0)
        return cudaSuccess;
    if (dx)
        layerNormBackwardDxKernel<<<blocksFor(rows), kThreads, 0, s>>>(x, scale, dy, mean, invStd,
                                                                       dx, rows, cols, eps);
    if (dScale || dBias) {
        if (!mean || !invStd)
            return cudaErrorInvalidValue; // the caller recomputes the statistics into scratch
        layerNormBackwardParamKernel<<<gridFor(cols), kThreads, 0, s>>>(x, dy, mean, invStd, dScale,
                                                                        dBias, rows, cols);
    }
    return cudaGetLastError();
}

cudaError_t layerNormRowStats(cudaStream_t s, const float *x, float *mean, float *invStd,
                              int64_t rows, int64_t cols, float eps)
{
    if (rows * cols <= 0)
        return cudaSuccess;
    rowStatsKernel<<<blocksFor(rows), kThreads, 0, s>>>(x, mean, invStd, rows, cols, eps);
    return cudaGetLastError();
}

cudaError_t batchNormTrainForward(cudaStream_t s, BatchNormShape shape, const float *x,
                                  const float *scale, const float *bias, float *y, float *savedMean,
                                  float *savedInvStd, float *runningMean, float *runningVar,
                                  float momentum, float eps)
{
    if (shape.n * shape.c * shape.spatial <= 0)
        return cudaSuccess;
    batchNormForwardKernel<<<blocksFor(shape.c), kThreads, 0, s>>>(
        shape, x, scale, bias, y, savedMean, savedInvStd, runningMean, runningVar, momentum, eps);
    return cudaGetLastError();
}

cudaError_t batchNormInferForward(cudaStream_t s, BatchNormShape shape, const float *x,
                                  const float *scale, const float *bias, const float *mean,
                                  const float *var, float *y, float eps)
{
    const int64_t n = shape.n * shape.c * shape.spatial;
    if (n <= 0)
        return cudaSuccess;
    batchNormInferKernel<<<gridFor(n), kThreads, 0, s>>>(shape, x, scale, bias, mean, var, y, eps);
    return cudaGetLastError();
}

cudaError_t batchNormTrainBackward(cudaStream_t s, BatchNormShape shape, const float *x,
                                   const float *scale, const float *dy, const float *savedMean,
                                   const float *savedInvStd, float *dx, float *dScale, float *dBias,
                                   float eps)
{
    if (shape.n * shape.c * shape.spatial <= 0)
        return cudaSuccess;
    batchNormBackwardKernel<<<blocksFor(shape.c), kThreads, 0, s>>>(
        shape, x, scale, dy, savedMean, savedInvStd, dx, dScale, dBias, eps);
    return cudaGetLastError();
}

namespace {
__global__ void weightNormNormKernel(const float *v, float *norm, int64_t outer, int64_t n,
                                     int64_t inner)
{
    REMAT_GRID_STRIDE(k, n)
    {
        double acc = 0;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const double x = v[(o * n + k) * inner + i];
                acc += x * x;
            }
        norm[k] = float(sqrt(acc));
    }
}

__global__ void weightNormApplyKernel(const float *v, const float *g, const float *norm, float *w,
                                      int64_t outer, int64_t n, int64_t inner)
{
    REMAT_GRID_STRIDE(e, outer * n * inner)
    {
        const int64_t k = (e / inner) % n;
        w[e] = g[k] * v[e] / norm[k];
    }
}

__global__ void weightNormDgKernel(const float *v, const float *norm, const float *dw, float *dg,
                                   int64_t outer, int64_t n, int64_t inner)
{
    REMAT_GRID_STRIDE(k, n)
    {
        double acc = 0;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const int64_t e = (o * n + k) * inner + i;
                acc += double(dw[e]) * double(v[e]);
            }
        dg[k] = float(acc / double(norm[k]));
    }
}

__global__ void weightNormDvKernel(const float *v, const float *g, const float *norm,
                                   const float *dw, const float *dg, float *dv, int64_t outer,
                                   int64_t n, int64_t inner)
{
    REMAT_GRID_STRIDE(e, outer * n * inner)
    {
        const int64_t k = (e / inner) % n;
        dv[e] = g[k] / norm[k] * (dw[e] - v[e] * dg[k] / norm[k]);
    }
}
} // namespace

cudaError_t weightNormForward(cudaStream_t s, const float *v, const float *g, float *w, float *norm,
                              int64_t outer, int64_t n, int64_t inner)
{
    if (n <= 0 || outer * inner <= 0)
        return cudaSuccess;
    weightNormNormKernel<<<gridFor(n), kThreads, 0, s>>>(v, norm, outer, n, inner);
    weightNormApplyKernel<<<gridFor(outer * n * inner), kThreads, 0, s>>>(v, g, norm, w, outer, n,
                                                                          inner);
    return cudaGetLastError();
}

cudaError_t weightNormBackward(cudaStream_t s, const float *v, const float *g, const float *norm,
                               const float *dw, float *dv, float *dg, float *scratch, int64_t outer,
                               int64_t n, int64_t inner)
{
    if (n <= 0 || outer * inner <= 0)
        return cudaSuccess;
    float *dgOut = dg ? dg : scratch;
    weightNormDgKernel<<<gridFor(n), kThreads, 0, s>>>(v, norm, dw, dgOut, outer, n, inner);
    if (dv)
        weightNormDvKernel<<<gridFor(outer * n * inner), kThreads, 0, s>>>(v, g, norm, dw, dgOut,
                                                                           dv, outer, n, inner);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
