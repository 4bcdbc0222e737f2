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
#include <limits>
#include <vector>

namespace remat::core::solvers::checkmate {

/// The memory model, equal to the simulator's for the schedules we lower: preloaded tensors are
/// resident throughout; outputs kept to the end (weight gradients) are resident from their op's
/// first run; every other output something reads (a "value") lives from its op's (re)run to its
/// last read before the op's next run; outputs no one reads are transient (allocated while the op
/// runs, freed right after); workspace counts while the op runs. Ops are recomputed whole; values
/// are retained and released one by one.
struct Problem
{
    int n = 0;
    // Values: consumed, freeable op outputs.
    int values = 0;
    std::vector<int> producer; ///< op producing value v
    std::vector<int64_t> valueBytes;
    std::vector<TensorId> valueTensor;
    std::vector<std::vector<int>> readers; ///< ops reading value v, ascending
    std::vector<int> valueLastUse;         ///< the last stage value v can be read in (-1: none)
    std::vector<std::vector<int>> inputs;  ///< values op k reads, ascending
    std::vector<std::vector<int>> outputs; ///< values op k produces
    // Ops.
    std::vector<std::vector<int>> deps;  ///< producer ops of k's input values, ascending
    std::vector<std::vector<int>> users; ///< ops reading any of i's values, ascending
    std::vector<int64_t> blockBytes;     ///< bytes of op i's values
    std::vector<int64_t> stickyBytes;    ///< requiredAtEnd outputs of op i (never freed)
    std::vector<int64_t> transientBytes; ///< outputs nobody reads + workspace: only while it runs
    std::vector<double> cost;            ///< seconds per run
    std::vector<char> recomputable;      ///< 0: ops with kept-to-end outputs, keep-pinned ops
    std::vector<int> lastUse;            ///< the last stage op i may usefully run in (-1: none)
    std::vector<char> keepPinned;        ///< values must stay resident until their last direct use
    std::vector<char>
        recomputePinned;       ///< values may not be retained into the first non-forward stage
    int64_t constantBytes = 0; ///< preloaded tensors
    int firstNonForward = 0;   ///< the stage of the loss / first backward op (n if none)
    std::vector<std::vector<TensorId>> blockTensors;     ///< op i's value tensors
    std::vector<std::vector<TensorId>> transientTensors; ///< freed right after the op
};

/// Errors: Unsupported for offload pins (use the offload solver).
Expected<Problem> buildProblem(const training::TrainingGraph &graph, const cost::Costs &costs,
                               const std::vector<Pin> &pins);

/// Dense 0/1 matrices, row = stage: R is stages x ops, S is stages x values.
struct Matrix
{
    int n = 0; ///< rows
    int cols = 0;
    std::vector<char> bits;
    explicit Matrix(int rows = 0, int columns = -1)
        : n(rows), cols(columns < 0 ? rows : columns), bits(size_t(rows) * size_t(cols), 0)
    {
    }
    char &at(int t, int i) { return bits[size_t(t) * size_t(cols) + size_t(i)]; }
    char at(int t, int i) const { return bits[size_t(t) * size_t(cols) + size_t(i)]; }
};

/// The R (stages x ops), S (stages x values) pair of a plan in stage form.
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

/// The R, S of a sequence in stage form (S = values live across each stage boundary under
/// liveness freeing). The sequence must come from sequenceFromR or equivalent.
StagePlan stagePlanFromSequence(const Problem &p, const std::vector<int> &seq);

struct Evaluation
{
    int64_t peakBytes = 0;
    double recomputeSeconds = 0;
    size_t recomputes = 0;
    int peakPosition = -1; ///< the run at which the peak happens (-1: before any)
};

/// The liveness sweep behind evaluate(), lowerSequence() and the local searches, with buffers
/// kept between calls (the greedy and the annealing score millions of sequences):
///   SequenceMemory m(p);
///   if (m.read(seq)) { int64_t peak = m.walk(seq).peakBytes; int q2 = m.lastRead(q, v); }
class SequenceMemory
{
public:
    explicit SequenceMemory(const Problem &p);

    /// Finds which run last reads each value of each run of `seq` (before the op runs again).
    /// False when some run reads an op that has not run before it.
    bool read(const std::vector<int> &seq);

    /// After read(): the run that last reads value `v` of run `q` (-1: nobody reads it).
    int lastRead(size_t q, int v) const { return m_last[size_t(m_start[q] + m_slot[size_t(v)])]; }

