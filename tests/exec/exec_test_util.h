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

#include <cmath>
#include <memory>
#include <string>

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

struct CpuRun
{
    core::exec::ExecResult result;
    int64_t predictedPeak = 0;
};

inline core::Expected<CpuRun> runOnCpu(const CorpusModel &m, const core::schedule::Schedule &s)
{
    auto backend = core::exec::makeCpuBackend();
    core::exec::Executor ex(*backend, m.training, m.graph);
    core::exec::ExecInputs in;
    in.feed = m.feed;
    REMAT_RETURN_IF_ERROR(ex.prepare(in));
    CpuRun r;
    REMAT_ASSIGN_OR_RETURN(r.result, ex.run(s));
    const core::cost::Costs costs = core::cost::rooflineCosts(m.training);
    REMAT_ASSIGN_OR_RETURN(core::sim::Timeline t, core::sim::simulate(s, m.training, costs));
    r.predictedPeak = t.peakBytes;
    return r;
}

/// max |a - b| / max |b| over one tensor (b the reference).
inline double relativeError(const core::exec::HostTensor &a, const core::exec::HostTensor &b, double *maxAbsDiff = nullptr,
                            double *maxRef = nullptr)
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

} // namespace remat::tests
