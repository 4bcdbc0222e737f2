#pragma once
// A proven lower bound on the recompute time of any frontier-ordered plan (first runs in op
// order, as in Checkmate's MILP) under a budget, cheap enough for graphs of thousands of ops.
//   checkmate::FrontierBound lb = checkmate::frontierLowerBound(problem, budget, {.seconds = 5});
//   if (lb.infeasible) ...;  plan.bound = lb.bound;   // recompute seconds, always valid

#include "core/solvers/checkmate/problem.h"
#include "core/util/stop_token.h"

#include <cstdint>

namespace remat::core::solvers::checkmate {

struct FrontierBoundOptions
{
    double seconds = 5;     ///< time for the subgradient search
    double upperBound = -1; ///< a known plan's recompute seconds (steers the step size)
    int maxIterations = 20000;
    StopToken stop;
    /// Also turn relaxed solutions into plans (retain what the relaxation keeps live, R by
    /// solveR), at the budget and at tightened ones, keeping the cheapest that fits.
    bool plans = false;
    double planSeconds = 0; ///< extra time for the tightened passes
};

struct FrontierBound
{
    double bound = 0;        ///< recompute seconds, valid for every frontier-ordered plan
    bool infeasible = false; ///< some first run cannot fit whatever is dropped
    int iterations = 0;
    std::vector<int> sequence; ///< the cheapest in-budget plan found (plans), empty: none
    Evaluation evaluation;
};

/// The relaxation keeps only what must hold at each first run ("frontier" t): op t's outputs,
/// workspace, the preloaded and kept-to-end bytes and every value live at that moment fit the
/// budget; a value read by op t is live there; a value live again at frontier t after being
/// dead at frontier t-1 needs one run of its producer in between. Recomputation cascades and the
/// memory of recompute runs are dropped, so the optimum of the relaxation is <= every plan's
/// recompute time. The relaxation is solved through its Lagrangian dual (the budget rows
/// priced out; each value is then a two-state shortest path), whose every value is a bound.
FrontierBound frontierLowerBound(const Problem &p, int64_t budgetBytes,
                                 const FrontierBoundOptions &options);

} // namespace remat::core::solvers::checkmate
