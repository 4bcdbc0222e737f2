#include "core/exec/index_maps.h"

#include <algorithm>
#include <cmath>

namespace remat::core::exec {
namespace {

/// Where output index `o` samples the input along one dim, by the coordinate transformation mode
/// (asymmetric, align_corners, pytorch_half_pixel; anything else is half_pixel): the linear and
/// the weighted (cubic, antialias) maps share it.
double sourceCoordinate(const std::string &ctm, int64_t o, int64_t in, int64_t out, double scale)
{
    if (ctm == "asymmetric")
        return double(o) / scale;
    if (ctm == "align_corners")
        return out == 1 ? 0.0 : double(o) * double(in - 1) / double(out - 1);
    if (ctm == "pytorch_half_pixel" && out == 1)
        return 0.0;
    return (double(o) + 0.5) / scale - 0.5;
}

Expected<std::vector<int64_t>> nearestSourceIndex(const NearestResizeAttrs &a, int64_t inSize,
                                                  int64_t outSize, double scale)
{
    const std::string &ctm = a.coordinateMode;
    const std::string &nm = a.nearestMode;
    std::vector<int64_t> src(static_cast<size_t>(outSize));
    for (int64_t o = 0; o < outSize; ++o) {
        double x;
        if (ctm == "asymmetric")
            x = o / scale;
        else if (ctm == "half_pixel" || ctm == "pytorch_half_pixel")
            x = (ctm == "pytorch_half_pixel" && outSize == 1) ? 0.0 : (o + 0.5) / scale - 0.5;
        else if (ctm == "align_corners")
            x = outSize == 1 ? 0.0 : double(o) * double(inSize - 1) / double(outSize - 1);
        else
            return makeError(StatusCode::Unsupported,
                             "unsupported coordinate_transformation_mode '" + ctm + "'");
        int64_t i;
        if (nm == "floor")
            i = int64_t(std::floor(x));
        else if (nm == "ceil")
            i = int64_t(std::ceil(x));
        else if (nm == "round_prefer_ceil")
            i = int64_t(std::floor(x + 0.5));
        else if (nm == "round_prefer_floor")
            i = (x - std::floor(x) == 0.5) ? int64_t(std::floor(x)) : int64_t(std::round(x));
        else
            return makeError(StatusCode::Unsupported, "unsupported nearest_mode '" + nm + "'");
        src[size_t(o)] = std::clamp<int64_t>(i, 0, inSize - 1);
    }
    return src;
}

std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
        s[d - 1] = s[d] * shape[d];
    return s;
}

/// The row-major map over `outShape` from each dim's source index (-1: the element is outside X).
std::vector<int64_t> combinePerDim(const std::vector<std::vector<int64_t>> &perDim,
                                   const std::vector<int64_t> &inShape,
                                   const std::vector<int64_t> &outShape)
{
    const size_t rank = outShape.size();
    const std::vector<int64_t> xs = rowMajor(inShape);
    int64_t total = 1;
    for (int64_t d : outShape)
        total *= d;
    std::vector<int64_t> map(static_cast<size_t>(std::max<int64_t>(total, 0)));
    std::vector<int64_t> idx(rank, 0);
    for (size_t o = 0; o < map.size(); ++o) {
        int64_t rem = int64_t(o), off = 0;
        for (size_t d = rank; d-- > 0;) {
            idx[d] = rem % outShape[d];
            rem /= outShape[d];
        }
        for (size_t d = 0; d < rank && off >= 0; ++d) {
            const int64_t i = perDim[d][size_t(idx[d])];
            off = i < 0 ? -1 : off + i * xs[d];
        }
        map[o] = off;
    }
    return map;
}

} // namespace

