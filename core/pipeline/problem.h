#pragma once
// One pipeline from a model file to everything the tools compute on: import, training graph,
// roofline costs, the store-everything schedule and its timeline, handed out as one immutable
// shared Problem. The CLI, the explorer and the planner all load through it.
//   pipeline::LoadOptions opt;  opt.import.batch = 32;
//   Expected<std::shared_ptr<const pipeline::Problem>> p = pipeline::loadProblem("resnet50.onnx", opt, stop);
//   if (p && (*p)->isValid()) use((*p)->training, (*p)->costs, (*p)->storeAll.timeline.peakBytes);

#include "core/cost/costs.h"
#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/solvers/solver.h"
#include "core/training/builder.h"
#include "core/training/training_graph.h"
#include "core/training/training_options.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace remat::core::pipeline {

/// What loadProblem imports and builds.
struct LoadOptions
{
    /// The user's import settings: batch (0: the file's), free dim values, whole input shapes,
    /// scalar input values, classification overrides, semantics, and whether unknown shapes are
    /// kept (browsing). Its `stop` is replaced by loadProblem's; its `progress` is called.
    onnx::ImportOptions import;
    training::BuildOptions build;
    /// Optimizer, precision, sharding, micro-batches, applied to the built training graph
    /// (training/training_options.h). Default: none of them, the graph as built.
    training::TrainingOptions training;
};

/// A loaded model and its training step. Immutable once built: workers share it by pointer.
/// The training step may be missing (a browsed file whose shapes are not all known, an op with
/// no gradient rule): then `training`, `costs` and `storeAll` are empty and `trainingStatus`
/// says why, while the forward graph stays browsable.
struct Problem
{
    std::string modelPath; ///< as given to loadProblem (a training graph's own, when hand-built)
    std::string modelSha256;
    /// The batch of the training step: the requested one, else the file's (0 when free).
    int64_t batch = 0;
    /// The settings it was loaded with (stop and progress cleared); `import.batch` is the request.
    LoadOptions options;

    std::shared_ptr<const ir::Graph> forward; ///< null for hand-built and benchmark graphs
    std::shared_ptr<const training::TrainingGraph> training;
    core::Status trainingStatus;              ///< why `training` is null; ok when it is set
    std::shared_ptr<const cost::Costs> costs; ///< analytic roofline costs of `training`
    /// The store-everything schedule and its full timeline (a point per step): the baseline any
    /// plan is compared with.
    solvers::Plan storeAll;

    /// Per NodeId of `forward`: the forward op it became (invalid when folded or not built).
    std::vector<OpId> forwardOpOfNode;
    /// Forward op name (the ONNX node's) -> its main activation output, the tensor a pin on the
    /// node applies to. Ops without an activation output are absent.
    std::unordered_map<std::string, TensorId> activationOfNode;

    bool isValid() const { return training && costs; }
};

/// Imports `path`, builds its training graph, costs it and simulates store-all. An import error
/// (or `stop`) fails the call; a training step that cannot be built does not (see Problem).
/// Thread-safe; nothing here aborts.
Expected<std::shared_ptr<const Problem>>
loadProblem(const std::string &path, const LoadOptions &options, const StopToken &stop = {});

/// The same problem around a training graph already in memory (tests, benchmark graphs);
/// `forward` may be null.
Expected<std::shared_ptr<const Problem>>
makeProblem(std::shared_ptr<const ir::Graph> forward,
            std::shared_ptr<const training::TrainingGraph> training,
            std::shared_ptr<const cost::Costs> costs);

/// How many times this process has run loadProblem (each call counts, failed ones too): how
/// tests prove that one open imports a model once.
int64_t loadProblemCount();

} // namespace remat::core::pipeline
