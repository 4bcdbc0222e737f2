#pragma once
// The single source of truth for peak memory and time.
//   Expected<Timeline> t = simulate(s, tg, costs);               // full timeline
//   Expected<Timeline> t = simulate(s, tg, costs, {.recordPoints = false}); // summary only, fast
// A schedule that does not validate returns the validator's error.
//
// Memory model (device bytes; every figure the product shows comes from here):
// - Preloaded tensors (parameters, buffers, constants, the input, optimizer state and master
//   weights) are resident before step 0, in category Weights (gradient accumulators of
//   micro-batches: WeightGrads), and may not be freed or offloaded. Timeline::optimizerStateBytes
//   and masterWeightBytes say how much of Weights the optimizer state and master weights are.
// - Update ops of the optimizer step (Phase::Optimizer) update in place: no outputs, their
//   transient buffers are workspace, not counted in activationPeakBytes.
// - Compute(op) allocates each output that is not already resident (a recompute of a multi-output
//   op keeps the outputs still resident). Category: StoredActivations for the first compute of an
//   Activation / SavedState (or Constant) tensor, RecomputedActivations for a recompute of one,
//   ActivationGrads for ActivationGrad / Loss tensors, WeightGrads for ParameterGrad tensors.
//   op.workspaceBytes is held during the step only.
//   peakDuringStep = bytes in use before + newly allocated outputs + workspace;
//   bytesInUse (after) = bytes in use before + newly allocated outputs.
// - Free releases the tensor's bytes at that step.
// - Offload starts a device->host copy on the copy lane; the device bytes stay until a Free, and
//   the host copy is kept to the end of the iteration (hostPeakBytes counts it), so one offload
//   may serve several prefetches. A Free of a tensor whose offload is still copying makes the
//   compute lane wait for the copy (its memory cannot be reused before).
// - Prefetch allocates the bytes on the device at once (category OffloadInFlight until the first
//   op that reads it runs, StoredActivations after) and copies host->device on the copy lane; an
//   op that reads it starts no earlier than the copy ends.
// Time: two lanes, compute and copy, each in order. A Compute starts when the compute lane is
// free and its inputs are ready, and lasts costs.opSeconds[op]. A copy starts when the copy lane is
// free and the compute lane has reached the step that issues it (for a prefetch, also after its
// offload finished), and lasts bytes / bandwidth. Free and Phase take no time.
// Timeline::activationPeakBytes = max over steps of peakDuringStep minus the Weights and
// WeightGrads bytes at that step. oneComputeSeconds = the sum of opSeconds over all ops.

#include "core/cost/costs.h"
#include "core/schedule/observer.h"
#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/training/training_graph.h"

namespace remat::core::sim {

struct SimOptions
{
    bool recordPoints = true; ///< fill Timeline::points (off for solver sweeps)
    bool validate = true;     ///< check the schedule while simulating (cheap; on by default)
    schedule::ScheduleObserver *observer = nullptr; ///< optional event sink
};

Expected<Timeline> simulate(const schedule::Schedule &schedule,
                            const training::TrainingGraph &graph, const cost::Costs &costs,
                            const SimOptions &options = {});

} // namespace remat::core::sim
