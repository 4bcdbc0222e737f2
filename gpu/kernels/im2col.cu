#include "gpu/kernels/im2col.h"
#include "gpu/kernels/launch.cuh"

namespace remat::gpu::kernels {
using namespace detail;

namespace {

__global__ void im2colKernel(ConvWindow g, const float *x, float *cols)
{
    const int64_t ohw = g.oh * g.ow;
    REMAT_GRID_STRIDE(t, g.c * g.kh * g.kw * ohw)
    {
        const int64_t col = t % ohw, row = t / ohw;
        const int64_t j = row % g.kw, i = (row / g.kw) % g.kh, ci = row / (g.kw * g.kh);
        const int64_t oy = col / g.ow, ox = col % g.ow;
        const int64_t iy = oy * g.sh - g.ph + i * g.dh, ix = ox * g.sw - g.pw + j * g.dw;
        cols[t] =
            (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[(ci * g.h + iy) * g.w + ix] : 0.f;
    }
}

__global__ void col2imKernel(ConvWindow g, const float *cols, float *dx)
{
    const int64_t ohw = g.oh * g.ow;
    REMAT_GRID_STRIDE(t, g.c * g.h * g.w)
    {
        const int64_t ix = t % g.w, iy = (t / g.w) % g.h, ci = t / (g.w * g.h);
        float acc = 0.f;
        for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ny = iy + g.ph - i * g.dh;
            if (ny < 0 || ny % g.sh != 0 || ny / g.sh >= g.oh)
                continue;
            for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t nx = ix + g.pw - j * g.dw;
                if (nx < 0 || nx % g.sw != 0 || nx / g.sw >= g.ow)
                    continue;
                acc += cols[((ci * g.kh + i) * g.kw + j) * ohw + (ny / g.sh) * g.ow + nx / g.sw];
            }
        }
        dx[t] = acc;
    }
}

} // namespace

cudaError_t im2col(cudaStream_t s, const ConvWindow &g, const float *x, float *cols)
{
    const int64_t n = g.c * g.kh * g.kw * g.oh * g.ow;
    if (n <= 0)
        return cudaSuccess;
    im2colKernel<<<gridFor(n), kThreads, 0, s>>>(g, x, cols);
    return cudaGetLastError();
}

cudaError_t col2im(cudaStream_t s, const ConvWindow &g, const float *cols, float *dx)
{
    const int64_t n = g.c * g.h * g.w;
    if (n <= 0)
        return cudaSuccess;
    col2imKernel<<<gridFor(n), kThreads, 0, s>>>(g, cols, dx);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
