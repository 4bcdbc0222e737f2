#pragma once
// What every graph-producing target runs after its reader: store-all and chen-sqrtn through the
// simulator, and the plan they give through writePlan -> parsePlan.

#include "core/cost/costs.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <cstddef>

namespace remat::fuzz {

/// Inputs are capped so one run cannot take seconds: bytes read, and ops scheduled.
inline constexpr size_t kMaxInputBytes = size_t(1) << 20;
inline constexpr size_t kMaxPipelineOps = 3000;

/// Simulates store-all, solves chen-sqrtn (min-peak), simulates its plan and round-trips it
/// through the plan file format. A broken invariant aborts (fail()); a solver's error is returned.
core::Status runSchedules(const core::training::TrainingGraph &graph,
                          const core::cost::Costs &costs);

} // namespace remat::fuzz
