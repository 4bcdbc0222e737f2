#include "ui/planner/planner_problem.h"

#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

namespace remat::ui {

core::Expected<PlannerProblem> makePlannerProblem(std::shared_ptr<const core::ir::Graph> forward,
                                                  std::shared_ptr<const core::training::TrainingGraph> training,
                                                  std::shared_ptr<const core::cost::Costs> costs)
{
    if (!training || !costs)
        return core::makeError(core::StatusCode::InvalidArgument, "no training graph");
    PlannerProblem p;
    p.forward = std::move(forward);
    p.training = std::move(training);
    p.costs = std::move(costs);
    p.modelPath = p.training->info().modelPath;
    p.modelSha256 = p.training->info().modelSha256;
    p.batch = p.training->info().batch;
    p.storeAll.solver = "store-all";
    p.storeAll.status = core::solvers::SolveStatus::Optimal;
    p.storeAll.schedule = core::schedule::storeAllSchedule(*p.training);
    REMAT_ASSIGN_OR_RETURN(p.storeAll.timeline, core::sim::simulate(p.storeAll.schedule, *p.training, *p.costs));
    p.storeAll.budgetBytes = p.storeAll.timeline.peakBytes;
    return p;
}

core::Expected<PlannerProblem> withProfileCosts(const PlannerProblem &problem, const core::cost::Profile &profile,
                                                const std::string &origin, std::vector<std::string> *warnings)
{
    if (!problem.isValid())
        return core::makeError(core::StatusCode::InvalidArgument, "no training graph to calibrate");
    core::cost::ProfileCostsReport report;
    REMAT_ASSIGN_OR_RETURN(core::cost::Costs costs,
                           core::cost::profileCosts(profile, *problem.training, core::cost::Roofline{}, origin, &report));
    if (warnings)
        *warnings = report.warnings;
    REMAT_ASSIGN_OR_RETURN(PlannerProblem p, makePlannerProblem(problem.forward, problem.training,
                                                                std::make_shared<const core::cost::Costs>(std::move(costs))));
    p.modelPath = problem.modelPath;
    p.modelSha256 = problem.modelSha256;
    p.batch = problem.batch;
    return p;
}

core::Expected<PlannerProblem> loadPlannerProblem(const std::string &modelPath, int64_t batch,
                                                  const core::StopToken &stop, const core::onnx::ImportOptions &settings)
{
    core::onnx::ImportOptions options = settings;
    options.progress = {};
    options.batch = batch;
    options.stop = stop;
    REMAT_ASSIGN_OR_RETURN(core::ir::Graph graph, core::onnx::importModel(modelPath, options));
    if (stop.stopRequested())
        return core::makeError(core::StatusCode::Cancelled, "loading cancelled");
    auto forward = std::make_shared<const core::ir::Graph>(std::move(graph));
    REMAT_ASSIGN_OR_RETURN(core::training::TrainingGraph tg, core::training::buildTrainingGraph(*forward));
    auto training = std::make_shared<const core::training::TrainingGraph>(std::move(tg));
    auto costs = std::make_shared<const core::cost::Costs>(core::cost::rooflineCosts(*training));
    REMAT_ASSIGN_OR_RETURN(PlannerProblem p, makePlannerProblem(forward, training, costs));
    p.modelPath = modelPath;
    p.modelSha256 = forward->info().sha256;
    p.batch = forward->info().batch > 0 ? forward->info().batch : batch;
    return p;
}

} // namespace remat::ui
