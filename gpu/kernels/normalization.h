#pragma once
// Softmax, LayerNorm, GroupNorm / InstanceNorm and BatchNorm (training mode) kernels, float32.
//   softmaxForward(stream, x, y, outer, axisLen, inner);
//   layerNormForward(stream, x, scale, bias, y, mean, invStd, rows, cols, eps);
//   batchNormTrainForward(stream, {...});
// Statistics are accumulated in float and saved as the CPU reference saves them: the mean and
// the inverse standard deviation 1/sqrt(var + eps) of the biased variance.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

/// Softmax over the middle dim of [outer, axisLen, inner]; logSoftmax when `log` is set.
cudaError_t softmaxForward(cudaStream_t s, const float *x, float *y, int64_t outer, int64_t axisLen,
                           int64_t inner, bool log = false);
/// dx = y * (dy - sum(dy * y)) (softmax) or dy - exp(y) * sum(dy) (log softmax).
cudaError_t softmaxBackward(cudaStream_t s, const float *y, const float *dy, float *dx,
                            int64_t outer, int64_t axisLen, int64_t inner, bool log = false);

/// WeightNorm over v [outer, n, inner]: norm[k] = ||v[:, k, :]||, w = g[k] v / norm[k].
cudaError_t weightNormForward(cudaStream_t s, const float *v, const float *g, float *w, float *norm,
                              int64_t outer, int64_t n, int64_t inner);
/// dg[k] = sum(dw v)[k] / norm[k] (dg may be null), dv = g[k] / norm[k] (dw - v dg[k] / norm[k])
/// (dv may be null); `scratch` holds n floats.
cudaError_t weightNormBackward(cudaStream_t s, const float *v, const float *g, const float *norm,
                               const float *dw, float *dv, float *dg, float *scratch, int64_t outer,
                               int64_t n, int64_t inner);

/// Normalises each of `rows` rows of `cols` values; scale/bias have `cols` values (bias may be
/// null); mean/invStd (may be null) receive one value per row.
cudaError_t layerNormForward(cudaStream_t s, const float *x, const float *scale, const float *bias,
                             float *y, float *mean, float *invStd, int64_t rows, int64_t cols,
                             float eps);
/// dx (may be null), dScale, dBias (may be null) from x, scale, dy and the saved statistics;
/// when mean/invStd are null they are recomputed from x (eps needed then).
cudaError_t layerNormBackward(cudaStream_t s, const float *x, const float *scale, const float *dy,
                              const float *mean, const float *invStd, float *dx, float *dScale,
                              float *dBias, int64_t rows, int64_t cols, float eps);

/// Per-row mean and inverse std (for LayerNorm's parameter gradients when none were saved).
cudaError_t layerNormRowStats(cudaStream_t s, const float *x, float *mean, float *invStd,
                              int64_t rows, int64_t cols, float eps);

struct BatchNormShape
{
    int64_t n = 0, c = 0, spatial = 1; ///< x is [n, c, spatial]
};

/// Training-mode forward: batch statistics, y, saved mean / invStd (may be null), and, when
/// runningMean/runningVar are given, running = momentum * running + (1 - momentum) * batch (the
/// unbiased variance for the running variance, as PyTorch). Running stats are updated in place.
cudaError_t batchNormTrainForward(cudaStream_t s, BatchNormShape shape, const float *x,
                                  const float *scale, const float *bias, float *y, float *savedMean,
                                  float *savedInvStd, float *runningMean, float *runningVar,
                                  float momentum, float eps);
/// Inference-mode forward from given mean / var.
cudaError_t batchNormInferForward(cudaStream_t s, BatchNormShape shape, const float *x,
                                  const float *scale, const float *bias, const float *mean,
                                  const float *var, float *y, float eps);
/// Training-mode backward: dx, dScale, dBias (any may be null). Uses the saved statistics when
/// given, else recomputes them from x with `eps`.
cudaError_t batchNormTrainBackward(cudaStream_t s, BatchNormShape shape, const float *x,
                                   const float *scale, const float *dy, const float *savedMean,
                                   const float *savedInvStd, float *dx, float *dScale, float *dBias,
                                   float eps);

/// GroupNormalization / InstanceNormalization: x is [n, c, spatial], statistics per (sample,
/// group) row of c / groups * spatial contiguous values; scale / bias per channel, or per group
/// when !perChannel (GroupNormalization-18).
struct GroupNormShape
{
    int64_t n = 0, c = 0, groups = 1, spatial = 1;
    bool perChannel = true;
};

/// y = (x - mean) invStd scale + bias; mean / invStd (n * groups values each) are written.
cudaError_t groupNormForward(cudaStream_t s, GroupNormShape shape, const float *x,
                             const float *scale, const float *bias, float *y, float *mean,
                             float *invStd, float eps);
/// dx (may be null), dScale and dBias (either may be null) from x, scale, dy and the statistics.
cudaError_t groupNormBackward(cudaStream_t s, GroupNormShape shape, const float *x,
                              const float *scale, const float *dy, const float *mean,
                              const float *invStd, float *dx, float *dScale, float *dBias);

struct LrnShape
{
    int64_t n = 0, c = 0, spatial = 1;
    int64_t lo = 0, hi = 0, size = 1; ///< window of channel c: [c - lo, c + hi]
    float alpha = 1e-4f, beta = 0.75f, bias = 1.f;
};

/// Local response normalisation across channels: y = x * s^-beta, s = bias + alpha/size * sum x^2.
cudaError_t lrnForward(cudaStream_t s, const LrnShape &p, const float *x, float *y);
/// dx = dy s^-beta - 2 alpha beta / size * x * sum over the windows holding the channel of
/// dy x s^(-beta-1) (neighbour scales recomputed: no scratch).
cudaError_t lrnBackward(cudaStream_t s, const LrnShape &p, const float *x, const float *dy,
                        float *dx);

} // namespace remat::gpu::kernels
