#pragma once
// Budget versus recompute overhead, one curve per solver, filled in as a sweep reports points.
//   ParetoChartView v;  connect(&controller, &SolveController::sweepPoint, &v, ...addPoint);
//   v.clearPoints();  v.addPoint(point);  v.pointCount("chen-greedy");

#include "ui/planner/solve_controller.h"

#include <QChartView>
#include <QHash>
#include <QList>
#include <QTimer>

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
    /// Marks the current plan (budget, overhead); a negative budget hides the mark.
    void setCurrent(int64_t budgetBytes, double overheadPercent);
    /// The hint shown instead of axes while there are no points and no current plan ("" otherwise).
    QString placeholderText() const;

private:
    void refresh();

    struct Curve
    {
        QLineSeries *line = nullptr;
        QScatterSeries *dots = nullptr;
        QList<ParetoPoint> points;
    };
    QHash<QString, Curve> m_curves;
    QScatterSeries *m_current = nullptr;
    ChartEmptyState *m_empty = nullptr; ///< no points, no current plan: a hint instead of axes
    QValueAxis *m_x = nullptr;
    QValueAxis *m_y = nullptr;
    QTimer m_refresh;
    int64_t m_currentBudget = -1;
    double m_currentOverhead = 0;
};

} // namespace remat::ui