Expected<std::vector<int64_t>> nearestResizeMap(const NearestResizeAttrs &attrs,
                                                const std::vector<double> &scales,
                                                const std::vector<int64_t> &inShape,
                                                const std::vector<int64_t> &outShape)
{
    if (attrs.mode != "nearest")
        return makeError(StatusCode::Unsupported,
                         "Resize mode '" + attrs.mode + "' has no kernel (nearest only)");
    if (outShape.size() != inShape.size())
        return makeError(StatusCode::InvalidArgument,
                         "Resize output rank differs from the input's");
    const size_t rank = inShape.size();
    std::vector<std::vector<int64_t>> perDim(rank);
    for (size_t d = 0; d < rank; ++d) {
        const double s =
            scales.size() == rank ? scales[d] : double(outShape[d]) / double(inShape[d]);
        REMAT_ASSIGN_OR_RETURN(perDim[d], nearestSourceIndex(attrs, inShape[d], outShape[d], s));
    }
    return combinePerDim(perDim, inShape, outShape);
}

std::string resizeCoordinateMode(const std::string &opType, size_t inputCount,
                                 const std::string &attribute)
{
    if (!attribute.empty())
        return attribute;
    return opType == "Upsample" || inputCount <= 2 ? "asymmetric" : "half_pixel";
}

Expected<LinearResizeMap> linearResizeMap(const std::string &coordinateMode,
                                          const std::vector<double> &scales,
                                          const std::vector<int64_t> &inShape,
                                          const std::vector<int64_t> &outShape)
{
    const std::string &ctm = coordinateMode;
    if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
        ctm != "asymmetric")
        return makeError(StatusCode::Unsupported,
                         "linear Resize with coordinate_transformation_mode '" + ctm +
                             "' has no kernel (half_pixel, pytorch_half_pixel, align_corners and "
                             "asymmetric have)");
    const size_t rank = inShape.size();
    if (outShape.size() != rank)
        return makeError(StatusCode::InvalidArgument,
                         "Resize output rank differs from the input's");
    // Per dim and output index: the lower source index, the upper one and the upper's weight.
    struct Tap
    {
        int64_t lo, hi;
        double w;
    };
    std::vector<std::vector<Tap>> perDim(rank);
    std::vector<bool> two(rank, false);
    LinearResizeMap m;
    for (size_t d = 0; d < rank; ++d) {
        const int64_t in = inShape[d], out = outShape[d];
        if (in <= 0)
            return makeError(StatusCode::InvalidArgument, "Resize of an empty input");
        const double scale = scales.size() == rank ? scales[d] : double(out) / double(in);
        for (int64_t o = 0; o < out; ++o) {
            double x = sourceCoordinate(ctm, o, in, out, scale);
            x = std::clamp(x, 0.0, double(in - 1));
            const auto lo = int64_t(std::floor(x));
            const int64_t hi = std::min(lo + 1, in - 1);
            const double w = hi == lo ? 0.0 : x - double(lo);
            perDim[d].push_back({lo, hi, w});
            two[d] = two[d] || w != 0.0;
        }
        if (two[d])
            m.taps *= 2;
    }
    const std::vector<int64_t> xs = rowMajor(inShape);
    int64_t total = 1;
    for (int64_t d : outShape)
        total *= d;
    m.offsets.resize(size_t(total * m.taps));
    m.weights.resize(size_t(total * m.taps));
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < total; ++o) {
        int64_t rem = o;
        for (size_t d = rank; d-- > 0;) {
            idx[d] = rem % outShape[d];
            rem /= outShape[d];
        }
        for (int64_t t = 0; t < m.taps; ++t) {
            int64_t off = 0, bit = 0;
            double w = 1;
            for (size_t d = 0; d < rank; ++d) {
                const Tap &tap = perDim[d][size_t(idx[d])];
                if (two[d] && ((t >> bit++) & 1)) {
                    off += tap.hi * xs[d];
                    w *= tap.w;
                } else {
                    off += tap.lo * xs[d];
                    w *= two[d] ? 1.0 - tap.w : 1.0;
                }
            }
            m.offsets[size_t(o * m.taps + t)] = off;
            m.weights[size_t(o * m.taps + t)] = float(w);
        }
    }
    return m;
}

