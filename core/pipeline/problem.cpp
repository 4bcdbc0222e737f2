#include "core/pipeline/problem.h"

#include "core/cost/roofline.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/apply_training_options.h"

#include <atomic>

namespace remat::core::pipeline {

namespace {

std::atomic<int64_t> g_loadCount{0};

// Fills the indexes the explorer and the planner look nodes up by.
void indexNodes(Problem &p)
{
    if (!p.training)
        return;
    if (p.forward)
        p.forwardOpOfNode.assign(p.forward->nodeCount(), OpId());
    for (const training::Op &op : p.training->ops()) {
        if (op.phase != training::Phase::Forward)
            continue;
        if (p.forward && op.source.valid() && op.source.index() < p.forwardOpOfNode.size())
            p.forwardOpOfNode[op.source.index()] = op.id;
        for (TensorId t : op.outputs)
            if (p.training->tensor(t).role == training::TensorRole::Activation) {
                p.activationOfNode.emplace(op.name, t);
                break;
            }
    }
}

// Costs and the store-all baseline for a problem whose training graph is set.
Status completeProblem(Problem &p)
{
    if (!p.costs)
        p.costs = std::make_shared<const cost::Costs>(cost::rooflineCosts(*p.training));
    p.storeAll.solver = "store-all";
    p.storeAll.status = solvers::SolveStatus::Optimal;
    p.storeAll.schedule = schedule::storeAllSchedule(*p.training);
    REMAT_ASSIGN_OR_RETURN(p.storeAll.timeline,
                           sim::simulate(p.storeAll.schedule, *p.training, *p.costs));
    p.storeAll.budgetBytes = p.storeAll.timeline.peakBytes;
    p.storeAll.baselineStepSeconds = solvers::stepSeconds(p.storeAll.timeline);
    indexNodes(p);
    return Status::ok();
}

} // namespace

int64_t loadProblemCount() { return g_loadCount.load(); }

Expected<std::shared_ptr<const Problem>>
loadProblem(const std::string &path, const LoadOptions &options, const StopToken &stop)
{
    g_loadCount.fetch_add(1);
    onnx::ImportOptions import = options.import;
    import.stop = stop;
    REMAT_ASSIGN_OR_RETURN(ir::Graph graph, onnx::importModel(path, import));
    if (stop.stopRequested())
        return makeError(StatusCode::Cancelled, "loading cancelled");

    auto p = std::make_shared<Problem>();
    p->modelPath = path;
    p->options = options;
    p->options.import.stop = {};
    p->options.import.progress = {};
    p->forward = std::make_shared<const ir::Graph>(std::move(graph));
    p->modelSha256 = p->forward->info().sha256;
    p->batch = p->forward->info().batch > 0 ? p->forward->info().batch : options.import.batch;
    if (options.import.progress)
        options.import.progress(0.95, "training graph");
    REMAT_RETURN_IF_ERROR(training::validateTrainingOptions(options.training));
    training::BuildOptions build = options.build;
    build.attention = options.training.attention; // how attention trains is a training option
    Expected<training::TrainingGraph> tg = training::buildTrainingGraph(*p->forward, build);
    if (tg && !options.training.isDefault())
        tg = training::applyTrainingOptions(*tg, options.training, p->forward.get());
    if (!tg) {
        p->trainingStatus = tg.status();
        return std::shared_ptr<const Problem>(std::move(p));
    }
    p->training = std::make_shared<const training::TrainingGraph>(std::move(*tg));
    if (stop.stopRequested())
        return makeError(StatusCode::Cancelled, "loading cancelled");
    REMAT_RETURN_IF_ERROR(completeProblem(*p));
    return std::shared_ptr<const Problem>(std::move(p));
}

Expected<std::shared_ptr<const Problem>>
makeProblem(std::shared_ptr<const ir::Graph> forward,
            std::shared_ptr<const training::TrainingGraph> training,
            std::shared_ptr<const cost::Costs> costs)
{
    if (!training || !costs)
        return makeError(StatusCode::InvalidArgument, "no training graph");
    auto p = std::make_shared<Problem>();
    p->forward = std::move(forward);
    p->training = std::move(training);
    p->costs = std::move(costs);
    p->modelPath = p->training->info().modelPath;
    p->modelSha256 = p->training->info().modelSha256;
    p->batch = p->training->info().batch;
    REMAT_RETURN_IF_ERROR(completeProblem(*p));
    return std::shared_ptr<const Problem>(std::move(p));
}

} // namespace remat::core::pipeline
