#include "core/schedule/schedule.h"

#include "core/schedule/observer.h"
#include "core/schedule/step_text.h"

#include <fmt/format.h>

namespace remat::core::schedule {

using training::TrainingGraph;

const char *stepKindName(StepKind kind)
{
    switch (kind) {
    case StepKind::Compute: return "compute";
    case StepKind::Free: return "free";
    case StepKind::Offload: return "offload";
    case StepKind::Prefetch: return "prefetch";
    case StepKind::Phase: return "phase";
    }
    return "?";
}

const char *phaseMarkName(PhaseMark mark)
{
    switch (mark) {
    case PhaseMark::ForwardBegin: return "forward-begin";
    case PhaseMark::BackwardBegin: return "backward-begin";
    case PhaseMark::End: return "end";
    }
    return "?";
}

const char *memCategoryName(MemCategory c)
{
    switch (c) {
    case MemCategory::Weights: return "weights";
    case MemCategory::MasterWeights: return "master_weights";
    case MemCategory::OptimizerState: return "optimizer_state";
    case MemCategory::WeightGrads: return "weight_grads";
    case MemCategory::StoredActivations: return "stored_activations";
    case MemCategory::RecomputedActivations: return "recomputed_activations";
    case MemCategory::ActivationGrads: return "activation_grads";
    case MemCategory::Workspace: return "workspace";
    case MemCategory::OffloadInFlight: return "offload_in_flight";
    case MemCategory::WeightCasts: return "weight_casts";
    case MemCategory::Count: break;
    }
    return "?";
}

MemCategory memCategoryOf(const training::Tensor &t, bool recompute)
{
    using training::TensorRole;
    switch (t.role) {
    case TensorRole::MasterWeight: return MemCategory::MasterWeights;
    case TensorRole::OptimizerState: return MemCategory::OptimizerState;
    case TensorRole::ParameterGrad: return MemCategory::WeightGrads;
    case TensorRole::WeightCast: return MemCategory::WeightCasts;
    case TensorRole::ActivationGrad:
    case TensorRole::Loss: return t.preloaded ? MemCategory::Weights : MemCategory::ActivationGrads;
    default:
        if (t.preloaded)
            return MemCategory::Weights;
        return recompute ? MemCategory::RecomputedActivations : MemCategory::StoredActivations;
    }
}

bool isModelStateCategory(MemCategory c)
{
    return c == MemCategory::Weights || c == MemCategory::MasterWeights ||
           c == MemCategory::OptimizerState || c == MemCategory::WeightGrads;
}

namespace {

/// The step's subject, or "#<id>" when the id is out of range.
std::string targetName(const Step &step, const TrainingGraph &graph)
{
    switch (step.kind) {
    case StepKind::Compute:
        if (step.target >= 0 && static_cast<size_t>(step.target) < graph.opCount())
            return graph.op(step.op()).name;
        return fmt::format("#{}", step.target);
    case StepKind::Free:
    case StepKind::Offload:
    case StepKind::Prefetch:
        if (step.target >= 0 && static_cast<size_t>(step.target) < graph.tensorCount())
            return graph.tensor(step.tensor()).name;
        return fmt::format("#{}", step.target);
    case StepKind::Phase:
        if (step.target >= 0 && step.target <= static_cast<int32_t>(PhaseMark::End))
            return phaseMarkName(step.mark());
        return fmt::format("#{}", step.target);
    }
    return "?";
}

} // namespace

std::string describeStep(const Schedule &schedule, size_t index, const TrainingGraph &graph)
{
    const Step &step = schedule.steps[index];
    return fmt::format("step {} ({} {})", index, stepKindName(step.kind), targetName(step, graph));
}

std::string notResidentReason(int32_t freedAtStep, int32_t offloadedAtStep)
{
    if (freedAtStep < 0)
        return "never computed";
    if (offloadedAtStep >= 0)
        return fmt::format("offloaded at step {} and freed at step {}; prefetch it first",
                           offloadedAtStep, freedAtStep);
    return fmt::format("freed at step {}", freedAtStep);
}

std::string printSchedule(const Schedule &schedule, const TrainingGraph &graph)
{
    std::string out;
    out.reserve(schedule.steps.size() * 48);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
        const Step &step = schedule.steps[i];
        out +=
            fmt::format("{:>5}  {:<9} {}\n", i, stepKindName(step.kind), targetName(step, graph));
    }
    return out;
}

std::vector<unsigned char> preloadedOnHost(const Schedule &schedule, const TrainingGraph &graph)
{
    std::vector<unsigned char> onHost(graph.tensorCount(), 0), seen(graph.tensorCount(), 0);
    for (const Step &step : schedule.steps) {
        if (step.kind != StepKind::Free && step.kind != StepKind::Offload &&
            step.kind != StepKind::Prefetch)
            continue;
        if (step.target < 0 || static_cast<size_t>(step.target) >= graph.tensorCount())
            continue;
        const size_t t = static_cast<size_t>(step.target);
        if (seen[t])
            continue;
        seen[t] = 1;
        onHost[t] = graph.tensor(step.tensor()).preloaded && step.kind == StepKind::Prefetch;
    }
    return onHost;
}

