#include "core/ops/conv_transpose_geometry.h"

#include "core/ir/graph.h"

#include <fmt/format.h>

namespace remat::core::ops {

Expected<ConvTransposeGeometry> resolveConvTranspose(const ir::Node *node,
                                                     const std::vector<int64_t> &x,
                                                     const std::vector<int64_t> &w)
{
    auto fail = [](const std::string &what) {
        return makeError(StatusCode::InvalidArgument, "ConvTranspose: " + what);
    };
    if (x.size() < 3 || w.size() != x.size())
        return fail(fmt::format("X needs rank 3 or more and W the same rank (X rank {}, W rank {})",
                                x.size(), w.size()));
    const size_t sp = x.size() - 2;
    auto ints = [&](const char *name, std::vector<int64_t> fallback) {
        return node ? node->attrInts(name, std::move(fallback)) : fallback;
    };
    ConvTransposeGeometry g;
    g.kernel = ints("kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
    g.strides = ints("strides", std::vector<int64_t>(sp, 1));
    g.dilations = ints("dilations", std::vector<int64_t>(sp, 1));
    g.outputPadding = ints("output_padding", std::vector<int64_t>(sp, 0));
    g.pads = ints("pads", std::vector<int64_t>(2 * sp, 0));
    std::vector<int64_t> outShape = ints("output_shape", {});
    if (outShape.size() == sp + 2) // the full output shape: keep its spatial part
        outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (g.kernel.size() != sp || g.strides.size() != sp || g.dilations.size() != sp ||
        g.outputPadding.size() != sp || g.pads.size() != 2 * sp ||
        (!outShape.empty() && outShape.size() != sp))
        return fail(fmt::format(
            "kernel_shape, strides, dilations, output_padding, pads or output_shape do not match "
            "{} spatial dims",
            sp));
    for (size_t d = 0; d < sp; ++d)
        if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1 || g.kernel[d] != w[2 + d])
            return fail("strides, dilations and kernel_shape must be positive and match W");
    g.groups = node ? node->attrInt("group", 1) : 1;
    if (g.groups < 1 || x[1] % g.groups != 0 || w[0] != x[1])
        return fail(
            fmt::format("W's dim 0 ({}) must equal X's channels ({}), divisible by group {}", w[0],
                        x[1], g.groups));
    g.outChannels = w[1] * g.groups;
    const std::string autoPad =
        node ? node->attrString("auto_pad", "NOTSET") : std::string("NOTSET");
    const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
    if (autoPad == "VALID")
        std::fill(g.pads.begin(), g.pads.end(), 0);
    g.out.resize(sp);
    for (size_t d = 0; d < sp; ++d) {
        const int64_t natural = g.strides[d] * (x[2 + d] - 1) + g.outputPadding[d] +
                                (g.kernel[d] - 1) * g.dilations[d] + 1;
        if (!outShape.empty() || same) {
            const int64_t out = !outShape.empty() ? outShape[d] : x[2 + d] * g.strides[d];
            const int64_t total = natural - out;
            if (total < 0)
                return fail(fmt::format(
                    "output size {} of spatial dim {} exceeds what the input gives ({})", out, d,
                    natural));
            // ONNX: SAME_UPPER puts the odd pad at the end, otherwise at the beginning.
            g.pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
            g.pads[d + sp] = total - g.pads[d];
        }
        g.out[d] = natural - g.pads[d] - g.pads[d + sp];
        if (g.out[d] < 1 || g.pads[d] < 0 || g.pads[d + sp] < 0)
            return fail(fmt::format("pads leave no output along spatial dim {}", d));
    }
    return g;
}

} // namespace remat::core::ops
