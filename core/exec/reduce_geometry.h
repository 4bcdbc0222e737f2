#pragma once
// Which axes an ONNX ReduceMean / ReduceSum reduces, shared by every backend (the kernels differ,
// the axis resolution not).
//   Expected<ReduceGeometry> g = reduceGeometry(xShape, axes, keepDims, noopWithEmptyAxes);
//   y[j] = sum of x over the reduced axes / (mean ? g->count : 1);  y laid out as g->keptShape

#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::exec {

struct ReduceGeometry
{
    std::vector<int64_t> keptShape; ///< the input shape with 1 on every reduced axis (keepdims=1)
    std::vector<int64_t> outShape;  ///< the node's output shape: keptShape, or without reduced axes
    std::vector<bool> reduced;      ///< per input axis
    int64_t count = 1;              ///< input elements summed into each output element
};

/// ONNX semantics (opset 13 ReduceSum / opset 18 ReduceMean, axes from the attribute or input 1,
/// the caller reads them): negative axes count from the end; a repeated axis is reduced once; no
/// axes means every axis, or none when noop_with_empty_axes is set. Errors name the bad axis.
[[nodiscard]] Expected<ReduceGeometry> reduceGeometry(const std::vector<int64_t> &dataShape,
                                                      const std::vector<int64_t> &axes,
                                                      bool keepDims, bool noopWithEmptyAxes);

/// A reduction over one axis as [outer, n, inner] (torch.max(x, dim)'s indices run along n).
struct AxisSplit
{
    int64_t outer = 1, n = 1, inner = 1;
};
/// From the input shape and its kept shape (1 on reduced axes); an error when more than one
/// axis of size above 1 is reduced. Reducing only axes of size 1 is n = 1.
[[nodiscard]] Expected<AxisSplit> singleAxisSplit(const std::vector<int64_t> &dataShape,
                                                  const std::vector<int64_t> &keptShape);
/// WeightNorm's layout: v as [outer, n, inner] around the one axis its norm keeps (n values);
/// axis < 0: one norm of everything (n = 1).
[[nodiscard]] Expected<AxisSplit> keptAxisSplit(const std::vector<int64_t> &shape, int64_t axis);

} // namespace remat::core::exec
