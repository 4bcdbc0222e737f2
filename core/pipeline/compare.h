#pragma once
// Two training steps side by side: the same model under two sets of training options, or two
// plans of one model. Each step's figures (the peak, every memory category at that peak, the
// model state, the activation peak, time and recompute) are lined up with their difference, for
// the planner's comparison view and its difference table.
//   auto a = pipeline::planTrainingStep("resnet50.onnx", optsA, solver, {});
//   auto b = pipeline::planTrainingStep("resnet50.onnx", optsB, solver, {});
//   for (const pipeline::DifferenceRow &r : pipeline::differenceRows(a->plan.timeline,
//                                                                    b->plan.timeline)) ...

#include "core/pipeline/problem.h"
#include "core/sim/timeline.h"
#include "core/solvers/solver.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <memory>
#include <string>
#include <vector>

namespace remat::core::pipeline {

/// How a figure reads: bytes, seconds, a percentage, a plain count, floating-point operations.
enum class FigureUnit { Bytes, Seconds, Percent, Count, Flops };

/// One line of the difference table: a figure of step A, of step B, and B - A.
struct DifferenceRow
{
    std::string what; ///< "peak", "optimizer_state at the peak", "step time", ...
    FigureUnit unit = FigureUnit::Bytes;
    double a = 0, b = 0;
    double delta() const { return b - a; }
};

/// The rows, in this order: the peak; each memory category at each step's own peak (only those
/// holding bytes on either side, in the chart's stacking order); the model state (weights,
/// master weights, optimizer state and gradients, resident all step); the activation peak; the
/// step time; recompute (% of one forward + backward).
std::vector<DifferenceRow> differenceRows(const sim::Timeline &a, const sim::Timeline &b);

/// The model under one set of options, as one solver plans it.
struct TrainingStep
{
    std::shared_ptr<const Problem> problem;
    solvers::Plan plan;
};

/// Imports `path` with `options` (its training options included) and plans the step: store-all
/// for a null `solver`, else min-time under `budgetBytes` when it is > 0 and the solver has
/// that objective, min-peak otherwise. A training step that cannot be built is an error naming
/// why; `stop` cancels (an error saying so). Thread-safe.
Expected<TrainingStep> planTrainingStep(const std::string &path, const LoadOptions &options,
                                        const solvers::Solver *solver, int64_t budgetBytes,
                                        double timeLimitSeconds, const StopToken &stop = {});

} // namespace remat::core::pipeline
