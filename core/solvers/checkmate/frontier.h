#pragma once
// The frontier relaxation (checkmate/bound.h) plus the recompute cascade, solved as a small
// MILP on CBC: a stronger proven lower bound than its Lagrangian dual, on far fewer columns
// than Checkmate's model. Only in builds with CBC (checkmate/frontier_cbc.cpp).
//   FrontierMilpResult r = checkmate::frontierMilpBound(problem, budget, warmCost, 10.0, stop);
//   if (r.provedCutoff) ...;  // no frontier-ordered plan is cheaper than warmCost

#include "core/solvers/checkmate/problem.h"
#include "core/util/stop_token.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace remat::core::solvers::checkmate {

struct FrontierMilpResult
{
    double bound = 0;          ///< recompute seconds, valid for every frontier-ordered plan
    bool infeasible = false;   ///< no frontier-ordered plan fits the budget
    bool provedCutoff = false; ///< nothing is cheaper than the cutoff given
    bool solved = false;       ///< the relaxation was solved to optimality (bound = its optimum)
    bool shortSpans = false;   ///< the looser, smaller form for large graphs
    size_t columns = 0, rows = 0;
    double rootSeconds = 0; ///< building the model and its root LP (the rest is CBC's search)
};

/// About how many columns frontierMilpBound builds.
int64_t frontierMilpColumns(const Problem &p);

/// `cutoffSeconds` (> 0): the recompute time of a known plan; CBC then searches only for
/// cheaper points of the relaxation, and finding none proves that plan optimal among
/// frontier-ordered plans. Within `seconds` (wall clock); the bound is valid whenever it stops.
/// `lpMethod`: the root LP's simplex, "dual" (default) or "primal"; `cbcOptions`: extra CBC
/// options, space separated.
FrontierMilpResult frontierMilpBound(const Problem &p, int64_t budgetBytes, double cutoffSeconds,
                                     double seconds, const StopToken &stop,
                                     const std::string &lpMethod = "dual",
                                     const std::string &cbcOptions = "");

} // namespace remat::core::solvers::checkmate
