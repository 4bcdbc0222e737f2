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
#include <vector>

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

namespace remat::core::solvers::checkmate {

/// The cut relaxation: the frontier relaxation with the recompute cascade, kept only at a subset
/// of first runs ("cuts") so that graphs far too large for frontierMilpBound still get a bound
/// with the cascade. C_k is the moment of op t_k's first run (t_0 < t_1 < ... ascending); window
/// k holds every run strictly between C_{k-1} and C_k (window 0 starts with the step, window K
/// ends with it). Variables: x[v,k] (binary: value v resident at C_k; a value op t_k itself
/// produces is counted in t_k's own bytes), r[i,k] (continuous in [0,1]: op i runs at least once
/// in window k besides its first run; cost: op i's run time). Rows:
///   x[v,k] <= x[v,k-1] + r[prod(v),k]      resident at C_k: resident at C_{k-1} or made between;
///   x[v,k] = 1 where t_k reads v;
///   x[u,k-1] + r[prod(u),k] >= 1           for each input u of a first run inside window k;
///   r[i,k] <= x[u,k-1] + r[prod(u),k]      for each input u of op i (the cascade);
///   sum_v bytes(v) x[v,k] <= budget - (preloaded + kept-to-end so far + t_k's outputs,
///                                       unread outputs and workspace)      at every cut;
/// and per cut k, with q[i,k] in [0,1] (no cost: op i, first run before C_k, runs again after):
///   x[v,k] + q[prod(v),k] >= 1             v read by some first run after C_k;
///   q[i,k] <= x[u,k] + q[prod(u),k]        for each input u of op i;
///   q[i,k] <= sum over windows w > k of r[i,w];
///   x[v,k] + x[u,k] + sum_{w=k+1..k'} r[prod(u),w] >= 1   u an input of prod(v), k' the window
///                                          of v's next reader after C_k.
/// Validity: take any frontier-ordered plan that fits the budget (first runs in op order, each
/// run's inputs resident when it runs, the simulator's memory) and set x, r from it, q[i,k] = 1
/// where op i runs after C_k. Every input of a run in window k was either resident at C_{k-1} and
/// kept, or made in window k before the run (by a run of its producer there, or its producer's
/// first run there, or at C_{k-1}); residency at C_k likewise; a value missing at C_k and read
/// later is made by a run of its producer after C_k (before that read), whose inputs are resident
/// since C_k or made after C_k (before that run); the memory at op t_k's first run is at least
/// the left side plus the fixed bytes. Runs in distinct windows are distinct runs, so the
/// objective is at most the plan's recompute time. Memory inside windows and the order of runs
/// within a window are dropped, and useless runs after an op's last use (Problem::lastUse) only
/// add cost. So the relaxation's optimum, its LP relaxation's and any bound CBC proves on it are
/// <= the recompute time of every frontier-ordered plan in budget, whichever cuts are chosen.
/// More cuts tighten the 0/1 relaxation; the LP's rows per cut (q, the last row) keep it from
/// loosening much with more cuts (without them, 116 cuts spread evenly gave ResNet-152 b16 at
/// 760 MiB 0.00355 s, the one cut just after the loss 0.00647 s).
struct CutBoundResult
{
    double bound = 0;        ///< recompute seconds, valid for every frontier-ordered plan
    bool infeasible = false; ///< no frontier-ordered plan fits the budget
    bool lpSolved = false;   ///< the LP relaxation was solved to optimality
    bool solved = false;     ///< the relaxation itself was solved (bound = its optimum)
    int cuts = 0;
    size_t columns = 0, rows = 0;
    double lpBound = 0;     ///< the LP relaxation's optimum (recompute seconds)
    double rootSeconds = 0; ///< building the model and solving its LP
};

/// The cut relaxation's LP by Clp's dual simplex, then CBC's branch and bound on it for the rest
/// of `seconds` (wall clock; the bound is valid whenever it stops). `cutoffSeconds` (> 0): a
/// known plan's recompute time, which CBC's search may prove optimal among frontier-ordered
/// plans (bound = cutoff). Honours `stop` within a simplex iteration or a CBC node.
/// `branch` false: the LP alone. `cuts`: first runs in any order (repeats and ones outside the
/// step are dropped).
CutBoundResult cutBound(const Problem &p, int64_t budgetBytes, const std::vector<int> &cuts,
                        double cutoffSeconds, double seconds, const StopToken &stop,
                        bool branch = true);

struct CutSearchResult
{
    double bound = 0; ///< the best of the bounds below: valid for every frontier-ordered plan
    bool infeasible = false; ///< no frontier-ordered plan fits the budget
    bool solved = false;     ///< CBC solved the relaxation at the best cut set
    bool provedCutoff = false;
    std::vector<int> cuts; ///< the cut set of the best LP
    int lps = 0;           ///< LPs solved
    double searchSeconds = 0;
};

/// Every cut set gives a valid bound, the LP is not monotone in the cut set, and many cuts make
/// large LPs (ResNet-152 b16: 16 cuts over the backward pass take about 10 s and bound no more
/// than the best single cut). So: single cuts on a grid of first runs and around the best, then
/// one cut more at a time while that helps (from the grid and the first runs halfway between two
/// cuts of the set), each set's LP solved on its own and the best kept
/// (up to 80% of `seconds`); then CBC on the best set for the rest.
CutSearchResult searchCutBound(const Problem &p, int64_t budgetBytes, double cutoffSeconds,
                               double seconds, const StopToken &stop);

} // namespace remat::core::solvers::checkmate