namespace {

/// Keys' cubic convolution kernel with parameter a (ONNX's cubic_coeff_a).
double cubicKernel(double t, double a)
{
    t = std::abs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

} // namespace

Expected<LinearResizeMap> weightedResizeMap(const ResizeFilter &filter,
                                            const std::vector<double> &scales,
                                            const std::vector<int64_t> &inShape,
                                            const std::vector<int64_t> &outShape)
{
    const bool cubic = filter.mode == "cubic";
    if (!cubic && filter.mode != "linear" && filter.mode != "bilinear")
        return makeError(StatusCode::Unsupported,
                         "Resize mode '" + filter.mode + "' has no weighted kernel");
    if (!cubic && !filter.antialias && !filter.excludeOutside)
        return linearResizeMap(filter.coordinateMode, scales, inShape, outShape);
    const std::string &ctm = filter.coordinateMode;
    if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
        ctm != "asymmetric")
        return makeError(StatusCode::Unsupported,
                         filter.mode + " Resize with coordinate_transformation_mode '" + ctm +
                             "' has no kernel (half_pixel, pytorch_half_pixel, align_corners and "
                             "asymmetric have)");
    const size_t rank = inShape.size();
    if (outShape.size() != rank)
        return makeError(StatusCode::InvalidArgument,
                         "Resize output rank differs from the input's");
    const double radius = cubic ? 2.0 : 1.0;
    // Per dim and output index: the taps (input index, weight), equal indices merged, zero
    // weights dropped; a dim's tap count is its longest list (shorter ones padded with zeros).
    using Taps = std::vector<std::pair<int64_t, double>>;
    std::vector<std::vector<Taps>> perDim(rank);
    std::vector<int64_t> count(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
        const int64_t in = inShape[d], out = outShape[d];
        if (in <= 0)
            return makeError(StatusCode::InvalidArgument, "Resize of an empty input");
        const double scale = scales.size() == rank ? scales[d] : double(out) / double(in);
        if (!(scale > 0) || !std::isfinite(scale))
            return makeError(StatusCode::InvalidArgument, "Resize scale must be positive");
        const double f = filter.antialias ? std::min(scale, 1.0) : 1.0;
        const auto start = int64_t(std::floor(-radius / f)) + 1;
        const int64_t width = 2 - 2 * start;
        if (width > 4096)
            return makeError(StatusCode::InvalidArgument,
                             "antialiased Resize averages more than 4096 inputs per output");
        perDim[d].resize(size_t(out));
        for (int64_t o = 0; o < out; ++o) {
            const double x = sourceCoordinate(ctm, o, in, out, scale);
            const auto base = int64_t(std::floor(x));
            Taps raw;
            double sum = 0;
            for (int64_t k = 0; k < width; ++k) {
                const int64_t i = base + start + k;
                const double t = (double(i) - x) * f;
                double w =
                    cubic ? cubicKernel(t, filter.cubicCoeffA) : std::max(0.0, 1 - std::abs(t));
                if (filter.excludeOutside && (i < 0 || i >= in))
                    w = 0;
                sum += w;
                raw.push_back({std::clamp<int64_t>(i, 0, in - 1), w});
            }
            // Antialias weights are normalised (ONNX divides by their sum); excluded taps
            // renormalise the rest.
            const bool normalise = filter.antialias || filter.excludeOutside;
            Taps &taps = perDim[d][size_t(o)];
            for (const auto &[i, w] : raw) {
                const double wn = normalise && sum != 0 ? w / sum : w;
                if (wn == 0)
                    continue;
                auto it = std::find_if(taps.begin(), taps.end(),
                                       [i = i](const auto &p) { return p.first == i; });
                if (it != taps.end())
                    it->second += wn;
                else
                    taps.push_back({i, wn});
            }
            if (taps.empty())
                taps.push_back({std::clamp<int64_t>(base, 0, in - 1), 0.0});
            count[d] = std::max<int64_t>(count[d], int64_t(taps.size()));
        }
    }
    LinearResizeMap m;
    for (int64_t c : count)
        m.taps *= c;
    const std::vector<int64_t> xs = rowMajor(inShape);
    int64_t total = 1;
    for (int64_t d : outShape)
        total *= d;
    if (total > 0 && m.taps > (int64_t(1) << 31) / total)
        return makeError(StatusCode::InvalidArgument, "Resize filter too large for its output");
    m.offsets.assign(size_t(total * m.taps), 0);
    m.weights.assign(size_t(total * m.taps), 0.0f);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < total; ++o) {
        int64_t rem = o;
        for (size_t d = rank; d-- > 0;) {
            idx[d] = rem % outShape[d];
            rem /= outShape[d];
        }
        for (int64_t t = 0; t < m.taps; ++t) {
            int64_t off = 0, digit = t;
            double w = 1;
            for (size_t d = rank; d-- > 0;) {
                const Taps &taps = perDim[d][size_t(idx[d])];
                const int64_t k = digit % count[d];
                digit /= count[d];
                if (k >= int64_t(taps.size())) {
                    w = 0;
                    off += taps.front().first * xs[d];
                } else {
                    off += taps[size_t(k)].first * xs[d];
                    w *= taps[size_t(k)].second;
                }
            }
            m.offsets[size_t(o * m.taps + t)] = off;
            m.weights[size_t(o * m.taps + t)] = float(w);
        }
    }
    return m;
}

