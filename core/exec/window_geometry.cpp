#include "core/exec/window_geometry.h"

#include <algorithm>

namespace remat::core::exec {

Expected<WindowAttributes> resolveWindow(const std::vector<int64_t> &x, std::vector<int64_t> kernel,
                                         std::vector<int64_t> strides,
                                         std::vector<int64_t> dilations, std::vector<int64_t> pads,
                                         const std::string &autoPad)
{
    const size_t sp = x.size() >= 2 ? x.size() - 2 : 0;
    if (kernel.size() != sp)
        return makeError(StatusCode::InvalidArgument,
                         "kernel_shape length differs from the spatial rank");
    if (strides.size() != sp || dilations.size() != sp || pads.size() != 2 * sp)
        return makeError(StatusCode::InvalidArgument,
                         "strides / dilations / pads lengths differ from the spatial rank");
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
        for (size_t d = 0; d < sp; ++d) {
            const int64_t in = x[2 + d], out = (in + strides[d] - 1) / strides[d];
            const int64_t total = std::max<int64_t>(
                (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in, 0);
            pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[d + sp] = total - pads[d];
        }
    } else if (autoPad == "VALID") {
        std::fill(pads.begin(), pads.end(), 0);
    }
    return WindowAttributes{std::move(kernel), std::move(strides), std::move(dilations),
                            std::move(pads)};
}

} // namespace remat::core::exec
