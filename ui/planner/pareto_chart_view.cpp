#include "ui/planner/pareto_chart_view.h"

#include "core/solvers/frontier_knee.h"
#include "core/solvers/registry.h"

#include "ui/planner/chart_empty_state.h"
#include "ui/planner/pareto_legend.h"

#include "core/util/bytes.h"

#include <QChart>
#include <QFont>
#include <QFontMetricsF>
#include <QLegend>
#include <QLegendMarker>
#include <QLineF>
#include <QLineSeries>
#include <QMouseEvent>
#include <QScatterSeries>
#include <QSet>
#include <QValueAxis>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace remat::ui {

namespace {
constexpr double kClickRadiusPx = 10;
/// Below this height (a docked chart on a laptop) the chart drops its title and keeps thin
/// margins: the plot needs every pixel.
constexpr int kShortChartPx = 320;
constexpr qreal kLegendPad = 6;
/// A series' property: whether it has a legend entry (set on every series added).
constexpr const char *kLegendShown = "legendShown";
/// A series' property: the longer explanation its legend entry shows on hover.
constexpr const char *kLegendToolTip = "legendToolTip";
/// The series a plan's point is drawn in (the series' "kind" property).
enum PlanKind { PlainPlan, DimmedPlan, BestPlan, OverPlan, OverDimmedPlan, PlanKinds };
} // namespace

QColor ParetoChartView::solverColour(const QString &solver)
{
    // Twelve well-separated colours (the legend used to cycle eight over eleven solvers: rotor
    // and checkmate-milp shared a blue).
    static const QColor palette[] = {
        QColor(0x75, 0x75, 0x75), QColor(0x42, 0x85, 0xf4), QColor(0xf4, 0x8f, 0x22),
        QColor(0x34, 0xa8, 0x53), QColor(0xd6, 0x4a, 0x6a), QColor(0x80, 0x60, 0xb0),
        QColor(0x26, 0xa6, 0x9a), QColor(0x9e, 0x9d, 0x24), QColor(0x79, 0x55, 0x48),
        QColor(0x00, 0xbc, 0xd4), QColor(0xe9, 0x1e, 0x63), QColor(0x1a, 0x23, 0x7e)};
    constexpr int kPalette = int(sizeof(palette) / sizeof(palette[0]));
    static const std::vector<std::string> ids = core::solvers::makeRegistry().ids();
    const auto at = std::find(ids.begin(), ids.end(), solver.toStdString());
    const int index = int(at - ids.begin());
    if (at != ids.end() && index < kPalette)
        return palette[index];
    // Beyond the palette: the golden angle around the hue circle from the solver's name.
    const int hue = int((qHash(solver) % 360u + (at != ids.end() ? index * 137 : 0)) % 360);
    return QColor::fromHsv(hue, 200, 200);
}

QColor ParetoChartView::seriesColour(const QString &solver) const
{
    const auto it = m_curves.constFind(solver);
    return it == m_curves.constEnd() ? QColor() : it->line->pen().color();
}

ParetoChartView::ParetoChartView(QWidget *parent) : QChartView(new QChart(), parent)
{
    setRenderHint(QPainter::Antialiasing);
    chart()->setAnimationOptions(QChart::NoAnimation);
    chart()->setTitle(tr("Peak memory versus step time"));
    // QLegend's markers say what is shown (visibility, colours); ParetoLegend draws them.
    chart()->legend()->setVisible(false);
    m_legend = new ParetoLegend(chart());
    m_legend->setFont(chart()->legend()->font());
    m_legend->setZValue(10);
    m_x = new QValueAxis(chart());
    m_x->setTitleText(tr("peak memory (%1)").arg(m_unitName));
    m_y = new QValueAxis(chart());
    m_y->setTitleText(tr("time overhead over store-all (%)"));
    connect(chart(), &QChart::plotAreaChanged, this, [this] { fitAxisTitles(); });
    // Round ticks as round numbers ("600", not "600.0"), either axis.
    m_x->setLabelFormat(QStringLiteral("%g"));
    m_y->setLabelFormat(QStringLiteral("%g"));
    chart()->addAxis(m_x, Qt::AlignBottom);
    chart()->addAxis(m_y, Qt::AlignLeft);
    m_current = new QScatterSeries(chart());
    m_current->setName(tr("current plan"));
    m_current->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    // A hollow square: the current plan's own point (its solver's colour) shows through.
    m_current->setMarkerSize(20);
    m_current->setColor(QColor(0x21, 0x21, 0x21, 0));
    m_current->setPen(QPen(QColor(0x21, 0x21, 0x21), 2.5));
    m_current->setProperty(kLegendShown, true);
    chart()->addSeries(m_current);
    m_current->attachAxis(m_x);
    m_current->attachAxis(m_y);
    m_kneeMark = new QScatterSeries(chart());
    m_kneeMark->setName(tr("knee: past it 1% less memory costs > %1% more time")
                            .arg(core::solvers::kKneeTimePerMemory));
    m_kneeMark->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    m_kneeMark->setMarkerSize(14);
    m_kneeMark->setColor(QColor(0xc6, 0x28, 0x28));
    m_kneeMark->setProperty(kLegendShown, true);
    chart()->addSeries(m_kneeMark);
    m_kneeMark->attachAxis(m_x);
    m_kneeMark->attachAxis(m_y);
    m_empty = new ChartEmptyState(
        chart(),
        tr("Compare all puts each solver's plan here; a Pareto sweep, each solver across budgets"),
        this);
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
    m_order.clear();
    refresh();
}

