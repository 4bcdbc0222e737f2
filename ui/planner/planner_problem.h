#pragma once
// The immutable inputs every planner job shares: core's pipeline Problem (the forward graph, the
// training graph at the session's batch, the costs and the store-all baseline), handed to workers
// by shared pointer, so no worker ever sees a half-built problem.
//   Expected<std::shared_ptr<const PlannerProblem>> p = loadPlannerProblem("resnet50.onnx", 32, stop);
//   (*p)->training->opCount();  (*p)->storeAll.timeline.peakBytes;

#include "core/cost/profile.h"
#include "core/onnx/importer.h"
#include "core/pipeline/problem.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace remat::ui {

using PlannerProblem = core::pipeline::Problem;

/// core::pipeline::loadProblem at `batch` with the user's other import `settings` (their batch,
/// stop and progress are unused) and `training` options, for the planner: a training step that
/// cannot be built is an error here. Runs on a worker thread.
core::Expected<std::shared_ptr<const PlannerProblem>>
loadPlannerProblem(const std::string &modelPath, int64_t batch, const core::StopToken &stop,
                   const core::onnx::ImportOptions &settings = {},
                   const core::training::TrainingOptions &training = {});

/// The same problem with op times from a measured profile ("Calibrate on this device"):
/// cost::profileCosts (the profile's times, scaled to another batch or fitted for another model
/// by the calibrated model), and store-all re-simulated with them. The profile's warnings go to
/// `warnings` when given.
core::Expected<std::shared_ptr<const PlannerProblem>>
withProfileCosts(const PlannerProblem &problem, const core::cost::Profile &profile,
                 const std::string &origin, std::vector<std::string> *warnings = nullptr);

/// The least memory any plan needs, whatever it recomputes or offloads: the model state
/// resident all step (weights, the input batch, master weights, optimizer state, micro-batch
/// gradient accumulators) plus the larger of two things no plan avoids: the weights' gradients,
/// all resident at the step's end, and the largest op's working set (its inputs, outputs and
/// scratch, all resident while it runs). A true lower bound: a budget below it is infeasible
/// for every solver. (Adding the gradients to the largest op's working set, as before, was not:
/// the largest op may run in the forward pass, before any gradient exists.)
struct MemoryFloor
{
    int64_t weightBytes = 0; ///< parameters, buffers, constants, the input batch
    int64_t masterWeightBytes = 0, optimizerStateBytes = 0;
    int64_t accumulatorBytes = 0; ///< gradient accumulators of micro-batches (resident all step)
    int64_t weightGradBytes = 0;  ///< the step's own parameter gradients
    int64_t largestOpBytes = 0;
    std::string largestOp; ///< the op with that working set
    int64_t residentBytes() const
    {
        return weightBytes + masterWeightBytes + optimizerStateBytes + accumulatorBytes;
    }
    int64_t total() const { return residentBytes() + std::max(weightGradBytes, largestOpBytes); }
};
MemoryFloor memoryFloor(const PlannerProblem &problem);

} // namespace remat::ui
