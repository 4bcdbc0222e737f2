#include "ui/planner/planner_problem.h"

#include <algorithm>

#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"

namespace remat::ui {

core::Expected<std::shared_ptr<const PlannerProblem>>
loadPlannerProblem(const std::string &modelPath, int64_t batch, const core::StopToken &stop,
                   const core::onnx::ImportOptions &settings,
                   const core::training::TrainingOptions &training)
{
    core::pipeline::LoadOptions options;
    options.import = settings;
    options.training = training;
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

MemoryFloor memoryFloor(const PlannerProblem &problem)
{
    MemoryFloor f;
    if (!problem.isValid())
        return f;
    const auto &tg = *problem.training;
    const auto &sa = problem.storeAll.timeline;
    f.masterWeightBytes = sa.masterWeightBytes;
    f.optimizerStateBytes = sa.optimizerStateBytes;
    f.weightBytes = sa.weightBytes - sa.masterWeightBytes - sa.optimizerStateBytes;
    using core::training::TensorRole;
    for (const auto &t : tg.tensors())
        if (t.role == TensorRole::ParameterGrad && t.preloaded)
            f.accumulatorBytes += t.bytes;
    // Required at the step's end, so resident together then in every plan (the simulator's
    // figure; accumulators count in the same category).
    f.weightGradBytes = std::max<int64_t>(0, sa.weightGradBytes - f.accumulatorBytes);
    for (const auto &op : tg.ops()) {
        int64_t bytes = op.workspaceBytes;
        // Preloaded tensors are counted above already; a gradient the op writes is not.
        const auto counted = [&](core::TensorId t) {
            const auto &tensor = tg.tensor(t);
            return !tensor.preloaded ? tensor.bytes : int64_t(0);
        };
        std::vector<core::TensorId> touched(op.inputs.begin(), op.inputs.end());
        touched.insert(touched.end(), op.outputs.begin(), op.outputs.end());
        std::sort(touched.begin(), touched.end(),
                  [](core::TensorId a, core::TensorId b) { return a.value < b.value; });
        for (size_t i = 0; i < touched.size(); ++i)
            if (i == 0 || touched[i].value != touched[i - 1].value) // an input read twice
                bytes += counted(touched[i]);
        if (bytes > f.largestOpBytes) {
            f.largestOpBytes = bytes;
            f.largestOp = op.name;
        }
    }
    return f;
}

} // namespace remat::ui
