#pragma once
// GroupNormalization and InstanceNormalization as one computation, for the gradient rule and every
// backend: statistics over each (sample, group) of an [N, C, spatial...] input, then a per-channel
// (or, in GroupNormalization-18's form, per-group) scale and bias.
//   Expected<GroupNormGeometry> g = groupNormGeometry("GroupNormalization", 2, 8, {2, 8, 4, 4});
//   row r = n * g->groups + group covers g->rowLength() contiguous elements at r * rowLength()

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ops {

struct GroupNormGeometry
{
    int64_t n = 1, channels = 1, groups = 1, spatial = 1;
    bool scalePerChannel = true; ///< scale / bias hold C values (else one per group)

    int64_t channelsPerGroup() const { return channels / groups; }
    int64_t rowLength() const { return channelsPerGroup() * spatial; }
    int64_t rows() const { return n * groups; }
    /// The scale / bias entry of a channel.
    int64_t scaleIndex(int64_t channel) const
    {
        return scalePerChannel ? channel : channel / channelsPerGroup();
    }
};

/// InstanceNormalization is GroupNormalization with one group per channel. GroupNormalization's
/// scale and bias hold one value per group in opset 18 and one per channel from opset 21 (and in
/// the builder's fused GroupNorm): the size of the scale says which (the same when groups = C).
/// `numGroups` is ignored for InstanceNormalization.
inline Expected<GroupNormGeometry> groupNormGeometry(const std::string &opType, int64_t numGroups,
                                                     int64_t scaleElements,
                                                     const std::vector<int64_t> &x)
{
    auto fail = [&](const std::string &what) {
        return makeError(StatusCode::InvalidArgument, opType + ": " + what);
    };
    if (x.size() < 2)
        return fail("the input needs at least 2 dims [N, C, ...]");
    GroupNormGeometry g;
    g.n = x[0];
    g.channels = x[1];
    for (size_t d = 2; d < x.size(); ++d)
        g.spatial *= x[d];
    g.groups = opType == "InstanceNormalization" ? g.channels : numGroups;
    if (g.groups <= 0 || g.channels % g.groups != 0)
        return fail("num_groups " + std::to_string(g.groups) + " does not divide the " +
                    std::to_string(g.channels) + " channels");
    if (scaleElements == g.channels)
        g.scalePerChannel = true;
    else if (scaleElements == g.groups)
        g.scalePerChannel = false;
    else
        return fail("scale has " + std::to_string(scaleElements) +
                    " values; it needs one per channel (" + std::to_string(g.channels) +
                    ") or, in opset 18's form, one per group (" + std::to_string(g.groups) + ")");
    return g;
}

} // namespace remat::core::ops
