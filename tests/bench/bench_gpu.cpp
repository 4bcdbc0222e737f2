// CUDA benchmark: resnet50 at batch 32 (224x224, random weights) on CUDA device 0, one training
// step store-all and under checkpointing plans: measured step time (median of 3 after a warm-up),
// the summed device time of the ops (CUDA events), the allocator's peak against the simulator's, and
// the device's own figures: the arena planned from the warm-up step, the stream-ordered pool's
// reserved peak over the timed steps (emptied after the warm-up; weights + arena when the steps
// follow the plan), and the cudaMemGetInfo peak, which also holds the CUDA context and the
// libraries' handles. Once with synchronous ops, once queued. Prints "no CUDA device" and exits 0 without a GPU.
// Usage: bench_gpu [model.onnx] [batch]
#include "core/cost/roofline.h"
#include "core/exec/executor.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"
#include "core/training/builder.h"
#include "core/util/bytes.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace remat;
using namespace remat::core;

namespace {

struct Row
{
    std::string name;
    schedule::Schedule schedule;
    int64_t simulatedPeak = 0;
    double simulatedSeconds = 0;
};

double mib(int64_t b) { return double(b) / double(1 << 20); }

/// Step times summed by op type (synchronous runs: each step's time is its own op's).
struct TypeProfile : schedule::ScheduleObserver
{
    const training::TrainingGraph *graph = nullptr;
    std::map<std::string, std::pair<double, int>> byType;
    void onStepEnd(const schedule::StepEvent &e) override
    {
        if (e.step.kind != schedule::StepKind::Compute)
            return;
        auto &[seconds, count] = byType[graph->op(e.step.op()).type];
        seconds += e.endSeconds - e.startSeconds;
        ++count;
    }
    void print() const
    {
        std::vector<std::pair<double, std::string>> rows;
        double total = 0;
        for (const auto &[type, v] : byType) {
            rows.emplace_back(v.first, type);
            total += v.first;
        }
        std::sort(rows.rbegin(), rows.rend());
        std::printf("store-all time by op type (synchronous, %.2f ms in all):", total * 1e3);
        for (size_t i = 0; i < rows.size() && i < 10; ++i)
            std::printf("%s %s %.1f ms (%d)", i ? "," : "", rows[i].second.c_str(),
                        rows[i].first * 1e3, byType.at(rows[i].second).second);
        std::printf("\n");
    }
};

} // namespace

