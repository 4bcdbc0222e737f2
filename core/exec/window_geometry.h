#pragma once
// The window attributes of an ONNX Conv / MaxPool / AveragePool node resolved once for every
// backend (the kernels differ, the attribute rules not): lengths checked against the spatial rank,
// auto_pad turned into explicit pads.
//   Expected<WindowAttributes> w = resolveWindow(xShape, kernel, strides, dilations, pads, autoPad);
//   begin pad of spatial dim d: w->pads[d]; end pad: w->pads[d + spatial]

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::exec {

struct WindowAttributes
{
    std::vector<int64_t> kernel, strides, dilations; ///< one per spatial dim
    std::vector<int64_t> pads;                       ///< every begin, then every end (ONNX order)
};

/// `x` is the input shape (N, C, spatial...); the others as the node has them, with ONNX's
/// defaults already filled in by the caller (strides and dilations 1, pads 0). SAME_UPPER /
/// SAME_LOWER pad to an output of ceil(in / stride), the odd pixel at the end / the beginning;
/// VALID pads nothing. InvalidArgument names the attribute whose length is wrong.
[[nodiscard]] Expected<WindowAttributes>
resolveWindow(const std::vector<int64_t> &x, std::vector<int64_t> kernel,
              std::vector<int64_t> strides, std::vector<int64_t> dilations,
              std::vector<int64_t> pads, const std::string &autoPad);

} // namespace remat::core::exec
