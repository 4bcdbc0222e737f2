#include "core/solvers/frontier_knee.h"

#include <algorithm>
#include <numeric>

namespace remat::core::solvers {

std::optional<size_t> frontierKnee(const std::vector<CostPoint> &points, int64_t storeAllPeakBytes,
                                   double storeAllStepSeconds, double timePerMemory)
{
    if (points.empty() || storeAllPeakBytes <= 0 || storeAllStepSeconds <= 0)
        return std::nullopt;
    // In percent of store-all: x = memory, y = time.
    const auto x = [&](size_t i) {
        return 100.0 * double(points[i].peakBytes) / double(storeAllPeakBytes);
    };
    const auto y = [&](size_t i) { return 100.0 * points[i].stepSeconds / storeAllStepSeconds; };
    std::vector<size_t> order(points.size());
    std::iota(order.begin(), order.end(), size_t(0));
    // Highest peak first; of equal peaks the fastest first.
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (points[a].peakBytes != points[b].peakBytes)
            return points[a].peakBytes > points[b].peakBytes;
        return points[a].stepSeconds < points[b].stepSeconds;
    });
    // The non-dominated staircase: a point is kept when every point with a lower or equal peak
    // (seen before it, ascending) is slower.
    std::vector<size_t> front;
    double bestStep = -1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) { // ascending peak
        if (bestStep < 0 || points[*it].stepSeconds < bestStep) {
            front.push_back(*it);
            bestStep = points[*it].stepSeconds;
        }
    }
    std::reverse(front.begin(), front.end()); // descending peak, ascending step
    // Lower convex hull, walking down in peak: slopes (time gained per memory given) rise.
    std::vector<size_t> hull;
    const auto cross = [&](size_t o, size_t a, size_t b) {
        return (x(a) - x(o)) * (y(b) - y(o)) - (y(a) - y(o)) * (x(b) - x(o));
    };
    for (size_t i : front) {
        while (hull.size() >= 2 && cross(hull[hull.size() - 2], hull.back(), i) >= 0)
            hull.pop_back();
        hull.push_back(i);
    }
    size_t knee = hull.front();
    for (size_t k = 1; k < hull.size(); ++k) {
        const double memoryGiven = x(hull[k - 1]) - x(hull[k]);
        const double timeAdded = y(hull[k]) - y(hull[k - 1]);
        if (memoryGiven <= 0 || timeAdded > timePerMemory * memoryGiven)
            break;
        knee = hull[k];
    }
    return knee;
}

} // namespace remat::core::solvers