    struct Walk
    {
        int64_t peakBytes = 0;
        int peakPosition = -1; ///< the run the peak happens at (-1: before any)
        double overBudget = 0; ///< bytes above the budget, summed over the runs
    };
    /// After read(seq): memory run by run (preloaded bytes, sticky outputs from an op's first
    /// run, each value freed after its last read, transients while their op runs). Stops once
    /// the peak reaches `limit` (the peak is then some value >= limit).
    Walk walk(const std::vector<int> &seq, int64_t budget = std::numeric_limits<int64_t>::max(),
              int64_t limit = std::numeric_limits<int64_t>::max());

private:
    const Problem &m_p;
    std::vector<int> m_slot, m_start, m_last, m_current;
    std::vector<int64_t> m_freed;
    std::vector<char> m_ran;
};

/// Peak and recompute time of a compute sequence under liveness freeing: the simulator's figures
/// for lowerSequence(seq), without building the schedule.
Evaluation evaluate(const Problem &p, const std::vector<int> &seq);

/// Compute steps in sequence order; after each, Free of every value whose last read before its
/// op's next run this was, and of the op's transient outputs. Phase marks around forward/backward.
schedule::Schedule lowerSequence(const Problem &p, const training::TrainingGraph &graph,
                                 const std::vector<int> &seq);

/// A feasible plan under `budgetBytes` found greedily (evict the cheapest bytes first, then put
/// back what still fits), or the store-all plan when it fits. Empty when none was found within
/// `seconds`.
std::vector<int> greedyPlan(const Problem &p, int64_t budgetBytes, double seconds,
                            const StopToken &stop);

/// Makes the stage plan `s` fit: while the peak is over budget, stops retaining, from the peak's
/// stage up to its next direct reader, the retained value with the most bytes per second of
/// recompute that lowers the peak. Empty when it gets stuck or runs out of time.
std::vector<int> repairToBudget(const Problem &p, Matrix s, int64_t budgetBytes, double seconds,
                                const StopToken &stop);

/// Local improvement of an in-budget plan: tries to retain, instead of recompute, each
/// recomputed value (most expensive recompute first), keeping every change that still fits
/// and costs less. Returns the improved sequence (`seq` itself when nothing helps).
std::vector<int> retainWhereItFits(const Problem &p, const std::vector<int> &seq,
                                   int64_t budgetBytes, double seconds, const StopToken &stop);

/// Local search over evicted sets starting from `seq`'s (ops run more than once): takes blocks
/// back and evicts what is resident at the peak until the plan fits again, keeping every change
/// that costs less, with random restarts from the best plan until `seconds` are up. Every probe
/// is scored by evaluate. Returns `seq` when it finds nothing cheaper within the budget.
std::vector<int> improveEvictedSet(const Problem &p, const std::vector<int> &seq,
                                   int64_t budgetBytes, double seconds, const StopToken &stop);

/// Simulated annealing over which ops each stage recomputes (Checkmate's R; values live from
/// their run to their last read), from `seq` (first runs in op order), scored by recompute time
/// plus a penalty on bytes over the budget, for `seconds`. Returns the cheapest in-budget plan
/// found, or `seq` when nothing cheaper fits. Skipped (returns `seq`) when some op carries a
/// recompute pin.
std::vector<int> annealRecomputes(const Problem &p, const std::vector<int> &seq,
                                  int64_t budgetBytes, double seconds, const StopToken &stop);

/// The sequence that keeps every block from its first run to its last use except the `evicted`
/// ones, which are recomputed where needed (pins applied through solveR).
std::vector<int> sequenceForEvicted(const Problem &p, const std::vector<char> &evicted);

/// The same sequence built stage by stage from the recompute cascades, without the dense
/// stages x values matrices: time proportional to its runs (checkmate/greedy.cpp; the greedy's
/// probes use it).
std::vector<int> stagedSequenceForEvicted(const Problem &p, const std::vector<char> &evicted);

/// Store-all: every op once, in order.
std::vector<int> storeAllSequence(const Problem &p);

/// The lower peak of store-all and evicting every recomputable block (the min-peak warm start
/// and the plan shown when a budget is infeasible).
std::vector<int> lowestPeakSequence(const Problem &p);

/// Request checks shared by the Checkmate solvers (graph, costs, budget for MinTime).
Status checkRequest(const SolveRequest &request);
double settingNumber(const SolveRequest &request, const std::string &key, double fallback);
std::string settingText(const SolveRequest &request, const std::string &key,
                        const std::string &fallback);

/// About how many columns buildModel would create (R + S + FREE + U), without building it.
int64_t estimateColumns(const Problem &p);

/// Builds the Plan figures: lowers, simulates (the simulator's numbers are the reported ones).
Expected<Plan> finishPlan(const Problem &p, const SolveRequest &request,
                          const std::vector<int> &seq, const std::string &solverId);

} // namespace remat::core::solvers::checkmate