int main(int argc, char **argv)
{
    const std::vector<gpu::DeviceInfo> devices = gpu::listDevices();
    if (devices.empty()) {
        std::printf("bench_gpu: no CUDA device, nothing to measure\n");
        return 0;
    }
    const std::string path =
        argc > 1 ? argv[1] : std::string(REMAT_SHARED_DIR) + "/corpus/graph_only/resnet50.onnx";
    const int64_t batch = argc > 2 ? std::stoll(argv[2]) : 32;
    onnx::ImportOptions io;
    io.batch = batch;
    auto graph = onnx::importModel(path, io);
    if (!graph) {
        std::fprintf(stderr, "%s\n", graph.status().toString().c_str());
        return 1;
    }
    auto tg = training::buildTrainingGraph(*graph);
    if (!tg) {
        std::fprintf(stderr, "%s\n", tg.status().toString().c_str());
        return 1;
    }
    const cost::Costs costs = cost::rooflineCosts(*tg);

    std::vector<Row> rows;
    {
        Row r{"store-all", schedule::storeAllSchedule(*tg)};
        auto t = sim::simulate(r.schedule, *tg, costs, {.recordPoints = false});
        if (!t) {
            std::fprintf(stderr, "%s\n", t.status().toString().c_str());
            return 1;
        }
        r.simulatedPeak = t->peakBytes;
        r.simulatedSeconds = t->totalSeconds;
        rows.push_back(std::move(r));
    }
    const solvers::SolverRegistry reg = solvers::makeRegistry();
    struct Want
    {
        const char *solver;
        solvers::Objective objective;
        double budgetFraction; // of store-all's peak (MinTime only)
    };
    for (const Want &w : {Want{"chen-sqrtn", solvers::Objective::MinPeak, 0},
                          Want{"chen-greedy", solvers::Objective::MinPeak, 0},
                          Want{"feng-huang", solvers::Objective::MinPeak, 0},
                          Want{"rotor", solvers::Objective::MinTime, 0.6},
                          Want{"checkmate-lp", solvers::Objective::MinTime, 0.6}}) {
        const solvers::Solver *s = reg.find(w.solver);
        if (!s)
            continue;
        solvers::SolveRequest req;
        req.graph = &*tg;
        req.costs = &costs;
        req.objective = w.objective;
        req.budgetBytes = int64_t(w.budgetFraction * double(rows[0].simulatedPeak));
        req.timeLimitSeconds = 60;
        auto plan = s->solve(req);
        if (!plan) {
            std::printf("%-14s skipped: %s\n", w.solver, plan.status().toString().c_str());
            continue;
        }
        Row r{fmt::format("{} ({})", w.solver, solvers::objectiveName(w.objective)), plan->schedule,
              plan->timeline.peakBytes, plan->timeline.totalSeconds};
        rows.push_back(std::move(r));
    }

    // Two passes: synchronous (the default: every op waited for, so errors and out-of-memory name
    // their step) and queued (ops stream back to back, errors surface at the end of the step).
    for (const bool synchronous : {true, false}) {
        gpu::CudaBackendOptions bo;
        bo.synchronous = synchronous;
        auto backend = gpu::makeCudaBackend(bo);
        if (!backend) {
            std::fprintf(stderr, "%s\n", backend.status().toString().c_str());
            return 1;
        }
        exec::Executor ex(**backend, *tg, *graph);
        if (Status s = ex.prepare({}); !s.isOk()) {
            std::fprintf(stderr, "%s\n", s.toString().c_str());
            return 1;
        }
        std::printf("\n%s, %s batch %lld, %s ops\n", (*backend)->description().c_str(),
                    path.c_str(), (long long)batch, synchronous ? "synchronous" : "queued");
        std::printf("%-26s %9s %9s %9s %9s %8s %10s %9s %9s %9s\n", "schedule", "sim MiB",
                    "meas MiB", "arena MiB", "pool MiB", "pool/sim", "device MiB", "step ms",
                    "kernel ms", "sim ms");
        exec::ExecOptions opt;
        opt.downloadGradients = false;
        TypeProfile profile;
        profile.graph = &*tg;
        for (const Row &r : rows) {
            opt.observer = synchronous && &r == &rows.front() ? &profile : nullptr;
            std::vector<double> times, kernel;
            exec::ExecResult last;
            bool failed = false;
            for (int i = 0; i < 4 && !failed; ++i) { // the first run warms the pool and cuDNN
                if (opt.observer && i == 3)
                    profile.byType.clear(); // profile the last run only
                if (i == 1) // after the warm-up (which plans the arena): the timed runs' own peak
                    gpu::releaseCachedMemory(**backend);
                const gpu::CudaRunFigures *before = gpu::cudaRunFigures(**backend);
                const double opSeconds = before ? before->totalOpSeconds : 0;
                auto res = ex.run(r.schedule, opt);
                if (!res) {
                    std::printf("%-26s failed: %s\n", r.name.c_str(),
                                res.status().toString().c_str());
                    failed = true;
                    break;
                }
                if (i > 0) {
                    times.push_back(res->stepSeconds);
                    kernel.push_back(gpu::cudaRunFigures(**backend)->totalOpSeconds - opSeconds);
                }
                last = std::move(*res);
            }
            if (failed)
                continue;
            std::sort(times.begin(), times.end());
            std::sort(kernel.begin(), kernel.end());
            const gpu::CudaRunFigures *fig = gpu::cudaRunFigures(**backend);
            const int64_t pool = fig ? fig->poolReservedPeak : 0;
            std::printf(
                "%-26s %9.1f %9.1f %9.1f %9.1f %8.3f %10.1f %9.2f %9s %9.2f\n", r.name.c_str(),
                mib(r.simulatedPeak), mib(last.measuredPeakBytes), mib(fig ? fig->arenaBytes : 0),
                mib(pool), r.simulatedPeak ? double(pool) / double(r.simulatedPeak) : 0.0,
                mib(last.devicePeakBytes.value_or(0)), times[times.size() / 2] * 1e3,
                synchronous ? fmt::format("{:.2f}", kernel[kernel.size() / 2] * 1e3).c_str() : "-",
                r.simulatedSeconds * 1e3);
        }
        if (synchronous)
            profile.print();
    }
    return 0;
}
