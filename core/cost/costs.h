#pragma once
// Time per op of a TrainingGraph: the "costed problem" solvers and the simulator read.
//   cost::Roofline hw;  hw.peakFlops = 100e12;  hw.memoryBandwidth = 2e12;
//   cost::Costs c = cost::rooflineCosts(tg, hw);  c.opSeconds[op.id.index()];

#include "core/training/training_graph.h"

#include <vector>

namespace remat::core::cost {

/// Machine parameters of the analytic model. Defaults: a generic datacenter GPU.
struct Roofline
{
    double peakFlops = 100e12;        ///< FLOP/s
    double memoryBandwidth = 2.0e12;  ///< device bytes/s
    double launchOverhead = 5e-6;     ///< seconds per op
    double hostToDeviceBandwidth = 25e9; ///< PCIe 4.0 x16 effective, bytes/s
    double deviceToHostBandwidth = 25e9;
    int64_t hostMemoryBytes = int64_t(256) << 30;
};

struct Costs
{
    std::vector<double> opSeconds;   ///< indexed by OpId
    double hostToDeviceBandwidth = 25e9;
    double deviceToHostBandwidth = 25e9;
    int64_t hostMemoryBytes = int64_t(256) << 30;
    std::string source;              ///< "roofline", "profile:<file>", "benchmark file"
};

} // namespace remat::core::cost
