// The planner's memory chart, offscreen: with no plan it shows a hint instead of axes over a
// meaningless 0..1 range (the step axis used to read "0 0 0 0 1"); with a plan the axes come back
// and the step axis never prints the same step twice, however few steps there are.
#include "ui/planner/memory_chart_view.h"

#include "core/util/bytes.h"

#include <QChart>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QSet>
#include <QTest>
#include <QValueAxis>

#include <cmath>

using namespace remat;
using namespace remat::ui;

namespace {

/// A plan of `steps` steps whose stored activations grow by 1 MiB a step (peak at the last step).
core::sim::Timeline rampTimeline(int steps)
{
    core::sim::Timeline t;
    for (int i = 0; i < steps; ++i) {
        core::sim::TimelinePoint p;
        p.byCategory[size_t(core::schedule::MemCategory::StoredActivations)] = int64_t(i + 1) << 20;
        p.bytesInUse = p.peakDuringStep = int64_t(i + 1) << 20;
        t.points.push_back(p);
    }
    t.peakBytes = int64_t(steps) << 20;
    t.peakStep = size_t(steps - 1);
    t.activationPeakBytes = t.peakBytes;
    return t;
}

QValueAxis *axis(const MemoryChartView &v, Qt::Orientation o)
{
    for (QAbstractAxis *a : v.chart()->axes(o))
        if (auto *va = qobject_cast<QValueAxis *>(a))
            return va;
    return nullptr;
}

/// The tick labels a value axis prints, worked out as QValueAxis places them: tickCount evenly
/// spaced ticks (fixed), or every tickInterval from tickAnchor (dynamic); "%d" truncates.
QStringList tickLabels(const QValueAxis &a)
{
    std::vector<double> ticks;
    if (a.tickType() == QValueAxis::TicksFixed) {
        for (int i = 0; i < a.tickCount(); ++i)
            ticks.push_back(a.min() + (a.max() - a.min()) * i / std::max(1, a.tickCount() - 1));
    } else {
        const double step = a.tickInterval();
        double t = a.tickAnchor() + std::ceil((a.min() - a.tickAnchor()) / step) * step;
        for (; t <= a.max() + 1e-9; t += step)
            ticks.push_back(t);
    }
    QStringList out;
    for (double t : ticks)
        out << QString::asprintf(a.labelFormat().toLatin1().constData(), int(t));
    return out;
}

QGraphicsSimpleTextItem *placeholderItem(const MemoryChartView &v)
{
    for (QGraphicsItem *child : v.chart()->childItems())
        if (auto *text = dynamic_cast<QGraphicsSimpleTextItem *>(child); text && text->isVisible())
            return text;
    return nullptr;
}

} // namespace

class TestMemoryChart : public QObject
{
    Q_OBJECT
private slots:
    void tickLabelsHelperMatchesTheOldLook()
    {
        // The helper reproduces what the bug report saw: five fixed ticks over 0..1, "%d".
        QValueAxis a;
        a.setRange(0, 1);
        a.setLabelFormat(QStringLiteral("%d"));
        QCOMPARE(tickLabels(a), QStringList({"0", "0", "0", "0", "1"}));
    }

    void emptyStateHidesAxesAndShowsAHint()
    {
        MemoryChartView v;
        v.resize(700, 320);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QCOMPARE(v.stepCount(), 0);
        QCOMPARE(v.chart()->title(), QStringLiteral("No plan"));
        QValueAxis *x = axis(v, Qt::Horizontal), *y = axis(v, Qt::Vertical);
        QVERIFY(x && y);
        // Hidden axes draw no line, grid, labels or title: no "0 0 0 0 1" and no 0.00..1.00 GiB.
        QVERIFY(!x->isVisible());
        QVERIFY(!y->isVisible());
        QVERIFY(!v.chart()->legend()->isVisible());
        QVERIFY(!v.placeholderText().isEmpty());
        QGraphicsSimpleTextItem *hint = placeholderItem(v);
        QVERIFY(hint);
        QCOMPARE(hint->text(), v.placeholderText());
        // Centred inside the (empty) plot area.
        const QRectF area = v.chart()->plotArea();
        const QRectF box = hint->mapRectToParent(hint->boundingRect());
        QVERIFY2(area.contains(box),
                 qPrintable(QStringLiteral("hint %1,%2 %3x%4 outside the plot area")
                                .arg(box.x())
                                .arg(box.y())
                                .arg(box.width())
                                .arg(box.height())));
        QVERIFY(std::abs(box.center().x() - area.center().x()) < 1.0);
    }

