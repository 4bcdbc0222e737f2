#pragma once
// Checkmate's view of a training graph (Jain et al., MLSys 2020): ops in their fixed topological
// order, stage t (re)computes some ops before computing op t for the first time ("frontier
// advancing"). Shared by checkmate-milp, checkmate-lp and their warm starts.
//   Expected<checkmate::Problem> p = checkmate::buildProblem(tg, costs, pins);
//   checkmate::Evaluation e = checkmate::evaluate(*p, checkmate::sequenceFromR(*p, R));
//   schedule::Schedule s = checkmate::lowerSequence(*p, tg, seq);

#include "core/cost/costs.h"
#include "core/schedule/schedule.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"

#include <cstdint>
#include <vector>

namespace remat::core::solvers::checkmate {

/// The memory model, op-granular and equal to the simulator's for the schedules we lower:
/// preloaded tensors are resident throughout; outputs kept to the end (weight gradients) are
/// resident from their op's first run; an op's other consumed outputs ("block") live from its
/// (re)compute to their last use; outputs no one reads are transient (allocated while it runs,
/// freed right after); workspace counts while the op runs.
struct Problem
{
    int n = 0;
    std::vector<std::vector<int>> deps;  ///< producer ops of k's non-preloaded inputs, ascending
    std::vector<std::vector<int>> users; ///< ops reading i's outputs, ascending
    std::vector<int64_t> blockBytes;     ///< consumed, freeable outputs of op i
    std::vector<int64_t> stickyBytes;    ///< requiredAtEnd outputs of op i (never freed)
    std::vector<int64_t> transientBytes; ///< outputs nobody reads + workspace: only while it runs
    std::vector<double> cost;            ///< seconds per run
    std::vector<char> recomputable;      ///< 0: ops with kept-to-end outputs, keep-pinned ops
    std::vector<int> lastUse;            ///< the last stage op i's block can be read in (-1: none)
    std::vector<char> keepPinned;        ///< block must stay resident until its last direct use
    std::vector<char> recomputePinned;   ///< block may not be retained into the first non-forward stage
    int64_t constantBytes = 0;           ///< preloaded tensors
    int firstNonForward = 0;             ///< the stage of the loss / first backward op (n if none)
    std::vector<std::vector<TensorId>> blockTensors;     ///< freed together
    std::vector<std::vector<TensorId>> transientTensors; ///< freed right after the op
};

/// Errors: Unsupported for offload pins (use the offload solver).
Expected<Problem> buildProblem(const training::TrainingGraph &graph, const cost::Costs &costs,
                               const std::vector<Pin> &pins);

/// Dense n x n 0/1 matrices, row = stage.
struct Matrix
{
    int n = 0;
    std::vector<char> bits;
    explicit Matrix(int size = 0) : n(size), bits(size_t(size) * size_t(size), 0) {}
    char &at(int t, int i) { return bits[size_t(t) * size_t(n) + size_t(i)]; }
    char at(int t, int i) const { return bits[size_t(t) * size_t(n) + size_t(i)]; }
};

/// The R, S pair of a plan in stage form.
struct StagePlan
{
    Matrix r, s;
};

/// Checkmate's closed-form R for a given S (the cheapest R that makes S valid), plus the fixes
/// our model needs: an op that may not be recomputed is retained from its first run instead.
/// `s` may be modified (those retentions are added).
Matrix solveR(const Problem &p, Matrix &s);

/// The compute sequence of R (row-major, skipping runs whose output nobody reads before the
/// op's next run; first runs are always kept).
std::vector<int> sequenceFromR(const Problem &p, const Matrix &r);

/// The R, S of a sequence in stage form (S = what is live across each stage boundary under
/// liveness freeing). The sequence must come from sequenceFromR or equivalent.
StagePlan stagePlanFromSequence(const Problem &p, const std::vector<int> &seq);

struct Evaluation
{
    int64_t peakBytes = 0;
    double recomputeSeconds = 0;
    size_t recomputes = 0;
};

/// Peak and recompute time of a compute sequence under liveness freeing: the simulator's figures
/// for lowerSequence(seq), without building the schedule.
Evaluation evaluate(const Problem &p, const std::vector<int> &seq);

/// Compute steps in sequence order; after each, Free of every block whose last read before its
/// next run this was, and of the op's transient outputs. Phase marks around forward/backward.
schedule::Schedule lowerSequence(const Problem &p, const training::TrainingGraph &graph,
                                 const std::vector<int> &seq);

/// A feasible plan under `budgetBytes` found greedily (evict the cheapest bytes first, then put
/// back what still fits), or the store-all plan when it fits. Empty when none was found within
/// `seconds`.
std::vector<int> greedyPlan(const Problem &p, int64_t budgetBytes, double seconds,
                            const StopToken &stop);

/// Store-all: every op once, in order.
std::vector<int> storeAllSequence(const Problem &p);

/// The lower peak of store-all and evicting every recomputable block (the min-peak warm start
/// and the plan shown when a budget is infeasible).
std::vector<int> lowestPeakSequence(const Problem &p);

/// Request checks shared by the Checkmate solvers (graph, costs, budget for MinTime).
Status checkRequest(const SolveRequest &request);
double settingNumber(const SolveRequest &request, const std::string &key, double fallback);
std::string settingText(const SolveRequest &request, const std::string &key, const std::string &fallback);

/// About how many columns buildModel would create (R + S + FREE + U), without building it.
int64_t estimateColumns(const Problem &p);

/// Builds the Plan figures: lowers, simulates (the simulator's numbers are the reported ones).
Expected<Plan> finishPlan(const Problem &p, const SolveRequest &request, const std::vector<int> &seq,
                          const std::string &solverId);

} // namespace remat::core::solvers::checkmate
