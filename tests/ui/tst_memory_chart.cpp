// The planner's memory chart, offscreen: with no plan it shows a hint instead of axes over a
// meaningless 0..1 range (the step axis used to read "0 0 0 0 1"); with a plan the axes come back
// and the step axis never prints the same step twice, however few steps there are.
#include "ui/planner/memory_chart_view.h"

#include "core/schedule/store_all.h"
#include "core/sim/copy_stalls.h"
#include "core/sim/simulator.h"
#include "core/util/bytes.h"
#include "sim/hand_graphs.h"

#include <QChart>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QSet>
#include <QTest>
#include <QValueAxis>

#include <cmath>
#include <functional>

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

// The empty state's hint item (the chart's title is a text item too).
QGraphicsTextItem *placeholderItem(const MemoryChartView &v)
{
    const QString hint = QStringLiteral("Solve a plan to see its memory over the schedule");
    for (QGraphicsItem *child : v.chart()->childItems())
        if (auto *text = dynamic_cast<QGraphicsTextItem *>(child);
            text && text->isVisible() && text->toPlainText() == hint)
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
        QGraphicsTextItem *hint = placeholderItem(v);
        QVERIFY(hint);
        QCOMPARE(hint->toPlainText(), v.placeholderText());
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

    // Walkthrough (issue 37, item 12): "recomputed_activations" was drawn over
    // "activation_grads" in the legend, on screen and in the exported PNG. With every category
    // in use, store-all, the budget and copy stalls (thirteen entries), in a dock as short as a
    // 1366x768 screen leaves: no two visible legend labels overlap, every label lies inside the
    // chart, and so in the PNG (the export renders the same scene, at 2x).
    void legendLabelsDoNotOverlap_data()
    {
        QTest::addColumn<int>("height");
        QTest::newRow("tall") << 480;
        QTest::newRow("dock at 1366x768") << 260;
        QTest::newRow("dock at 1080x700") << 200;
        QTest::newRow("very short") << 140;
    }
    void legendLabelsDoNotOverlap()
    {
        QFETCH(int, height);
        core::sim::Timeline all = rampTimeline(40);
        for (size_t i = 0; i < all.points.size(); ++i) {
            for (size_t k = 0; k < core::schedule::kMemCategoryCount; ++k)
                all.points[i].byCategory[k] = int64_t(k + 1) << 20;
            all.points[i].peakDuringStep = all.points[i].bytesInUse = int64_t(60) << 20;
        }
        std::vector<double> stalls(all.points.size(), 0.0);
        for (size_t i = 3; i < stalls.size(); i += 7)
            stalls[i] = 1e-3;
        all.peakBytes = int64_t(60) << 20;
        MemoryChartView v;
        v.resize(720, height);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setTimelines(all, &all, int64_t(50) << 20, QStringLiteral("every category"), {}, &stalls);
        QTest::qWait(100);
        QCoreApplication::processEvents();
        QList<QPair<QString, QRectF>> labels;
        std::function<void(QGraphicsItem *)> walk = [&](QGraphicsItem *item) {
            for (QGraphicsItem *child : item->childItems()) {
                if (!child->isVisible())
                    continue;
                if (auto *text = dynamic_cast<QGraphicsTextItem *>(child))
                    labels << qMakePair(text->toPlainText(), text->sceneBoundingRect());
                else if (auto *simple = dynamic_cast<QGraphicsSimpleTextItem *>(child))
                    labels << qMakePair(simple->text(), simple->sceneBoundingRect());
                walk(child);
            }
        };
        walk(v.chart()->legend());
        if (qEnvironmentVariableIsSet("REMAT_LEGEND_PNG"))
            v.grab().save(QStringLiteral("%1/legend-%2.png")
                              .arg(qEnvironmentVariable("REMAT_LEGEND_PNG"))
                              .arg(height));
        QVERIFY2(labels.size() >= 10, qPrintable(QString::number(labels.size())));
        const QRectF chartRect = v.chart()->sceneBoundingRect();
        const QRectF legendRect = v.chart()->legend()->sceneBoundingRect();
        int shown = 0;
        for (int a = 0; a < labels.size(); ++a) {
            // A label scrolled out of the legend (Qt clips it) is not drawn: not an overlap.
            if (!legendRect.intersects(labels[a].second))
                continue;
            ++shown;
            QVERIFY2(chartRect.contains(labels[a].second),
                     qPrintable(QStringLiteral("%1 outside the chart").arg(labels[a].first)));
            for (int b = a + 1; b < labels.size(); ++b) {
                if (!legendRect.intersects(labels[b].second))
                    continue;
                const QRectF overlap = labels[a].second.intersected(labels[b].second);
                QVERIFY2(overlap.height() < 1.0 || overlap.width() < 1.0,
                         qPrintable(QStringLiteral("\"%1\" %2 overlaps \"%3\" %4")
                                        .arg(labels[a].first)
                                        .arg(labels[a].second.top())
                                        .arg(labels[b].first)
                                        .arg(labels[b].second.top())));
            }
        }
        // Every entry is there to read (not scrolled away) in a dock of a 1366x768 screen or
        // taller: ten categories, store-all, the budget and the stalls (the peak is in the
        // title). Shorter, the legend scrolls (Qt clips what does not fit; nothing overlaps).
        QVERIFY2(height < 260 || shown >= 13,
                 qPrintable(QStringLiteral("%1 of %2 labels shown at height %3")
                                .arg(shown)
                                .arg(labels.size())
                                .arg(height)));
    }

    // Issue 36: an offload plan's copy-lane stalls (the compute waiting for a prefetch, or for an
    // offload before its Free) are marked in the chart, from the simulator's points; a store-all
    // plan has none and no legend entry for them.
    void offloadStallsAreMarked()
    {
        const core::training::TrainingGraph g = remat::tests::twoLayerGraph();
        const core::cost::Costs costs = remat::tests::twoLayerCosts();
        using core::OpId;
        using core::TensorId;
        core::schedule::Schedule s;
        s.compute(OpId(0));
        s.compute(OpId(1));
        s.offload(TensorId(2));
        s.compute(OpId(2));
        s.free(TensorId(2)); // waits for the offload's copy
        s.free(TensorId(3));
        s.free(TensorId(4));
        s.prefetch(TensorId(2));
        s.compute(OpId(3)); // waits for the prefetch
        s.free(TensorId(2));
        s.free(TensorId(5));
        s.compute(OpId(4));
        s.free(TensorId(6));
        auto offload = core::sim::simulate(s, g, costs);
        QVERIFY2(offload.hasValue(), offload.status().message().c_str());
        auto storeAll = core::sim::simulate(core::schedule::storeAllSchedule(g), g, costs);
        QVERIFY(storeAll.hasValue());

        MemoryChartView v;
        v.resize(900, 400);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        auto stallMarkerShown = [&] {
            for (QLegendMarker *m : v.chart()->legend()->markers())
                if (m->isVisible() && m->label().startsWith(QStringLiteral("copy stalls")))
                    return true;
            return false;
        };
        auto stalls = core::sim::copyStalls(s, g, costs);
        QVERIFY(stalls.hasValue());
        v.setTimelines(*offload, &*storeAll, 0, QStringLiteral("offload"), {}, &stalls->perStep);
        QTest::qWait(50);
        QCOMPARE(v.stallMarkerCount(), 2);
        QVERIFY2(v.stallLabel() == QStringLiteral("copy stalls 2166.7 ms"),
                 qPrintable(v.stallLabel()));
        QVERIFY(stallMarkerShown());
        auto none = core::sim::copyStalls(core::schedule::storeAllSchedule(g), g, costs);
        QVERIFY(none.hasValue());
        v.setTimelines(*storeAll, &*storeAll, 0, QStringLiteral("store-all"), {}, &none->perStep);
        QTest::qWait(50);
        QCOMPARE(v.stallMarkerCount(), 0);
        QVERIFY(!stallMarkerShown());
    }
};

QTEST_MAIN(TestMemoryChart)
#include "tst_memory_chart.moc"
