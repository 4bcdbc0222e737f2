#pragma once
// The immutable inputs every planner job shares: the forward graph, the training graph derived
// from it at the session's batch, and the costs. Built once per (model, batch) off the GUI thread
// and handed to workers by shared pointer, so no worker ever sees a half-built problem.
//   Expected<PlannerProblem> p = loadPlannerProblem("resnet50.onnx", 32, stop);
//   p->training->opCount();  p->storeAll.timeline.peakBytes;

#include "core/cost/costs.h"
#include "core/cost/profile.h"
#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <memory>
#include <string>
#include <vector>

namespace remat::ui {

struct PlannerProblem
{
    std::shared_ptr<const core::ir::Graph> forward;          ///< null for benchmark graphs
    std::shared_ptr<const core::training::TrainingGraph> training;
    std::shared_ptr<const core::cost::Costs> costs;
    /// The store-everything schedule and its full timeline: the baseline drawn beside any plan.
    core::solvers::Plan storeAll;
    std::string modelPath;
    std::string modelSha256;
    int64_t batch = 0;

    bool isValid() const { return training && costs; }
};

/// Imports the model at `batch`, builds the training graph and roofline costs, and simulates
/// store-all. Runs on a worker thread.
/// `settings` carries the user's other import settings (free dims, ...); its batch is unused.
core::Expected<PlannerProblem> loadPlannerProblem(const std::string &modelPath, int64_t batch,
                                                  const core::StopToken &stop,
                                                  const core::onnx::ImportOptions &settings = {});

/// The same problem with op times from a measured profile ("Calibrate on this device"):
/// cost::profileCosts (the profile's times, scaled to another batch or fitted for another model
/// by the calibrated model), and store-all re-simulated with them. The profile's warnings go to
/// `warnings` when given.
core::Expected<PlannerProblem> withProfileCosts(const PlannerProblem &problem, const core::cost::Profile &profile,
                                                const std::string &origin, std::vector<std::string> *warnings = nullptr);

/// Builds the problem from a training graph already in memory (tests, benchmark graphs).
core::Expected<PlannerProblem> makePlannerProblem(std::shared_ptr<const core::ir::Graph> forward,
                                                  std::shared_ptr<const core::training::TrainingGraph> training,
                                                  std::shared_ptr<const core::cost::Costs> costs);

} // namespace remat::ui
