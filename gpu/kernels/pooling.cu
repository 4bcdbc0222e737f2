#include "gpu/kernels/launch.cuh"
#include "gpu/kernels/pooling.h"

namespace remat::gpu::kernels {
using namespace detail;

namespace {

struct Pos3
{
    int64_t v[3];
};

__device__ __forceinline__ int64_t spatialIn(const PoolShape &p)
{
    return p.in[0] * p.in[1] * p.in[2];
}
__device__ __forceinline__ int64_t spatialOut(const PoolShape &p)
{
    return p.out[0] * p.out[1] * p.out[2];
}

__device__ __forceinline__ Pos3 unflatten(int64_t i, const int64_t (&dims)[3])
{
    Pos3 r;
    r.v[2] = i % dims[2];
    i /= dims[2];
    r.v[1] = i % dims[1];
    r.v[0] = i / dims[1];
    return r;
}

// Divisor of output window `o` (AveragePool): elements inside the input, or inside the padded
// input when pads count; a ceil_mode window running past the padded end is cut there.
__device__ __forceinline__ float avgDivisor(const PoolShape &p, const Pos3 &o)
{
    int64_t count = 1;
    for (int d = 0; d < 3; ++d) {
        int64_t start = o.v[d] * p.stride[d] - p.padBegin[d];
        int64_t end = start + (p.kernel[d] - 1) * p.dilation[d] + 1;
        int64_t lo, hi;
        if (p.countIncludePad) {
            lo = start < -p.padBegin[d] ? -p.padBegin[d] : start;
            hi = end > p.in[d] + p.padEnd[d] ? p.in[d] + p.padEnd[d] : end;
        } else {
            lo = start < 0 ? 0 : start;
            hi = end > p.in[d] ? p.in[d] : end;
        }
        int64_t k = 0;
        for (int64_t t = start; t < end; t += p.dilation[d])
            if (t >= lo && t < hi)
                ++k;
        count *= k;
    }
    return float(count > 0 ? count : 1);
}

__global__ void maxPoolForwardKernel(PoolShape p, const float *x, float *y, long long *idx)
{
    const int64_t sIn = spatialIn(p), sOut = spatialOut(p);
    REMAT_GRID_STRIDE(i, p.n * p.c * sOut)
    {
        const int64_t plane = i / sOut;
        const Pos3 o = unflatten(i % sOut, p.out);
        float best = -INFINITY;
        int64_t bestAt = -1;
        for (int64_t a = 0; a < p.kernel[0]; ++a) {
            const int64_t z = o.v[0] * p.stride[0] - p.padBegin[0] + a * p.dilation[0];
            if (z < 0 || z >= p.in[0])
                continue;
            for (int64_t b = 0; b < p.kernel[1]; ++b) {
                const int64_t h = o.v[1] * p.stride[1] - p.padBegin[1] + b * p.dilation[1];
                if (h < 0 || h >= p.in[1])
                    continue;
                for (int64_t c = 0; c < p.kernel[2]; ++c) {
                    const int64_t w = o.v[2] * p.stride[2] - p.padBegin[2] + c * p.dilation[2];
                    if (w < 0 || w >= p.in[2])
                        continue;
                    const int64_t at = plane * sIn + (z * p.in[1] + h) * p.in[2] + w;
                    const float v = x[at];
                    if (bestAt < 0 || v > best || isnan(v)) {
                        best = v;
                        bestAt = at;
                    }
                }
            }
        }
        y[i] = best;
        if (idx)
            idx[i] = bestAt;
    }
}

// Calls f(outputLinearIndexInPlane, outputPos) for each output window covering input `pos`.
template <typename F>
__device__ __forceinline__ void forEachCoveringWindow(const PoolShape &p, const Pos3 &pos, F f)
{
    for (int64_t a = 0; a < p.kernel[0]; ++a) {
        const int64_t nz = pos.v[0] + p.padBegin[0] - a * p.dilation[0];
        if (nz < 0 || nz % p.stride[0] != 0 || nz / p.stride[0] >= p.out[0])
            continue;
        for (int64_t b = 0; b < p.kernel[1]; ++b) {
            const int64_t nh = pos.v[1] + p.padBegin[1] - b * p.dilation[1];
            if (nh < 0 || nh % p.stride[1] != 0 || nh / p.stride[1] >= p.out[1])
                continue;
            for (int64_t c = 0; c < p.kernel[2]; ++c) {
                const int64_t nw = pos.v[2] + p.padBegin[2] - c * p.dilation[2];
                if (nw < 0 || nw % p.stride[2] != 0 || nw / p.stride[2] >= p.out[2])
                    continue;
                Pos3 o;
                o.v[0] = nz / p.stride[0];
                o.v[1] = nh / p.stride[1];
                o.v[2] = nw / p.stride[2];
                f((o.v[0] * p.out[1] + o.v[1]) * p.out[2] + o.v[2], o);
            }
        }
    }
}

__global__ void maxPoolBackwardKernel(PoolShape p, const float *dy, const long long *idx, float *dx)
{
    const int64_t sIn = spatialIn(p), sOut = spatialOut(p);
    REMAT_GRID_STRIDE(i, p.n * p.c * sIn)
    {
        const int64_t plane = i / sIn;
        const Pos3 pos = unflatten(i % sIn, p.in);
        float acc = 0.f;
        forEachCoveringWindow(p, pos, [&](int64_t o, const Pos3 &) {
            const int64_t oi = plane * sOut + o;
            if (idx[oi] == i)
                acc += dy[oi];
        });
        dx[i] = acc;
    }
}

// Without saved indices: recompute each covering window's argmax (first maximum).
__global__ void maxPoolBackwardFromInputKernel(PoolShape p, const float *x, const float *dy,
                                               float *dx)
{
    const int64_t sIn = spatialIn(p), sOut = spatialOut(p);
    REMAT_GRID_STRIDE(i, p.n * p.c * sIn)
    {
        const int64_t plane = i / sIn;
        const Pos3 pos = unflatten(i % sIn, p.in);
        float acc = 0.f;
        forEachCoveringWindow(p, pos, [&](int64_t o, const Pos3 &op) {
            float best = -INFINITY;
            int64_t bestAt = -1;
            for (int64_t a = 0; a < p.kernel[0]; ++a) {
                const int64_t z = op.v[0] * p.stride[0] - p.padBegin[0] + a * p.dilation[0];
                if (z < 0 || z >= p.in[0])
                    continue;
                for (int64_t b = 0; b < p.kernel[1]; ++b) {
                    const int64_t h = op.v[1] * p.stride[1] - p.padBegin[1] + b * p.dilation[1];
                    if (h < 0 || h >= p.in[1])
                        continue;
                    for (int64_t c = 0; c < p.kernel[2]; ++c) {
                        const int64_t w = op.v[2] * p.stride[2] - p.padBegin[2] + c * p.dilation[2];
                        if (w < 0 || w >= p.in[2])
                            continue;
                        const int64_t at = plane * sIn + (z * p.in[1] + h) * p.in[2] + w;
                        if (bestAt < 0 || x[at] > best || isnan(x[at])) {
                            best = x[at];
                            bestAt = at;
                        }
                    }
                }
            }
            if (bestAt == i)
                acc += dy[plane * sOut + o];
        });
        dx[i] = acc;
    }
}

__global__ void avgPoolForwardKernel(PoolShape p, const float *x, float *y)
{
    const int64_t sIn = spatialIn(p), sOut = spatialOut(p);
    REMAT_GRID_STRIDE(i, p.n * p.c * sOut)
    {
        const int64_t plane = i / sOut;
        const Pos3 o = unflatten(i % sOut, p.out);
        float acc = 0.f;
        for (int64_t a = 0; a < p.kernel[0]; ++a) {
            const int64_t z = o.v[0] * p.stride[0] - p.padBegin[0] + a * p.dilation[0];
            if (z < 0 || z >= p.in[0])
                continue;
            for (int64_t b = 0; b < p.kernel[1]; ++b) {
                const int64_t h = o.v[1] * p.stride[1] - p.padBegin[1] + b * p.dilation[1];
                if (h < 0 || h >= p.in[1])
                    continue;
                for (int64_t c = 0; c < p.kernel[2]; ++c) {
                    const int64_t w = o.v[2] * p.stride[2] - p.padBegin[2] + c * p.dilation[2];
                    if (w < 0 || w >= p.in[2])
                        continue;
                    acc += x[plane * sIn + (z * p.in[1] + h) * p.in[2] + w];
                }
            }
        }
        y[i] = acc / avgDivisor(p, o);
    }
}

__global__ void avgPoolBackwardKernel(PoolShape p, const float *dy, float *dx)
{
    const int64_t sIn = spatialIn(p), sOut = spatialOut(p);
    REMAT_GRID_STRIDE(i, p.n * p.c * sIn)
    {
        const int64_t plane = i / sIn;
        const Pos3 pos = unflatten(i % sIn, p.in);
        float acc = 0.f;
        forEachCoveringWindow(p, pos, [&](int64_t o, const Pos3 &op) {
            acc += dy[plane * sOut + o] / avgDivisor(p, op);
        });
        dx[i] = acc;
    }
}

int64_t planeCount(const PoolShape &p, bool output)
{
    const int64_t *d = output ? p.out : p.in;
    return p.n * p.c * d[0] * d[1] * d[2];
}

} // namespace

cudaError_t maxPoolForward(cudaStream_t s, const PoolShape &p, const float *x, float *y,
                           long long *indices)
{
    const int64_t n = planeCount(p, true);
    if (n <= 0)
        return cudaSuccess;
    maxPoolForwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, x, y, indices);
    return cudaGetLastError();
}

cudaError_t maxPoolBackward(cudaStream_t s, const PoolShape &p, const float *dy,
                            const long long *indices, float *dx)
{
    const int64_t n = planeCount(p, false);
    if (n <= 0)
        return cudaSuccess;
    maxPoolBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, dy, indices, dx);
    return cudaGetLastError();
}

cudaError_t maxPoolBackwardFromInput(cudaStream_t s, const PoolShape &p, const float *x,
                                     const float *dy, float *dx)
{
    const int64_t n = planeCount(p, false);
    if (n <= 0)
        return cudaSuccess;
    maxPoolBackwardFromInputKernel<<<gridFor(n), kThreads, 0, s>>>(p, x, dy, dx);
    return cudaGetLastError();
}

cudaError_t avgPoolForward(cudaStream_t s, const PoolShape &p, const float *x, float *y)
{
    const int64_t n = planeCount(p, true);
    if (n <= 0)
        return cudaSuccess;
    avgPoolForwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, x, y);
    return cudaGetLastError();
}

cudaError_t avgPoolBackward(cudaStream_t s, const PoolShape &p, const float *dy, float *dx)
{
    const int64_t n = planeCount(p, false);
    if (n <= 0)
        return cudaSuccess;
    avgPoolBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(p, dy, dx);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
