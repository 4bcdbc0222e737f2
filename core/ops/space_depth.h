#pragma once
// DepthToSpace / SpaceToDepth as one permutation of a 6-D view, for shape inference and every
// backend (a layout op: the backward is the inverse permutation).
//   SpaceDepthView v = spaceDepthView("DepthToSpace", "DCR", 2, {1, 8, 3, 3});
//   permute x (viewed as v.in) by v.perm: the result, contiguous, is the output [1, 2, 6, 6]

#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ops {

struct SpaceDepthView
{
    std::vector<int64_t> in;   ///< the input viewed in 6-D
    std::vector<int64_t> perm; ///< output dim i is view dim perm[i]
    std::vector<int64_t> out;  ///< the output's 4-D shape
};

/// ONNX's definitions: DepthToSpace DCR views [N, b, b, C/b², H, W] and permutes
/// (0, 3, 4, 1, 5, 2), CRD views [N, C/b², b, b, H, W] and permutes (0, 1, 4, 2, 5, 3);
/// SpaceToDepth views [N, C, H/b, b, W/b, b] and permutes (0, 3, 5, 1, 2, 4).
inline Expected<SpaceDepthView> spaceDepthView(const std::string &opType, const std::string &mode,
                                               int64_t b, const std::vector<int64_t> &x)
{
    auto fail = [&](const std::string &what) {
        return makeError(StatusCode::InvalidArgument, opType + ": " + what);
    };
    if (x.size() != 4)
        return fail("input must be 4-D [N, C, H, W]");
    if (b < 1)
        return fail("blocksize must be positive");
    const int64_t n = x[0], c = x[1], h = x[2], w = x[3];
    SpaceDepthView v;
    if (opType == "DepthToSpace") {
        if (c % (b * b) != 0)
            return fail("channels " + std::to_string(c) + " are not a multiple of blocksize^2");
        if (mode == "CRD") {
            v.in = {n, c / (b * b), b, b, h, w};
            v.perm = {0, 1, 4, 2, 5, 3};
        } else if (mode == "DCR") {
            v.in = {n, b, b, c / (b * b), h, w};
            v.perm = {0, 3, 4, 1, 5, 2};
        } else {
            return fail("mode '" + mode + "' (DCR or CRD)");
        }
        v.out = {n, c / (b * b), h * b, w * b};
    } else {
        if (h % b != 0 || w % b != 0)
            return fail("height and width must be multiples of blocksize");
        v.in = {n, c, h / b, b, w / b, b};
        v.perm = {0, 3, 5, 1, 2, 4};
        v.out = {n, c * b * b, h / b, w / b};
    }
    return v;
}

} // namespace remat::core::ops
