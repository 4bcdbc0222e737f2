#pragma once
// Exhaustive search over checkpoint sets, under the shared lowering and the simulator: the
// reference every checkpoint-set solver is checked against on small graphs.
//   Expected<BruteForceResult> r = bruteForceCheckpoints(tg, costs, {});
//   r->minPeak.timeline.peakBytes;   // no checkpoint set has a lower simulated peak

#include "core/cost/costs.h"
#include "core/sim/timeline.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"

#include <cstdint>
#include <vector>

namespace remat::core::solvers {

struct BruteForceOptions
{
    int64_t budgetBytes = 0; ///< for the min-time optimum (0: not searched)
    size_t maxUnits = 16;    ///< refuse graphs with more keep units (2^units sets)
    std::vector<Pin> pins;
    bool frontier = false; ///< also collect the (peak, recompute) Pareto frontier
};

struct BruteForceBest
{
    bool found = false;
    std::vector<TensorId> checkpoints;
    sim::Timeline timeline;
};

struct BruteForceResult
{
    BruteForceBest minPeak; ///< lowest peak; ties: least compute time
    BruteForceBest minTime; ///< least recompute time with peak <= budget; ties: lower peak
    /// With BruteForceOptions::frontier: the sets no other set beats on both peak and recompute
    /// (no worse on both, better on one), ascending peak; of equal sets, the first found.
    std::vector<BruteForceBest> frontier;
    size_t units = 0; ///< keep units: forward ops with outputs something reads
    size_t evaluated = 0;
};

/// Every subset of keep units (an op's read outputs are kept or dropped together) is lowered
/// and simulated.
Expected<BruteForceResult> bruteForceCheckpoints(const training::TrainingGraph &graph,
                                                 const cost::Costs &costs,
                                                 const BruteForceOptions &options = {});

} // namespace remat::core::solvers
