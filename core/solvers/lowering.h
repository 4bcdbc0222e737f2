#pragma once
// Checkpoint-set lowering: a set of forward tensors to keep becomes an executable Schedule.
//   Expected<GraphFacts> facts = GraphFacts::build(tg);
//   Expected<schedule::Schedule> s = lowerCheckpointSet(*facts, keep, pins);
//   ChainView chain = facts->chainView(&costs);   // articulation points, for chain-only solvers
//
// Semantics (shared by every checkpoint-set solver, and by the brute force that checks them):
// - forward runs every op once; a forward tensor stays resident after its last forward use only
//   if it is kept (and something in backward still needs it); everything else is freed as soon
//   as its last forward consumer has run;
// - "segments" are the connected components of the non-kept forward tensors (an op joins its
//   non-kept inputs and outputs); a segment is recomputed once, just before the first backward
//   op that needs one of its tensors, from the nearest resident values; its tensors that
//   backward needs stay until their last backward use, the rest are freed right after use;
// - kept tensors stay until their last backward use or until the last segment recomputed from
//   them, whichever is later;
// - an op's outputs are kept or dropped together (recomputing an op re-creates all its
//   outputs), so keeping one output keeps its consumed siblings too.

#include "core/cost/costs.h"
#include "core/schedule/schedule.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"

#include <cstdint>
#include <vector>

namespace remat::core::solvers {

/// A chain view of the forward graph. Stage k runs forward ops [stageBegin[k], stageBegin[k+1]);
/// its input is boundary k-1 (the network input for k = 0) and its output boundary k (the last
/// stage ends at the network output, which is not a boundary). A boundary is the set of forward
/// tensors alive across it: keeping a boundary keeps the whole set.
/// - Articulation chain (ChainKind::Articulation): boundaries are values every path from the
///   input to the output passes through (one tensor each, plus tiny shape tensors).
/// - Linearized DAG (ChainKind::Linearized): the forward order cut where the bytes alive across
///   a cut are a local minimum (DenseNet: after each layer, the block's features so far).
enum class ChainKind : unsigned char { Articulation, Linearized };

struct ChainView
{
    ChainKind kind = ChainKind::Articulation;
    std::vector<std::vector<TensorId>> boundarySets; ///< size L-1, in forward order
    std::vector<int32_t> boundaryPos;   ///< the forward op after which boundary k is cut
    std::vector<int32_t> stageBegin;    ///< size L+1; stageBegin[L] == forward op count
    std::vector<int64_t> boundaryBytes; ///< bytes of boundarySets[k]
    /// Bytes of the forward tensors a stage produces that its output boundary does not hold.
    std::vector<int64_t> interiorBytes;
    /// Bytes of those tensors that backward needs (the stage's tape).
    std::vector<int64_t> tapeBytes;
    /// Whether backward reads something of the stage's output boundary (ReLU grad reads Y).
    std::vector<bool> backwardNeedsOutput;
    /// Largest single forward tensor a stage produces (a lower bound on its recompute peak).
    std::vector<int64_t> largestBytes;
    std::vector<double> forwardSeconds;  ///< per stage (0 without costs)
    std::vector<double> backwardSeconds; ///< per stage, backward ops assigned to it
    /// The stage each op belongs to (forward ops by range; backward ops by the forward op they
    /// differentiate, helpers by the op before them; loss ops -1).
    std::vector<int32_t> stageOfOp;
    size_t stageCount() const { return stageBegin.empty() ? 0 : stageBegin.size() - 1; }
    size_t boundaryCount() const { return boundarySets.size(); }
    /// Bytes of boundary i that boundary j (j < i) also holds: what keeping both shares.
    int64_t sharedBytes(size_t j, size_t i) const;

    // sharedBytes support: per boundary, its tensors sorted by producer with prefix bytes.
    std::vector<std::vector<int32_t>> producerOrder;
    std::vector<std::vector<int64_t>> prefixBytes;
};

/// Per-tensor and per-op facts the lowering and the solvers read; built once per graph.
class GraphFacts
{
public:
    static Expected<GraphFacts> build(const training::TrainingGraph &graph);

