// CUDA benchmark: resnet50 at batch 32 (224x224, random weights) on CUDA device 0, one training
// step store-all and under checkpointing plans: measured step time (median of 3 after a warm-up),
// the allocator's peak against the simulator's, and the device's own figures (stream-ordered pool
// reserved peak, cudaMemGetInfo peak). Prints "no CUDA device" and exits 0 without a GPU.
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

} // namespace

int main(int argc, char **argv)
{
    const std::vector<gpu::DeviceInfo> devices = gpu::listDevices();
    if (devices.empty()) {
        std::printf("bench_gpu: no CUDA device, nothing to measure\n");
        return 0;
    }
    const std::string path = argc > 1 ? argv[1] : std::string(REMAT_SHARED_DIR) + "/corpus/graph_only/resnet50.onnx";
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

    auto backend = gpu::makeCudaBackend(0);
    if (!backend) {
        std::fprintf(stderr, "%s\n", backend.status().toString().c_str());
        return 1;
    }
    exec::Executor ex(**backend, *tg, *graph);
    if (Status s = ex.prepare({}); !s.isOk()) {
        std::fprintf(stderr, "%s\n", s.toString().c_str());
        return 1;
    }
    std::printf("%s, %s batch %lld\n", (*backend)->description().c_str(), path.c_str(), (long long)batch);
    std::printf("%-26s %10s %10s %10s %8s %10s %9s %9s\n", "schedule", "sim MiB", "meas MiB", "pool MiB",
                "pool/sim", "device MiB", "step ms", "sim ms");
    exec::ExecOptions opt;
    opt.downloadGradients = false;
    for (const Row &r : rows) {
        std::vector<double> times;
        exec::ExecResult last;
        bool failed = false;
        for (int i = 0; i < 4 && !failed; ++i) { // the first run warms the pool and cuDNN
            (*backend)->resetPeak();
            auto res = ex.run(r.schedule, opt);
            if (!res) {
                std::printf("%-26s failed: %s\n", r.name.c_str(), res.status().toString().c_str());
                failed = true;
                break;
            }
            if (i > 0)
                times.push_back(res->stepSeconds);
            last = std::move(*res);
        }
        if (failed)
            continue;
        std::sort(times.begin(), times.end());
        const gpu::CudaRunFigures *fig = gpu::cudaRunFigures(**backend);
        const int64_t pool = fig ? fig->poolReservedPeak : 0;
        std::printf("%-26s %10.1f %10.1f %10.1f %8.3f %10.1f %9.2f %9.2f\n", r.name.c_str(), mib(r.simulatedPeak),
                    mib(last.measuredPeakBytes), mib(pool), r.simulatedPeak ? double(pool) / double(r.simulatedPeak) : 0.0,
                    mib(last.devicePeakBytes.value_or(0)), times[times.size() / 2] * 1e3, r.simulatedSeconds * 1e3);
    }
    return 0;
}
