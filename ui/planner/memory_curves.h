#pragma once
// The memory chart's points for a timeline, thinned to the plot's width in pixels: per pixel
// column the step with the lowest and the step with the highest total, in step order, so every
// peak and every valley the screen can show is drawn at its exact height and the plan's peak is
// the curve's maximum. A timeline with no more than two steps a pixel is drawn whole.
//   std::vector<size_t> steps = memoryCurveSteps(plan.timeline.points, plotWidthPx);
//   MemoryCurves c = stackedMemoryCurves(plan.timeline, plotWidthPx, double(1 << 30));
//   QList<QPointF> sa = totalMemoryCurve(storeAll.timeline, plotWidthPx, double(1 << 30));

#include "core/sim/timeline.h"

#include <QList>
#include <QPointF>

#include <array>
#include <functional>
#include <vector>

namespace remat::ui {

/// The indices of a curve of `n` points drawn in `columns` pixel columns: all of them when
/// n <= 2 x columns; otherwise, per column (an equal share of the indices), the one of the lowest
/// and the one of the highest `value` (the first of equal ones), ascending.
std::vector<size_t> columnExtremes(size_t n, int columns,
                                   const std::function<double(size_t)> &value);

/// The steps drawn for `points` in `columns` pixel columns (at least 1): every step when there are
/// at most 2 x columns of them; otherwise, per column (an equal share of the steps), the step of
/// the lowest and of the highest peakDuringStep (the stacked categories' total), ascending.
std::vector<size_t> memoryCurveSteps(const std::vector<core::sim::TimelinePoint> &points,
                                     int columns);

/// The stacked areas of one timeline: per memory category its lower and upper edge at the drawn
/// steps (x: the step, y: bytes / unit), the lower edge of category k the upper of k - 1. A
/// category that is zero at every step has empty edges (nothing to draw, nothing to lay out).
struct MemoryCurves
{
    static constexpr size_t kCategories = core::schedule::kMemCategoryCount;
    std::vector<size_t> steps; ///< memoryCurveSteps
    std::array<QList<QPointF>, kCategories> lower, upper;
    std::array<bool, kCategories> used{}; ///< the category is above zero at some step
    /// The top of the stack as drawn (the upper edge of the highest used category).
    QList<QPointF> total() const;
};
MemoryCurves stackedMemoryCurves(const core::sim::Timeline &timeline, int columns, double unit);

/// One timeline's total (peakDuringStep / unit) at memoryCurveSteps: the store-all line and the
/// overlaid plans.
QList<QPointF> totalMemoryCurve(const core::sim::Timeline &timeline, int columns, double unit);

} // namespace remat::ui
