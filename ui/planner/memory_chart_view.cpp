#include "ui/planner/memory_chart_view.h"

#include "ui/planner/chart_empty_state.h"
#include "ui/planner/memory_curves.h"

#include "core/util/bytes.h"

#include <QAreaSeries>
#include <QChart>
#include <QFontInfo>
#include <QFontMetrics>
#include <QGraphicsLayout>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMouseEvent>
#include <QPen>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace remat::ui {

using core::schedule::kMemCategoryCount;
static_assert(kMemCategoryCount == 10, "one area series per memory category");

QColor memCategoryColor(int category)
{
    static const QColor colors[] = {
        QColor(0x90, 0xa4, 0xae), // weights: grey-blue
        QColor(0x54, 0x6e, 0x7a), // master weights: slate
        QColor(0xa1, 0x88, 0x7f), // optimizer state: taupe
        QColor(0x80, 0x60, 0xb0), // weight grads: purple
        QColor(0x42, 0x85, 0xf4), // stored activations: blue
        QColor(0xf4, 0x8f, 0x22), // recomputed activations: orange
        QColor(0xd6, 0x4a, 0x6a), // activation grads: rose
        QColor(0x9e, 0x9d, 0x24), // workspace: olive
        QColor(0x26, 0xa6, 0x9a), // offload in flight: teal
        QColor(0x7c, 0xb3, 0x42), // weight casts (autocast's half copies): green
    };
    return colors[std::clamp(category, 0, int(kMemCategoryCount) - 1)];
}

namespace {

/// Tick spacing for the step axis: whole steps, about five ticks, 1-2-5 multiples. The labels are
/// "%d", so fixed fractional ticks would print the same step several times ("0 0 0 0 1").
double stepTickInterval(double xMax)
{
    const double raw = xMax / 5;
    if (raw <= 1)
        return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * magnitude >= raw)
            return m * magnitude;
    return 10 * magnitude;
}

} // namespace

MemoryChartView::MemoryChartView(QWidget *parent) : QChartView(new QChart(), parent)
{
    setRenderHint(QPainter::Antialiasing);
    QChart *c = chart();
    c->setAnimationOptions(QChart::NoAnimation);
    // Up to thirteen entries ("recomputed activations", "store-all total", ...): beside the plot, one a
    // line, each name whole; under it they would share one line and be cut to "recom...".
    c->legend()->setAlignment(Qt::AlignRight);
    c->legend()->setShowToolTips(true);
    c->setMargins(QMargins(4, 4, 4, 4));
    // No inset around the chart's background: in a short dock the legend needs every line (at
    // 260 px the last entry was cut off).
    c->layout()->setContentsMargins(0, 0, 0, 0);
    c->setBackgroundRoundness(0);
    m_x = new QValueAxis(c);
    m_x->setTitleText(tr("schedule step"));
    m_x->setLabelFormat(QStringLiteral("%d"));
    m_x->setTickType(QValueAxis::TicksDynamic);
    m_x->setTickAnchor(0);
    m_y = new QValueAxis(c);
    m_y->setTitleText(tr("GiB"));
    m_y->setLabelFormat(QStringLiteral("%g")); // round ticks print as "400", not "400.0"
    c->addAxis(m_x, Qt::AlignBottom);
    c->addAxis(m_y, Qt::AlignLeft);
    for (size_t k = 0; k < kMemCategoryCount; ++k) {
        m_upper[k] = new QLineSeries(c);
        m_lower[k] = new QLineSeries(c);
        m_area[k] = new QAreaSeries(m_upper[k], m_lower[k]);
        m_area[k]->setName(QString::fromLatin1(
            core::schedule::memCategoryName(static_cast<core::schedule::MemCategory>(k))));
        const QColor col = memCategoryColor(int(k));
        m_area[k]->setColor(col);
        m_area[k]->setBorderColor(col.darker(115));
        c->addSeries(m_area[k]);
        m_area[k]->attachAxis(m_x);
        m_area[k]->attachAxis(m_y);
    }
    auto addLine = [&](QLineSeries *s, const QString &name, QPen pen) {
        s->setName(name);
        s->setPen(pen);
        c->addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    };
    m_storeAll = new QLineSeries(c);
    addLine(m_storeAll, tr("store-all total"), QPen(QColor(0x21, 0x21, 0x21), 1.5, Qt::DashLine));
    m_budget = new QLineSeries(c);
    addLine(m_budget, tr("budget"), QPen(QColor(0xc6, 0x28, 0x28), 1.5, Qt::DashDotLine));
    m_cursorLine = new QLineSeries(c);
    addLine(m_cursorLine, tr("step"), QPen(QColor(0x00, 0x00, 0x00), 1.0));
    m_peak = new QScatterSeries(c);
    m_peak->setName(tr("peak"));
    // A ring, not a disc: a peak one step wide is a spike thinner than a pixel or two, and a
    // filled dot centred on its tip hid the tip, so the dot seemed to float above the curve
    // (tiny_vit's store-all plan at 1.3 px a step: the line's last 5 px under the dot).
    m_peak->setMarkerSize(11);
    m_peak->setColor(Qt::transparent);
    m_peak->setBorderColor(QColor(0xc6, 0x28, 0x28));
    QPen ring(QColor(0xc6, 0x28, 0x28), 2.0);
    m_peak->setPen(ring);
    c->addSeries(m_peak);
    m_peak->attachAxis(m_x);
    m_peak->attachAxis(m_y);
    m_stalls = new QScatterSeries(c);
    m_stalls->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    m_stalls->setMarkerSize(9);
    m_stalls->setColor(QColor(0x4e, 0x34, 0x2e));
    m_stalls->setBorderColor(QColor(0xff, 0xff, 0xff));
    c->addSeries(m_stalls);
    m_stalls->attachAxis(m_x);
    m_stalls->attachAxis(m_y);
    // The cursor is not worth a legend entry, nor the peak's dot: the title says "peak X at
    // step N" (fourteen entries did not fit beside a dock of a 1366x768 screen).
    for (QAbstractSeries *s :
         {static_cast<QAbstractSeries *>(m_cursorLine), static_cast<QAbstractSeries *>(m_peak)})
        for (QLegendMarker *m : c->legend()->markers(s))
            m->setVisible(false);
    m_empty = new ChartEmptyState(c, tr("Solve a plan to see its memory over the schedule"), this);
    clearTimelines();
}

