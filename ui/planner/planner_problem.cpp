#include "ui/planner/planner_problem.h"

namespace remat::ui {

core::Expected<std::shared_ptr<const PlannerProblem>> loadPlannerProblem(const std::string &modelPath, int64_t batch,
                                                                         const core::StopToken &stop,
                                                                         const core::onnx::ImportOptions &settings)
{
    core::pipeline::LoadOptions options;
    options.import = settings;
    options.import.progress = {};
    options.import.batch = batch;
    REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const PlannerProblem> p, core::pipeline::loadProblem(modelPath, options, stop));
    if (!p->isValid())
        return p->trainingStatus;
    return p;
}

} // namespace remat::ui
