#pragma once
// Where Resize (nearest) and ScatterND read and write, shared by every backend (the kernels move
// the elements, the maps are computed once here on the host from the shapes and attributes).
//   Expected<std::vector<int64_t>> map = nearestResizeMap(attrs, scales, xShape, yShape);
//   y[o] = x[(*map)[o]]                          (backward: dx[(*map)[o]] += dy[o])
//   Expected<ScatterGeometry> g = scatterNDGeometry("none", dataShape, indicesShape, indices);
//   y = data; y[g->offsets[i] .. + g->sliceSize) = updates[i * g->sliceSize ..)

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::exec {

/// Resize's attributes that decide a nearest-neighbour source (ONNX's defaults).
struct NearestResizeAttrs
{
    std::string mode = "nearest";
    std::string coordinateMode = "half_pixel"; ///< coordinate_transformation_mode
    std::string nearestMode = "round_prefer_floor";
};

/// The source element offset in X of every element of Y (row-major), nearest neighbour. `scales`
/// holds one scale per dim or is empty (then output / input size). Errors name the unsupported
/// mode.
Expected<std::vector<int64_t>> nearestResizeMap(const NearestResizeAttrs &attrs,
                                                const std::vector<double> &scales,
                                                const std::vector<int64_t> &inShape,
                                                const std::vector<int64_t> &outShape);

/// Pad in mode "constant", "edge" or "reflect": the source offset in X of every element of Y
/// (row-major), -1 where a constant pad value goes. `pads` holds the begins then the ends, one per
/// dim (negative pads crop). Errors name an unsupported mode.
Expected<std::vector<int64_t>> padSourceMap(const std::string &mode,
                                            const std::vector<int64_t> &pads,
                                            const std::vector<int64_t> &inShape,
                                            const std::vector<int64_t> &outShape);

struct ScatterGeometry
{
    std::vector<int64_t> offsets; ///< element offset in data of each update slice
    int64_t sliceSize = 1;
};

/// ScatterND (reduction none): where each update slice goes in data. `indices` row-major with
/// `indicesShape`; negative indices count from the end; out of range is an error.
Expected<ScatterGeometry> scatterNDGeometry(const std::string &reduction,
                                            const std::vector<int64_t> &dataShape,
                                            const std::vector<int64_t> &indicesShape,
                                            const std::vector<int64_t> &indices);

} // namespace remat::core::exec
