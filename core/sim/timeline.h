#pragma once
// What a schedule costs: memory after every step, by category, and time on each lane.
//   Expected<Timeline> t = sim::simulate(schedule, tg, costs);
//   t->peakBytes; t->points[t->peakStep].byCategory;

#include "core/schedule/observer.h"

#include <cstdint>
#include <vector>

namespace remat::core::sim {

struct TimelinePoint
{
    int64_t bytesInUse = 0;     ///< after the step
    int64_t peakDuringStep = 0; ///< while the step ran (its outputs and workspace allocated)
    schedule::CategoryBytes byCategory{}; ///< after the step (workspace: during)
    double endSeconds = 0;                ///< when the step finished (max over lanes so far)
};

struct Timeline
{
    std::vector<TimelinePoint> points; ///< one per schedule step (empty if not recorded)
    int64_t peakBytes = 0;             ///< max peakDuringStep over all steps
    size_t peakStep = 0;
    schedule::CategoryBytes peakByCategory{}; ///< categories at the peak
    /// Peak of everything but weights, weight gradients and optimizer state.
    int64_t activationPeakBytes = 0;
    int64_t weightBytes = 0; ///< parameters, buffers, constants, input, optimizer state, master
    int64_t optimizerStateBytes = 0; ///< of weightBytes: optimizer state (resident all step)
    int64_t masterWeightBytes = 0;   ///< of weightBytes: float32 master weights (mixed precision)
    int64_t inputBytes =
        0; ///< of weightBytes (category Weights): the input batch, resident all step
    int64_t weightGradBytes = 0;
    double computeSeconds = 0;    ///< first computes
    double recomputeSeconds = 0;  ///< recomputes
    double copySeconds = 0;       ///< time the copy lane was busy
    double totalSeconds = 0;      ///< makespan with copy/compute overlap
    double oneComputeSeconds = 0; ///< every op once: the TDI denominator
    int64_t hostPeakBytes = 0;    ///< host memory held by offloaded tensors
    size_t computeSteps = 0, recomputeSteps = 0;
    /// Extra compute over one pass of every op, in percent.
    double tdiPercent() const
    {
        return oneComputeSeconds > 0 ? 100.0 * recomputeSeconds / oneComputeSeconds : 0.0;
    }
};

} // namespace remat::core::sim