QList<ParetoPlanPoint> ParetoChartView::planPointsOf(const std::vector<core::solvers::Plan> &plans,
                                                     int bestPlan)
{
    using core::solvers::SolveStatus;
    // Dominance among the plans drawn only: a plan without a point dims no other.
    std::vector<core::solvers::Plan> drawn;
    QList<ParetoPlanPoint> out;
    for (size_t i = 0; i < plans.size(); ++i) {
        const core::solvers::Plan &p = plans[i];
        // A timed-out row holds its solver's best plan so far (Compare all stops the slow
        // solvers at its limit), an infeasible one the smallest peak its solver reached (over
        // the budget: a ring): plans like any other here, beaten or not on the same rule. A
        // cancelled row holds nothing.
        const bool hasPlan = p.status != SolveStatus::Cancelled;
        if (!hasPlan || p.baselineStepSeconds <= 0 || p.timeline.peakBytes <= 0)
            continue;
        ParetoPlanPoint q;
        q.plan = int(i);
        q.solver = QString::fromStdString(p.solver);
        q.peakBytes = p.timeline.peakBytes;
        q.overheadPercent = core::solvers::timeOverheadPercent(p);
        q.best = int(i) == bestPlan;
        q.overBudget = p.status == SolveStatus::Infeasible;
        out.append(q);
        drawn.push_back(p);
        drawn.back().status = SolveStatus::Feasible; // dominatingPlan compares answered plans
    }
    for (size_t k = 0; k < drawn.size(); ++k)
        if (const core::solvers::Plan *by = core::solvers::dominatingPlan(drawn[k], drawn))
            out[qsizetype(k)].dominatedBy = out[qsizetype(by - drawn.data())].plan;
    return out;
}

QScatterSeries *ParetoChartView::addScatter(const QString &name)
{
    auto *s = new QScatterSeries(chart());
    s->setName(name);
    s->setProperty(kLegendShown, true);
    chart()->addSeries(s);
    s->attachAxis(m_x);
    s->attachAxis(m_y);
    return s;
}

void ParetoChartView::setPlans(const QList<ParetoPlanPoint> &plans)
{
    m_plans = plans;
    rebuildPlanSeries();
}

