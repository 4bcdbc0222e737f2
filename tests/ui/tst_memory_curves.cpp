// The memory chart's thinning (ui/planner/memory_curves.h): a curve of many steps is drawn as the
// lowest and highest step of each pixel column. The plan's simulated peak must stay the drawn
// curve's maximum, exactly; a small graph's curve is drawn whole, point for point as before; and
// the chart (MemoryChartView) draws what the function returns at its own width.
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/memory_curves.h"
#include "ui/planner/planner_problem.h"

#include "common/test_support.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"
#include "sim/hand_graphs.h"

#include <QFileInfo>
#include <QTest>

#include <algorithm>
#include <random>

using namespace remat;
using namespace remat::ui;
using core::schedule::MemCategory;

namespace {

double maxY(const QList<QPointF> &pts)
{
    double m = -1;
    for (const QPointF &p : pts)
        m = std::max(m, p.y());
    return m;
}

double minY(const QList<QPointF> &pts)
{
    double m = 1e300;
    for (const QPointF &p : pts)
        m = std::min(m, p.y());
    return m;
}

/// `steps` steps of noise around 100 MiB of stored activations over 10 MiB of weights, one spike
/// (the peak, 300 MiB at `spikeAt`) and one dip (20 MiB at `dipAt`), workspace on some steps.
core::sim::Timeline noisyTimeline(int steps, int spikeAt, int dipAt)
{
    std::mt19937 rng(7);
    std::uniform_int_distribution<int64_t> noise(0, 40 << 20);
    core::sim::Timeline t;
    for (int i = 0; i < steps; ++i) {
        core::sim::TimelinePoint p;
        p.byCategory[size_t(MemCategory::Weights)] = 10 << 20;
        int64_t act = (80 << 20) + noise(rng);
        if (i == spikeAt)
            act = 290 << 20;
        if (i == dipAt)
            act = 10 << 20;
        p.byCategory[size_t(MemCategory::StoredActivations)] = act;
        if (i % 7 == 3 && i != dipAt)
            p.byCategory[size_t(MemCategory::Workspace)] = 1 << 20;
        int64_t sum = 0;
        for (int64_t b : p.byCategory)
            sum += b;
        p.bytesInUse = p.peakDuringStep = sum;
        if (sum > t.peakBytes) {
            t.peakBytes = sum;
            t.peakStep = size_t(i);
        }
        t.points.push_back(p);
    }
    return t;
}

} // namespace

class TestMemoryCurves : public QObject
{
    Q_OBJECT
private slots:
    void smallTimelineIsDrawnWhole()
    {
        // The two-layer hand graph's store-all plan (tests/sim): a handful of steps, every one
        // drawn, each category's edges the running sums of the step's bytes, as before thinning.
        const auto g = remat::tests::twoLayerGraph();
        const auto costs = remat::tests::twoLayerCosts();
        auto tl = core::sim::simulate(core::schedule::storeAllSchedule(g), g, costs);
        QVERIFY(tl.hasValue());
        const auto &pts = tl->points;
        QVERIFY(pts.size() > 4);
        const double unit = 1024;
        const MemoryCurves c = stackedMemoryCurves(*tl, 400, unit);
        QCOMPARE(c.steps.size(), pts.size());
        for (size_t k = 0; k < MemoryCurves::kCategories; ++k) {
            if (!c.used[k]) {
                QVERIFY(c.upper[k].isEmpty());
                continue;
            }
            QCOMPARE(c.upper[k].size(), qsizetype(pts.size()));
            for (size_t i = 0; i < pts.size(); ++i) {
                int64_t below = 0;
                for (size_t j = 0; j < k; ++j)
                    below += pts[i].byCategory[j];
                QCOMPARE(c.upper[k][qsizetype(i)].x(), double(i));
                QCOMPARE(c.lower[k][qsizetype(i)].y(), double(below) / unit);
                QCOMPARE(c.upper[k][qsizetype(i)].y(), double(below + pts[i].byCategory[k]) / unit);
            }
        }
        // The top of the stack is the step's total, so its maximum is the simulated peak.
        QCOMPARE(maxY(c.total()), double(tl->peakBytes) / unit);
        const QList<QPointF> total = totalMemoryCurve(*tl, 400, unit);
        QCOMPARE(total.size(), qsizetype(pts.size()));
        for (size_t i = 0; i < pts.size(); ++i)
            QCOMPARE(total[qsizetype(i)], QPointF(double(i), double(pts[i].peakDuringStep) / unit));
        // Up to two steps a column: still whole.
        QCOMPARE(memoryCurveSteps(pts, int((pts.size() + 1) / 2)).size(), pts.size());
    }

