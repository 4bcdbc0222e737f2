#include "core/exec/reduce_geometry.h"

#include <string>

namespace remat::core::exec {

Expected<ReduceGeometry> reduceGeometry(const std::vector<int64_t> &dataShape,
                                        const std::vector<int64_t> &axes, bool keepDims,
                                        bool noopWithEmptyAxes)
{
    const int64_t rank = int64_t(dataShape.size());
    ReduceGeometry g;
    g.reduced.assign(dataShape.size(), axes.empty() && !noopWithEmptyAxes);
    for (int64_t a : axes) {
        const int64_t axis = a < 0 ? a + rank : a;
        if (axis < 0 || axis >= rank)
            return makeError(StatusCode::InvalidArgument, "reduce axis " + std::to_string(a) +
                                                              " out of range for rank " +
                                                              std::to_string(rank));
        g.reduced[size_t(axis)] = true;
    }
    for (size_t d = 0; d < dataShape.size(); ++d) {
        if (g.reduced[d]) {
            g.count *= dataShape[d];
            g.keptShape.push_back(1);
            if (keepDims)
                g.outShape.push_back(1);
        } else {
            g.keptShape.push_back(dataShape[d]);
            g.outShape.push_back(dataShape[d]);
        }
    }
    return g;
}

Expected<AxisSplit> keptAxisSplit(const std::vector<int64_t> &shape, int64_t axis)
{
    AxisSplit s;
    if (axis < 0) {
        for (int64_t d : shape)
            s.outer *= d;
        return s;
    }
    if (axis >= int64_t(shape.size()))
        return makeError(StatusCode::InvalidArgument, "weight norm axis out of range");
    for (size_t d = 0; d < shape.size(); ++d) {
        if (int64_t(d) < axis)
            s.outer *= shape[d];
        else if (int64_t(d) == axis)
            s.n = shape[d];
        else
            s.inner *= shape[d];
    }
    return s;
}

Expected<AxisSplit> singleAxisSplit(const std::vector<int64_t> &dataShape,
                                    const std::vector<int64_t> &keptShape)
{
    if (dataShape.size() != keptShape.size())
        return makeError(StatusCode::InvalidArgument, "reduced shape has another rank");
    AxisSplit s;
    int axis = -1;
    for (size_t d = 0; d < dataShape.size(); ++d) {
        if (dataShape[d] == keptShape[d])
            continue;
        if (axis >= 0)
            return makeError(StatusCode::InvalidArgument,
                             "indices of a maximum run along one axis; this reduces several");
        axis = int(d);
    }
    for (size_t d = 0; d < dataShape.size(); ++d) {
        if (axis < 0 || int(d) < axis)
            s.outer *= dataShape[d];
        else if (int(d) == axis)
            s.n = dataShape[d];
        else
            s.inner *= dataShape[d];
    }
    return s;
}

} // namespace remat::core::exec
