#pragma once
// Events emitted while a Schedule is walked, by the simulator (predicted) and by the executors
// (measured), so one chart code draws both. Hooks are optional: the defaults do nothing.
//   struct Recorder : ScheduleObserver { void onStepEnd(const StepEvent &e) override { ... } };
//   sim::simulate(schedule, tg, costs, &recorder);

#include "core/schedule/schedule.h"

#include <array>
#include <cstdint>

namespace remat::core::schedule {

/// Memory categories of the timeline, in the order charts stack them.
enum class MemCategory : unsigned char {
    Weights,               ///< parameters, buffers, constants and the input batch
    MasterWeights,         ///< float32 master copies of the parameters (mixed precision)
    OptimizerState,        ///< optimizer state (momentum, Adam's exp_avg / exp_avg_sq, ...)
    WeightGrads,           ///< parameter gradients (and micro-batch gradient accumulators)
    StoredActivations,     ///< activations and saved state from their first compute
    RecomputedActivations, ///< activations and saved state from a recompute
    ActivationGrads,       ///< activation gradients, the loss and its seed
    Workspace,             ///< scratch of the op that is running
    OffloadInFlight,       ///< device memory held by a prefetch that has not been consumed yet
    WeightCasts, ///< autocast's lower-precision copies of weights (TensorRole::WeightCast)
    Count
};
inline constexpr size_t kMemCategoryCount = static_cast<size_t>(MemCategory::Count);
const char *memCategoryName(MemCategory c);
/// The category a tensor's bytes count in, from its role: the simulator and the executors both
/// ask here, so predicted and measured charts stack the same way. `recompute`: the tensor is the
/// output of a compute that already ran in this iteration.
MemCategory memCategoryOf(const training::Tensor &t, bool recompute);
/// The categories that are model state (weights, master weights, optimizer state, parameter
/// gradients): what is left after them is the activation memory.
bool isModelStateCategory(MemCategory c);
using CategoryBytes = std::array<int64_t, kMemCategoryCount>;

struct StepEvent
{
    StepIndex index;
    Step step;
    double startSeconds = 0; ///< on the step's lane (compute or copy)
    double endSeconds = 0;
    int64_t bytesInUse = 0;     ///< device bytes after the step (workspace excluded: transient)
    int64_t peakDuringStep = 0; ///< bytesInUse during the step (outputs + workspace included)
    bool recompute = false;     ///< a Compute of an op that already ran in this iteration
};

class ScheduleObserver
{
public:
    virtual ~ScheduleObserver() = default;
    virtual void onStepBegin(StepIndex, const Step &) {}
    virtual void onStepEnd(const StepEvent &) {}
    virtual void onTensorResident(TensorId, int64_t /*bytes*/) {}
    virtual void onTensorFreed(TensorId) {}
};

} // namespace remat::core::schedule
