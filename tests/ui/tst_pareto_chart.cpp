// The planner's Pareto chart, offscreen: before a sweep (no points, no current plan) it shows a
// hint instead of axes over an arbitrary 0..1 GiB x 0..1 % range; the first sweep point brings the
// axes and the legend back and the range covers the point; clearing the points empties it again.
// The Plans table's plans are points of their own: dominated ones dimmed, the best one a star,
// a click on one asks for that plan.
#include "ui/planner/chart_empty_state.h"
#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/pareto_legend.h"

#include "core/solvers/registry.h"

#include <QChart>
#include <QFontMetricsF>
#include <QLegend>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTest>
#include <QValueAxis>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace remat::ui;

namespace {

QValueAxis *axis(const ParetoChartView &v, Qt::Orientation o)
{
    for (QAbstractAxis *a : v.chart()->axes(o))
        if (auto *va = qobject_cast<QValueAxis *>(a))
            return va;
    return nullptr;
}

/// An answered plan with these figures: store-all's step takes 1 s, so `overheadPercent` is the
/// step's time over it.
remat::core::solvers::Plan
plan(const char *solver, int64_t peakMiB, double overheadPercent,
     remat::core::solvers::SolveStatus status = remat::core::solvers::SolveStatus::Feasible)
{
    remat::core::solvers::Plan p;
    p.solver = solver;
    p.status = status;
    p.baselineStepSeconds = 1.0;
    p.timeline.peakBytes = peakMiB << 20;
    p.timeline.totalSeconds = 1.0 + overheadPercent / 100.0;
    return p;
}

} // namespace

class TestParetoChart : public QObject
{
    Q_OBJECT
private slots:
    void emptyUntilTheFirstPoint()
    {
        ParetoChartView v;
        v.resize(700, 320);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QValueAxis *x = axis(v, Qt::Horizontal), *y = axis(v, Qt::Vertical);
        QVERIFY(x && y);
        // Expected: no axes, no legend, a hint.
        QVERIFY(!x->isVisible());
        QVERIFY(!y->isVisible());
        QVERIFY(!v.legend()->isVisible());
        QVERIFY(!v.placeholderText().isEmpty());

        // Expected: one feasible point at 2 GiB, 30 % overhead shows the axes over it.
        v.addPoint({.solver = QStringLiteral("chen-greedy"),
                    .budgetBytes = int64_t(2) << 30,
                    .peakBytes = int64_t(2) << 30,
                    .overheadPercent = 30,
                    .feasible = true});
        QTRY_VERIFY(x->isVisible());
        QVERIFY(y->isVisible());
        QVERIFY(v.legend()->isVisible());
        QVERIFY(v.placeholderText().isEmpty());
        QVERIFY(x->min() <= 2.0 && x->max() >= 2.0);
        QCOMPARE(v.memoryAxisTitle(), QStringLiteral("peak memory (GiB)"));
        QVERIFY(y->max() >= 30.0);
        QCOMPARE(v.pointCount(QStringLiteral("chen-greedy")), 1);

        // Expected: cleared, the hint is back; a current plan alone also shows the axes.
        v.clearPoints();
        QVERIFY(!x->isVisible());
        QVERIFY(!v.placeholderText().isEmpty());
        v.setCurrent(int64_t(1) << 30, 12.5);
        QVERIFY(x->isVisible());
        QVERIFY(v.placeholderText().isEmpty());
        v.setCurrent(-1, 0);
        QVERIFY(!x->isVisible());

        // Expected: in a chart narrower than one line of hint (a docked Pareto tab at 1366x768)
        // the hint wraps inside the plot area instead of running past both edges.
        v.resize(330, 200);
        QCoreApplication::processEvents();
        auto *empty = v.findChild<ChartEmptyState *>();
        QVERIFY(empty);
        const QRectF area = v.chart()->plotArea();
        const QRectF hint = empty->hintRect();
        QVERIFY2(hint.left() >= area.left() - 1 && hint.right() <= area.right() + 1,
                 qPrintable(QStringLiteral("hint %1..%2 outside the plot area %3..%4")
                                .arg(hint.left())
                                .arg(hint.right())
                                .arg(area.left())
                                .arg(area.right())));
    }