QString MemoryChartView::placeholderText() const { return m_empty->text(); }

QColor MemoryChartView::overlayColor(int i)
{
    // Dark, saturated and apart from the category fills: a line must stand out over the areas.
    static const QColor colors[] = {QColor(0x1b, 0x5e, 0x20), QColor(0x6a, 0x1b, 0x9a),
                                    QColor(0xbf, 0x36, 0x0c), QColor(0x0d, 0x47, 0xa1),
                                    QColor(0x88, 0x0e, 0x4f), QColor(0x37, 0x47, 0x4f)};
    return colors[size_t(std::max(0, i)) % std::size(colors)];
}

QStringList MemoryChartView::overlayNames() const
{
    QStringList names;
    for (const QLineSeries *s : m_overlays)
        names << s->name();
    return names;
}

void MemoryChartView::clearOverlays()
{
    for (QLineSeries *s : m_overlays) {
        chart()->removeSeries(s);
        delete s;
    }
    m_overlays.clear();
    m_overlayTimelines.clear();
}
int MemoryChartView::stallMarkerCount() const { return int(m_stalls->count()); }

QString MemoryChartView::stallLabel() const { return m_stalls->name(); }

QString MemoryChartView::memoryUnit() const { return m_y->titleText(); }

void MemoryChartView::clearTimelines()
{
    for (size_t k = 0; k < kMemCategoryCount; ++k) {
        m_upper[k]->clear();
        m_lower[k]->clear();
    }
    clearOverlays();
    m_storeAll->clear();
    m_budget->clear();
    m_budgetBytes = 0;
    m_peak->clear();
    m_stalls->clear();
    for (QLegendMarker *m : chart()->legend()->markers(m_stalls))
        m->setVisible(false);
    m_cursorLine->clear();
    m_stepCount = 0;
    m_drawnPoints = 0;
    m_planTimeline = {};
    m_storeAllTimeline = {};
    m_hasStoreAll = false;
    m_x->setRange(0, 1);
    m_x->setTickInterval(1);
    m_y->setRange(0, 1);
    chart()->setTitle(tr("No plan"));
    m_empty->setEmpty(true);
}

