#pragma once
// The budget-versus-recompute frontier of a chain, read off rotor's DP table: the table holds
// the least time at every memory at once, so each memory where that time drops is a point.
//   Expected<ChainFrontier> f = chainFrontier(request, {.slotCount = 2000});
//   for (const FrontierPoint &p : f->points)  p.timeline.peakBytes, p.timeline.recomputeSeconds;

#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/solvers/solver.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::solvers {

/// Which peak the frontier trades against recompute.
enum class FrontierMemory : unsigned char {
    Total,      ///< the device peak (Timeline::peakBytes)
    Activation, ///< the activation peak (Timeline::activationPeakBytes): model state left out
};

struct ChainFrontierOptions
{
    int slotCount = 2000; ///< memory slots of the DP (more: finer, a larger table)
    FrontierMemory memory = FrontierMemory::Total;
    /// Tape options per stage (addStageOptions): 1 is plain rotor, more lets a stage keep part
    /// of its tape and recompute the rest in its backward (Rockmate). With more than one, the
    /// DP is also solved with walked transients (RotorTransients), and both plans' sets kept.
    int tapeOptions = 16;
    /// Also solve on the linearized chain (ChainKind::Linearized: DenseNet's layers, where the
    /// articulation chain sees only whole dense blocks) when it cuts differently.
    bool linearized = true;
    /// An articulation chain of at most this many stages also gets an exact DP over kept
    /// positions, each stage between two kept positions keeping one of its tape options and
    /// each dropped run recomputed whole (about stages^2 / 2 simulations); on a plain chain
    /// (one data op per stage) that is every checkpoint set.
    int exactChainStages = 80;
};

struct FrontierPoint
{
    /// "store-all", "exact chain DP" (the DP over kept positions), or "rotor-dp (<view> chain,
    /// <model> transients[, inputs freed])": the DP's plan at memorySlots on that chain view with
    /// that transient model (and RotorChain's freeInputs)
    std::string source;
    int memorySlots = -1; ///< the DP memory the plan was read at (-1: store-all)
    double dpSeconds = 0; ///< the DP's forward + backward time there (its own cost model)
    schedule::Schedule schedule;
    sim::Timeline timeline; ///< the simulator's figures (schedule validated), optimizer step in
};

struct ChainFrontier
{
    /// Non-dominated plans, ascending peak (the options' memory), each strictly less recompute
    /// than the one before; the last recomputes nothing (store-all, or the DP's equal).
    std::vector<FrontierPoint> points;
    /// Every plan simulated, dominated ones too: store-all first, then the DP's breakpoints by
    /// ascending memory.
    std::vector<FrontierPoint> candidates;
    size_t stages = 0; ///< of the articulation chain (stages, opChain, slot figures: its table)
    /// Every stage holds one data op (a plain chain): the DP ranges over every multi-level
    /// strategy of the chain, so its frontier is exact up to the slot size. Otherwise stages
    /// are blocks kept or recomputed whole, and the frontier is exact only over such plans.
    bool opChain = false;
    int slotCount = 0;      ///< memory slots used (the request may be capped by the table size)
    double slotBytes = 0;   ///< bytes per slot: every byte count is rounded up to whole slots
    size_t breakpoints = 0; ///< memories at which a DP's least time drops, over every table
    int tables = 0; ///< DP tables solved (chain views x transient models x inputs freed or not)
    double tableSeconds = 0, seconds = 0;
    bool complete = true; ///< false: the time limit stopped the walk over the memories
    /// A plain chain's exact DP ran and every plan it returned simulated to the DP's figures:
    /// no checkpoint set (each dropped run recomputed once, lowering.h) has a lower peak at
    /// equal or less recompute than the points. Rotor's multi-level plans are beside them.
    bool exactOverCheckpointSets = false;
    /// The exact DP's plans whose simulated figures differed from it (on any articulation chain
    /// it ran on; 0 means its decomposition of the peak held on every plan it returned).
    int exactMismatches = 0;
};

/// The frontier for `request` (graph, costs, stop token, time limit; objective and budget are
/// not read). Each DP table (chain view x transient model) is filled once; the plan at each
/// memory where its least time drops is lowered, simulated (validated) and kept when no other
/// plan is as good on both peak and recompute. A graph with an optimizer step is solved without it and the step appended to
/// every plan, as Solver::solve does. Errors: pins (the DP does not take them), no forward
/// ops, a table too large for host memory, cancellation.
Expected<ChainFrontier> chainFrontier(const SolveRequest &request,
                                      const ChainFrontierOptions &options = {});

/// The non-dominated subset of `plans` by (peak of `memory`, recompute seconds), ascending
/// peak; equal plans keep the first. Recompute within 1e-9 relative counts as equal.
std::vector<FrontierPoint> nonDominated(std::vector<FrontierPoint> plans, FrontierMemory memory);

} // namespace remat::core::solvers
