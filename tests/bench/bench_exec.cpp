// Step time of the CPU reference backend: every corpus model with weights and resnet18 at batch 2,
// 64x64, under store-all and solver plans (chen-sqrtn, feng-huang at minimum peak, rotor at a tight
// budget), with measured (allocator) and predicted (simulator) peaks side by side.
//   bench_exec [iterations]      (default 3; the median step is printed)
#include "core/cost/roofline.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/exec/npz.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"
#include "core/training/builder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace remat::core;

namespace {

struct Model
{
    std::string name, onnx, feed;
};

void benchModel(const Model &m, int iterations)
{
    auto graph = onnx::importModel(m.onnx);
    if (!graph) {
        std::printf("%-20s  skipped: %s\n", m.name.c_str(), graph.status().toString().c_str());
        return;
    }
    auto tg = training::buildTrainingGraph(*graph);
    if (!tg) {
        std::printf("%-20s  skipped: %s\n", m.name.c_str(), tg.status().toString().c_str());
        return;
    }
    const cost::Costs costs = cost::rooflineCosts(*tg);
    auto backend = exec::makeCpuBackend();
    exec::Executor ex(*backend, *tg, *graph);
    exec::ExecInputs in;
    if (!m.feed.empty())
        if (auto f = exec::readNpz(m.feed))
            in.feed = std::move(*f);
    if (Status s = ex.prepare(in); !s.isOk()) {
        std::printf("%-20s  skipped: %s\n", m.name.c_str(), s.toString().c_str());
        return;
    }
    struct Sched
    {
        std::string name;
        schedule::Schedule schedule;
    };
    std::vector<Sched> schedules = {{"store-all", schedule::storeAllSchedule(*tg)}};
    const solvers::SolverRegistry reg = solvers::makeRegistry();
    int64_t storeAllPeak = 0, minPeak = 0;
    if (auto t = sim::simulate(schedules[0].schedule, *tg, costs, {.recordPoints = false}))
        storeAllPeak = t->peakBytes;
    for (const char *id : {"chen-sqrtn", "feng-huang", "rotor"}) {
        const solvers::Solver *solver = reg.find(id);
        if (!solver)
            continue;
        solvers::SolveRequest req;
        req.graph = &*tg;
        req.costs = &costs;
        req.timeLimitSeconds = 30;
        req.objective =
            std::string(id) == "rotor" ? solvers::Objective::MinTime : solvers::Objective::MinPeak;
        req.budgetBytes = minPeak + (storeAllPeak - minPeak) / 10;
        auto plan = solver->solve(req);
        if (!plan || plan->status == solvers::SolveStatus::Infeasible)
            continue;
        if (std::string(id) == "feng-huang")
            minPeak = plan->timeline.peakBytes;
        schedules.push_back({id, plan->schedule});
    }
    for (const Sched &s : schedules) {
        auto predicted = sim::simulate(s.schedule, *tg, costs, {.recordPoints = false});
        std::vector<double> times;
        int64_t measured = 0;
        size_t recomputes = 0;
        bool ok = predicted.hasValue();
        for (int i = 0; ok && i < iterations; ++i) {
            exec::ExecOptions eo;
            eo.downloadGradients = false;
            auto r = ex.run(s.schedule, eo);
            if (!r) {
                std::printf("%-20s %-11s failed: %s\n", m.name.c_str(), s.name.c_str(),
                            r.status().toString().c_str());
                ok = false;
                break;
            }
            times.push_back(r->stepSeconds);
            measured = r->measuredPeakBytes;
            recomputes = r->timeline.recomputeSteps;
        }
        if (!ok)
            continue;
        std::sort(times.begin(), times.end());
        const double median = times[times.size() / 2];
        std::printf("%-20s %-11s %9.4f s %12.2f MiB %12.2f MiB %6s %6zu\n", m.name.c_str(),
                    s.name.c_str(), median, double(measured) / (1 << 20),
                    double(predicted->peakBytes) / (1 << 20),
                    measured == predicted->peakBytes ? "yes" : "NO", recomputes);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
    const std::string corpus = std::string(REMAT_SHARED_DIR) + "/corpus/with_weights/";
    const std::string data =
        (std::filesystem::path(__FILE__).parent_path().parent_path() / "data" / "exec").string();
    const std::vector<Model> models = {
        {"mlp", corpus + "mlp.onnx", corpus + "mlp.npz"},
        {"tiny_vit", corpus + "tiny_vit.onnx", corpus + "tiny_vit.npz"},
        {"mobilenet_v2_b2_64", corpus + "mobilenet_v2_b2_64.onnx",
         corpus + "mobilenet_v2_b2_64.npz"},
        {"resnet18_b2_64", data + "/resnet18_b2_64.onnx", ""},
    };
    std::printf("CPU reference backend, median of %d steps\n", iterations);
    std::printf("%-20s %-11s %11s %16s %16s %6s %6s\n", "model", "schedule", "step",
                "measured peak", "predicted peak", "equal", "recomp");
    for (const Model &m : models)
        benchModel(m, iterations);
    return 0;
}