void MemoryChartView::setTimelines(const core::sim::Timeline &plan,
                                   const core::sim::Timeline *storeAll, int64_t budgetBytes,
                                   const QString &planName, const QList<MemoryOverlay> &overlays,
                                   const std::vector<double> *copyStalls)
{
    const auto &pts = plan.points;
    m_stepCount = int(pts.size());
    int64_t top = std::max<int64_t>(plan.peakBytes, budgetBytes);
    if (storeAll)
        top = std::max(top, storeAll->peakBytes);
    for (const MemoryOverlay &o : overlays)
        if (o.timeline)
            top = std::max(top, o.timeline->peakBytes);
    // The unit the tables print the peak in (formatBytes): KiB on a tiny model, not 0.001 MiB.
    const core::ByteUnit unit = core::byteUnitFor(top);
    m_unit = unit.bytes;
    m_y->setTitleText(QLatin1String(unit.name));
    m_yMax = std::max(1e-9, double(top) / m_unit * 1.08);
    // The timelines are kept (the view may be resized: the curves follow its width) and drawn
    // thinned to the view's width (memory_curves.h): a curve of 15,000 steps in 400 pixels cost
    // QtCharts 100 ms a slider move, to lay out points no screen could show apart.
    m_planTimeline = plan;
    m_storeAllTimeline = storeAll ? *storeAll : core::sim::Timeline();
    m_hasStoreAll = storeAll && !storeAll->points.empty();
    double xMax = std::max<double>(
        1, std::max(pts.size(), m_hasStoreAll ? storeAll->points.size() : size_t(0)));
    // Other selected plans: their totals as lines, drawn over the areas (a schedule with more
    // recomputation is longer: the axis takes the longest).
    clearOverlays();
    for (const MemoryOverlay &o : overlays) {
        if (!o.timeline)
            continue;
        auto *line = new QLineSeries(chart());
        line->setName(o.name);
        line->setPen(QPen(overlayColor(int(m_overlays.size())), 2.0));
        chart()->addSeries(line);
        line->attachAxis(m_x);
        line->attachAxis(m_y);
        for (QLegendMarker *m : chart()->legend()->markers(line))
            m->setVisible(false); // named under the title instead
        m_overlays.append(line);
        m_overlayTimelines.push_back(*o.timeline);
        xMax = std::max(xMax, double(o.timeline->points.size()));
    }
    m_xMax = xMax;
    updateCurves(true);
    int usedCategories = 0;
    for (size_t k = 0; k < kMemCategoryCount; ++k) {
        // A category this plan never uses (offload on a plan without offload, often workspace)
        // leaves the legend: beside the plot, eleven entries and the overlaid plans did not fit.
        const bool used = m_upper[k]->count() > 0;
        usedCategories += used;
        for (QLegendMarker *m : chart()->legend()->markers(m_area[k]))
            m->setVisible(used);
    }
    for (QLegendMarker *m : chart()->legend()->markers(m_storeAll))
        m->setVisible(m_hasStoreAll); // a comparison of two steps has no store-all line
    setBudget(budgetBytes);
    if (!pts.empty())
        m_peak->replace({QPointF(double(plan.peakStep), double(plan.peakBytes) / m_unit)});
    else
        m_peak->clear();
    // Copy-lane stalls, from the simulator's points: every step that waits gets a marker on the
    // plan's total there (not thinned with the areas: a stall is one step).
    QList<QPointF> stalls;
    double stallSeconds = 0;
    for (size_t i = 0; copyStalls && i < pts.size() && i < copyStalls->size(); ++i)
        if ((*copyStalls)[i] > 0) {
            stalls.append(QPointF(double(i), double(pts[i].peakDuringStep) / m_unit));
            stallSeconds += (*copyStalls)[i];
        }
    m_stalls->replace(stalls);
    m_stalls->setName(
        stalls.isEmpty()
            ? QString()
            : tr("copy stalls %1")
                  .arg(stallSeconds >= 1e-3   ? tr("%1 ms").arg(stallSeconds * 1e3, 0, 'f', 1)
                       : stallSeconds >= 1e-6 ? tr("%1 µs").arg(stallSeconds * 1e6, 0, 'g', 3)
                                              : tr("%1 ns").arg(stallSeconds * 1e9, 0, 'g', 3)));
    for (QLegendMarker *m : chart()->legend()->markers(m_stalls))
        m->setVisible(!stalls.isEmpty());
    m_empty->setEmpty(false);
    // The title in pieces, wrapped to the chart's width (layoutTitle, again on resize): with
    // three plans overlaid one line of it was elided ("...; 2 other plans over...").
    m_titleHead = {tr("%1: peak %2 at step %3")
                       .arg(planName, QString::fromStdString(core::formatBytes(plan.peakBytes)))
                       .arg(plan.peakStep),
                   tr("(activations %1),")
                       .arg(QString::fromStdString(core::formatBytes(plan.activationPeakBytes))),
                   tr("recompute +%1 %").arg(plan.tdiPercent(), 0, 'f', 1)};
    // The overlays' key under it, each in its line's colour: the legend beside the plot has no
    // room left for them in a short dock.
    m_titleKeys.clear();
    for (const QLineSeries *line : m_overlays)
        m_titleKeys.append({line->pen().color().name(), line->name()});
    layoutTitle();
    if (m_cursor >= 0)
        setCursorStep(m_cursor);
    // Categories, store-all, budget and stalls (the overlaid plans are named under the title).
    m_legendEntries = usedCategories + (m_hasStoreAll ? 1 : 0) + (m_budgetBytes > 0 ? 1 : 0) +
                      (stalls.isEmpty() ? 0 : 1);
    fitLegend();
}

