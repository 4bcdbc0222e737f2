#pragma once
// Where Resize, Pad, Tile, CumSum, GatherElements, ScatterElements and ScatterND read and write, shared by every backend (the kernels move
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

/// Resize / Upsample in mode "linear" (bilinear, trilinear, ...): y[o] = sum over t < taps of
/// weights[o * taps + t] * x[offsets[o * taps + t]], two taps along every dim whose size or scale
/// changes (one along the others). Source coordinates follow `coordinateMode` (half_pixel,
/// pytorch_half_pixel, align_corners, asymmetric), clamped to the input as ONNX Runtime and
/// PyTorch clamp them. The backward scatters dy with the same weights.
struct LinearResizeMap
{
    int64_t taps = 1;
    std::vector<int64_t> offsets;
    std::vector<float> weights;
};
Expected<LinearResizeMap> linearResizeMap(const std::string &coordinateMode,
                                          const std::vector<double> &scales,
                                          const std::vector<int64_t> &inShape,
                                          const std::vector<int64_t> &outShape);

/// Resize in mode "linear" or "cubic", optionally with Resize-18's antialias, as ONNX defines
/// them: along each dim, output o reads the input at x = the coordinate mode's source of o (not
/// clamped), from the taps floor(x) + k around it with weights filter((tap - x) * f), where the
/// filter is the triangle (linear) or Keys' cubic with `cubicCoeffA` (cubic), and f = min(scale,
/// 1) with antialias when downscaling (the filter widens to cover every input it averages;
/// weights then normalised to sum 1), else 1. A tap outside the input reads the edge element,
/// or with `excludeOutside` gets weight 0 and the rest are normalised. PyTorch's bicubic is
/// cubic with a = -0.75; its antialiased bilinear / bicubic (a = -0.5) exclude outside taps.
/// Plain linear (no antialias) is linearResizeMap's, unchanged. The result is the same gather
/// with weights: `taps` per output element (dims with a single tap cost none).
struct ResizeFilter
{
    std::string mode = "linear";               ///< "linear" (or "bilinear") or "cubic"
    std::string coordinateMode = "half_pixel"; ///< coordinate_transformation_mode
    double cubicCoeffA = -0.75;
    bool excludeOutside = false;
    bool antialias = false;
};
Expected<LinearResizeMap> weightedResizeMap(const ResizeFilter &filter,
                                            const std::vector<double> &scales,
                                            const std::vector<int64_t> &inShape,
                                            const std::vector<int64_t> &outShape);

/// The coordinate_transformation_mode a Resize / Upsample node uses: Resize-10 and Upsample (two
/// inputs, no such attribute) are asymmetric; Resize-11 and later default to half_pixel.
std::string resizeCoordinateMode(const std::string &opType, size_t inputCount,
                                 const std::string &attribute);

/// Pad in mode "constant", "edge", "reflect" or "wrap" (opset 19): the source offset in X of every element of Y
/// (row-major), -1 where a constant pad value goes. `pads` holds the begins then the ends, one per
/// dim (negative pads crop). Errors name an unsupported mode.
Expected<std::vector<int64_t>> padSourceMap(const std::string &mode,
                                            const std::vector<int64_t> &pads,
                                            const std::vector<int64_t> &inShape,
                                            const std::vector<int64_t> &outShape);

/// Tile as a broadcast: X [d0, d1, ...] viewed as `source` [1, d0, 1, d1, ...] and expanded to
/// `expanded` [r0, d0, r1, d1, ...], which, contiguous, is Y. The backward sums dY viewed as
/// `expanded` back to `source`. Errors: repeats of the wrong length or negative.
struct TileView
{
    std::vector<int64_t> source, expanded;
};
Expected<TileView> tileView(const std::vector<int64_t> &inShape,
                            const std::vector<int64_t> &repeats);

/// CumSum along one axis of a row-major tensor viewed as [outer, len, inner]: element k of a line
/// sums elements 0..k (k..len-1 when reverse), without element k itself when exclusive. Its
/// gradient is the same scan in the other direction.
struct ScanGeometry
{
    int64_t outer = 1, len = 1, inner = 1;
    bool exclusive = false, reverse = false;
};
/// Errors: the axis out of range (negative counts from the end).
Expected<ScanGeometry> cumSumGeometry(const std::vector<int64_t> &shape, int64_t axis,
                                      bool exclusive, bool reverse);

/// GatherElements / ScatterElements along `axis`: the element offset in data of every element of
/// the indices (row-major over `indicesShape`, which has data's rank and no larger dim off the
/// axis). Negative indices count from the end; out of range is an error.
Expected<std::vector<int64_t>> elementsAlongAxis(const std::vector<int64_t> &dataShape,
                                                 const std::vector<int64_t> &indicesShape,
                                                 const std::vector<int64_t> &indices, int64_t axis);

struct ScatterGeometry
{
    std::vector<int64_t> offsets; ///< element offset in data of each update slice
    int64_t sliceSize = 1;
};

/// ScatterND (reduction none): where each update slice goes in data. `indices` row-major with
/// `indicesShape`; negative indices count from the end; out of range is an error.
/// ScatterElements (reduction none) as one-element slices at elementsAlongAxis's offsets.
Expected<ScatterGeometry> scatterElementsGeometry(const std::string &reduction,
                                                  const std::vector<int64_t> &dataShape,
                                                  const std::vector<int64_t> &indicesShape,
                                                  const std::vector<int64_t> &indices,
                                                  int64_t axis);
Expected<ScatterGeometry> scatterNDGeometry(const std::string &reduction,
                                            const std::vector<int64_t> &dataShape,
                                            const std::vector<int64_t> &indicesShape,
                                            const std::vector<int64_t> &indices);

} // namespace remat::core::exec