Status validate(const Schedule &schedule, const TrainingGraph &graph)
{
    // The same rules as the simulator's inline check (sim/simulator.cpp), without time or bytes.
    const size_t tensorCount = graph.tensorCount();
    std::vector<unsigned char> resident(tensorCount, 0);
    std::vector<int32_t> freedAt(tensorCount, -1), offloadedAt(tensorCount, -1);
    std::vector<unsigned char> ran(graph.opCount(), 0);
    // Preloaded tensors whose first copy/free step is a Prefetch start in host memory (weight
    // streaming): they have a host copy and are not resident until prefetched.
    const std::vector<unsigned char> onHost = preloadedOnHost(schedule, graph);
    std::vector<unsigned char> hostCopy(onHost);
    for (const training::Tensor &t : graph.tensors())
        resident[t.id.index()] = t.preloaded && !onHost[t.id.index()] ? 1 : 0;

    const auto fail = [&](size_t i, const std::string &what) {
        return makeError(StatusCode::InvalidArgument,
                         describeStep(schedule, i, graph) + ": " + what);
    };

    for (size_t i = 0; i < schedule.steps.size(); ++i) {
        const Step &step = schedule.steps[i];
        switch (step.kind) {
        case StepKind::Compute: {
            if (step.target < 0 || static_cast<size_t>(step.target) >= graph.opCount())
                return fail(i, fmt::format("op id {} out of range (graph has {} ops)", step.target,
                                           graph.opCount()));
            const training::Op &op = graph.op(step.op());
            for (TensorId in : op.inputs) {
                if (!resident[in.index()])
                    return fail(i, fmt::format("input '{}' is not resident ({})",
                                               graph.tensor(in).name,
                                               notResidentReason(freedAt[in.index()],
                                                                 offloadedAt[in.index()])));
            }
            const bool recompute = ran[op.id.index()] != 0;
            for (TensorId out : op.outputs) {
                if (resident[out.index()] && !recompute)
                    return fail(
                        i, fmt::format("output '{}' is already resident", graph.tensor(out).name));
                resident[out.index()] = 1;
            }
            ran[op.id.index()] = 1;
            break;
        }
        case StepKind::Free:
        case StepKind::Offload:
        case StepKind::Prefetch: {
            if (step.target < 0 || static_cast<size_t>(step.target) >= tensorCount)
                return fail(i, fmt::format("tensor id {} out of range (graph has {} tensors)",
                                           step.target, tensorCount));
            const size_t t = static_cast<size_t>(step.target);
            const training::Tensor &tensor = graph.tensor(step.tensor());
            if (step.kind == StepKind::Prefetch) {
                if (offloadedAt[t] < 0 && !hostCopy[t])
                    return fail(
                        i, fmt::format("'{}' has no host copy (never offloaded)", tensor.name));
                if (resident[t])
                    return fail(i, fmt::format("'{}' is already resident", tensor.name));
                resident[t] = 1;
                break;
            }
            if (!resident[t])
                return fail(i, fmt::format("'{}' is not resident ({})", tensor.name,
                                           notResidentReason(freedAt[t], offloadedAt[t])));
            // A preloaded tensor may leave the device only when a host copy keeps it.
            if (tensor.preloaded && step.kind == StepKind::Free && !hostCopy[t] &&
                offloadedAt[t] < 0)
                return fail(i, fmt::format("'{}' is a preloaded {} without a host copy: offload it "
                                           "before freeing it",
                                           tensor.name, training::tensorRoleName(tensor.role)));
            if (step.kind == StepKind::Offload) {
                if (offloadedAt[t] >= 0 || hostCopy[t])
                    return fail(i,
                                fmt::format("'{}' already has a host copy (offloaded at step {})",
                                            tensor.name, offloadedAt[t]));
                offloadedAt[t] = static_cast<int32_t>(i);
            } else {
                resident[t] = 0;
                freedAt[t] = static_cast<int32_t>(i);
            }
            break;
        }
        case StepKind::Phase:
            if (step.target < 0 || step.target > static_cast<int32_t>(PhaseMark::End))
                return fail(i, fmt::format("unknown phase mark {}", step.target));
            break;
        default: return fail(i, fmt::format("unknown step kind {}", static_cast<int>(step.kind)));
        }
    }
    for (const training::Tensor &t : graph.tensors()) {
        if (t.requiredAtEnd && !resident[t.id.index()])
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format("end of schedule: required tensor '{}' is not resident ({})", t.name,
                            notResidentReason(freedAt[t.id.index()], offloadedAt[t.id.index()])));
    }
    return Status::ok();
}

} // namespace remat::core::schedule
