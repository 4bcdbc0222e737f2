#pragma once
// The knee of a memory-versus-time frontier: the point past which a further 1% of memory costs
// more than N% of time. Min-peak answers far beyond it (50 forward passes for the last few MiB)
// are true frontier points nobody should pick without seeing the knee beside them.
//   std::vector<CostPoint> pts = {{peak, step}, ...};           // store-all's among them
//   std::optional<size_t> k = frontierKnee(pts, storeAllPeak, storeAllStep);
//   pts[*k];   // the knee (an index into pts)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace remat::core::solvers {

/// N: the knee is where 1% less memory (of store-all's peak) starts to cost more than N% more
/// time (of store-all's step). 1 is the break-even of a percent for a percent.
inline constexpr double kKneeTimePerMemory = 1.0;

/// Percent of store-all's step above which a min-peak answer is flagged "far end of the
/// frontier" with the knee beside it.
inline constexpr double kFarEndOverheadPercent = 100.0;

struct CostPoint
{
    int64_t peakBytes = 0;
    double stepSeconds = 0;
};

/// The knee of `points` (any order; dominated ones are ignored): on the lower convex hull of the
/// non-dominated points in (peak, step), walking from the highest peak down, the last vertex
/// before the first hull edge whose time per memory (in percent of store-all's step per percent
/// of store-all's peak) exceeds `timePerMemory`. Hull edges get steeper as the peak falls, so
/// past the knee every further saving costs more than N; before it, none does. nullopt when
/// `points` is empty or a reference figure is not positive.
std::optional<size_t> frontierKnee(const std::vector<CostPoint> &points, int64_t storeAllPeakBytes,
                                   double storeAllStepSeconds,
                                   double timePerMemory = kKneeTimePerMemory);

} // namespace remat::core::solvers
