#include "gpu/kernels/launch.cuh"
#include "gpu/kernels/optimizer.h"

namespace remat::gpu::kernels {
using namespace detail;

namespace {

__global__ void sgdKernel(SgdParams p, float *param, const float *grad, float *buf, int64_t n)
{
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(blockDim.x) * gridDim.x) {
        float d =
            p.weightDecay != 0 ? __fadd_rn(grad[i], __fmul_rn(p.weightDecay, param[i])) : grad[i];
        if (buf) {
            buf[i] = __fadd_rn(__fmul_rn(buf[i], p.momentum), d);
            d = buf[i];
        }
        param[i] = __fadd_rn(param[i], __fmul_rn(-p.lr, d));
    }
}

__global__ void adamKernel(AdamParams p, float *param, const float *grad, float *m, float *v,
                           int64_t n)
{
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(blockDim.x) * gridDim.x) {
        float g = grad[i];
        if (p.decoupled)
            param[i] = __fmul_rn(param[i], p.decay);
        else if (p.weightDecay != 0)
            g = __fadd_rn(g, __fmul_rn(p.weightDecay, param[i]));
        m[i] = __fadd_rn(__fmul_rn(m[i], p.beta1), __fmul_rn(p.oneMinusBeta1, g));
        v[i] = __fadd_rn(__fmul_rn(v[i], p.beta2), __fmul_rn(__fmul_rn(p.oneMinusBeta2, g), g));
        const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v[i]), p.bc2Sqrt), p.eps);
        param[i] = __fadd_rn(param[i], __fdiv_rn(__fmul_rn(-p.stepSize, m[i]), denom));
    }
}

} // namespace

cudaError_t sgdUpdate(cudaStream_t s, SgdParams p, float *param, const float *grad, float *buf,
                      int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    sgdKernel<<<gridFor(n), kThreads, 0, s>>>(p, param, grad, buf, n);
    return cudaGetLastError();
}

cudaError_t adamUpdate(cudaStream_t s, AdamParams p, float *param, const float *grad, float *expAvg,
                       float *expAvgSq, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    adamKernel<<<gridFor(n), kThreads, 0, s>>>(p, param, grad, expAvg, expAvgSq, n);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