QList<QPointF> MemoryChartView::drawnTotal() const
{
    for (size_t k = kMemCategoryCount; k-- > 0;)
        if (m_upper[k]->count() > 0)
            return m_upper[k]->points();
    return {};
}

QList<QPointF> MemoryChartView::drawnStoreAll() const { return m_storeAll->points(); }

int MemoryChartView::curveColumns() const { return std::max(1, width()); }

void MemoryChartView::updateCurves(bool newRanges)
{
    // QtCharts lays every series out again (mapping and stroking all its points) on each change
    // of an axis' range and on each replace(): the curves are emptied first, so that the axes
    // move over empty series and each curve is laid out once, at its replace().
    const QList<QPointF> none;
    for (size_t k = 0; k < kMemCategoryCount; ++k) {
        m_upper[k]->replace(none);
        m_lower[k]->replace(none);
    }
    m_storeAll->replace(none);
    for (QLineSeries *line : m_overlays)
        line->replace(none);
    if (newRanges) {
        m_x->setRange(0, m_xMax);
        m_x->setTickInterval(stepTickInterval(m_xMax));
        m_y->setRange(0, m_yMax);
        // Round ticks in the unit (0, 200, 400 ... MiB), not tenths of 1.08 x the peak.
        m_y->applyNiceNumbers();
        m_yMax = m_y->max();
    }
    m_columns = curveColumns();
    const MemoryCurves curves = stackedMemoryCurves(m_planTimeline, m_columns, m_unit);
    m_drawnPoints = int(curves.steps.size());
    for (size_t k = 0; k < kMemCategoryCount; ++k) {
        if (!curves.used[k])
            continue; // stays empty: a category the plan never uses has no area to lay out
        m_upper[k]->replace(curves.upper[k]);
        m_lower[k]->replace(curves.lower[k]);
    }
    if (m_hasStoreAll)
        m_storeAll->replace(totalMemoryCurve(m_storeAllTimeline, m_columns, m_unit));
    for (qsizetype i = 0; i < m_overlays.size(); ++i)
        m_overlays[i]->replace(totalMemoryCurve(m_overlayTimelines[size_t(i)], m_columns, m_unit));
}

void MemoryChartView::setBudget(int64_t budgetBytes)
{
    m_budgetBytes = budgetBytes > 0 && m_stepCount > 0 ? budgetBytes : 0;
    if (m_budgetBytes > 0)
        m_budget->replace({QPointF(0, double(budgetBytes) / m_unit),
                           QPointF(m_xMax, double(budgetBytes) / m_unit)});
    else
        m_budget->clear();
    for (QLegendMarker *m : chart()->legend()->markers(m_budget))
        m->setVisible(m_budgetBytes > 0);
}

void MemoryChartView::setCursorStep(int step)
{
    m_cursor = step;
    if (step < 0 || m_stepCount == 0) {
        m_cursorLine->clear();
        return;
    }
    m_cursorLine->replace({QPointF(step, 0), QPointF(step, m_yMax)});
}

void MemoryChartView::resizeEvent(QResizeEvent *event)
{
    QChartView::resizeEvent(event);
    if (m_stepCount > 0) {
        layoutTitle();
        // Thinned for the old width: thinned again for the new one (the axes stay).
        auto thinned = [&](int columns) {
            bool any = m_planTimeline.points.size() > 2 * size_t(columns) ||
                       m_storeAllTimeline.points.size() > 2 * size_t(columns);
            for (const core::sim::Timeline &t : m_overlayTimelines)
                any = any || t.points.size() > 2 * size_t(columns);
            return any;
        };
        if (curveColumns() != m_columns && (thinned(m_columns) || thinned(curveColumns())))
            updateCurves(false);
    }
    fitLegend();
}

