#pragma once
// im2col / col2im for convolution through matrix products when cuDNN is absent (or not wanted).
//   im2col(stream, g, x, cols);   // cols [C*kh*kw, oh*ow] of one image's channel group
//   col2im(stream, g, dcols, dx); // dx fully written (gather over the columns, no atomics)

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

struct ConvWindow
{
    int64_t c = 1, h = 1, w = 1; ///< channels of the group, input size
    int64_t kh = 1, kw = 1, oh = 1, ow = 1;
    int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

/// cols[((ci * kh + i) * kw + j) * (oh*ow) + oy * ow + ox] = x[ci, iy, ix] or 0 in the padding.
cudaError_t im2col(cudaStream_t s, const ConvWindow &g, const float *x, float *cols);
/// dx[ci, iy, ix] = sum of the columns that read it.
cudaError_t col2im(cudaStream_t s, const ConvWindow &g, const float *cols, float *dx);

} // namespace remat::gpu::kernels