    void thinnedCurveKeepsPeakAndValleys()
    {
        // 20,000 steps in 300 columns: at most 600 points, the spike and the dip among them at
        // their exact heights, and each column's own lowest and highest step drawn.
        const int n = 20000, columns = 300;
        const core::sim::Timeline t = noisyTimeline(n, 12345, 777);
        const double unit = double(1 << 20);
        const MemoryCurves c = stackedMemoryCurves(t, columns, unit);
        QVERIFY(c.steps.size() <= size_t(2 * columns));
        QVERIFY(c.steps.size() >= size_t(columns));
        QVERIFY(std::is_sorted(c.steps.begin(), c.steps.end()));
        QCOMPARE(maxY(c.total()), double(t.peakBytes) / unit);
        QCOMPARE(maxY(c.total()), 300.0);
        QCOMPARE(minY(c.total()), 20.0);
        QVERIFY(std::find(c.steps.begin(), c.steps.end(), t.peakStep) != c.steps.end());
        for (int b = 0; b < columns; ++b) {
            const size_t lo = size_t(b) * n / columns, hi = size_t(b + 1) * n / columns;
            int64_t low = INT64_MAX, high = 0;
            for (size_t i = lo; i < hi; ++i) {
                low = std::min(low, t.points[i].peakDuringStep);
                high = std::max(high, t.points[i].peakDuringStep);
            }
            bool sawLow = false, sawHigh = false;
            for (size_t i : c.steps)
                if (i >= lo && i < hi) {
                    sawLow = sawLow || t.points[i].peakDuringStep == low;
                    sawHigh = sawHigh || t.points[i].peakDuringStep == high;
                }
            QVERIFY2(sawLow && sawHigh, qPrintable(QStringLiteral("column %1").arg(b)));
        }
        // A category's edges follow the drawn steps; unused ones stay empty.
        QVERIFY(c.used[size_t(MemCategory::Workspace)]);
        QVERIFY(!c.used[size_t(MemCategory::OffloadInFlight)]);
        QVERIFY(c.upper[size_t(MemCategory::OffloadInFlight)].isEmpty());
        QCOMPARE(c.upper[size_t(MemCategory::Weights)].size(), qsizetype(c.steps.size()));
        QCOMPARE(maxY(totalMemoryCurve(t, columns, unit)), 300.0);
    }

    void onePeakStepShowsInsideItsMarker()
    {
        // Expected: tiny_vit's store-all plan (331 steps, the peak one step wide at step 134)
        // in a 445 px chart: the curve's tip is drawn at the peak's position, inside its marker,
        // not hidden under it. The marker was a filled disc of 10 px centred on the tip, so
        // the drawn top seemed to stop about 5 px under a floating dot (walked in Xvfb).
        auto problem = loadPlannerProblem(
            remat::tests::sourceDir().toStdString() + "/resources/models/tiny_vit.onnx", 2, {});
        QVERIFY2(problem.hasValue(), problem.status().message().c_str());
        const core::sim::Timeline &tl = (**problem).storeAll.timeline;
        QVERIFY(tl.peakStep > 0 && tl.peakStep + 1 < tl.points.size());
        QVERIFY(tl.points[tl.peakStep - 1].peakDuringStep < tl.peakBytes);
        QVERIFY(tl.points[tl.peakStep + 1].peakDuringStep < tl.peakBytes);
        MemoryChartView v;
        v.resize(445, 300);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setTimelines(tl, &tl, 0, QStringLiteral("store-all"));
        const double unit = v.memoryUnit() == QLatin1String("MiB") ? double(1 << 20) : 1024.0;
        const QImage img = v.grab().toImage();
        const QPointF at = v.chart()->mapToPosition(
            QPointF(double(tl.peakStep), double(tl.peakBytes) / unit), v.chart()->series().first());
        // The darkest pixel within a pixel of the peak's position: the curve's line (dark
        // grey), not the marker's red nor the background.
        int darkest = 255;
        for (int dx = -1; dx <= 1; ++dx)
            for (int dy = -1; dy <= 2; ++dy) {
                const QColor c = img.pixelColor(int(at.x()) + dx, int(at.y()) + dy);
                if (!(c.red() > c.green() + 60)) // not the marker's red
                    darkest = std::min(darkest, c.lightness());
            }
        QVERIFY2(darkest < 150, qPrintable(QStringLiteral("at %1,%2 the darkest non-red pixel "
                                                          "has lightness %3")
                                               .arg(at.x())
                                               .arg(at.y())
                                               .arg(darkest)));
    }

