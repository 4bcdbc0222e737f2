#pragma once
// A measured profile: each training-graph op's time on one backend (median of the timed
// iterations), with what it was measured on, so a stale profile is recognised. Plain data: the
// executor's recorder (core/exec/profile_recorder.h) fills it, core/io/profile_file.h reads and
// writes it (docs/profile-format.md), core/cost/calibrated.h turns it into Costs.
//   cost::Profile p = recorder.profile();   p.ops[0].seconds;   p.stepSeconds;

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::cost {

/// One op of the profiled training graph.
struct ProfiledOp
{
    std::string name;   ///< the training-graph op name (backward: "<fwd name>/grad")
    std::string type;   ///< "Conv", "ConvGrad", "Accumulate", "Loss"
    std::string phase;  ///< "forward", "loss" or "backward"
    std::string family; ///< ops::familyName of the forward op type ("" when unknown)
    /// The op's size when it was measured (training::Op::flops / bytesAccessed); negative when
    /// unknown (a legacy {"op": seconds} profile): such an op is used by name only, never fitted.
    double flops = -1;
    double bytes = -1;
    double seconds = 0;          ///< median of its first computes (one per timed iteration)
    int samples = 0;             ///< first computes timed
    double recomputeSeconds = 0; ///< median of its recomputes (0 when the schedule has none)
    int recomputeSamples = 0;
    /// The same op measured again in the model's store-all step at Profile::secondBatch (its
    /// size then, and the median of its first computes): with two sizes of its own, the op's
    /// time at a third size follows its own line, not a fitted family's. secondSeconds 0: none.
    double secondFlops = -1;
    double secondBytes = -1;
    double secondSeconds = 0;

    bool hasSecondPoint() const
    {
        return secondSeconds > 0 && secondFlops >= 0 && secondBytes >= 0 && flops >= 0 &&
               bytes >= 0;
    }
};

struct Profile
{
    // What it was measured on. An empty sha256 / batch 0 means unknown (legacy files).
    std::string modelPath; ///< informational (files move)
    std::string modelSha256;
    int64_t batch = 0;
    /// The batch of the ops' second points (0: none taken; `remat run --profile-out` takes one at
    /// half the batch, or 2 from batch 1).
    int64_t secondBatch = 0;
    std::string backend;  ///< "cpu", "cuda"
    std::string device;   ///< the backend's description
    std::string schedule; ///< "store-all" or the plan's solver
    int iterations = 0;   ///< timed iterations (warm-up excluded)
    int warmupIterations = 0;
    double stepSeconds = 0; ///< median measured wall time of a whole step
    /// Median per iteration of the step's wall time not spent in Compute steps (frees, copies,
    /// loss download): recorded, not added to predictions (the simulator's Free takes no time).
    double overheadSeconds = 0;
    /// Median per iteration of the time spent in Compute steps. On a busy machine it exceeds the
    /// sum of the ops' medians (another process takes the core now in one op, now in another, and
    /// each op's median drops those moments); the costs spread the difference over every op
    /// (cost::profileCosts' load factor). 0: unknown.
    double computeSeconds = 0;
    /// Copy-lane bandwidths in bytes/s where measured or given (legacy files); 0: unknown.
    double hostToDeviceBandwidth = 0;
    double deviceToHostBandwidth = 0;
    std::vector<ProfiledOp> ops;
};

} // namespace remat::core::cost
