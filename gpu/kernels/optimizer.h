#pragma once
// The optimizer step's update kernels (core/training/training_options.h), in place over n
// contiguous floats, with the CPU reference's float32 arithmetic in the same order
// (core/exec/cpu/kernels_optimizer.cpp: torch.optim's single-tensor path).
//   sgdUpdate(stream, {.lr = 1e-3f}, param, grad, nullptr, n);             // plain SGD
//   adamUpdate(stream, {...}, param, grad, exp_avg, exp_avg_sq, n);

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

struct SgdParams
{
    float lr = 0, weightDecay = 0, momentum = 0;
};

/// p -= lr * d, d = g + wd * p; with `buf` (momentum): buf = buf * momentum + d, d = buf.
cudaError_t sgdUpdate(cudaStream_t s, SgdParams p, float *param, const float *grad, float *buf,
                      int64_t n);

struct AdamParams
{
    float stepSize = 0; ///< lr / (1 - beta1^step)
    float bc2Sqrt = 1;  ///< sqrt(1 - beta2^step)
    float beta1 = 0, beta2 = 0, oneMinusBeta1 = 0, oneMinusBeta2 = 0, eps = 0;
    float weightDecay = 0;  ///< Adam's L2 term (added to the gradient)
    float decay = 1;        ///< AdamW's decoupled factor 1 - lr * wd
    bool decoupled = false; ///< AdamW
};

cudaError_t adamUpdate(cudaStream_t s, AdamParams p, float *param, const float *grad, float *expAvg,
                       float *expAvgSq, int64_t n);

} // namespace remat::gpu::kernels
