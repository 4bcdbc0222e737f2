#include "ui/planner/pareto_chart_view.h"

#include "ui/planner/chart_empty_state.h"

#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>

namespace remat::ui {

namespace {
constexpr double kGiB = double(int64_t(1) << 30);

QColor solverColor(int i)
{
    static const QColor c[] = {QColor(0x42, 0x85, 0xf4), QColor(0xf4, 0x8f, 0x22),
                               QColor(0x34, 0xa8, 0x53), QColor(0xd6, 0x4a, 0x6a),
                               QColor(0x80, 0x60, 0xb0), QColor(0x26, 0xa6, 0x9a),
                               QColor(0x9e, 0x9d, 0x24), QColor(0x79, 0x55, 0x48)};
    return c[i % 8];
}
} // namespace

ParetoChartView::ParetoChartView(QWidget *parent) : QChartView(new QChart(), parent)
{
    setRenderHint(QPainter::Antialiasing);
    chart()->setAnimationOptions(QChart::NoAnimation);
    chart()->setTitle(tr("Budget versus recompute overhead"));
    chart()->legend()->setAlignment(Qt::AlignRight); // a line per solver, names whole
    chart()->legend()->setShowToolTips(true);
    m_x = new QValueAxis(chart());
    m_x->setTitleText(tr("budget (GiB)"));
    m_y = new QValueAxis(chart());
    m_y->setTitleText(tr("recompute overhead (%)"));
    chart()->addAxis(m_x, Qt::AlignBottom);
    chart()->addAxis(m_y, Qt::AlignLeft);
    m_current = new QScatterSeries(chart());
    m_current->setName(tr("current plan"));
    m_current->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    m_current->setMarkerSize(12);
    m_current->setColor(QColor(0x21, 0x21, 0x21));
    chart()->addSeries(m_current);
    m_current->attachAxis(m_x);
    m_current->attachAxis(m_y);
    m_empty = new ChartEmptyState(
        chart(), tr("Run a Pareto sweep to compare the solvers across budgets"), this);
    // Sweep points arrive one by one; redraw at most every 50 ms.
    m_refresh.setSingleShot(true);
    m_refresh.setInterval(50);
    connect(&m_refresh, &QTimer::timeout, this, &ParetoChartView::refresh);
    refresh();
}

QString ParetoChartView::placeholderText() const { return m_empty->text(); }

void ParetoChartView::clearPoints()
{
    for (auto &c : m_curves) {
        chart()->removeSeries(c.line);
        chart()->removeSeries(c.dots);
        delete c.line;
        delete c.dots;
    }
    m_curves.clear();
    refresh();
}

int ParetoChartView::pointCount(const QString &solver) const
{
    const auto it = m_curves.constFind(solver);
    return it == m_curves.constEnd() ? 0 : int(it->points.size());
}

void ParetoChartView::addPoint(const ParetoPoint &point)
{
    auto it = m_curves.find(point.solver);
    if (it == m_curves.end()) {
        Curve c;
        const QColor col = solverColor(int(m_curves.size()));
        c.line = new QLineSeries(chart());
        c.line->setName(point.solver);
        c.line->setPen(QPen(col, 1.8));
        c.dots = new QScatterSeries(chart());
        c.dots->setColor(col);
        c.dots->setMarkerSize(6);
        for (QAbstractSeries *s :
             {static_cast<QAbstractSeries *>(c.line), static_cast<QAbstractSeries *>(c.dots)}) {
            chart()->addSeries(s);
            s->attachAxis(m_x);
            s->attachAxis(m_y);
        }
        // Only the line carries the legend entry.
        for (auto *m : chart()->legend()->markers(c.dots))
            m->setVisible(false);
        it = m_curves.insert(point.solver, c);
    }
    it->points.append(point);
    if (!m_refresh.isActive())
        m_refresh.start();
}

void ParetoChartView::setCurrent(int64_t budgetBytes, double overheadPercent)
{
    m_currentBudget = budgetBytes;
    m_currentOverhead = overheadPercent;
    refresh();
}

void ParetoChartView::refresh()
{
    double xMin = 1e300, xMax = 0, yMax = 1;
    for (auto &c : m_curves) {
        QList<ParetoPoint> pts = c.points;
        std::sort(pts.begin(), pts.end(), [](const ParetoPoint &a, const ParetoPoint &b) {
            return a.budgetBytes < b.budgetBytes;
        });
        QList<QPointF> xy;
        for (const ParetoPoint &p : pts) {
            if (!p.feasible)
                continue;
            xy.append(QPointF(double(p.budgetBytes) / kGiB, p.overheadPercent));
            yMax = std::max(yMax, p.overheadPercent);
        }
        for (const ParetoPoint &p : pts) {
            xMin = std::min(xMin, double(p.budgetBytes) / kGiB);
            xMax = std::max(xMax, double(p.budgetBytes) / kGiB);
        }
        c.line->replace(xy);
        c.dots->replace(xy);
    }
    if (m_currentBudget > 0) {
        const double x = double(m_currentBudget) / kGiB;
        m_current->replace({QPointF(x, m_currentOverhead)});
        xMin = std::min(xMin, x);
        xMax = std::max(xMax, x);
        yMax = std::max(yMax, m_currentOverhead);
    } else {
        m_current->clear();
    }
    if (xMin > xMax) {
        xMin = 0;
        xMax = 1;
    }
    const double pad = std::max(1e-3, (xMax - xMin) * 0.05);
    m_x->setRange(std::max(0.0, xMin - pad), xMax + pad);
    m_y->setRange(0, yMax * 1.1);
    m_empty->setEmpty(m_curves.isEmpty() && m_currentBudget <= 0);
}

} // namespace remat::ui
