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

/// One way to run a stage whose tape is kept (Rockmate's per-block options, Zhao et al. ICML
/// 2023, found greedily here): the forward ops in `recompute` drop their outputs after their
/// last forward use, and the stage's backward recomputes each just before the first backward op
/// that reads it (from the stage input and the tape that is kept), so a smaller tape costs
/// extra forward time inside that backward.
struct StageOption
{
    std::vector<OpId> recompute;     ///< forward ops of the stage recomputed in its backward
    std::vector<OpId> backward;      ///< the stage's backward ops with those recomputes in place
    int64_t tapeBytes = 0;           ///< tape kept after the forward (output boundary excluded)
    int64_t recomputedPeakBytes = 0; ///< most recomputed bytes alive at once in the backward
    /// Peak of the stage's backward alone: tape, output, its gradient, recomputed tensors and
    /// activation gradients, each freed after its last read in the sequence (weight gradients
    /// and the caller's stage input left out).
    int64_t backwardPeakBytes = 0;
    double recomputeSeconds = 0;
};

/// The ops of each stage of an articulation chain: forward ops by range, backward ops by the
/// stage ChainView::stageOfOp gives them (in stored order), and the loss ops. `options` is empty
/// until addStageOptions fills it (then options[k][0] keeps stage k's whole tape).
struct StageOps
{
    std::vector<std::vector<OpId>> forward, backward;
    std::vector<OpId> loss;
    std::vector<std::vector<StageOption>> options;
};
StageOps stageOps(const ChainView &view, const GraphFacts &facts);

/// Fills ops.options: per stage, option 0 keeps the whole tape; then up to maxOptions - 1 options
/// that keep less tape for more recompute, non-dominated, from a greedy walk that drops the
/// tape bytes with the best bytes-per-second ratio first (an op is dropped together with the
/// producers it would otherwise pin into the tape: ReLU with the BatchNormalization before it).
/// Costs give the seconds (null: every op counts one unit). maxOptions <= 1 leaves one option.
void addStageOptions(StageOps &ops, const ChainView &view, const GraphFacts &facts,
                     const cost::Costs *costs, int maxOptions);

/// Appends a stage's forward ops (and the loss after the last stage, once) to a sequence.
void appendForward(const StageOps &ops, size_t stage, std::vector<OpId> *seq, bool *lossDone);
/// The stage's backward ops, or option `option`'s sequence (its recomputes in place) when the
/// stage has options.
void appendBackward(const StageOps &ops, size_t stage, std::vector<OpId> *seq, int option = 0);

/// Error text when a graph has no chain a chain-only solver can use.
Status requireChain(const ChainView &view, const std::string &solverId);

} // namespace remat::core::solvers
