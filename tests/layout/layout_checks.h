#pragma once
// Invariant checks shared by the layout tests: boxes apart, edges downwards, routes inside bounds.
#include "core/layout/graph_layout.h"
#include "core/layout/layered_layout.h"

#include <string>
#include <vector>

namespace remat::tests {

/// Empty when no two boxes overlap; otherwise names the first pair found. O(n log n) sweep.
inline std::string firstOverlap(const std::vector<core::layout::Rect> &boxes)
{
    std::vector<int> order(boxes.size());
    for (size_t i = 0; i < boxes.size(); ++i)
        order[i] = int(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return boxes[a].x < boxes[b].x; });
    for (size_t i = 0; i < order.size(); ++i) {
        const auto &a = boxes[order[i]];
        for (size_t j = i + 1; j < order.size() && boxes[order[j]].x < a.right(); ++j) {
            const auto &b = boxes[order[j]];
            if (a.intersects(b) && a.width > 0 && b.width > 0 && a.height > 0 && b.height > 0)
                return "boxes " + std::to_string(order[i]) + " and " + std::to_string(order[j]) +
                       " overlap";
        }
    }
    return {};
}

} // namespace remat::tests