    void planShowsAxesWithDistinctStepLabels_data()
    {
        QTest::addColumn<int>("steps");
        QTest::addColumn<double>("interval"); // expected step-axis tick spacing
        QTest::newRow("1 step") << 1 << 1.0;
        QTest::newRow("3 steps") << 3 << 1.0;
        QTest::newRow("7 steps") << 7 << 2.0;
        QTest::newRow("1000 steps") << 1000 << 200.0;
        QTest::newRow("1234 steps") << 1234 << 500.0;
    }
    void planShowsAxesWithDistinctStepLabels()
    {
        QFETCH(int, steps);
        QFETCH(double, interval);
        MemoryChartView v;
        v.resize(700, 320);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        const core::sim::Timeline t = rampTimeline(steps);
        v.setTimelines(t, nullptr, 0, QStringLiteral("ramp"));
        QCOMPARE(v.stepCount(), steps);
        QValueAxis *x = axis(v, Qt::Horizontal), *y = axis(v, Qt::Vertical);
        QVERIFY(x->isVisible());
        QVERIFY(y->isVisible());
        QVERIFY(v.chart()->legend()->isVisible());
        QVERIFY(v.placeholderText().isEmpty());
        QVERIFY(!placeholderItem(v));
        QCOMPARE(x->tickInterval(), interval);
        const QStringList labels = tickLabels(*x);
        QVERIFY(labels.size() >= 2);
        QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
        QCOMPARE(labels.front(), QStringLiteral("0"));

        // Back to no plan: the empty state again.
        v.clearTimelines();
        QVERIFY(!x->isVisible());
        QVERIFY(!y->isVisible());
        QVERIFY(!v.placeholderText().isEmpty());
        QVERIFY(placeholderItem(v));
    }

    // One unit system: the memory axis takes the unit the tables print the peak in, KiB for a
    // small plan (it was "MiB" with values of 0.001), MiB and GiB above.
    void memoryAxisUnitFollowsMagnitude()
    {
        MemoryChartView v;
        core::sim::Timeline small = rampTimeline(4);
        for (auto &p : small.points) {
            p.byCategory[size_t(core::schedule::MemCategory::StoredActivations)] /= 1024;
            p.bytesInUse /= 1024;
            p.peakDuringStep /= 1024;
        }
        small.peakBytes /= 1024;
        small.activationPeakBytes /= 1024;
        v.setTimelines(small, nullptr, 0, QStringLiteral("tiny"));
        QCOMPARE(v.memoryUnit(), QStringLiteral("KiB"));
        QVERIFY(QString::fromStdString(core::formatBytes(small.peakBytes)).endsWith("KiB"));
        v.setTimelines(rampTimeline(8), nullptr, 0, QStringLiteral("ramp"));
        QCOMPARE(v.memoryUnit(), QStringLiteral("MiB"));
    }

