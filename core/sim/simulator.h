#pragma once
// The single source of truth for peak memory and time.
//   Expected<Timeline> t = simulate(s, tg, costs);               // full timeline
//   Expected<Timeline> t = simulate(s, tg, costs, {.recordPoints = false}); // summary only, fast
// A schedule that does not validate returns the validator's error.

#include "core/cost/costs.h"
#include "core/schedule/observer.h"
#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/training/training_graph.h"

namespace remat::core::sim {

struct SimOptions
{
    bool recordPoints = true;   ///< fill Timeline::points (off for solver sweeps)
    bool validate = true;       ///< check the schedule while simulating (cheap; on by default)
    schedule::ScheduleObserver *observer = nullptr; ///< optional event sink
};

Expected<Timeline> simulate(const schedule::Schedule &schedule, const training::TrainingGraph &graph,
                            const cost::Costs &costs, const SimOptions &options = {});

} // namespace remat::core::sim
