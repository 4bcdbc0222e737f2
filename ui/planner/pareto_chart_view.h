#pragma once
// Peak memory versus time overhead (the simulated step over store-all's), one curve per solver, filled in as a sweep reports
// points; the current plan is marked at its own peak. The plans of the Plans table (Compare all's
// rows, single solves) are points too, larger, in their solver's colour: the table's best plan a
// star, a plan another plan beats (a step no slower at no more peak, better on one) dimmed, an
// infeasible row (over its budget) a ring. The
// memory axis takes the unit of its largest value (KiB on a small model, GiB on a large one).
// Clicking a sweep point asks for its plan; clicking a plan's point selects that plan.
// The knee of the points is marked (core/solvers/frontier_knee.h: past it 1% less memory costs
// more than N% more time), and a current plan more than 100% slower is labelled "far end".
//   ParetoChartView v;  connect(&controller, &SolveController::sweepPoint, &v, ...addPoint);
//   v.clearPoints();  v.addPoint(point);  v.pointCount("chen-greedy");
//   connect(&v, &ParetoChartView::pointClicked, planner, ...);   // solver + budget of the point
//   v.setPlans(ParetoChartView::planPointsOf(document.plans(), table.bestRow()));
//   connect(&v, &ParetoChartView::planClicked, planner, ...);    // the plan's index

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
class ParetoLegend;

/// A plan of the Plans table on the Pareto chart.
struct ParetoPlanPoint
{
    int plan = -1; ///< its index in the document's plans
    QString solver;
    int64_t peakBytes = 0;
    double overheadPercent = 0; ///< the simulated step over store-all's, in percent
    int dominatedBy = -1;       ///< the plan faster at no more peak (or smaller at no slower step)
    bool best = false;          ///< the table's "best" row: the fastest step within its budget
    bool overBudget = false;    ///< an infeasible row: the smallest peak its solver reached
};

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
    /// The memory axis' title, with its unit ("peak memory (MiB)"; "peak (MiB)" on a narrow plot).
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

    /// The plans worth a point: every row with a schedule (optimal, feasible, timed out with its
    /// best so far, infeasible with the smallest peak reached, over its budget; not cancelled)
    /// and a known store-all step, at its simulated peak and time overhead; dominatedBy names
    /// the strongest plan among them that beats it on peak and step time (the rule of
    /// core::solvers::dominatingPlan).
    static QList<ParetoPlanPoint> planPointsOf(const std::vector<core::solvers::Plan> &plans,
                                               int bestPlan);
    /// Replaces the plans' points (an empty list removes them).
    void setPlans(const QList<ParetoPlanPoint> &plans);
    QList<ParetoPlanPoint> planPoints() const { return m_plans; }
    /// Where a plan's point is drawn, in viewport pixels (tests); nullopt if it has none.
    std::optional<QPoint> planPosition(int plan) const;
    /// The colour a plan's point is drawn in: its fill, or an over-budget plan's ring (dimmed, a
    /// low alpha, when it is dominated; invalid if it has no point).
    QColor planColour(int plan) const;
    /// The legend entry of the dimmed points ("" while no plan is dominated).
    QString dominatedLabel() const;
    /// The legend entry of the rings (over-budget plans; "" while there is none).
    QString overBudgetLabel() const;

    /// The legend drawn beside the plot (QChart's own stays hidden): every visible legend
    /// marker's entry, whole, in as many columns as the chart's height needs.
    ParetoLegend *legend() const { return m_legend; }

    /// The hint shown instead of axes while there are no points and no current plan ("" otherwise).
    QString placeholderText() const;

signals:
    /// The user clicked a sweep point: the plan of that solver at that budget is wanted.
    void pointClicked(const remat::ui::ParetoPoint &point);
    /// The user clicked a plan's point: that plan (its index in the document) is wanted.
    void planClicked(int plan);

protected:
    void mousePressEvent(QMouseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void refresh();
    /// Fills the legend from the chart's visible legend markers and places it right of the
    /// plot, the chart's right margin making room; a short chart loses its title (the dock
    /// says "Pareto") and the time axis its long title.
    void placeLegend(bool empty);
    /// The axes' titles: the long ones where the plot is wide / tall enough to show them whole.
    void fitAxisTitles();
    /// Redraws the plans' points (series per solver and kind) under the current plan's mark.
    void rebuildPlanSeries();
    QScatterSeries *addScatter(const QString &name);
    QScatterSeries *planSeries(int plan) const;

    struct Curve
    {
        QLineSeries *line = nullptr;
        QScatterSeries *dots = nullptr;
        QList<ParetoPoint> points;
    };
    QHash<QString, Curve> m_curves;
    QList<ParetoPoint> m_order; ///< every point in arrival order
    QList<ParetoPlanPoint> m_plans;
    QList<QScatterSeries *> m_planSeries; ///< one per solver and kind (plain, dimmed, best)
    QHash<int, QScatterSeries *> m_seriesOfPlan;
    QScatterSeries *m_dominatedKey = nullptr; ///< legend only: what a dimmed point means
    QScatterSeries *m_overKey = nullptr;      ///< legend only: what a ring means
    QScatterSeries *m_current = nullptr;
    QScatterSeries *m_kneeMark = nullptr;
    std::optional<ParetoPoint> m_knee;
    ParetoLegend *m_legend = nullptr;
    ChartEmptyState *m_empty = nullptr; ///< no points, no current plan: a hint instead of axes
    QValueAxis *m_x = nullptr;
    QValueAxis *m_y = nullptr;
    QTimer m_refresh;
    int64_t m_currentPeak = -1;
    double m_currentOverhead = 0;
    double m_unit = 1;                          ///< bytes per unit of the memory axis
    QString m_unitName = QStringLiteral("GiB"); ///< its name
};

} // namespace remat::ui
