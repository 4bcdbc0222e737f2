#include "core/exec/slice_geometry.h"

#include <algorithm>
#include <numeric>

namespace remat::core::exec {

Expected<SliceGeometry> sliceGeometry(std::vector<int64_t> starts, std::vector<int64_t> ends,
                                      std::vector<int64_t> axes, std::vector<int64_t> steps,
                                      const std::vector<int64_t> &dataShape)
{
    const int64_t rank = int64_t(dataShape.size());
    if (axes.empty()) {
        axes.resize(starts.size());
        std::iota(axes.begin(), axes.end(), 0);
    }
    if (steps.empty())
        steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
        return makeError(StatusCode::InvalidArgument, "starts/ends/axes/steps lengths differ");
    std::vector<int64_t> begin(size_t(rank), 0), step(size_t(rank), 1), count = dataShape;
    for (size_t i = 0; i < starts.size(); ++i) {
        int64_t a = axes[i];
        if (a < 0)
            a += rank;
        if (a < 0 || a >= rank)
            return makeError(StatusCode::InvalidArgument, "axis out of range");
        const int64_t dim = dataShape[size_t(a)], st = steps[i];
        if (st == 0)
            return makeError(StatusCode::InvalidArgument, "step 0");
        int64_t s = starts[i], e = ends[i];
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        if (st > 0) {
            s = std::clamp<int64_t>(s, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            count[size_t(a)] = e > s ? (e - s + st - 1) / st : 0;
        } else {
            s = std::clamp<int64_t>(s, 0, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            count[size_t(a)] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
        }
        begin[size_t(a)] = s;
        step[size_t(a)] = st;
    }
    SliceGeometry g;
    std::vector<int64_t> ds(size_t(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d)
        ds[size_t(d)] = ds[size_t(d) + 1] * dataShape[size_t(d) + 1];
    g.outShape = count;
    g.strides.resize(size_t(rank));
    for (size_t d = 0; d < size_t(rank); ++d) {
        g.offset += begin[d] * ds[d];
        g.strides[d] = step[d] * ds[d];
    }
    return g;
}

} // namespace remat::core::exec
