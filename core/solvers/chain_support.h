#pragma once
// Helpers the chain solvers share: pins on boundaries, and checkpoint sets from boundaries.
//   ChainPins cp = chainPins(view, facts, request.pins);
//   std::vector<TensorId> keep = keepFromBoundaries(view, chosen);
//   refineCuts(pb, view, cp, chosen, 4 * n);   // local search on the simulated plans

#include "core/solvers/lowering.h"

#include <vector>

namespace remat::core::solvers {

struct ChainPins
{
    std::vector<char> forced;    ///< boundary must be kept (a keep pin on it)
    std::vector<char> forbidden; ///< boundary may not be kept (a recompute pin on it)
};

ChainPins chainPins(const ChainView &view, const GraphFacts &facts, const std::vector<Pin> &pins);

/// The union of the chosen boundaries' tensor sets.
std::vector<TensorId> keepFromBoundaries(const ChainView &view, const std::vector<int> &chosen);

class PlanBuilder;

/// Local search on a set of kept cuts (sorted boundary indices, pins respected): walks the
/// boundaries trying one move at each (drop a kept cut, move it to a neighbouring boundary, or
/// add a cut), lowers and simulates every candidate through pb.offerCheckpoints (so the builder
/// keeps the best plan it sees), and takes a move when the simulated plan is better for the
/// request's objective: MinPeak a lower peak (then less recompute); MinTime less recompute
/// under the budget, or a lower peak while over it. Passes repeat until one takes no move, at
/// most maxEvaluations candidates are simulated, or pb says stop. Returns the cuts reached;
/// false in `stopped` when the walk ended on its own.
Expected<std::vector<int>> refineCuts(PlanBuilder &pb, const ChainView &view, const ChainPins &cp,
                                      std::vector<int> chosen, int maxEvaluations,
                                      bool *stopped = nullptr);

/// The ops of each stage of an articulation chain: forward ops by range, backward ops by the
/// stage ChainView::stageOfOp gives them (in stored order), and the loss ops.
struct StageOps
{
    std::vector<std::vector<OpId>> forward, backward;
    std::vector<OpId> loss;
};
StageOps stageOps(const ChainView &view, const GraphFacts &facts);

/// Appends a stage's forward ops (and the loss after the last stage, once) to a sequence.
void appendForward(const StageOps &ops, size_t stage, std::vector<OpId> *seq, bool *lossDone);
void appendBackward(const StageOps &ops, size_t stage, std::vector<OpId> *seq);

/// Error text when a graph has no chain a chain-only solver can use.
Status requireChain(const ChainView &view, const std::string &solverId);

} // namespace remat::core::solvers
