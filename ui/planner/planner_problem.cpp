#include "ui/planner/planner_problem.h"

#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"

namespace remat::ui {

core::Expected<std::shared_ptr<const PlannerProblem>>
loadPlannerProblem(const std::string &modelPath, int64_t batch, const core::StopToken &stop,
                   const core::onnx::ImportOptions &settings)
{
    core::pipeline::LoadOptions options;
    options.import = settings;
    options.import.progress = {};
    options.import.batch = batch;
    REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const PlannerProblem> p,
                           core::pipeline::loadProblem(modelPath, options, stop));
    if (!p->isValid())
        return p->trainingStatus;
    return p;
}

core::Expected<std::shared_ptr<const PlannerProblem>>
withProfileCosts(const PlannerProblem &problem, const core::cost::Profile &profile,
                 const std::string &origin, std::vector<std::string> *warnings)
{
    if (!problem.isValid())
        return core::makeError(core::StatusCode::InvalidArgument, "no training graph to calibrate");
    core::cost::ProfileCostsReport report;
    REMAT_ASSIGN_OR_RETURN(core::cost::Costs costs,
                           core::cost::profileCosts(profile, *problem.training,
                                                    core::cost::Roofline{}, origin, &report));
    if (warnings)
        *warnings = report.warnings;
    REMAT_ASSIGN_OR_RETURN(
        std::shared_ptr<const PlannerProblem> made,
        core::pipeline::makeProblem(problem.forward, problem.training,
                                    std::make_shared<const core::cost::Costs>(std::move(costs))));
    // The same model and settings, timed by the profile.
    auto p = std::make_shared<PlannerProblem>(*made);
    p->modelPath = problem.modelPath;
    p->modelSha256 = problem.modelSha256;
    p->batch = problem.batch;
    p->options = problem.options;
    return std::shared_ptr<const PlannerProblem>(std::move(p));
}

} // namespace remat::ui