    void legendKeysOnlyWhatIsDrawn()
    {
        // A Pareto sweep with no plan in the table (ppocr at 1366x768, seen in Xvfb): the legend
        // listed "current plan" (no square drawn) above the solvers, its third and later
        // solvers pushed to the chart's bottom edge. Expected: the current plan's key only with
        // its square; the knee's only with its triangle.
        ParetoChartView v;
        v.resize(700, 320);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        const auto texts = [&] {
            QStringList out;
            for (const ParetoLegendEntry &e : v.legend()->entries())
                out << e.text;
            return out;
        };
        v.addPoint({.solver = QStringLiteral("chen-greedy"),
                    .budgetBytes = int64_t(2) << 30,
                    .peakBytes = int64_t(2) << 30,
                    .overheadPercent = 30,
                    .feasible = true});
        QTRY_VERIFY(v.legend()->isVisible());
        QVERIFY2(!texts().contains(v.currentLabel()), qPrintable(texts().join(", ")));
        // One point: no knee drawn, no knee key.
        for (const QString &t : texts())
            QVERIFY2(!t.startsWith(QStringLiteral("knee")), qPrintable(texts().join(", ")));
        // A current plan: its key is back (and the knee's, once there is a knee).
        v.setCurrent(int64_t(1) << 30, 60);
        QTRY_VERIFY2(texts().contains(v.currentLabel()), qPrintable(texts().join(", ")));
        v.setCurrent(-1, 0);
        QTRY_VERIFY2(!texts().contains(v.currentLabel()), qPrintable(texts().join(", ")));
    }

    // Bug: a small model's sweep had GiB ticks of 0.00045. The axis takes the unit of its
    // largest peak: points of 300..900 KiB read in KiB, with ticks at round values.
    void smallModelsReadInTheirUnit()
    {
        ParetoChartView v;
        v.resize(700, 320);
        for (int i = 1; i <= 3; ++i) {
            v.addPoint({.solver = QStringLiteral("chen-greedy"),
                        .budgetBytes = int64_t(i) * 300 * 1024 + 1000,
                        .peakBytes = int64_t(i) * 300 * 1024,
                        .overheadPercent = 40.0 / i,
                        .feasible = true});
        }
        QTRY_COMPARE(v.memoryAxisTitle(), QStringLiteral("peak memory (KiB)"));
        QValueAxis *x = axis(v, Qt::Horizontal);
        QVERIFY(x->min() <= 300 && x->max() >= 900);
        QVERIFY(x->max() < 2000); // KiB, not bytes or GiB
        // Round ticks print as round numbers, as on the memory chart: "600", not "600.0".
        QCOMPARE(QString::asprintf(x->labelFormat().toLatin1().constData(), 600.0),
                 QStringLiteral("600"));
        QCOMPARE(QString::asprintf(x->labelFormat().toLatin1().constData(), 2.5),
                 QStringLiteral("2.5"));
        QCOMPARE(v.points().size(), 3);
    }

