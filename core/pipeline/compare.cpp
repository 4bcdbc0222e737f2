#include "core/pipeline/compare.h"

#include "core/schedule/observer.h"
#include "core/sim/simulator.h"
#include "core/training/training_options.h"

#include <fmt/format.h>

namespace remat::core::pipeline {

std::vector<DifferenceRow> differenceRows(const sim::Timeline &a, const sim::Timeline &b)
{
    std::vector<DifferenceRow> rows;
    const auto bytes = [&](std::string what, int64_t x, int64_t y) {
        rows.push_back({std::move(what), FigureUnit::Bytes, double(x), double(y)});
    };
    bytes("peak", a.peakBytes, b.peakBytes);
    for (size_t c = 0; c < schedule::kMemCategoryCount; ++c) {
        const auto cat = static_cast<schedule::MemCategory>(c);
        int64_t x = a.peakByCategory[c], y = b.peakByCategory[c];
        if (cat == schedule::MemCategory::Weights) {
            // The category holds the input batch too (resident all step): at batch 1558 it
            // outweighed resnet50's parameters ten to one. Each gets its own row.
            x -= a.inputBytes;
            y -= b.inputBytes;
            if (a.inputBytes != 0 || b.inputBytes != 0)
                bytes("input batch at the peak", a.inputBytes, b.inputBytes);
        }
        if (x != 0 || y != 0)
            bytes(fmt::format("{} at the peak", schedule::memCategoryName(cat)), x, y);
    }
    // Model state is resident all step: its size does not depend on where the peak is.
    bytes("model state (weights, master weights, optimizer state, gradients)",
          a.weightBytes + a.weightGradBytes, b.weightBytes + b.weightGradBytes);
    bytes("activation peak", a.activationPeakBytes, b.activationPeakBytes);
    rows.push_back({"step time", FigureUnit::Seconds, a.totalSeconds, b.totalSeconds});
    rows.push_back({"recompute", FigureUnit::Percent, a.tdiPercent(), b.tdiPercent()});
    return rows;
}

Expected<TrainingStep> planTrainingStep(const std::string &path, const LoadOptions &options,
                                        const solvers::Solver *solver, int64_t budgetBytes,
                                        double timeLimitSeconds, const StopToken &stop)
{
    const auto cancelled = [] { return makeError(StatusCode::Cancelled, "comparison cancelled"); };
    Expected<std::shared_ptr<const Problem>> p = loadProblem(path, options, stop);
    if (stop.stopRequested())
        return cancelled();
    if (!p)
        return p.status();
    if (!(*p)->isValid())
        return makeError(StatusCode::Unsupported,
                         fmt::format("no training step for {} (optimizer {}, {}): {}", path,
                                     training::optimizerName(options.training.optimizer),
                                     training::precisionName(options.training.precision),
                                     (*p)->trainingStatus.toString()));
    TrainingStep step;
    step.problem = *p;
    if (!solver) {
        step.plan = step.problem->storeAll;
        return step;
    }
    solvers::SolveRequest r;
    r.graph = step.problem->training.get();
    r.costs = step.problem->costs.get();
    const bool minTime = budgetBytes > 0 && solver->capabilities().minTime;
    r.objective = minTime ? solvers::Objective::MinTime : solvers::Objective::MinPeak;
    r.budgetBytes = budgetBytes;
    r.timeLimitSeconds = timeLimitSeconds;
    r.stop = stop;
    Expected<solvers::Plan> plan = solver->solve(r);
    if (stop.stopRequested())
        return cancelled();
    if (!plan)
        return plan.status();
    step.plan = std::move(*plan);
    // Solvers return summary timelines (no per-step points): the comparison charts its curve.
    if (step.plan.timeline.points.empty()) {
        REMAT_ASSIGN_OR_RETURN(
            step.plan.timeline,
            sim::simulate(step.plan.schedule, *step.problem->training, *step.problem->costs));
    }
    return step;
}

} // namespace remat::core::pipeline
