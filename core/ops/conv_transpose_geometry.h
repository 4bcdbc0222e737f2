#pragma once
// ConvTranspose's attributes resolved once for shape inference and every backend: the kernel
// (from W when kernel_shape is absent), strides, dilations, output_padding, and the pads and
// output size after auto_pad / output_shape (ONNX's rules), checked against the input's rank.
//   Expected<ConvTransposeGeometry> g = resolveConvTranspose(&node, xShape, wShape);
//   g->out[d]: output size of spatial dim d; g->pads[d] / g->pads[d + spatial]: begin / end pad

#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::ir {
struct Node;
}

namespace remat::core::ops {

struct ConvTransposeGeometry
{
    std::vector<int64_t> kernel, strides, dilations, outputPadding; ///< one per spatial dim
    std::vector<int64_t> pads; ///< every begin, then every end (ONNX order), after auto_pad
    std::vector<int64_t> out;  ///< output spatial sizes
    int64_t groups = 1;
    int64_t outChannels = 0; ///< W's dim 1 times groups
};

/// `x` is [N, C, in...], `w` is [C, M / group, k...] (static). `node` null: every default.
/// Output size per dim: stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads; with
/// output_shape (or SAME_UPPER / SAME_LOWER: in * stride) the total padding follows from the size
/// and is split as ONNX says (SAME_UPPER: the odd pad at the end). InvalidArgument names the
/// attribute that does not fit (a length, a negative total padding, channels and groups).
[[nodiscard]] Expected<ConvTransposeGeometry> resolveConvTranspose(const ir::Node *node,
                                                                   const std::vector<int64_t> &x,
                                                                   const std::vector<int64_t> &w);

} // namespace remat::core::ops
