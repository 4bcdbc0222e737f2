// The planner's Pareto chart, offscreen: before a sweep (no points, no current plan) it shows a
// hint instead of axes over an arbitrary 0..1 GiB x 0..1 % range; the first sweep point brings the
// axes and the legend back and the range covers the point; clearing the points empties it again.
#include "ui/planner/pareto_chart_view.h"

#include <QChart>
#include <QLegend>
#include <QTest>
#include <QValueAxis>

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
};

QTEST_MAIN(TestParetoChart)
#include "tst_pareto_chart.moc"