    void chartDrawsThePeakOfARealPlan()
    {
        // resnet50's plans (1,400+ steps) in a 300 px chart: thinned, and the drawn total's
        // maximum is the simulated peak of the plan and of store-all, exactly.
        const QString model =
            remat::tests::sharedPath(QStringLiteral("corpus/graph_only/resnet50.onnx"));
        if (!QFileInfo::exists(model))
            QSKIP("../shared/corpus is not here");
        auto problem = loadPlannerProblem(model.toStdString(), 8, {});
        QVERIFY2(problem.hasValue(), problem.status().message().c_str());
        const auto &p = **problem;
        std::unique_ptr<core::solvers::Solver> chen;
        for (auto &s : core::solvers::makeSolvers())
            if (s && s->id() == "chen-sqrtn")
                chen = std::move(s);
        QVERIFY(chen);
        core::solvers::SolveRequest request;
        request.graph = p.training.get();
        request.costs = p.costs.get();
        auto plan = chen->solve(request);
        QVERIFY2(plan.hasValue(), plan.status().message().c_str());
        // Solvers return summary timelines; the planner simulates again for the chart's points.
        auto full = core::sim::simulate(plan->schedule, *p.training, *p.costs);
        QVERIFY2(full.hasValue(), full.status().message().c_str());
        const core::sim::Timeline &tl = *full;
        QVERIFY(tl.points.size() > 1000);
        QVERIFY(tl.peakBytes < p.storeAll.timeline.peakBytes); // it recomputes

        MemoryChartView v;
        v.resize(300, 300);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setTimelines(tl, &p.storeAll.timeline, 0, QStringLiteral("chen-sqrtn"));
        const double unit = v.memoryUnit() == QLatin1String("GiB")   ? double(1 << 30)
                            : v.memoryUnit() == QLatin1String("MiB") ? double(1 << 20)
                                                                     : 1024.0;
        QVERIFY(v.drawnPointCount() <= 2 * v.width());
        QVERIFY(size_t(v.drawnPointCount()) < tl.points.size());
        QCOMPARE(maxY(v.drawnTotal()), double(tl.peakBytes) / unit);
        QCOMPARE(maxY(v.drawnStoreAll()), double(p.storeAll.timeline.peakBytes) / unit);
        // Wider: thinned again for the new width, the peak still exact.
        v.resize(700, 300);
        QCOMPARE(v.drawnPointCount(), int(stackedMemoryCurves(tl, 700, unit).steps.size()));
        QVERIFY(v.drawnPointCount() > 2 * 300);
        QCOMPARE(maxY(v.drawnTotal()), double(tl.peakBytes) / unit);
        // Wide enough for every step: the curve is the timeline, point for point.
        v.resize(int(tl.points.size()), 300);
        QCOMPARE(v.drawnPointCount(), int(tl.points.size()));
        const QList<QPointF> whole = v.drawnTotal();
        for (size_t i = 0; i < tl.points.size(); ++i)
            QCOMPARE(whole[qsizetype(i)].y(), double(tl.points[i].peakDuringStep) / unit);
    }
};

QTEST_MAIN(TestMemoryCurves)
#include "tst_memory_curves.moc"