Expected<std::vector<int64_t>> padSourceMap(const std::string &mode,
                                            const std::vector<int64_t> &pads,
                                            const std::vector<int64_t> &inShape,
                                            const std::vector<int64_t> &outShape)
{
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
        return makeError(StatusCode::Unsupported, "unsupported pad mode '" + mode + "'");
    const size_t rank = inShape.size();
    if (outShape.size() != rank || pads.size() != 2 * rank)
        return makeError(StatusCode::InvalidArgument, "pads length differs from 2 x rank");
    std::vector<std::vector<int64_t>> perDim(rank);
    for (size_t d = 0; d < rank; ++d) {
        const int64_t n = inShape[d];
        for (int64_t o = 0; o < outShape[d]; ++o) {
            int64_t i = o - pads[d];
            if (i < 0 || i >= n) {
                if (mode == "constant" || n <= 0)
                    i = -1;
                else if (mode == "edge")
                    i = std::clamp<int64_t>(i, 0, n - 1);
                else if (mode == "wrap") // opset 19: the input repeated periodically
                    i = ((i % n) + n) % n;
                else if (n == 1)
                    i = 0;
                else { // reflect: mirror without repeating the edge
                    const int64_t period = 2 * (n - 1);
                    i = ((i % period) + period) % period;
                    if (i >= n)
                        i = period - i;
                }
            }
            perDim[d].push_back(i);
        }
    }
    return combinePerDim(perDim, inShape, outShape);
}

Expected<TileView> tileView(const std::vector<int64_t> &inShape,
                            const std::vector<int64_t> &repeats)
{
    if (repeats.size() != inShape.size())
        return makeError(StatusCode::InvalidArgument, "Tile: " + std::to_string(repeats.size()) +
                                                          " repeats for an input of rank " +
                                                          std::to_string(inShape.size()));
    TileView v;
    for (size_t d = 0; d < inShape.size(); ++d) {
        if (repeats[d] < 0)
            return makeError(StatusCode::InvalidArgument, "Tile: a negative repeat");
        v.source.insert(v.source.end(), {1, inShape[d]});
        v.expanded.insert(v.expanded.end(), {repeats[d], inShape[d]});
    }
    return v;
}

Expected<ScanGeometry> cumSumGeometry(const std::vector<int64_t> &shape, int64_t axis,
                                      bool exclusive, bool reverse)
{
    const auto rank = int64_t(shape.size());
    if (axis < -rank || axis >= rank || rank == 0)
        return makeError(StatusCode::InvalidArgument, "CumSum: axis " + std::to_string(axis) +
                                                          " is outside a rank-" +
                                                          std::to_string(rank) + " input");
    if (axis < 0)
        axis += rank;
    ScanGeometry g;
    g.exclusive = exclusive;
    g.reverse = reverse;
    for (int64_t d = 0; d < rank; ++d)
        (d < axis ? g.outer : d == axis ? g.len : g.inner) *= shape[size_t(d)];
    return g;
}

