#pragma once
// Shared by the gpu tests: tiny forward graphs built in code, and one training step of them on
// the CPU reference and on the CUDA backend (store-all or a given schedule), for comparison.
//   MiniGraph g (common/mini_graph.h);  ValueId y = g.op("Relu", {g.input("x", {2, 3})}, {2, 3});
//   auto cmp = compareBackends(*g.build(y));   // CPU vs CUDA: output and every gradient

#include "common/mini_graph.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/ir/graph.h"
#include "core/schedule/store_all.h"
#include "core/training/builder.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_devices.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace remat::tests {

/// One training step of `tg` on a backend with seeded inputs (and `feed` where given).
inline core::Expected<core::exec::ExecResult> runStep(core::exec::Backend &backend,
                                                      const core::training::TrainingGraph &tg,
                                                      const core::ir::Graph &graph,
                                                      const core::schedule::Schedule &schedule,
                                                      const core::exec::NpzArchive *feed = nullptr)
{
    core::exec::Executor ex(backend, tg, graph);
    core::exec::ExecInputs in;
    if (feed)
        in.feed = *feed;
    in.seed = 20261122;
    REMAT_RETURN_IF_ERROR(ex.prepare(in));
    core::exec::ExecOptions opt;
    opt.downloadOutput = true;
    return ex.run(schedule, opt);
}

/// max |a - b| / max(max |b|, 1e-30) over one tensor.
inline double relDiff(const core::exec::HostTensor &a, const core::exec::HostTensor &b)
{
    const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
    double diff = 0, ref = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
        diff = std::max(diff, std::abs(x[i] - y[i]));
        ref = std::max(ref, std::abs(y[i]));
    }
    if (x.size() != y.size())
        return INFINITY;
    return diff / std::max(ref, 1e-30);
}

struct BackendComparison
{
    double worst = 0; ///< max relative difference over output and gradients
    std::string worstEntry;
    int entries = 0;
    double lossCpu = 0, lossCuda = 0;
    int64_t peakCpu = 0, peakCuda = 0;
};

/// Uniform values in [-1, 1) for every float graph input, parameter and buffer (buffers in
/// [0.5, 1.5): BN variances), so no operand is the executor's default zero bias.
inline core::exec::NpzArchive randomFeed(const core::ir::Graph &graph, uint64_t seed = 7)
{
    core::exec::NpzArchive feed;
    std::mt19937_64 rng(seed);
    for (core::ValueId id : graph.inputs()) {
        const core::ir::Value &v = graph.value(id);
        if (v.dtype != core::ir::DataType::Float || !v.shape.isStatic())
            continue;
        const bool positive = v.kind == core::ir::ValueKind::Buffer;
        std::uniform_real_distribution<float> dist(positive ? 0.5f : -1.f, positive ? 1.5f : 1.f);
        std::vector<float> values(size_t(v.shape.numElements().value()));
        for (float &x : values)
            x = dist(rng);
        feed.set(v.name, core::exec::HostTensor::fromFloats(v.shape.sizes(), values));
    }
    return feed;
}

/// The same store-all step on the CPU reference and on CUDA device 0: output and every gradient
/// ("grad_input", "grad:<param>") compared entry by entry.
inline core::Expected<BackendComparison>
compareBackends(const core::ir::Graph &graph, bool inputGradients = true,
                const gpu::CudaBackendOptions &options = {})
{
    core::training::BuildOptions opt;
    opt.inputGradients = inputGradients;
    REMAT_ASSIGN_OR_RETURN(core::training::TrainingGraph tg,
                           core::training::buildTrainingGraph(graph, opt));
    const core::schedule::Schedule s = core::schedule::storeAllSchedule(tg);
    const core::exec::NpzArchive feed = randomFeed(graph);
    auto cpu = core::exec::makeCpuBackend();
    REMAT_ASSIGN_OR_RETURN(core::exec::ExecResult a, runStep(*cpu, tg, graph, s, &feed));
    REMAT_ASSIGN_OR_RETURN(auto cuda, gpu::makeCudaBackend(options));
    REMAT_ASSIGN_OR_RETURN(core::exec::ExecResult b, runStep(*cuda, tg, graph, s, &feed));
    BackendComparison c;
    c.lossCpu = a.loss;
    c.lossCuda = b.loss;
    c.peakCpu = a.measuredPeakBytes;
    c.peakCuda = b.measuredPeakBytes;
    for (const auto &[name, ref] : a.gradients.entries()) {
        const core::exec::HostTensor *ours = b.gradients.find(name);
        if (!ours)
            return core::makeError(core::StatusCode::NotFound, "cuda run lacks " + name);
        const double d = relDiff(*ours, ref);
        ++c.entries;
        if (d > c.worst || std::isnan(d)) {
            c.worst = std::isnan(d) ? INFINITY : d;
            c.worstEntry = name;
        }
    }
    return c;
}

inline bool haveCudaDevice() { return !gpu::listDevices().empty(); }

} // namespace remat::tests
