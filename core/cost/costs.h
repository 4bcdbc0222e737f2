#pragma once
// Time per op of a TrainingGraph: the "costed problem" solvers and the simulator read.
//   cost::Roofline hw;  hw.peakFlops = 100e12;  hw.memoryBandwidth = 2e12;
//   cost::Costs c = cost::rooflineCosts(tg, hw);  c.opSeconds[op.id.index()];

#include "core/training/training_graph.h"

#include <string>
#include <vector>

namespace remat::core::cost {

/// Machine parameters of the analytic model. Defaults: a generic datacenter GPU.
struct Roofline
{
    double peakFlops = 100e12;           ///< FLOP/s
    double memoryBandwidth = 2.0e12;     ///< device bytes/s
    double launchOverhead = 5e-6;        ///< seconds per op
    double hostToDeviceBandwidth = 25e9; ///< PCIe 4.0 x16 effective, bytes/s
    double deviceToHostBandwidth = 25e9;
    int64_t hostMemoryBytes = int64_t(256) << 30;
};

/// Where op times come from, as the CLI and the GUI label them: the roofline's analytic
/// "estimate", a "profile" measured on this model and batch, or "calibrated" (a profile's times
/// scaled to another batch, or efficiencies fitted from a profile for ops it did not measure).
enum class TimeSource : unsigned char { Estimate, Profile, Calibrated };
/// "estimate", "profile", "calibrated".
const char *timeSourceName(TimeSource source);

struct Costs
{
    std::vector<double> opSeconds; ///< indexed by OpId
    double hostToDeviceBandwidth = 25e9;
    double deviceToHostBandwidth = 25e9;
    int64_t hostMemoryBytes = int64_t(256) << 30;
    std::string source; ///< "roofline", "profile:<file>", "benchmark file"
    /// The weakest source of any op's time (one estimated op makes the whole "estimate").
    TimeSource timeSource = TimeSource::Estimate;
};

} // namespace remat::core::cost
