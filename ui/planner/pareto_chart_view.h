#pragma once
// Peak memory versus time overhead (the simulated step over store-all's), one curve per solver, filled in as a sweep reports
// points; the current plan is marked at its own peak. The memory axis takes the unit of its
// largest value (KiB on a small model, GiB on a large one). Clicking a point asks for its plan.
// The knee of the points is marked (core/solvers/frontier_knee.h: past it 1% less memory costs
// more than N% more time), and a current plan more than 100% slower is labelled "far end".
//   ParetoChartView v;  connect(&controller, &SolveController::sweepPoint, &v, ...addPoint);
//   v.clearPoints();  v.addPoint(point);  v.pointCount("chen-greedy");
//   connect(&v, &ParetoChartView::pointClicked, planner, ...);   // solver + budget of the point

#include "ui/planner/solve_controller.h"

#include <QChartView>
#include <QHash>
#include <QList>
#include <QTimer>

#include <optional>

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace remat::ui {

class ChartEmptyState;

class ParetoChartView : public QChartView
{
    Q_OBJECT
public:
    explicit ParetoChartView(QWidget *parent = nullptr);

    void clearPoints();
    void addPoint(const ParetoPoint &point);
    int pointCount(const QString &solver) const;
    /// Every point added since the last clearPoints(), in the order they came (sessions).
    QList<ParetoPoint> points() const;
    /// Marks the current plan at its peak and overhead; a peak <= 0 hides the mark.
    void setCurrent(int64_t peakBytes, double overheadPercent);
    /// Where the current plan is marked on the memory axis (-1: not marked).
    int64_t currentPeakBytes() const { return m_currentPeak; }
    /// Where a feasible point is drawn, in viewport pixels (tests); nullopt if it is not.
    std::optional<QPoint> pointPosition(const ParetoPoint &point) const;
    /// The memory axis' title, with its unit ("peak memory (MiB)").
    QString memoryAxisTitle() const;
    /// The time axis' title ("time overhead over store-all (%)").
    QString timeAxisTitle() const;
    /// The knee of the feasible points (memory in percent of the largest peak on the chart,
    /// which a sweep's top budget makes store-all's; time as drawn); nullopt with no points.
    std::optional<ParetoPoint> knee() const { return m_knee; }
    /// The current plan's legend entry ("current plan", or "current plan: far end ...").
    QString currentLabel() const;

    /// A solver's colour: one of its own for each registered solver (by its place in the
    /// registry, so a solver keeps its colour from sweep to sweep), none the current plan's black
    /// or the knee's red; solvers not registered get colours spread around the hue circle.
    static QColor solverColour(const QString &solver);
    /// The colour a solver's curve is drawn in (invalid if it has no points).
    QColor seriesColour(const QString &solver) const;

    /// The hint shown instead of axes while there are no points and no current plan ("" otherwise).
    QString placeholderText() const;

signals:
    /// The user clicked a sweep point: the plan of that solver at that budget is wanted.
    void pointClicked(const remat::ui::ParetoPoint &point);

protected:
    void mousePressEvent(QMouseEvent *event) override;

private:
    void refresh();

    struct Curve
    {
        QLineSeries *line = nullptr;
        QScatterSeries *dots = nullptr;
        QList<ParetoPoint> points;
    };
    QHash<QString, Curve> m_curves;
    QList<ParetoPoint> m_order; ///< every point in arrival order
    QScatterSeries *m_current = nullptr;
    QScatterSeries *m_kneeMark = nullptr;
    std::optional<ParetoPoint> m_knee;
    ChartEmptyState *m_empty = nullptr; ///< no points, no current plan: a hint instead of axes
    QValueAxis *m_x = nullptr;
    QValueAxis *m_y = nullptr;
    QTimer m_refresh;
    int64_t m_currentPeak = -1;
    double m_currentOverhead = 0;
    double m_unit = 1; ///< bytes per unit of the memory axis
};

} // namespace remat::ui
