#pragma once
// Max and average pooling over 1 to 3 spatial dims (NC + spatial, row-major), float32.
//   PoolShape p = ...;  maxPoolForward(stream, p, x, y, indices);   // int64 flat indices
//   maxPoolBackward(stream, p, dy, indices, dx);                    // deterministic gather
// MaxPool indices are flat positions in the whole input tensor (ONNX: [0, N*C*D1*...*Dn)).
// Backward kernels gather over the windows that cover each input element instead of scattering
// with atomics, so repeated runs (and recomputes) are bitwise identical.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

struct PoolShape
{
    int64_t n = 0, c = 0;
    /// Spatial sizes padded to 3 dims at the front with 1 (kernel 1, stride 1, pads 0 there).
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1},
            dilation[3] = {1, 1, 1}, padBegin[3] = {0, 0, 0}, padEnd[3] = {0, 0, 0};
    bool countIncludePad = false; ///< AveragePool: divide by the full window (pads included)
};

cudaError_t maxPoolForward(cudaStream_t s, const PoolShape &p, const float *x, float *y,
                           long long *indices);
/// dx from dy and the saved indices (dx is fully written).
cudaError_t maxPoolBackward(cudaStream_t s, const PoolShape &p, const float *dy,
                            const long long *indices, float *dx);
/// dx from x and y when no indices were saved: the first maximum of each window gets dy.
cudaError_t maxPoolBackwardFromInput(cudaStream_t s, const PoolShape &p, const float *x,
                                     const float *dy, float *dx);

cudaError_t avgPoolForward(cudaStream_t s, const PoolShape &p, const float *x, float *y);
cudaError_t avgPoolBackward(cudaStream_t s, const PoolShape &p, const float *dy, float *dx);

} // namespace remat::gpu::kernels