void ParetoChartView::rebuildPlanSeries()
{
    for (QScatterSeries *s : std::as_const(m_planSeries)) {
        chart()->removeSeries(s);
        delete s;
    }
    m_planSeries.clear();
    m_seriesOfPlan.clear();
    m_dominatedKey = m_overKey = nullptr;
    // Per solver: its plain points, its dimmed (dominated) ones, the best plan's star, and its
    // rings (over budget), plain or dimmed.
    QHash<QString, QScatterSeries *> made[PlanKinds];
    bool anyDominated = false, anyOver = false;
    for (const ParetoPlanPoint &p : std::as_const(m_plans)) {
        const bool dominated = p.dominatedBy >= 0;
        const PlanKind kind = p.best         ? BestPlan
                              : p.overBudget ? (dominated ? OverDimmedPlan : OverPlan)
                              : dominated    ? DimmedPlan
                                             : PlainPlan;
        QScatterSeries *&s = made[kind][p.solver];
        if (!s) {
            const QColor col = solverColour(p.solver);
            s = addScatter(kind == BestPlan ? tr("\u2605 best plan (%1)").arg(p.solver) : p.solver);
            s->setProperty("solver", p.solver);
            s->setProperty("kind", int(kind));
            if (kind == BestPlan) {
                s->setMarkerShape(QScatterSeries::MarkerShapeStar);
                s->setMarkerSize(24);
                s->setColor(col);
                s->setPen(QPen(QColor(0x21, 0x21, 0x21), 1.2));
            } else if (kind == OverPlan || kind == OverDimmedPlan) {
                // A ring: the plan is real, but over its budget.
                QColor edge = col;
                edge.setAlpha(kind == OverDimmedPlan ? 90 : 255);
                QColor none = col;
                none.setAlpha(0);
                s->setMarkerSize(11);
                s->setColor(none);
                s->setPen(QPen(edge, 2));
            } else if (kind == DimmedPlan) {
                QColor faint = col;
                faint.setAlpha(70);
                QColor edge = col;
                edge.setAlpha(110);
                s->setMarkerSize(11);
                s->setColor(faint);
                s->setPen(QPen(edge, 1));
            } else {
                s->setMarkerSize(11);
                s->setColor(col);
                s->setPen(QPen(QColor(0x21, 0x21, 0x21), 1.5));
            }
            m_planSeries.append(s);
        }
        m_seriesOfPlan.insert(p.plan, s);
        anyDominated = anyDominated || dominated;
        anyOver = anyOver || p.overBudget;
    }
    if (anyOver) {
        // Legend only: what a ring says.
        // Short in the legend (a docked chart has room for one line), the whole on hover.
        m_overKey = addScatter(tr("ring: over its budget"));
        m_overKey->setProperty(kLegendToolTip,
                               tr("A ring: a plan over its budget (an infeasible row: the "
                                  "smallest peak its solver reached)"));
        m_overKey->setMarkerSize(11);
        m_overKey->setColor(QColor(0x75, 0x75, 0x75, 0));
        m_overKey->setPen(QPen(QColor(0x75, 0x75, 0x75), 2));
        m_planSeries.append(m_overKey);
    }
    if (anyDominated) {
        // Legend only: what a dimmed point says.
        m_dominatedKey = addScatter(tr("dimmed: dominated"));
        m_dominatedKey->setProperty(
            kLegendToolTip, tr("Dimmed: dominated (another plan is faster at no more peak)"));
        m_dominatedKey->setMarkerSize(11);
        m_dominatedKey->setColor(QColor(0x75, 0x75, 0x75, 70));
        m_dominatedKey->setPen(QPen(QColor(0x75, 0x75, 0x75, 110), 1));
        m_planSeries.append(m_dominatedKey);
    }
    // The current plan's ring and the knee stay drawn above the plans' points.
    for (QScatterSeries *s : {m_current, m_kneeMark}) {
        chart()->removeSeries(s);
        chart()->addSeries(s);
        for (QValueAxis *a : {m_x, m_y})
            if (!s->attachedAxes().contains(a))
                s->attachAxis(a);
    }
    refresh();
}

QScatterSeries *ParetoChartView::planSeries(int plan) const
{
    return m_seriesOfPlan.value(plan, nullptr);
}

std::optional<QPoint> ParetoChartView::planPosition(int plan) const
{
    QScatterSeries *s = planSeries(plan);
    if (!s)
        return std::nullopt;
    for (const ParetoPlanPoint &p : m_plans)
        if (p.plan == plan) {
            const QPointF scene =
                chart()->mapToPosition(QPointF(double(p.peakBytes) / m_unit, p.overheadPercent), s);
            return mapFromScene(chart()->mapToScene(scene));
        }
    return std::nullopt;
}

QColor ParetoChartView::planColour(int plan) const
{
    QScatterSeries *s = planSeries(plan);
    if (!s)
        return QColor();
    const int kind = s->property("kind").toInt();
    return kind == OverPlan || kind == OverDimmedPlan ? s->pen().color() : s->color();
}

QString ParetoChartView::overBudgetLabel() const
{
    return m_overKey ? m_overKey->name() : QString();
}

QString ParetoChartView::dominatedLabel() const
{
    return m_dominatedKey ? m_dominatedKey->name() : QString();
}

QList<ParetoPoint> ParetoChartView::points() const { return m_order; }

QString ParetoChartView::memoryAxisTitle() const { return m_x->titleText(); }

QString ParetoChartView::timeAxisTitle() const { return m_y->titleText(); }

