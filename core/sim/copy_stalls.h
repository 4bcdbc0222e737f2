#pragma once
// Where the compute lane waits for the copy lane, step by step: a Compute whose input's prefetch
// has not landed, or a Free of a tensor whose offload is still copying. From the simulator's own
// step events (sim::simulate with an observer), so the figures are the simulator's.
//   Expected<CopyStalls> s = sim::copyStalls(plan.schedule, tg, costs);
//   s->perStep[i];  s->totalSeconds;  s->steps;

#include "core/cost/costs.h"
#include "core/schedule/schedule.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <vector>

namespace remat::core::sim {

struct CopyStalls
{
    std::vector<double> perStep; ///< seconds the compute lane waited at each step (0: none)
    double totalSeconds = 0;
    size_t steps = 0; ///< steps that waited
};

/// The compute lane's waits for copies. A schedule without Offload or Prefetch steps has none
/// (and is not simulated again). Errors: the simulator's, for a schedule it refuses.
Expected<CopyStalls> copyStalls(const schedule::Schedule &schedule,
                                const training::TrainingGraph &graph, const cost::Costs &costs);

} // namespace remat::core::sim