    // Walkthrough (issue 37, item 12): the legend cycled eight colours over eleven solvers, so
    // two solvers of one sweep shared a colour. Every registered solver's curve has its own, and
    // none is the current plan's black or the knee's red. (Fails with any palette shorter than the
    // registry, or one keyed by arrival order that repeats.)
    void everySolverHasItsOwnColour()
    {
        ParetoChartView v;
        v.resize(900, 400);
        const std::vector<std::string> ids = remat::core::solvers::makeRegistry().ids();
        QVERIFY(ids.size() >= 9);
        int i = 0;
        for (const std::string &id : ids) {
            ParetoPoint p;
            p.solver = QString::fromStdString(id);
            p.budgetBytes = p.peakBytes = int64_t(100 + i) << 20;
            p.overheadPercent = 10.0 + i++;
            p.feasible = true;
            v.addPoint(p);
        }
        QList<QColor> colours;
        for (const std::string &id : ids) {
            const QColor c = v.seriesColour(QString::fromStdString(id));
            QVERIFY2(c.isValid(), id.c_str());
            colours << c;
        }
        for (const QAbstractSeries *s : v.chart()->series())
            if (s->name() == v.currentLabel() || s->name().startsWith(QStringLiteral("knee")))
                colours << static_cast<const QScatterSeries *>(s)->color();
        QCOMPARE(colours.size(), int(ids.size()) + 2);
        for (int a = 0; a < colours.size(); ++a)
            for (int b = a + 1; b < colours.size(); ++b) {
                // Distinct to the eye, not just in the last bit: the RGB distance.
                const int d = std::abs(colours[a].red() - colours[b].red()) +
                              std::abs(colours[a].green() - colours[b].green()) +
                              std::abs(colours[a].blue() - colours[b].blue());
                QVERIFY2(d >= 60, qPrintable(QStringLiteral("series %1 and %2: %3 and %4")
                                                 .arg(a)
                                                 .arg(b)
                                                 .arg(colours[a].name(), colours[b].name())));
            }
        // The same solver keeps its colour in a later sweep, whatever order its points come in.
        const QColor rotor = v.seriesColour(QStringLiteral("rotor"));
        v.clearPoints();
        ParetoPoint p;
        p.solver = QStringLiteral("rotor");
        p.budgetBytes = p.peakBytes = 200 << 20;
        p.feasible = true;
        v.addPoint(p);
        QCOMPARE(v.seriesColour(QStringLiteral("rotor")), rotor);
    }

