#pragma once
// Axis arithmetic shared by every backend (the kernels differ, the geometry not).
//   int64_t axis = -1;  if (!normalizeAxis(axis, rank)) return error("axis out of range");
//   Expected<GatherGeometry> g = gatherGeometry(axis, xShape);  // data as outer x dim x inner

#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::exec {

/// Turns a negative axis (counted from the end, ONNX style) into its index; false when out of
/// range. A rank-0 tensor accepts axis 0 only.
bool normalizeAxis(int64_t &axis, int64_t rank);

/// ONNX Gather along one axis: the data tensor seen as outer x dim x inner, dim the gathered one.
struct GatherGeometry
{
    int64_t outer = 1;
    int64_t dim = 0;
    int64_t inner = 1;
};

/// Error: the axis is outside the data's rank.
Expected<GatherGeometry> gatherGeometry(int64_t axis, const std::vector<int64_t> &dataShape);

} // namespace remat::core::exec
