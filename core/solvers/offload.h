#pragma once
// Tensor streaming (after Scorch and POFO): weights and chosen activations live in host memory
// between uses and come back on the copy lane ahead of use, combined with recomputation.
//   std::unique_ptr<Solver> s = solvers::makeOffloadSolver();
//   SolveRequest req{.graph = &tg, .costs = &costs, .objective = Objective::MinTime, .budgetBytes = b};
//   Expected<Plan> p = s->solve(req);  // Offload / Prefetch / Free steps; simulated copy overlap

#include "core/solvers/solver.h"

#include <memory>

namespace remat::core::solvers {

/// `offload`. Settings: "recompute" ("auto" default: also try Checkmate-greedy recomputation
/// under fractions of the budget, min-time only as min-peak has none; "never"),
/// "stream-weights" ("auto" default, "always", "never").
std::unique_ptr<Solver> makeOffloadSolver();

} // namespace remat::core::solvers