QString ParetoChartView::currentLabel() const { return m_current->name(); }

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
        const QColor col = solverColour(point.solver);
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
        c.line->setProperty(kLegendShown, true);
        c.dots->setProperty(kLegendShown, false);
        it = m_curves.insert(point.solver, c);
    }
    it->points.append(point);
    m_order.append(point);
    if (!m_refresh.isActive())
        m_refresh.start();
}

void ParetoChartView::setCurrent(int64_t peakBytes, double overheadPercent)
{
    m_currentPeak = peakBytes;
    m_currentOverhead = overheadPercent;
    refresh();
}

void ParetoChartView::refresh()
{
    // The unit first: the largest peak on the chart decides it.
    int64_t largest = std::max<int64_t>(0, m_currentPeak);
    for (const auto &c : m_curves)
        for (const ParetoPoint &p : c.points)
            if (p.feasible)
                largest = std::max(largest, p.peakBytes);
    for (const ParetoPlanPoint &p : std::as_const(m_plans))
        largest = std::max(largest, p.peakBytes);
    const core::ByteUnit unit = core::byteUnitFor(largest);
    m_unit = unit.bytes;
    m_unitName = QLatin1String(unit.name);
    fitAxisTitles();

    double xMin = 1e300, xMax = 0, yMax = 1;
    for (auto &c : m_curves) {
        QList<ParetoPoint> pts = c.points;
        std::sort(pts.begin(), pts.end(), [](const ParetoPoint &a, const ParetoPoint &b) {
            return a.peakBytes < b.peakBytes;
        });
        QList<QPointF> xy;
        for (const ParetoPoint &p : pts) {
            if (!p.feasible)
                continue; // no plan within that budget: nothing to draw
            const double x = double(p.peakBytes) / m_unit;
            xy.append(QPointF(x, p.overheadPercent));
            yMax = std::max(yMax, p.overheadPercent);
            xMin = std::min(xMin, x);
            xMax = std::max(xMax, x);
        }
        c.line->replace(xy);
        c.dots->replace(xy);
    }
    // The plans' points, each in its series (plain, dimmed or best) and the solver's legend
    // entry once: on its sweep curve when it has one, else on its first plan series.
    QSet<QString> named;
    for (auto it = m_curves.cbegin(); it != m_curves.cend(); ++it)
        named.insert(it.key());
    for (QScatterSeries *s : std::as_const(m_planSeries)) {
        QList<QPointF> xy;
        for (const ParetoPlanPoint &p : std::as_const(m_plans))
            if (m_seriesOfPlan.value(p.plan) == s) {
                const double x = double(p.peakBytes) / m_unit;
                xy.append(QPointF(x, p.overheadPercent));
                yMax = std::max(yMax, p.overheadPercent);
                xMin = std::min(xMin, x);
                xMax = std::max(xMax, x);
            }
        s->replace(xy);
        const QString solver = s->property("solver").toString();
        const bool ownEntry =
            s == m_dominatedKey || s == m_overKey || s->property("kind").toInt() == BestPlan;
        const bool show = ownEntry || !named.contains(solver);
        if (!ownEntry)
            named.insert(solver);
        s->setProperty(kLegendShown, show);
        for (auto *m : chart()->legend()->markers(s)) {
            // A solver named by its dimmed points only: its legend entry in its full colour.
            const int kind = s->property("kind").toInt();
            if (show && kind != PlainPlan && kind != BestPlan)
                m->setBrush(solverColour(solver));
        }
    }
    // The knee over every feasible point (the current plan's too), in percent of the largest
    // peak and of store-all's step (overheads are already in its percent).
    std::vector<core::solvers::CostPoint> costs;
    std::vector<ParetoPoint> of;
    for (const ParetoPoint &p : m_order)
        if (p.feasible && p.peakBytes > 0) {
            costs.push_back({p.peakBytes, 1.0 + p.overheadPercent / 100.0});
            of.push_back(p);
        }
    for (const ParetoPlanPoint &p : std::as_const(m_plans)) {
        costs.push_back({p.peakBytes, 1.0 + p.overheadPercent / 100.0});
        of.push_back({p.solver, 0, p.peakBytes, p.overheadPercent, true});
    }
    if (m_currentPeak > 0) {
        costs.push_back({m_currentPeak, 1.0 + m_currentOverhead / 100.0});
        of.push_back({tr("current plan"), 0, m_currentPeak, m_currentOverhead, true});
    }
    const std::optional<size_t> knee = core::solvers::frontierKnee(costs, largest, 1.0);
    m_knee = knee ? std::optional<ParetoPoint>(of[*knee]) : std::nullopt;
    if (m_knee && of.size() > 1)
        m_kneeMark->replace({QPointF(double(m_knee->peakBytes) / m_unit, m_knee->overheadPercent)});
    else
        m_kneeMark->clear();
    const bool farEnd = m_currentPeak > 0 &&
                        m_currentOverhead > core::solvers::kFarEndOverheadPercent && m_knee &&
                        m_knee->peakBytes != m_currentPeak;
    m_current->setName(farEnd ? tr("current plan: far end (+%1% time); knee at %2 %3, +%4%")
                                    .arg(m_currentOverhead, 0, 'f', 0)
                                    .arg(double(m_knee->peakBytes) / m_unit, 0, 'f', 1)
                                    .arg(QLatin1String(unit.name))
                                    .arg(m_knee->overheadPercent, 0, 'f', 1)
                              : tr("current plan"));
    if (m_currentPeak > 0) {
        const double x = double(m_currentPeak) / m_unit;
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
    const double pad = std::max((xMax - xMin) * 0.05, xMax * 0.01 + 1e-9);
    m_x->setRange(std::max(0.0, xMin - pad), xMax + pad);
    m_x->applyNiceNumbers(); // ticks at round values of the unit
    m_y->setRange(0, yMax * 1.1);
    m_y->applyNiceNumbers();
    m_y->applyNiceNumbers();
    // Ticks at the nice values from 0, the range a little below it: a point at 0% (store-all,
    // an offload plan that hides its copies) is drawn whole, not cut in half by the axis; the
    // margin is the current plan's square's half (12 px) of the plot's height as drawn now.
    const double tick = (m_y->max() - m_y->min()) / std::max(1, m_y->tickCount() - 1);
    m_y->setTickType(QValueAxis::TicksDynamic);
    m_y->setTickAnchor(0);
    m_y->setTickInterval(tick);
    const double plotPx = std::max(48.0, chart()->plotArea().height());
    m_y->setRange(-m_y->max() * std::min(0.25, 12.0 / plotPx), m_y->max());
    const bool empty = m_curves.isEmpty() && m_plans.isEmpty() && m_currentPeak <= 0;
    m_empty->setEmpty(empty);
    // The current plan's and the knee's keys only with their marks (a sweep with no plan in the
    // table listed "current plan" and the knee above the solvers, the last solvers cut off).
    m_current->setProperty(kLegendShown, m_currentPeak > 0);
    m_kneeMark->setProperty(kLegendShown, m_kneeMark->count() > 0);
    placeLegend(empty);
}

void ParetoChartView::placeLegend(bool empty)
{
    chart()->legend()->setVisible(false); // the empty state shows it again
    QList<ParetoLegendEntry> entries;
    if (!empty)
        for (QLegendMarker *m : chart()->legend()->markers()) {
            // QLegend is hidden, and so are its markers: the series say whether they have an
            // entry (a sweep's dots and a solver's second series do not).
            if (!m->series()->property(kLegendShown).toBool())
                continue;
            ParetoLegendEntry e;
            e.text = m->label();
            e.toolTip = m->series()->property(kLegendToolTip).toString();
            e.brush = m->brush();
            e.pen = m->pen();
            if (const auto *s = qobject_cast<QScatterSeries *>(m->series())) {
                switch (s->markerShape()) {
                case QScatterSeries::MarkerShapeRectangle:
                    e.marker = ParetoLegendEntry::Marker::Rectangle;
                    break;
                case QScatterSeries::MarkerShapeStar:
                    e.marker = ParetoLegendEntry::Marker::Star;
                    break;
                case QScatterSeries::MarkerShapeTriangle:
                    e.marker = ParetoLegendEntry::Marker::Triangle;
                    break;
                default: e.marker = ParetoLegendEntry::Marker::Circle; break;
                }
            } else if (const auto *l = qobject_cast<QLineSeries *>(m->series())) {
                e.marker = ParetoLegendEntry::Marker::Line;
                e.pen = l->pen();
            }
            entries.append(e);
        }
    const bool shortChart = height() < kShortChartPx;
    const QString title = shortChart ? QString() : tr("Peak memory versus step time");
    if (chart()->title() != title)
        chart()->setTitle(title);
    const QSizeF size(this->size()); // the chart's, once it is resized to the view
    const qreal top =
        shortChart ? kLegendPad : kLegendPad + QFontMetricsF(chart()->titleFont()).height() + 8;
    const qreal room = size.height() - top - kLegendPad;
    m_legend->setEntries(entries);
    m_legend->setVisible(!empty);
    // Texts wrap at 170 px; a legend that would take more than half the width wraps them at
    // 100 px (narrower columns), then takes a smaller font, before the plot gives way.
    QFont font = chart()->legend()->font();
    m_legend->setFont(font);
    QSizeF legend = m_legend->layout(room, 170);
    if (legend.width() > size.width() / 2)
        legend = m_legend->layout(room, 100);
    if (legend.width() > size.width() / 2) {
        if (font.pointSizeF() > 0)
            font.setPointSizeF(font.pointSizeF() * 0.85);
        else
            font.setPixelSize(std::max(8, int(font.pixelSize() * 0.85)));
        m_legend->setFont(font);
        legend = m_legend->layout(room, 90);
    }
    m_legend->setPos(size.width() - legend.width() - kLegendPad, top);
    const int edge = shortChart ? 4 : 12;
    const QMargins margins(
        edge, edge,
        empty || legend.isEmpty() ? edge : int(std::ceil(legend.width() + 2 * kLegendPad)), edge);
    if (chart()->margins() != margins) {
        chart()->setMargins(margins);
        chart()->resize(QSizeF(this->size())); // as QChartView does, now that it may shrink
    }
}

void ParetoChartView::fitAxisTitles()
{
    // Each axis' long title where it fits along the plot, else the short one (a docked chart at
    // 1366x768 cut "time over...", at 1080x700 "peak memo...").
    const QRectF plot = chart()->plotArea();
    const auto fit = [&](QValueAxis *axis, qreal room, const QString &full, const QString &brief) {
        const bool laidOut = !plot.isEmpty();
        const QString title =
            !laidOut || QFontMetricsF(axis->titleFont()).horizontalAdvance(full) <= room ? full
                                                                                         : brief;
        if (axis->titleText() != title)
            axis->setTitleText(title);
    };
    fit(m_x, plot.width(), tr("peak memory (%1)").arg(m_unitName), tr("peak (%1)").arg(m_unitName));
    fit(m_y, plot.height(), tr("time overhead over store-all (%)"), tr("time overhead (%)"));
}

std::optional<QPoint> ParetoChartView::pointPosition(const ParetoPoint &point) const
{
    if (!point.feasible || point.peakBytes <= 0)
        return std::nullopt;
    const auto it = m_curves.constFind(point.solver);
    if (it == m_curves.constEnd())
        return std::nullopt;
    const QPointF scene = chart()->mapToPosition(
        QPointF(double(point.peakBytes) / m_unit, point.overheadPercent), it->dots);
    return mapFromScene(chart()->mapToScene(scene));
}

void ParetoChartView::resizeEvent(QResizeEvent *event)
{
    QChartView::resizeEvent(event);
    refresh(); // the margin under 0% and the legend's columns are in pixels
    // QChartView raises its minimum size to the chart's (margins included) on every resize and
    // never lowers it: the legend's margin at one size would hold the dock that wide for good
    // (the Plans dock was squeezed to 70 px). The legend fits the size it is given instead.
    setMinimumSize(0, 0);
}

void ParetoChartView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton) {
        if (m_refresh.isActive()) { // points drawn where they are now
            m_refresh.stop();
            refresh();
        }
        const ParetoPoint *best = nullptr;
        double bestDistance = kClickRadiusPx;
        for (const ParetoPoint &p : m_order) {
            const std::optional<QPoint> at = pointPosition(p);
            if (!at)
                continue;
            const double d = QLineF(QPointF(*at), event->position()).length();
            if (d <= bestDistance) {
                bestDistance = d;
                best = &p;
            }
        }
        // A plan's point is the plan itself: it wins a tie with a sweep point on its spot.
        int bestPlan = -1;
        for (const ParetoPlanPoint &p : std::as_const(m_plans)) {
            const std::optional<QPoint> at = planPosition(p.plan);
            if (!at)
                continue;
            const double d = QLineF(QPointF(*at), event->position()).length();
            if (d <= bestDistance) {
                bestDistance = d;
                bestPlan = p.plan;
            }
        }
        if (bestPlan >= 0) {
            emit planClicked(bestPlan);
            event->accept();
            return;
        }
        if (best) {
            emit pointClicked(*best);
            event->accept();
            return;
        }
    }
    QChartView::mousePressEvent(event);
}

} // namespace remat::ui