    // Walkthrough: with overlaid plans the legend ran out of room; categories a plan never uses
    // leave it (and come back for a plan that uses them).
    void unusedCategoriesLeaveTheLegend()
    {
        MemoryChartView v;
        v.resize(900, 400);
        v.show(); // a marker is visible only on a shown chart
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setTimelines(rampTimeline(5), nullptr, 0, QStringLiteral("ramp"));
        QTest::qWait(50); // the legend lays its markers out on the next event loop pass
        auto visibleNames = [&] {
            QStringList names;
            for (QLegendMarker *m : v.chart()->legend()->markers())
                if (m->isVisible())
                    names << m->label();
            return names;
        };
        QStringList names = visibleNames();
        QVERIFY2(names.contains(QStringLiteral("stored_activations")), qPrintable(names.join(",")));
        QVERIFY2(!names.contains(QStringLiteral("offload_in_flight")), qPrintable(names.join(",")));
        QVERIFY(!names.contains(QStringLiteral("weights")));
        core::sim::Timeline withWeights = rampTimeline(5);
        for (auto &p : withWeights.points)
            p.byCategory[size_t(core::schedule::MemCategory::Weights)] = 1 << 20;
        v.setTimelines(withWeights, nullptr, 0, QStringLiteral("ramp"));
        QTest::qWait(50);
        names = visibleNames();
        QVERIFY(names.contains(QStringLiteral("weights")));
        QVERIFY(names.contains(QStringLiteral("stored_activations")));
        QVERIFY(!names.contains(QStringLiteral("optimizer_state")));
        // An optimizer's state and mixed precision's master weights are areas of their own.
        for (auto &p : withWeights.points) {
            p.byCategory[size_t(core::schedule::MemCategory::OptimizerState)] = 2 << 20;
            p.byCategory[size_t(core::schedule::MemCategory::MasterWeights)] = 1 << 20;
        }
        v.setTimelines(withWeights, nullptr, 0, QStringLiteral("adam"));
        QTest::qWait(50);
        names = visibleNames();
        QVERIFY2(names.contains(QStringLiteral("optimizer_state")), qPrintable(names.join(",")));
        QVERIFY2(names.contains(QStringLiteral("master_weights")), qPrintable(names.join(",")));
        QVERIFY(memCategoryColor(int(core::schedule::MemCategory::OptimizerState)) !=
                memCategoryColor(int(core::schedule::MemCategory::Weights)));
        // Autocast's weight copies too: what autocast costs, beside the activations.
        for (auto &p : withWeights.points)
            p.byCategory[size_t(core::schedule::MemCategory::WeightCasts)] = 1 << 20;
        v.setTimelines(withWeights, nullptr, 0, QStringLiteral("bf16-mixed"));
        QTest::qWait(50);
        names = visibleNames();
        QVERIFY2(names.contains(QStringLiteral("weight_casts")), qPrintable(names.join(",")));
        QVERIFY(memCategoryColor(int(core::schedule::MemCategory::WeightCasts)) !=
                memCategoryColor(int(core::schedule::MemCategory::StoredActivations)));
    }

    // Walkthrough: the memory axis ticked at tenths of 1.08 x the peak ("908.8"); its ticks are
    // round numbers now, and the peak stays inside the range.
    void memoryAxisTicksAreRound_data()
    {
        QTest::addColumn<int>("steps");
        for (int steps : {3, 7, 13, 841, 1000})
            QTest::newRow(qPrintable(QString::number(steps))) << steps;
    }

    void memoryAxisTicksAreRound()
    {
        QFETCH(int, steps);
        MemoryChartView v;
        v.setTimelines(rampTimeline(steps), nullptr, 0, QStringLiteral("ramp"));
        QValueAxis *y = axis(v, Qt::Vertical);
        QVERIFY(y);
        QCOMPARE(y->min(), 0.0);
        QVERIFY(y->max() >= double(steps)); // the peak, in MiB
        QVERIFY(y->tickCount() >= 2);
        const double step = (y->max() - y->min()) / (y->tickCount() - 1);
        const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
        const double mantissa = step / magnitude;
        bool round = false;
        for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
            round = round || std::abs(mantissa - m) < 1e-9;
        QVERIFY2(round,
                 qPrintable(QStringLiteral("max %1, %2 ticks").arg(y->max()).arg(y->tickCount())));
    }
};

QTEST_MAIN(TestMemoryChart)
#include "tst_memory_chart.moc"
