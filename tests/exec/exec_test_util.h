#pragma once
// Shared by the exec tests: load a corpus model, build its training step, run a schedule on the CPU
// backend with the corpus feed, and compare against the PyTorch references.
//   auto m = loadCorpusModel("mlp");                // graph + training graph + feed + references
//   auto r = runOnCpu(*m, schedule::storeAllSchedule(m->training));

#include "core/cost/roofline.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/exec/npz.h"
#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

#include "common/test_support.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace remat::tests {

struct CorpusModel
{
    std::string name;
    core::ir::Graph graph;
    core::training::TrainingGraph training;
    core::exec::NpzArchive feed;      // <name>.npz (float32 PyTorch run: input, R, grads)
    core::exec::NpzArchive reference; // <name>.f64.npz (float64 PyTorch run)
};

inline core::Expected<std::unique_ptr<CorpusModel>> loadCorpusModel(const std::string &name)
{
    auto m = std::make_unique<CorpusModel>();
    m->name = name;
    const std::string dir = toStd(sharedPath("corpus/with_weights/"));
    REMAT_ASSIGN_OR_RETURN(m->graph, core::onnx::importModel(dir + name + ".onnx"));
    core::training::BuildOptions opt;
    opt.inputGradients = true;
    REMAT_ASSIGN_OR_RETURN(m->training, core::training::buildTrainingGraph(m->graph, opt));
    REMAT_ASSIGN_OR_RETURN(m->feed, core::exec::readNpz(dir + name + ".npz"));
    REMAT_ASSIGN_OR_RETURN(m->reference, core::exec::readNpz(dir + name + ".f64.npz"));
    return m;
}

/// In a Qt Test function: `m` (the Expected from loadCorpusModel) skips the test when the shared
/// corpus is missing and fails it on any other error.
#define REMAT_REQUIRE_CORPUS_MODEL(m)                                                              \
    do {                                                                                           \
        if (!(m) && (m).status().code() == ::remat::core::StatusCode::NotFound)                    \
            QSKIP("corpus not found");                                                             \
        QVERIFY2((m), (m).status().toString().c_str());                                            \
    } while (false)

struct CpuRun
{
    core::exec::ExecResult result;
    int64_t predictedPeak = 0;
    core::sim::Timeline predicted;
    size_t observedSteps = 0;          ///< onStepEnd events the executor emitted
    int64_t observedResidentBytes = 0; ///< sum of onTensorResident bytes minus freed ones' bytes
};

/// Counts the executor's observer events.
struct CountingObserver : core::schedule::ScheduleObserver
{
    const core::training::TrainingGraph *graph = nullptr;
    size_t steps = 0;
    int64_t resident = 0;
    void onStepEnd(const core::schedule::StepEvent &) override { ++steps; }
    void onTensorResident(core::TensorId, int64_t bytes) override { resident += bytes; }
    void onTensorFreed(core::TensorId t) override { resident -= graph->tensor(t).bytes; }
};

/// Empty when every step's bytes in use and peak during the step equal the simulator's, else the
/// first step that differs.
inline std::string firstStepMismatch(const core::sim::Timeline &measured,
                                     const core::sim::Timeline &predicted)
{
    if (measured.points.size() != predicted.points.size())
        return "point counts differ";
    for (size_t i = 0; i < measured.points.size(); ++i) {
        const auto &m = measured.points[i];
        const auto &p = predicted.points[i];
        if (m.bytesInUse != p.bytesInUse || m.peakDuringStep != p.peakDuringStep ||
            m.byCategory != p.byCategory)
            return "step " + std::to_string(i) + ": measured " + std::to_string(m.bytesInUse) +
                   "/" + std::to_string(m.peakDuringStep) + " predicted " +
                   std::to_string(p.bytesInUse) + "/" + std::to_string(p.peakDuringStep) +
                   (m.byCategory != p.byCategory ? " (categories differ)" : "");
    }
    return {};
}

inline core::Expected<CpuRun> runOnCpu(const CorpusModel &m, const core::schedule::Schedule &s)
{
    auto backend = core::exec::makeCpuBackend();
    core::exec::Executor ex(*backend, m.training, m.graph);
    core::exec::ExecInputs in;
    in.feed = m.feed;
    REMAT_RETURN_IF_ERROR(ex.prepare(in));
    CpuRun r;
    CountingObserver counter;
    counter.graph = &m.training;
    core::exec::ExecOptions opt;
    opt.observer = &counter;
    REMAT_ASSIGN_OR_RETURN(r.result, ex.run(s, opt));
    r.observedSteps = counter.steps;
    r.observedResidentBytes = counter.resident;
    const core::cost::Costs costs = core::cost::rooflineCosts(m.training);
    REMAT_ASSIGN_OR_RETURN(r.predicted, core::sim::simulate(s, m.training, costs));
    r.predictedPeak = r.predicted.peakBytes;
    return r;
}

/// max |a - b| / max |b| over one tensor (b the reference).
inline double relativeError(const core::exec::HostTensor &a, const core::exec::HostTensor &b,
                            double *maxAbsDiff = nullptr, double *maxRef = nullptr)
{
    const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
    double diff = 0, ref = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
        diff = std::max(diff, std::abs(x[i] - y[i]));
        ref = std::max(ref, std::abs(y[i]));
    }
    if (maxAbsDiff)
        *maxAbsDiff = diff;
    if (maxRef)
        *maxRef = ref;
    return ref > 0 ? diff / ref : diff;
}

/// ||a - b||_2 / ||b||_2 over one tensor (b the reference): the norm-wise figure the corpus
/// manifest reports (corpus_manifest.json f32_vs_f64.param_grad_rel_err_*).
inline double normRelativeError(const core::exec::HostTensor &a, const core::exec::HostTensor &b)
{
    const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
    double diff = 0, ref = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
        diff += (x[i] - y[i]) * (x[i] - y[i]);
        ref += y[i] * y[i];
    }
    return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

} // namespace remat::tests