    // Compare all's rows as points: each answered plan at its peak and time overhead, in its
    // solver's colour; a plan another beats (no more peak, a faster step; or less peak at the
    // same step) dimmed and its beater named; the best plan starred; a timed-out row's best so
    // far drawn and judged like the rest (Compare all stops the slow solvers with one), an
    // infeasible row's plan (over its budget) a ring; cancelled rows, and plans without a
    // store-all step to compare with, left out; a click asks for the plan.
    // The legend of a docked chart at 1366x768 (about 600x205 px, as tst_small_screen finds it
    // after Compare all): eleven solvers, the best plan, the current plan, the knee, the ring and
    // dimmed keys, every entry whole inside the view, none over another or over the plot; the
    // axis titles whole. QLegend's single column showed five of sixteen entries beside a 117x81 px
    // plot. Narrower still (400 px), the entries stay whole; a tall chart keeps one column.
    void legendWholeInADockedChart()
    {
        using remat::core::solvers::SolveStatus;
        const char *solvers[] = {"store-all",      "chen-greedy",  "chen-sqrtn", "revolve",
                                 "hong-dp",        "hong-linear",  "feng-huang", "rotor",
                                 "checkmate-milp", "checkmate-lp", "offload"};
        std::vector<remat::core::solvers::Plan> plans;
        int i = 0;
        for (const char *s : solvers) {
            // Peaks 400..900 MiB, overheads 0..60%: some dominated, store-all over its budget.
            plans.push_back(plan(s, 900 - 45 * i, (i * 37) % 61,
                                 i == 0 ? SolveStatus::Infeasible : SolveStatus::Feasible));
            ++i;
        }
        ParetoChartView v;
        v.resize(600, 205);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setPlans(ParetoChartView::planPointsOf(plans, 5));
        v.setCurrent(plans[5].timeline.peakBytes,
                     remat::core::solvers::timeOverheadPercent(plans[5]));
        QVERIFY(!v.dominatedLabel().isEmpty());
        QVERIFY(!v.overBudgetLabel().isEmpty());
        QVERIFY(!v.chart()->legend()->isVisible()); // ParetoLegend draws the entries
        for (const QSize size : {QSize(600, 205), QSize(400, 205), QSize(700, 600)}) {
            v.resize(size);
            QTRY_COMPARE(v.viewport()->width(), v.width() - 2 * v.frameWidth());
            QTest::qWait(20);
            const QRectF plot = v.chart()->plotArea();
            const QRectF whole(QPointF(0, 0), QSizeF(v.viewport()->size()));
            const QString where = QStringLiteral("%1x%2: plot %3x%4 at %5,%6")
                                      .arg(size.width())
                                      .arg(size.height())
                                      .arg(plot.width())
                                      .arg(plot.height())
                                      .arg(plot.x())
                                      .arg(plot.y());
            qInfo("%s", qPrintable(where));
            const QList<ParetoLegendEntry> entries = v.legend()->entries();
            const QList<QRectF> rects = v.legend()->entryRects();
            // 10 solvers, the best plan (its solver's entry), ring, dimmed, current plan, knee.
            QCOMPARE(entries.size(), 15);
            QCOMPARE(rects.size(), entries.size());
            QStringList texts;
            for (const ParetoLegendEntry &e : entries)
                texts << e.text;
            for (const char *s : solvers)
                QVERIFY2(
                    std::any_of(texts.cbegin(), texts.cend(),
                                [&](const QString &t) { return t.contains(QLatin1String(s)); }),
                    qPrintable(QLatin1String(s) + QStringLiteral(" not in ") +
                               texts.join(QStringLiteral(", "))));
            for (qsizetype k = 0; k < rects.size(); ++k) {
                const QString what = QStringLiteral("'%1' at %2,%3 %4x%5; %6")
                                         .arg(texts[k])
                                         .arg(rects[k].x())
                                         .arg(rects[k].y())
                                         .arg(rects[k].width())
                                         .arg(rects[k].height())
                                         .arg(where);
                QVERIFY2(whole.contains(rects[k]), qPrintable(what));
                QVERIFY2(!rects[k].intersects(plot), qPrintable(what));
                for (qsizetype j = 0; j < k; ++j)
                    QVERIFY2(!rects[k].intersects(rects[j]), qPrintable(what));
            }
            for (QValueAxis *a : {axis(v, Qt::Horizontal), axis(v, Qt::Vertical)}) {
                const double room =
                    a->orientation() == Qt::Horizontal ? plot.width() : plot.height();
                QVERIFY2(QFontMetricsF(a->titleFont()).horizontalAdvance(a->titleText()) <= room,
                         qPrintable(a->titleText() + QStringLiteral("; ") + where));
            }
            QVERIFY2(plot.width() >= 80 && plot.height() >= 100, qPrintable(where));
            if (size.height() >= 600) // room for one column: the legend as narrow as it gets
                QVERIFY2(std::all_of(rects.cbegin(), rects.cend(),
                                     [&](const QRectF &r) { return r.x() == rects[0].x(); }),
                         qPrintable(where));
        }
        // The minimum size follows the legend down again (QChartView only ever raised it).
        QVERIFY(v.minimumWidth() <= 400);
    }

