#pragma once
// Helpers the chain solvers share: pins on boundaries, and checkpoint sets from boundaries.
//   ChainPins cp = chainPins(view, facts, request.pins);
//   std::vector<TensorId> keep = keepFromBoundaries(view, chosen);

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