void MemoryChartView::layoutTitle()
{
    // Greedy wrap: the head's pieces joined by spaces, then each overlaid plan's key ("━━ plan
    // 2: rotor, peak 1.2 GiB") whole, on as many lines as the chart's width needs.
    const QFontMetrics fm(chart()->titleFont());
    const int room = std::max(120, width() - 24);
    const QString dash = QStringLiteral("━━ ");
    QStringList plainLines, htmlLines;
    QString plain, html;
    auto add = [&](const QString &plainPiece, const QString &htmlPiece, const QString &gap,
                   const QString &htmlGap) {
        if (!plain.isEmpty() && fm.horizontalAdvance(plain + gap + plainPiece) > room) {
            plainLines << plain;
            htmlLines << html;
            plain.clear();
            html.clear();
        }
        html += (plain.isEmpty() ? QString() : htmlGap) + htmlPiece;
        plain += (plain.isEmpty() ? QString() : gap) + plainPiece;
    };
    for (const QString &piece : m_titleHead)
        add(piece, piece.toHtmlEscaped(), QStringLiteral(" "), QStringLiteral(" "));
    if (!m_titleKeys.isEmpty()) {
        plainLines << plain; // the keys start a line of their own
        htmlLines << html;
        plain.clear();
        html.clear();
        add(tr("overlaid:"), tr("overlaid:"), QString(), QString());
    }
    for (const auto &[colour, name] : m_titleKeys)
        add(dash + name,
            QStringLiteral("<span style=\"color:%1\">&#9473;&#9473; %2</span>")
                .arg(colour, name.toHtmlEscaped()),
            QStringLiteral("   "), QStringLiteral("&nbsp;&nbsp; "));
    if (!plain.isEmpty()) {
        plainLines << plain;
        htmlLines << html;
    }
    m_titleLines = int(plainLines.size());
    const QString title = m_titleKeys.isEmpty() && m_titleLines == 1
                              ? plainLines.front()
                              : htmlLines.join(QStringLiteral("<br/>"));
    if (chart()->title() != title)
        chart()->setTitle(title);
}

QStringList MemoryChartView::titleLines() const
{
    // The title as shown, one entry a line, without markup.
    QString t = chart()->title();
    t.replace(QStringLiteral("<br/>"), QStringLiteral("\n"));
    t.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
    t.replace(QStringLiteral("&#9473;"), QStringLiteral("━"));
    t.replace(QStringLiteral("&nbsp;"), QStringLiteral(" "));
    t.replace(QStringLiteral("&amp;"), QStringLiteral("&"));
    t.replace(QStringLiteral("&lt;"), QStringLiteral("<"));
    t.replace(QStringLiteral("&gt;"), QStringLiteral(">"));
    t.replace(QStringLiteral("&quot;"), QStringLiteral("\""));
    return t.split(QLatin1Char('\n'));
}

void MemoryChartView::fitLegend()
{
    const int entries = m_legendEntries;
    const QFont base = font();
    QFont f = base;
    // The title (one line or more: layoutTitle wraps it) and the margins aside.
    const int titleLines = std::max(1, m_titleLines);
    const double room = std::max(40, height() - 12 - titleLines * 2 * QFontInfo(base).pixelSize());
    const double perEntry = room / std::max(1, entries);
    // A legend line is 2.5 times the font's pixel height (marker, text and spacing: measured,
    // 18 px a line at 7 px); a line that does not fit is drawn cut at the chart's edge.
    const double pixel = std::clamp((perEntry - 1) / 2.5, 6.0, double(QFontInfo(base).pixelSize()));
    f.setPixelSize(int(pixel));
    chart()->legend()->setFont(f);
}

void MemoryChartView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton && m_stepCount > 0) {
        const QPointF value = chart()->mapToValue(event->position());
        const int step = std::clamp(int(value.x() + 0.5), 0, m_stepCount - 1);
        setCursorStep(step);
        emit stepSelected(step);
        event->accept();
        return;
    }
    QChartView::mousePressEvent(event);
}

} // namespace remat::ui
