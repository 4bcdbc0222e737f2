// Budget slider to memory chart on a large schedule (tests/bench/chart_speed.md): what one move of
// the budget slider costs the GUI thread on the 8B decoder, and where that time goes. A move is
// timed from the slider to the chart repainted (the debounce, the solve on the worker, the plan
// analysis, the node colours, the Schedule tab, the chart); then each GUI-thread part is timed
// alone on the last plan: the plan analysis, the node colours, the Schedule tab's matrices, the
// copy-stall simulation, the chart's curves (the points built from the timeline), the chart's
// setTimelines (curves + QtCharts replace), the Run dock's predicted curves ("run": its
// setPredicted), one paint of the chart and one of the window. Medians.
// "peak": whether the drawn curve's maximum is the plan's simulated peak exactly (thinning must
// keep it).
//   bench_planner_chart MODEL.onnx BATCH [MODEL.onnx BATCH ...]
//   e.g. bench_planner_chart /tmp/llama-3-8b-s4096.onnx 1 ../shared/corpus/graph_only/resnet50.onnx 32
// (the 8B decoder: `remat make-decoder --config resources/configs/llama-3-8b.json --seq 4096`).
// The solver is chen-sqrtn (REMAT_BENCH_SOLVER to change it): fast enough to run live on 8B.
// The window is 1366x768, the walkthrough's screen (REMAT_BENCH_WINDOW=WxH to change it).
#include "ui/main_window.h"
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/memory_curves.h"
#include "ui/planner/planner.h"
#include "ui/planner/teaching_view.h"

#include "core/sim/copy_stalls.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

using namespace remat;
using namespace remat::ui;

