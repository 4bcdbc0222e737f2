#include "ui/planner/memory_curves.h"

#include <algorithm>

namespace remat::ui {

std::vector<size_t> columnExtremes(size_t n, int columns,
                                   const std::function<double(size_t)> &value)
{
    const size_t buckets = size_t(std::max(1, columns));
    std::vector<size_t> out;
    if (n <= 2 * buckets) {
        out.resize(n);
        for (size_t i = 0; i < n; ++i)
            out[i] = i;
        return out;
    }
    out.reserve(2 * buckets);
    for (size_t b = 0; b < buckets; ++b) {
        // Integer bounds: every step in exactly one column, none empty (n > 2 x buckets).
        const size_t lo = b * n / buckets, hi = (b + 1) * n / buckets;
        size_t low = lo, high = lo;
        double lowValue = value(lo), highValue = lowValue;
        for (size_t i = lo + 1; i < hi; ++i) {
            const double v = value(i);
            if (v < lowValue) {
                low = i;
                lowValue = v;
            }
            if (v > highValue) { // strictly: the first step of a column's maximum
                high = i;
                highValue = v;
            }
        }
        out.push_back(std::min(low, high));
        if (low != high)
            out.push_back(std::max(low, high));
    }
    return out;
}

std::vector<size_t> memoryCurveSteps(const std::vector<core::sim::TimelinePoint> &points,
                                     int columns)
{
    return columnExtremes(points.size(), columns,
                          [&](size_t i) { return double(points[i].peakDuringStep); });
}

QList<QPointF> MemoryCurves::total() const
{
    for (size_t k = kCategories; k-- > 0;)
        if (used[k])
            return upper[k];
    return {};
}

MemoryCurves stackedMemoryCurves(const core::sim::Timeline &timeline, int columns, double unit)
{
    MemoryCurves c;
    const auto &pts = timeline.points;
    for (const core::sim::TimelinePoint &p : pts)
        for (size_t k = 0; k < MemoryCurves::kCategories; ++k)
            c.used[k] = c.used[k] || p.byCategory[k] > 0;
    c.steps = memoryCurveSteps(pts, columns);
    const qsizetype drawn = qsizetype(c.steps.size());
    for (size_t k = 0; k < MemoryCurves::kCategories; ++k)
        if (c.used[k]) {
            c.lower[k].reserve(drawn);
            c.upper[k].reserve(drawn);
        }
    for (size_t i : c.steps) {
        // Summed in bytes, divided once: the top edge is the step's total exactly.
        int64_t base = 0;
        for (size_t k = 0; k < MemoryCurves::kCategories; ++k) {
            if (!c.used[k])
                continue;
            c.lower[k].append(QPointF(double(i), double(base) / unit));
            base += pts[i].byCategory[k];
            c.upper[k].append(QPointF(double(i), double(base) / unit));
        }
    }
    return c;
}

QList<QPointF> totalMemoryCurve(const core::sim::Timeline &timeline, int columns, double unit)
{
    QList<QPointF> out;
    const std::vector<size_t> steps = memoryCurveSteps(timeline.points, columns);
    out.reserve(qsizetype(steps.size()));
    for (size_t i : steps)
        out.append(QPointF(double(i), double(timeline.points[i].peakDuringStep) / unit));
    return out;
}

} // namespace remat::ui
