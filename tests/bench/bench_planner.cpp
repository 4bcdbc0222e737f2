// Budget slider to new chart: how long after the user moves the budget slider the memory chart
// shows the re-solved plan, for the fast (DP and checkpoint-set) solvers on resnet50 at batch 32.
// Includes the debounce, the solve on the worker, the re-simulation for the chart, the analysis
// (colours, R/S matrices) and the chart's replace(). Target: under 100 ms. Beside the wall
// clock (which a loaded machine stretches), the CPU the GUI thread spent per move ("gui ms":
// what keeps the slider from moving) and the whole process's ("cpu ms", the solve included).
//   bench_planner [BATCH [SESSION.rematproj|- [MODEL.onnx [SOLVER,SOLVER...]]]]
// The Schedule tab (R/S matrices) is on screen unless REMAT_BENCH_NO_SCHEDULE is set.
// (saves a two-plan session when given one; another model and solvers: the 8B decoder of
// `remat make-decoder --config resources/configs/llama-3-8b.json --seq 4096`, tests/bench/llm_8b.md)
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/planner.h"
#include "ui/planner/teaching_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QStringList>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <ctime>
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
} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const std::string model =
        argc > 3 ? std::string(argv[3])
                 : std::string(REMAT_SHARED_DIR) + "/corpus/graph_only/resnet50.onnx";
    const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
    const bool saveSession = argc > 2 && std::string(argv[2]) != "-";
    QElapsedTimer clock;
    clock.start();
    auto problem = loadPlannerProblem(model, batch, {});
    if (!problem) {
        std::fprintf(stderr, "%s\n", problem.status().toString().c_str());
        return 1;
    }
    std::printf("%s batch %lld: %zu ops, %zu tensors, store-all peak %.2f GiB (loaded in %.1f s)\n",
                model.substr(model.find_last_of('/') + 1).c_str(), (long long)batch,
                (*problem)->training->opCount(), (*problem)->training->tensorCount(),
                double((*problem)->storeAll.timeline.peakBytes) / double(1 << 30),
                clock.elapsed() / 1e3);
    const std::shared_ptr<const PlannerProblem> shared = *problem;
    const auto &sa = shared->storeAll.timeline;
    const int64_t floor = sa.peakBytes - sa.activationPeakBytes;

    Planner planner;
    planner.setSolvers(Planner::registrySolvers());
    planner.setProblem(shared);
    planner.solverPanel()->setLiveResolve(true);
    planner.memoryChart()->resize(1200, 500);
    planner.memoryChart()->window()->resize(1200, 500); // the widget is on the planner's shelf
    planner.memoryChart()->window()->show();
    // The Schedule tab as a 1366x768 window's bottom dock shows it (two thirds of the width),
    // on top; REMAT_BENCH_NO_SCHEDULE=1 hides it (what the matrices cost is the difference).
    planner.teachingView()->resize(880, 300);
    planner.teachingView()->setVisible(!qEnvironmentVariableIsSet("REMAT_BENCH_NO_SCHEDULE"));

    std::printf("%-14s %8s %10s %10s %10s %12s %8s %10s %10s\n", "solver", "moves", "median ms",
                "p90 ms", "max ms", "solve ms", "steps", "gui ms", "cpu ms");
    QStringList ids = {"chen-sqrtn", "chen-greedy", "hong-dp",   "hong-linear",
                       "revolve",    "rotor",       "feng-huang"};
    if (argc > 4)
        ids = QString::fromLocal8Bit(argv[4]).split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString &idText : ids) {
        const QByteArray idBytes = idText.toLatin1();
        const char *id = idBytes.constData();
        if (!planner.usableSolverIds().contains(idText))
            continue;
        planner.document()->clearPlans();
        planner.document()->setBudgetBytes(floor + (sa.peakBytes - floor) * 8 / 10);
        planner.solve(QString::fromLatin1(id));
        planner.waitForIdle();
        if (!planner.document()->currentPlan())
            continue;
        std::vector<double> ms, solveMs, guiMs, procMs;
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
            QTimer::singleShot(30000, &loop, &QEventLoop::quit);
            clock.restart();
            const double gui0 = cpuMs(CLOCK_THREAD_CPUTIME_ID),
                         proc0 = cpuMs(CLOCK_PROCESS_CPUTIME_ID);
            planner.solverPanel()->dragBudgetTo(target);
            want = planner.document()->budgetBytes();
            if (want == before) { // the slider did not move: nothing to time
                QObject::disconnect(conn);
                continue;
            }
            if (planner.document()->currentPlan()->budgetBytes != want)
                loop.exec();
            QCoreApplication::processEvents(); // the chart's repaint
            ms.push_back(double(clock.nsecsElapsed()) / 1e6);
            guiMs.push_back(cpuMs(CLOCK_THREAD_CPUTIME_ID) - gui0);
            procMs.push_back(cpuMs(CLOCK_PROCESS_CPUTIME_ID) - proc0);
            solveMs.push_back(planner.document()->currentPlan()->solveSeconds * 1e3);
            QObject::disconnect(conn);
            planner.waitForIdle();
        }
        if (ms.empty())
            continue;
        std::sort(ms.begin(), ms.end());
        std::sort(solveMs.begin(), solveMs.end());
        std::sort(guiMs.begin(), guiMs.end());
        std::sort(procMs.begin(), procMs.end());
        std::printf("%-14s %8zu %10.1f %10.1f %10.1f %12.1f %8zu %10.1f %10.1f\n", id, ms.size(),
                    ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back(),
                    solveMs[solveMs.size() / 2],
                    planner.document()->currentPlan()->schedule.steps.size(),
                    guiMs[guiMs.size() / 2], procMs[procMs.size() / 2]);
        std::fflush(stdout);
    }
    // Optionally leave a session behind (for screenshots and demos): two plans at 60% of the range.
    if (saveSession) {
        planner.document()->clearPlans();
        planner.document()->setBudgetBytes(floor + (sa.peakBytes - floor) * 6 / 10);
        planner.solve(QStringLiteral("chen-greedy"));
        planner.solve(QStringLiteral("hong-dp"));
        planner.waitForIdle();
        const core::Status st = planner.saveSession(QString::fromLocal8Bit(argv[2]));
        std::printf("session %s: %s\n", argv[2], st.isOk() ? "saved" : st.message().c_str());
    }
    return 0;
}
