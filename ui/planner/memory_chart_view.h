#pragma once
// Memory over the schedule's steps for one plan, stacked by category (weights at the bottom),
// with the store-all total beside it, the budget line, the peak marked and a step cursor.
// Other plans selected beside the current one are overlaid as lines of their totals (each its own
// colour and legend entry), so their curves compare step by step. Clicking selects a step.
//   MemoryChartView v;  v.setTimelines(plan.timeline, &storeAll.timeline, budget, "chen-sqrtn");
//   v.setTimelines(a.timeline, &storeAll.timeline, budget, "chen-sqrtn", {{"plan 2: rotor", &b.timeline}});
//   connect(&v, &MemoryChartView::stepSelected, teaching, &TeachingView::setStep);
//   v.setCursorStep(812);

#include "core/sim/timeline.h"

#include <QChartView>
#include <QList>
#include <QPointF>
#include <QStringList>

#include <array>
#include <vector>

class QAreaSeries;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace remat::ui {

class ChartEmptyState;

/// Another plan's curve drawn over the current one (the pointer is read during the call only).
struct MemoryOverlay
{
    QString name;
    const core::sim::Timeline *timeline = nullptr;
};

class MemoryChartView : public QChartView
{
    Q_OBJECT
public:
    explicit MemoryChartView(QWidget *parent = nullptr);

    /// `storeAll` may be null; `budgetBytes` <= 0 hides the budget line. `copyStalls`: the
    /// plan's waits for the copy lane per step (sim::copyStalls), marked on its total; null or
    /// all zero: none.
    void setTimelines(const core::sim::Timeline &plan, const core::sim::Timeline *storeAll,
                      int64_t budgetBytes, const QString &planName,
                      const QList<MemoryOverlay> &overlays = {},
                      const std::vector<double> *copyStalls = nullptr);
    /// The overlaid plans' legend names, in drawing order (tests).
    QStringList overlayNames() const;
    /// Colour of the i-th overlaid curve.
    static QColor overlayColor(int i);
    void clearTimelines();
    /// Moves the budget line only (the plan is unchanged); <= 0 hides it.
    void setBudget(int64_t budgetBytes);
    /// The budget the line shows (0: no line).
    int64_t budgetBytes() const { return m_budgetBytes; }
    void setCursorStep(int step);
    int cursorStep() const { return m_cursor; }
    int stepCount() const { return m_stepCount; }
    /// Points drawn for the plan's total: every step, or two a pixel column of the view's
    /// width when there are more (memoryCurveSteps). For tests.
    int drawnPointCount() const { return m_drawnPoints; }
    /// The top of the plan's stacked areas as drawn (x: step, y: memoryUnit()). For tests.
    QList<QPointF> drawnTotal() const;
    /// The store-all line as drawn. For tests.
    QList<QPointF> drawnStoreAll() const;
    /// Steps where the compute lane waits for a copy (an offload plan's prefetch not landed, an
    /// offload not finished before its Free): marked on the plan's total, one marker a step, in
    /// a legend entry saying how long the compute waits in all. 0 for a plan without stalls.
    int stallMarkerCount() const;
    /// The stall series' legend entry ("copy stalls 3.4 ms": the compute's waits in all), or "".
    QString stallLabel() const;
    /// The hint drawn in place of the axes while there is no plan; empty while a plan is shown.
    QString placeholderText() const;
    /// The memory axis' unit ("KiB", "MiB", "GiB": by the largest value shown).
    QString memoryUnit() const;
    /// The chart's title as drawn, one plain-text entry per line (it wraps to the chart's width
    /// rather than being elided: with plans overlaid it names each of them).
    QStringList titleLines() const;

signals:
    /// The user clicked the chart at this schedule step.
    void stepSelected(int step);

protected:
    void mousePressEvent(QMouseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void clearOverlays();
    /// Shrinks the legend's font until its visible entries fit the chart's height (overlaid
    /// plans add entries; beside a short dock the last ones were cut off).
    void fitLegend();
    /// Wraps m_titleHead and m_titleKeys to the chart's width into chart()->title().
    void layoutTitle();
    /// The pixel columns the curves are thinned to: the view's width.
    int curveColumns() const;
    /// Fills the areas, the store-all line and the overlays from the kept timelines, thinned to
    /// curveColumns(); with `newRanges`, the axes take m_xMax and m_yMax first.
    void updateCurves(bool newRanges);

    QLineSeries *m_upper[core::schedule::kMemCategoryCount] = {};
    QLineSeries *m_lower[core::schedule::kMemCategoryCount] = {};
    QAreaSeries *m_area[core::schedule::kMemCategoryCount] = {};
    QLineSeries *m_storeAll = nullptr;
    QLineSeries *m_budget = nullptr;
    QLineSeries *m_cursorLine = nullptr;
    QScatterSeries *m_peak = nullptr;
    QScatterSeries *m_stalls = nullptr; ///< copy-lane stalls of the plan (offload plans)
    QList<QLineSeries *> m_overlays;
    // What is drawn, kept to thin it again when the view's width changes.
    core::sim::Timeline m_planTimeline;
    core::sim::Timeline m_storeAllTimeline;
    bool m_hasStoreAll = false;
    std::vector<core::sim::Timeline> m_overlayTimelines; ///< one per m_overlays entry
    int m_columns = 0;                          ///< curveColumns() the curves were thinned to
    QStringList m_titleHead;                    ///< the plan's summary, in pieces that may wrap
    QList<QPair<QString, QString>> m_titleKeys; ///< overlaid plans: colour, name
    int m_titleLines = 1;
    ChartEmptyState *m_empty = nullptr; ///< no plan: a hint instead of axes
    QValueAxis *m_x = nullptr;
    QValueAxis *m_y = nullptr;
    double m_unit = 1; // bytes per axis unit
    double m_yMax = 1;
    int m_stepCount = 0;
    int m_cursor = -1;
    int m_drawnPoints = 0;
    int64_t m_budgetBytes = 0;
    double m_xMax = 1;
    int m_legendEntries = 0; ///< visible legend entries (fitLegend)
};

/// Colour of a memory category in every planner chart.
QColor memCategoryColor(int category);

} // namespace remat::ui