Expected<std::vector<int64_t>> elementsAlongAxis(const std::vector<int64_t> &dataShape,
                                                 const std::vector<int64_t> &indicesShape,
                                                 const std::vector<int64_t> &indices, int64_t axis)
{
    const auto rank = int64_t(dataShape.size());
    if (int64_t(indicesShape.size()) != rank || rank == 0)
        return makeError(StatusCode::InvalidArgument,
                         "indices must have the data's rank (" + std::to_string(rank) + ")");
    if (axis < -rank || axis >= rank)
        return makeError(StatusCode::InvalidArgument, "axis " + std::to_string(axis) +
                                                          " is outside a rank-" +
                                                          std::to_string(rank) + " input");
    if (axis < 0)
        axis += rank;
    for (int64_t d = 0; d < rank; ++d)
        if (d != axis && indicesShape[size_t(d)] > dataShape[size_t(d)])
            return makeError(StatusCode::InvalidArgument,
                             "indices dim " + std::to_string(d) + " exceeds the data's");
    const std::vector<int64_t> ds = rowMajor(dataShape);
    std::vector<int64_t> map(indices.size()), idx(size_t(rank), 0);
    const int64_t len = dataShape[size_t(axis)];
    for (size_t o = 0; o < indices.size(); ++o) {
        int64_t rem = int64_t(o), off = 0;
        for (int64_t d = rank; d-- > 0;) {
            idx[size_t(d)] = rem % indicesShape[size_t(d)];
            rem /= indicesShape[size_t(d)];
        }
        for (int64_t d = 0; d < rank; ++d) {
            int64_t i = idx[size_t(d)];
            if (d == axis) {
                i = indices[o] < 0 ? indices[o] + len : indices[o];
                if (i < 0 || i >= len)
                    return makeError(StatusCode::InvalidArgument,
                                     "index " + std::to_string(indices[o]) +
                                         " is out of range for a dim of " + std::to_string(len));
            }
            off += i * ds[size_t(d)];
        }
        map[o] = off;
    }
    return map;
}

Expected<ScatterGeometry> scatterElementsGeometry(const std::string &reduction,
                                                  const std::vector<int64_t> &dataShape,
                                                  const std::vector<int64_t> &indicesShape,
                                                  const std::vector<int64_t> &indices, int64_t axis)
{
    if (reduction != "none" && reduction != "add")
        return makeError(StatusCode::Unsupported, "ScatterElements with reduction '" + reduction +
                                                      "' has no kernel (none and add have)");
    ScatterGeometry g;
    REMAT_ASSIGN_OR_RETURN(g.offsets, elementsAlongAxis(dataShape, indicesShape, indices, axis));
    g.sliceSize = 1;
    return g;
}

Expected<ScatterGeometry> scatterNDGeometry(const std::string &reduction,
                                            const std::vector<int64_t> &dataShape,
                                            const std::vector<int64_t> &indicesShape,
                                            const std::vector<int64_t> &indices)
{
    if (reduction != "none")
        return makeError(StatusCode::Unsupported, "only reduction 'none' is supported");
    const size_t q = indicesShape.size();
    if (q == 0)
        return makeError(StatusCode::InvalidArgument, "indices must have rank >= 1");
    const int64_t k = indicesShape[q - 1];
    if (k > int64_t(dataShape.size()))
        return makeError(StatusCode::InvalidArgument, "index depth exceeds data rank");
    ScatterGeometry g;
    for (size_t d = size_t(std::max<int64_t>(k, 0)); d < dataShape.size(); ++d)
        g.sliceSize *= dataShape[d];
    const std::vector<int64_t> ds = rowMajor(dataShape);
    const int64_t n = int64_t(indices.size()) / std::max<int64_t>(k, 1);
    for (int64_t i = 0; i < n; ++i) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; ++j) {
            int64_t v = indices[size_t(i * k + j)];
            if (v < 0)
                v += dataShape[size_t(j)];
            if (v < 0 || v >= dataShape[size_t(j)])
                return makeError(StatusCode::InvalidArgument, "index out of range");
            off += v * ds[size_t(j)];
        }
        g.offsets.push_back(off);
    }
    return g;
}

} // namespace remat::core::exec
