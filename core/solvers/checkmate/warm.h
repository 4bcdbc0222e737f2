#pragma once
// The best plan the other registered solvers find, as a frontier-ordered compute sequence that
// checkmate-milp can start from (and answer with when the MILP cannot improve on it).
//   checkmate::WarmStart w = checkmate::bestHeuristicSequence(problem, request, 10.0);
//   if (!w.sequence.empty()) start = w.sequence;  // w.solver names where it came from

#include "core/solvers/checkmate/problem.h"
#include "core/solvers/solver.h"

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace remat::core::solvers::checkmate {

/// The compute steps of `s` in order, or empty when first runs are not in op order (the stage
/// form needs op t first run in stage t) or some op never runs.
std::vector<int> sequenceFromSchedule(const Problem &p, const schedule::Schedule &s);

struct WarmStart
{
    std::vector<int> sequence; ///< empty: nothing fits
    Evaluation evaluation;
    std::string solver; ///< the solver whose plan it is ("greedy" for checkmate's own)
};

/// Checkmate's greedy plus every registered min-time solver other than checkmate-* and offload,
/// each under `seconds` / (number of solvers) (at least 1 s); plans are re-evaluated under
/// liveness freeing and the cheapest within the budget wins (also in the canonical stage form
/// when that form still fits, so it is a valid MILP start).
WarmStart bestHeuristicSequence(const Problem &p, const SolveRequest &request, double seconds);

/// Whether `a` answers `request`'s objective better than `b`: min-peak, a lower simulated peak
/// (then less time); min-time, within the budget and faster (then a lower peak). A plan that is
/// not optimal or feasible never wins.
bool betterForObjective(const Plan &a, const Plan &b, const SolveRequest &request);

/// The fallback of checkmate-milp and checkmate-lp when their model is too large for CBC or
/// the time runs out: `own` is compared with the best plan of every registered solver other
/// than checkmate-* and offload (same objective, budget and pins; each under an equal share of
/// `seconds`, at least 0.1 s). When one of those is better, it is returned under `solverId`'s
/// name with a note naming it; otherwise `own` unchanged. Skipped after a cancel.
Expected<Plan> withRegisteredFallback(Expected<Plan> own, const SolveRequest &request,
                                      const std::string &solverId, double seconds);

/// The search policy of checkmate-milp and checkmate-lp: runs `searchOwn`; a proven optimum, an
/// error whose code is in `refusals` (a request the solver does not serve) or the setting
/// fallback=off returns its answer as it is; otherwise withRegisteredFallback() gets what is
/// left of the time limit, at most a quarter of it and at least 0.5 s.
Expected<Plan> ownThenRegistered(const SolveRequest &request, const std::string &solverId,
                                 const std::function<Expected<Plan>()> &searchOwn,
                                 std::initializer_list<StatusCode> refusals);

} // namespace remat::core::solvers::checkmate
