// Compare all, as the planner's button runs it: the interactive solvers first, then the MILP / LP
// and offload searches capped at Planner::kCompareAllSeconds each (rows say when one stopped at
// the limit). Times, per model, when each solver's row arrives and when the last one is in, over
// `runs` fresh planners (no cache between runs), and prints the median. Target: under 10 s on
// resnet50 at batch 2 and the PaddleOCR files (issue 37, item 20); the table is in
// tests/bench/compare_all.md.
//   bench_planner_compare_all [RUNS] [MODEL.onnx BATCH [NAME=DxDxD]...]...
// Without model arguments: resnet50 (corpus) at batch 2 and the two PaddleOCR files of
// tests/data/realworld at the sizes scripts/realworld.py gives them.
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace remat;
using namespace remat::ui;

namespace {

struct Model
{
    std::string path;
    int64_t batch = 1;
    core::onnx::ImportOptions import;
};

std::vector<int64_t> parseShape(const std::string &text)
{
    std::vector<int64_t> dims;
    size_t at = 0;
    while (at < text.size()) {
        const size_t x = std::min(text.find('x', at), text.size());
        dims.push_back(std::atoll(text.substr(at, x - at).c_str()));
        at = x + 1;
    }
    return dims;
}

struct Row
{
    double arrivedSeconds = 0;
    double solveSeconds = 0;
    std::string status;
};

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
    std::vector<Model> models;
    for (int i = 2; i + 1 < argc;) {
        Model m;
        m.path = argv[i];
        m.batch = std::atoll(argv[i + 1]);
        i += 2;
        while (i < argc && std::string(argv[i]).find('=') != std::string::npos) {
            const std::string a = argv[i++];
            const size_t eq = a.find('=');
            m.import.inputShapes[a.substr(0, eq)] = parseShape(a.substr(eq + 1));
        }
        models.push_back(std::move(m));
    }
    if (models.empty()) {
        const std::string data = std::string(REMAT_SOURCE_DIR) + "/tests/data/realworld/";
        models.push_back(
            {std::string(REMAT_SHARED_DIR) + "/corpus/graph_only/resnet50.onnx", 2, {}});
        Model det{data + "ppocrv4_det.onnx", 1, {}};
        det.import.inputShapes["x"] = {1, 3, 640, 640};
        models.push_back(det);
        Model cls{data + "ppocr_mobile_v2_cls.onnx", 1, {}};
        cls.import.inputShapes["x"] = {1, 3, 48, 192};
        models.push_back(cls);
    }
    std::printf("Compare all, %d runs per model, slow solvers capped at %.0f s\n", runs,
                Planner::kCompareAllSeconds);
    for (const Model &m : models) {
        const QString name = QFileInfo(QString::fromStdString(m.path)).completeBaseName();
        auto problem = loadPlannerProblem(m.path, m.batch, {}, m.import);
        if (!problem) {
            std::printf("%s: %s\n", qPrintable(name), problem.status().toString().c_str());
            continue;
        }
        std::vector<double> totals;
        std::map<std::string, std::vector<Row>> rows;
        for (int run = 0; run < runs; ++run) {
            Planner planner; // fresh: no plan cache from the previous run
            planner.setSolvers(Planner::registrySolvers());
            planner.setProblem(*problem);
            planner.waitForIdle();
            size_t seen = 0;
            QElapsedTimer clock;
            auto record = [&] {
                const auto &plans = planner.document()->plans();
                for (; seen < plans.size(); ++seen)
                    rows[plans[seen].solver].push_back(
                        {double(clock.nsecsElapsed()) * 1e-9, plans[seen].solveSeconds,
                         core::solvers::solveStatusName(plans[seen].status)});
            };
            QObject::connect(planner.document(), &PlannerDocument::changed, &planner, record);
            // Rows as the window gets them: the event loop runs (Planner::waitForIdle would
            // block on the slowest solve and deliver every row at its end).
            const int expected = int(planner.usableSolverIds().size());
            clock.start();
            planner.compareAll();
            while (int(planner.document()->plans().size()) < expected && clock.elapsed() < 60000)
                QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
            record();
            const double lastRow = double(clock.nsecsElapsed()) * 1e-9;
            planner.waitForIdle();
            record();
            totals.push_back(lastRow);
        }
        std::sort(totals.begin(), totals.end());
        std::printf(
            "\n%s (batch %lld, %zu ops): Compare all median %.2f s (runs:", qPrintable(name),
            (long long)m.batch, (*problem)->training->opCount(), totals[totals.size() / 2]);
        for (double t : totals)
            std::printf(" %.2f", t);
        std::printf(")\n%-16s %12s %12s  %s\n", "solver", "row at (s)", "solve (s)", "status");
        std::vector<std::pair<double, std::string>> order;
        for (auto &[solver, r] : rows) {
            std::sort(r.begin(), r.end(), [](const Row &a, const Row &b) {
                return a.arrivedSeconds < b.arrivedSeconds;
            });
            order.push_back({r[r.size() / 2].arrivedSeconds, solver});
        }
        std::sort(order.begin(), order.end());
        for (const auto &[at, solver] : order) {
            const auto &r = rows[solver];
            std::vector<double> solve;
            for (const Row &x : r)
                solve.push_back(x.solveSeconds);
            std::sort(solve.begin(), solve.end());
            std::printf("%-16s %12.2f %12.2f  %s\n", solver.c_str(), at, solve[solve.size() / 2],
                        r[r.size() / 2].status.c_str());
        }
        std::fflush(stdout);
    }
    return 0;
}
