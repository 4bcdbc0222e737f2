#pragma once
// Tensor streaming (after Scorch and POFO): weights and chosen activations live in host memory
// between uses and come back on the copy lane ahead of use, combined with recomputation.
//   std::unique_ptr<Solver> s = solvers::makeOffloadSolver();
//   SolveRequest req{.graph = &tg, .costs = &costs, .objective = Objective::MinTime, .budgetBytes = b};
//   Expected<Plan> p = s->solve(req);  // Offload / Prefetch / Free steps; simulated copy overlap

#include "core/solvers/solver.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace remat::core::solvers {

namespace checkmate {
struct Problem;
}

/// `offload`. Settings: "recompute" ("auto" default: also try Checkmate-greedy recomputation
/// under fractions of the budget, min-time only as min-peak has none; "never"),
/// "stream-weights" ("auto" default, "always", "never").
std::unique_ptr<Solver> makeOffloadSolver();

/// checkmate::sequenceForEvicted built stage by stage from the recompute cascades, without the
/// dense stages x values matrices: the same sequence in time proportional to its runs. The
/// offload solver's recomputation greedy is built on it (exposed for the agreement test).
std::vector<int> offloadSequenceForEvicted(const checkmate::Problem &p, const std::vector<char> &evicted);

/// checkmate::greedyPlan over offloadSequenceForEvicted: the same plan when neither runs out of
/// `seconds`.
std::vector<int> offloadGreedyPlan(const checkmate::Problem &p, int64_t budgetBytes, double seconds,
                                   const StopToken &stop);

} // namespace remat::core::solvers
