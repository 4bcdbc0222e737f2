#include "core/exec/axes.h"

#include <algorithm>

namespace remat::core::exec {

bool normalizeAxis(int64_t &axis, int64_t rank)
{
    if (axis < 0)
        axis += rank;
    return axis >= 0 && axis < std::max<int64_t>(rank, 1);
}

Expected<GatherGeometry> gatherGeometry(int64_t axis, const std::vector<int64_t> &dataShape)
{
    if (!normalizeAxis(axis, int64_t(dataShape.size())) || dataShape.empty())
        return makeError(StatusCode::InvalidArgument, "axis out of range");
    GatherGeometry g;
    for (int64_t d = 0; d < axis; ++d)
        g.outer *= dataShape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < dataShape.size(); ++d)
        g.inner *= dataShape[d];
    g.dim = dataShape[size_t(axis)];
    return g;
}

} // namespace remat::core::exec
