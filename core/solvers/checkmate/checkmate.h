#pragma once
// Checkmate (Jain et al., MLSys 2020) on COIN-OR CBC: the MILP over R/S/FREE/U with
// frontier-advancing stages, and its LP relaxation with two-phase rounding.
//   std::unique_ptr<Solver> milp = solvers::makeCheckmateMilpSolver(); // nullptr without CBC
//   SolveRequest req{.graph = &tg, .costs = &costs, .objective = Objective::MinTime,
//                    .budgetBytes = b, .timeLimitSeconds = 60};   Expected<Plan> p = milp->solve(req);

#include "core/solvers/solver.h"

#include <memory>

namespace remat::core::solvers {

/// `checkmate-milp`. Settings: "threads" (CBC threads, default 1), "log" (CBC log level, 0),
/// "warm-start" ("greedy" default: the best of the greedy, the other registered solvers and the
/// frontier relaxation's plans; "none"), "max-columns" (above this no CBC: the warm start with the
/// frontier bound, default 150000), "cbc" (extra CBC options, default "-preprocess off
/// -heuristicsOnOff off"), "incumbent" ("cutoff" default, "mipstart"), "frontier-plans" ("on"),
/// "frontier-milp" ("on"), "frontier-milp-columns" (200000), "frontier-lp" ("dual", "primal"),
/// "cut-bound" ("on": above frontier-milp-columns, the cascade at a few first runs instead),
/// "eviction-search" ("on"), "eviction-search-seconds" and "anneal-seconds" (unset: a share of
/// the time limit; 0 turns the annealing over recomputes off).
/// Min-peak with SolveRequest::maxOverheadPercent P (Capabilities::maxOverhead): the MILP gets a
/// time row (recompute seconds summed over R at most P% of store-all's step on the graph it is
/// given); above "max-columns" a bisection of the budget over its own min-time plans, then the
/// best plan walked down the budget while its recompute keeps the limit (milp_cbc.cpp).
/// Returns nullptr when the build has no CBC.
std::unique_ptr<Solver> makeCheckmateMilpSolver();

/// `checkmate-lp`. Settings: "eps" (comma list of budget margins, default "0,0.05,0.1,0.2,0.3"),
/// "thresholds" (comma list, default 0.1..0.9), "max-columns". Returns nullptr without CBC.
std::unique_ptr<Solver> makeCheckmateLpSolver();

/// True when this build links CBC (both solvers above exist).
bool checkmateAvailable();

} // namespace remat::core::solvers
