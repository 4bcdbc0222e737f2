#pragma once
// Op times from a measured profile, and a cost model calibrated on it for what it did not measure.
//   CalibratedModel m = CalibratedModel::fit(profile);            // per op type / family efficiency
//   ProfileCostsReport rep;
//   Expected<Costs> c = profileCosts(profile, tg, Roofline{}, &rep); // rep.warnings, c->timeSource
//
// The calibrated model: an op's time is fixed + flops * secondsPerFlop + bytes * secondsPerByte,
// fitted (non-negative least squares on relative error) per op type where the profile holds
// ops of that type at three or more sizes, else per op family and phase, per phase, or over all ops, a level with
// few ops taking its parent's fit scaled to its own ops. So a profile taken at one batch predicts
// another: a profiled op's time is scaled by the ratio of the model at the new size to the model
// at the measured size, and an op the profile lacks gets the model's time.

#include "core/cost/costs.h"
#include "core/cost/profile.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::cost {

struct Roofline;

/// One fitted level: time = fixedSeconds + flops * secondsPerFlop + bytes * secondsPerByte.
struct Efficiency
{
    std::string group; ///< "type Conv", "family Convolution backward", "phase forward", "all"
    double fixedSeconds = 0;
    double secondsPerFlop = 0;
    double secondsPerByte = 0;
    int samples = 0;     ///< profiled ops in the group
    bool ownFit = false; ///< fitted on its own ops (false: its parent's fit, scaled)

    double seconds(double flops, double bytes) const
    {
        return fixedSeconds + flops * secondsPerFlop + bytes * secondsPerByte;
    }
    /// 0 when the fit found no flop (or byte) dependence.
    double flopsPerSecond() const { return secondsPerFlop > 0 ? 1.0 / secondsPerFlop : 0.0; }
    double bytesPerSecond() const { return secondsPerByte > 0 ? 1.0 / secondsPerByte : 0.0; }
};

/// What an op is, for the model: its group keys and size.
struct OpShape
{
    std::string type;
    std::string phase;  ///< "forward", "loss", "backward"
    std::string family; ///< "" when unknown
    double flops = 0;
    double bytes = 0;
};

/// The op's type, phase, family (of its forward op type) and size in `graph`.
OpShape opShape(const training::TrainingGraph &graph, const training::Op &op);
/// "forward", "loss", "backward".
const char *phaseName(training::Phase phase);

class CalibratedModel
{
public:
    /// Fits every level from the profile's ops that carry a size (flops and bytes >= 0). Empty
    /// (valid() false) when none does.
    static CalibratedModel fit(const Profile &profile);

    bool valid() const { return m_levels.count("all") > 0; }
    /// The most specific fitted level for the op (type, then family and phase, phase, all).
    /// Null when the model is not valid.
    const Efficiency *levelFor(const OpShape &op) const;
    /// levelFor(op)->seconds(op.flops, op.bytes); 0 when not valid.
    double predict(const OpShape &op) const;
    /// Every level, by group name.
    const std::map<std::string, Efficiency> &levels() const { return m_levels; }

private:
    std::map<std::string, Efficiency> m_levels;
};

/// A profiled op's time at the size `now`, on the line through its two measured points (its
/// size and time at the profile's batch and at Profile::secondBatch), the size measured as its
/// calibrated level weighs flops and bytes. Nullopt without a second point, when both points
/// have one size, or when the larger was the faster (noise): the caller scales by the model.
std::optional<double> twoPointSeconds(const ProfiledOp &p, const OpShape &now,
                                      const CalibratedModel &model);

struct ProfileCostsReport
{
    size_t measured = 0;  ///< ops whose time is the profile's own (same model, same size)
    size_t scaled = 0;    ///< profiled ops scaled to their size here (another batch)
    size_t twoPoint = 0;  ///< of `scaled`: along the line through the op's two measured sizes
    size_t fitted = 0;    ///< ops the profile lacks, timed by the calibrated model
    size_t estimated = 0; ///< ops nothing in the profile can time: the roofline's estimate
    /// The profile's load factor: its median time in ops per step over the sum of the ops'
    /// medians (1 on a quiet machine), by which every time taken from the profile is multiplied.
    double loadFactor = 1;
    /// Said to the user: another model, another batch, ops filled in.
    std::vector<std::string> warnings;
};

/// Costs for `graph` from a profile: measured where the profile timed the same op at the same
/// size, scaled or fitted by the calibrated model elsewhere, the roofline (`fallback`) where the
/// profile has nothing to fit. Times from the profile are multiplied by its load factor
/// (Profile::computeSeconds over the sum of the op medians, when the profile records it): the
/// share of each step that a busy machine spent elsewhere, spread over the ops. A profile of another model (sha256 differs) lends only its fitted
/// efficiencies, with a warning. Costs::timeSource is the weakest source used; Costs::source is
/// "profile:<origin>". An error when the profile holds no op at all.
Expected<Costs> profileCosts(const Profile &profile, const training::TrainingGraph &graph,
                             const Roofline &fallback, const std::string &origin = "profile",
                             ProfileCostsReport *report = nullptr);

} // namespace remat::core::cost
