// The planner's Pareto chart, offscreen: before a sweep (no points, no current plan) it shows a
// hint instead of axes over an arbitrary 0..1 GiB x 0..1 % range; the first sweep point brings the
// axes and the legend back and the range covers the point; clearing the points empties it again.
#include "ui/planner/pareto_chart_view.h"

#include "core/solvers/registry.h"

#include <QChart>
#include <QLegend>
#include <QScatterSeries>
#include <QTest>
#include <QValueAxis>

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
        QVERIFY(!v.chart()->legend()->isVisible());
        QVERIFY(!v.placeholderText().isEmpty());

        // Expected: one feasible point at 2 GiB, 30 % overhead shows the axes over it.
        ParetoPoint p;
        p.solver = QStringLiteral("chen-greedy");
        p.budgetBytes = int64_t(2) << 30;
        p.peakBytes = p.budgetBytes;
        p.overheadPercent = 30;
        p.feasible = true;
        v.addPoint(p);
        QTRY_VERIFY(x->isVisible());
        QVERIFY(y->isVisible());
        QVERIFY(v.chart()->legend()->isVisible());
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
    }

    // Bug: a small model's sweep had GiB ticks of 0.00045. The axis takes the unit of its
    // largest peak: points of 300..900 KiB read in KiB, with ticks at round values.
    void smallModelsReadInTheirUnit()
    {
        ParetoChartView v;
        v.resize(700, 320);
        for (int i = 1; i <= 3; ++i) {
            ParetoPoint p;
            p.solver = QStringLiteral("chen-greedy");
            p.budgetBytes = int64_t(i) * 300 * 1024 + 1000;
            p.peakBytes = int64_t(i) * 300 * 1024;
            p.overheadPercent = 40.0 / i;
            p.feasible = true;
            v.addPoint(p);
        }
        QTRY_COMPARE(v.memoryAxisTitle(), QStringLiteral("peak memory (KiB)"));
        QValueAxis *x = axis(v, Qt::Horizontal);
        QVERIFY(x->min() <= 300 && x->max() >= 900);
        QVERIFY(x->max() < 2000); // KiB, not bytes or GiB
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
};

QTEST_MAIN(TestParetoChart)
#include "tst_pareto_chart.moc"
