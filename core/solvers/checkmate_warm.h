#pragma once
// The best plan the other registered solvers find, as a frontier-ordered compute sequence that
// checkmate-milp can start from (and answer with when the MILP cannot improve on it).
//   checkmate::WarmStart w = checkmate::bestHeuristicSequence(problem, request, 10.0);
//   if (!w.sequence.empty()) start = w.sequence;  // w.solver names where it came from

#include "core/solvers/checkmate_problem.h"
#include "core/solvers/solver.h"

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
    std::string solver;        ///< the solver whose plan it is ("greedy" for checkmate's own)
};

/// Checkmate's greedy plus every registered min-time solver other than checkmate-* and offload,
/// each under `seconds` / (number of solvers) (at least 1 s); plans are re-evaluated under
/// liveness freeing and the cheapest within the budget wins (also in the canonical stage form
/// when that form still fits, so it is a valid MILP start).
WarmStart bestHeuristicSequence(const Problem &p, const SolveRequest &request, double seconds);

} // namespace remat::core::solvers::checkmate