namespace {

double cpuMs(clockid_t clock)
{
    timespec t{};
    clock_gettime(clock, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Median wall milliseconds of `f` over `reps` calls.
double timeMs(int reps, const std::function<void()> &f)
{
    std::vector<double> ms;
    QElapsedTimer clock;
    for (int i = 0; i < reps; ++i) {
        clock.restart();
        f();
        ms.push_back(double(clock.nsecsElapsed()) / 1e6);
    }
    return median(ms);
}

struct Row
{
    std::string model;
    size_t steps = 0;
    int drawn = 0;
    double moveMs = 0, guiMs = 0, solveMs = 0;
    double analysisMs = 0, coloursMs = 0, scheduleTabMs = 0, stallsMs = 0, curvesMs = 0,
           chartMs = 0, runDockMs = 0, paintMs = 0, windowPaintMs = 0;
    int chartWidth = 0;
    bool peakDrawn = false;
};

/// Runs the event loop until `done` or `timeoutMs`; false on a timeout.
bool waitFor(const std::function<bool()> &done, int timeoutMs = 300000)
{
    QElapsedTimer clock;
    clock.start();
    while (!done()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(2);
    }
    return true;
}

bool benchModel(const QString &model, int64_t batch, const QString &solver, const QSize &window,
                Row &row)
{
    // The whole window, as the user has it: the graph view recoloured, the docks updated.
    MainWindow w;
    w.resize(window);
    w.show();
    bool shown = false, failed = false;
    QObject::connect(&w, &MainWindow::modelShown, [&] { shown = true; });
    QObject::connect(&w, &MainWindow::errorOccurred, [&](const QString &message) {
        std::fprintf(stderr, "%s: %s\n", qPrintable(model), qPrintable(message));
        failed = true;
    });
    w.openModel(model);
    Planner &planner = *w.planner();
    if (!waitFor([&] { return shown || failed; }) || failed ||
        !waitFor([&] { return planner.problem() && !planner.isLoading(); }))
        return false;
    if (planner.problem()->batch != batch) {
        planner.setBatch(batch);
        if (!waitFor([&] {
                return planner.problem() && planner.problem()->batch == batch &&
                       !planner.isLoading();
            }))
            return false;
    }
    planner.waitForIdle();
    const std::shared_ptr<const PlannerProblem> shared = planner.problem();
    const auto &sa = shared->storeAll.timeline;
    const int64_t floor = sa.peakBytes - sa.activationPeakBytes;
    row.model = model.mid(model.lastIndexOf(QLatin1Char('/')) + 1).toStdString() + " b" +
                std::to_string(batch);
    planner.solverPanel()->setLiveResolve(true);
    planner.raiseView(QStringLiteral("memory"));
    MemoryChartView *chart = planner.memoryChart();
    if (!planner.usableSolverIds().contains(solver)) {
        std::fprintf(stderr, "%s: solver %s is not usable here\n", qPrintable(model),
                     qPrintable(solver));
        return false;
    }
    planner.document()->setBudgetBytes(floor + (sa.peakBytes - floor) * 8 / 10);
    planner.solve(solver);
    planner.waitForIdle();
    if (!planner.document()->currentPlan()) {
        std::fprintf(stderr, "%s: no plan\n", qPrintable(model));
        return false;
    }
    std::vector<double> moveMs, guiMs, solveMs;
    QElapsedTimer clock;
    for (int i = 0; i < 12; ++i) {
        // Distinct budgets between 45% and 95% of the activation range, never cached.
        const int64_t target = floor + (sa.peakBytes - floor) * (45 + (i * 37) % 50) / 100 + i;
        const int64_t before = planner.document()->budgetBytes();
        QEventLoop loop;
        int64_t want = -1;
        auto conn = QObject::connect(&planner, &Planner::planUpdated, &loop, [&] {
            const auto *p = planner.document()->currentPlan();
            if (p && p->budgetBytes == want)
                loop.quit();
        });
        QTimer::singleShot(60000, &loop, &QEventLoop::quit);
        clock.restart();
        const double gui0 = cpuMs(CLOCK_THREAD_CPUTIME_ID);
        planner.solverPanel()->dragBudgetTo(target);
        want = planner.document()->budgetBytes();
        if (want == before) { // the slider did not move: nothing to time
            QObject::disconnect(conn);
            continue;
        }
        if (planner.document()->currentPlan()->budgetBytes != want)
            loop.exec();
        w.repaint(); // what the user waits for: the chart drawn, the graph recoloured
        moveMs.push_back(double(clock.nsecsElapsed()) / 1e6);
        guiMs.push_back(cpuMs(CLOCK_THREAD_CPUTIME_ID) - gui0);
        solveMs.push_back(planner.document()->currentPlan()->solveSeconds * 1e3);
        QObject::disconnect(conn);
        planner.waitForIdle();
    }
    const core::solvers::Plan plan = *planner.document()->currentPlan();
    row.steps = plan.schedule.steps.size();
    row.moveMs = median(moveMs);
    row.guiMs = median(guiMs);
    row.solveMs = median(solveMs);

    // Each GUI-thread part alone, on the last plan.
    const int reps = 9;
    PlanAnalysis analysis;
    row.analysisMs =
        timeMs(reps, [&] { analysis = PlanAnalysis::analyse(shared->training, plan); });
    row.coloursMs = timeMs(reps, [&] { planner.nodeColors()->setAnalysis(analysis); });
    row.scheduleTabMs = timeMs(reps, [&] { planner.teachingView()->setAnalysis(analysis); });
    row.stallsMs = timeMs(reps, [&] {
        auto stalls = core::sim::copyStalls(plan.schedule, *shared->training, *shared->costs);
        (void)stalls;
    });
    row.curvesMs = timeMs(reps, [&] {
        const MemoryCurves curves = stackedMemoryCurves(plan.timeline, chart->width(), 1 << 30);
        const QList<QPointF> storeAll =
            totalMemoryCurve(shared->storeAll.timeline, chart->width(), 1 << 30);
        (void)curves;
        (void)storeAll;
    });
    row.chartMs = timeMs(reps, [&] {
        chart->setTimelines(plan.timeline, &shared->storeAll.timeline, plan.budgetBytes,
                            QString::fromStdString(plan.solver));
    });
    row.runDockMs = timeMs(reps, [&] { planner.runPanel()->setPredicted(plan.timeline); });
    row.paintMs = timeMs(reps, [&] { chart->viewport()->repaint(); });
    row.windowPaintMs = timeMs(reps, [&] { w.repaint(); });
    row.chartWidth = chart->width();
    row.drawn = chart->drawnPointCount();
    // The peak as drawn: the top of the stacked areas reaches the plan's simulated peak.
    double top = 0;
    for (const QPointF &p : chart->drawnTotal())
        top = std::max(top, p.y());
    const QString unit = chart->memoryUnit();
    const double bytes = unit == QLatin1String("GiB")   ? double(1 << 30)
                         : unit == QLatin1String("MiB") ? double(1 << 20)
                                                        : 1024.0;
    row.peakDrawn = top == double(plan.timeline.peakBytes) / bytes;
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 3 || argc % 2 == 0) {
        std::fprintf(stderr, "usage: %s MODEL.onnx BATCH [MODEL.onnx BATCH ...]\n", argv[0]);
        return 2;
    }
    const QString solver = qEnvironmentVariableIsSet("REMAT_BENCH_SOLVER")
                               ? qEnvironmentVariable("REMAT_BENCH_SOLVER")
                               : QStringLiteral("chen-sqrtn");
    QSize window(1366, 768);
    if (qEnvironmentVariableIsSet("REMAT_BENCH_WINDOW")) {
        const QStringList wh = qEnvironmentVariable("REMAT_BENCH_WINDOW").split(QLatin1Char('x'));
        if (wh.size() == 2)
            window = QSize(wh[0].toInt(), wh[1].toInt());
    }
    std::printf("solver %s, window %dx%d; ms, medians (move: slider to window repainted, wall; "
                "gui: GUI-thread CPU of a move; the rest: each part alone)\n",
                qPrintable(solver), window.width(), window.height());
    std::printf("%-28s %6s %6s %6s %7s %7s %6s %8s %7s %8s %6s %6s %6s %6s %6s %6s %5s\n", "model",
                "steps", "chart", "drawn", "move", "gui", "solve", "analysis", "colours",
                "schedule", "stalls", "curves", "chart", "run", "paint", "window", "peak");
    for (int i = 1; i + 1 < argc; i += 2) {
        Row r;
        if (!benchModel(QString::fromLocal8Bit(argv[i]), std::atoll(argv[i + 1]), solver, window,
                        r))
            continue;
        std::printf("%-28s %6zu %6d %6d %7.1f %7.1f %6.1f %8.1f %7.1f %8.1f %6.1f %6.1f %6.1f "
                    "%6.1f %6.1f %6.1f %5s\n",
                    r.model.c_str(), r.steps, r.chartWidth, r.drawn, r.moveMs, r.guiMs, r.solveMs,
                    r.analysisMs, r.coloursMs, r.scheduleTabMs, r.stallsMs, r.curvesMs, r.chartMs,
                    r.runDockMs, r.paintMs, r.windowPaintMs, r.peakDrawn ? "exact" : "LOST");
        std::fflush(stdout);
    }
    return 0;
}