    void plansArePointsDominatedOnesDimmed()
    {
        using remat::core::solvers::SolveStatus;
        const std::vector<remat::core::solvers::Plan> plans = {
            plan("chen-greedy", 600, 20),                          // 0: beaten by 2
            plan("hong-dp", 400, 30),                              // 1: the frontier
            plan("checkmate-lp", 500, 10),                         // 2: the frontier, best
            plan("rotor", 700, 10),                                // 3: beaten by 2 (same step)
            plan("chen-sqrtn", 300, 50, SolveStatus::Infeasible),  // 4: over budget, a ring
            plan("offload", 900, 0),                               // 5: the frontier
            plan("checkmate-milp", 950, 5, SolveStatus::TimedOut), // 6: best so far, beaten by 5
            plan("checkmate-lp", 350, 40, SolveStatus::TimedOut),  // 7: the frontier
            plan("rotor", 200, 90, SolveStatus::Cancelled),        // 8: no answer, no point
            plan("hong-linear", 980, 30, SolveStatus::Infeasible), // 9: a ring beaten by 2
        };
        std::vector<remat::core::solvers::Plan> noBaseline = {plans[1]};
        noBaseline[0].baselineStepSeconds = 0;
        QVERIFY(ParetoChartView::planPointsOf(noBaseline, -1).isEmpty());

        const QList<ParetoPlanPoint> points = ParetoChartView::planPointsOf(plans, 2);
        QCOMPARE(points.size(), 9);
        QList<int> ids, dominatedBy;
        for (const ParetoPlanPoint &p : points) {
            ids << p.plan;
            dominatedBy << p.dominatedBy;
            const auto &src = plans[size_t(p.plan)];
            QCOMPARE(p.solver, QString::fromStdString(src.solver));
            QCOMPARE(p.peakBytes, src.timeline.peakBytes);
            QCOMPARE(p.overheadPercent, remat::core::solvers::timeOverheadPercent(src));
            QCOMPARE(p.best, p.plan == 2);
            QCOMPARE(p.overBudget, p.plan == 4 || p.plan == 9);
        }
        QCOMPARE(ids, QList<int>({0, 1, 2, 3, 4, 5, 6, 7, 9}));
        QCOMPARE(dominatedBy, QList<int>({2, -1, -1, 2, -1, -1, 5, -1, 2}));

        ParetoChartView v;
        v.resize(900, 420);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setPlans(points);
        QCOMPARE(v.planPoints().size(), 9);
        QVERIFY(v.placeholderText().isEmpty()); // plans alone show the axes
        QVERIFY(!v.dominatedLabel().isEmpty());
        QVERIFY(!v.overBudgetLabel().isEmpty());
        // Solver colours, the dominated ones faint; the frontier's opaque.
        for (int i : {0, 1, 2, 3, 4, 5, 6, 7, 9}) {
            const QColor c = v.planColour(i);
            const QColor solver =
                ParetoChartView::solverColour(QString::fromStdString(plans[size_t(i)].solver));
            QCOMPARE(c.rgb(), solver.rgb());
            QCOMPARE(c.alpha() < 128, i == 0 || i == 3 || i == 6 || i == 9);
        }
        QVERIFY(!v.planColour(8).isValid());
        // Every point inside the axes, the cheaper-in-memory one further left.
        QValueAxis *x = axis(v, Qt::Horizontal);
        QCOMPARE(v.memoryAxisTitle(), QStringLiteral("peak memory (MiB)"));
        QVERIFY(x->min() <= 300 && x->max() >= 980);
        QVERIFY(v.planPosition(1)->x() < v.planPosition(2)->x());
        QVERIFY(v.planPosition(2)->y() > v.planPosition(1)->y()); // less overhead: lower
        QVERIFY(v.planPosition(4)->x() < v.planPosition(1)->x());
        QVERIFY(!v.planPosition(8));

        QSignalSpy clicked(&v, &ParetoChartView::planClicked);
        QTest::mouseClick(v.viewport(), Qt::LeftButton, {}, *v.planPosition(3));
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked[0][0].toInt(), 3);
        // Nowhere near a point: nothing asked.
        QTest::mouseClick(v.viewport(), Qt::LeftButton, {}, QPoint(3, 3));
        QCOMPARE(clicked.count(), 1);

        // No dominated plan left: no dimmed legend entry; no plans: the hint again.
        v.setPlans(ParetoChartView::planPointsOf({plans[1], plans[2]}, -1));
        QVERIFY(v.dominatedLabel().isEmpty());
        QVERIFY(v.overBudgetLabel().isEmpty());
        QCOMPARE(v.planColour(0).alpha(), 255);
        v.setPlans({});
        QVERIFY(!v.placeholderText().isEmpty());
        QVERIFY(!v.planPosition(0));
    }
};

QTEST_MAIN(TestParetoChart)
#include "tst_pareto_chart.moc"