    const training::TrainingGraph &graph() const { return *m_graph; }
    int32_t forwardOps() const { return m_forwardOps; } ///< [0, forwardOps)
    int32_t lossEnd() const { return m_lossEnd; }       ///< loss ops [forwardOps, lossEnd)
    int32_t opCount() const { return m_opCount; }       ///< backward ops [lossEnd, opCount)

    /// Produced by a forward op (an activation or saved state; what a plan may keep or drop).
    bool isForwardTensor(TensorId t) const { return m_fwd[t.index()]; }
    /// Last forward or loss op reading t (-1: none).
    int32_t lastForwardUse(TensorId t) const { return m_lastFwdUse[t.index()]; }
    int32_t firstBackwardUse(TensorId t) const { return m_firstBwdUse[t.index()]; } ///< -1: none
    int32_t lastBackwardUse(TensorId t) const { return m_lastBwdUse[t.index()]; }   ///< -1: none
    bool neededByBackward(TensorId t) const { return m_firstBwdUse[t.index()] >= 0; }
    /// Computed from parameters and constants alone (Transpose(W), Expand(class token)): not on
    /// the data path, so it never separates activations (chain views and Feng & Huang's graph
    /// treat it like a parameter).
    bool weightDerived(TensorId t) const { return m_weightDerived[t.index()]; }
    /// Forward tensors that have any consumer: the universe of checkpoint candidates.
    const std::vector<TensorId> &candidates() const { return m_candidates; }
    /// Forward tensors read by backward ops (what store-all keeps).
    const std::vector<TensorId> &backwardNeeded() const { return m_bwdNeeded; }
    /// Consumed outputs of t's producer, t included (kept or dropped together).
    std::vector<TensorId> siblings(TensorId t) const;

    /// A chain view (linear time). Costs may be null (stage seconds are then 0).
    ChainView chainView(const cost::Costs *costs, ChainKind kind = ChainKind::Articulation) const;

private:
    const training::TrainingGraph *m_graph = nullptr;
    int32_t m_forwardOps = 0, m_lossEnd = 0, m_opCount = 0;
    std::vector<bool> m_fwd, m_weightDerived;
    std::vector<int32_t> m_lastFwdUse, m_firstBwdUse, m_lastBwdUse, m_lastUse;
    std::vector<TensorId> m_candidates, m_bwdNeeded;
    friend class Lowering;
    friend Expected<schedule::Schedule>
    lowerCheckpointSet(const GraphFacts &, const std::vector<TensorId> &, const std::vector<Pin> &);
    friend Expected<schedule::Schedule> lowerKeepMask(const GraphFacts &, std::vector<char>);
};

/// Applies pins to a keep set: keep pins added, recompute pins removed, siblings joined. Fails
/// for offload pins, pins on non-forward tensors, and contradictory pins. Returns a mask over
/// tensors.
Expected<std::vector<char>> keepMask(const GraphFacts &facts, const std::vector<TensorId> &keep,
                                     const std::vector<Pin> &pins);

/// The lowering described at the top of this file.
Expected<schedule::Schedule> lowerCheckpointSet(const GraphFacts &facts,
                                                const std::vector<TensorId> &keep,
                                                const std::vector<Pin> &pins);
/// Same, from a mask over tensors that keepMask() produced (siblings already joined).
Expected<schedule::Schedule> lowerKeepMask(const GraphFacts &facts, std::vector<char> keep);

/// A schedule from an op sequence (first computes and recomputes in order): every tensor
/// instance is freed right after its last read before it is produced again, or right after it
/// is produced when nothing reads it. Used by solvers that decide an order (Revolve, Rotor).
Expected<schedule::Schedule> scheduleFromSequence(const training::TrainingGraph &graph,
                                                  const std::vector<OpId> &sequence);

/// The tensors a mask keeps, in id order (what Plan::checkpoints reports).
std::vector<TensorId> maskToList(const std::vector<char> &mask);

} // namespace remat::core::solvers
