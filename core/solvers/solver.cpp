#include "core/solvers/solver.h"

namespace remat::core::solvers {

const char *objectiveName(Objective o)
{
    switch (o) {
    case Objective::MinPeak: return "min-peak";
    case Objective::MinTime: return "min-time";
    }
    return "unknown";
}

std::optional<PinKind> parsePinKind(std::string_view name)
{
    for (PinKind k : {PinKind::Keep, PinKind::Recompute, PinKind::Offload})
        if (name == pinKindName(k))
            return k;
    return std::nullopt;
}

Expected<Objective> parseObjective(const std::string &text)
{
    if (text == "min-peak" || text == "minpeak" || text == "peak")
        return Objective::MinPeak;
    if (text == "min-time" || text == "mintime" || text == "time")
        return Objective::MinTime;
    return makeError(StatusCode::InvalidArgument,
                     "unknown objective '" + text + "' (expected min-peak or min-time)");
}

double timeOverheadPercent(const sim::Timeline &t, double baselineStepSeconds)
{
    return baselineStepSeconds > 0 ? 100.0 * (stepSeconds(t) / baselineStepSeconds - 1.0) : 0.0;
}

bool withinMaxOverhead(const Plan &p)
{
    if (p.maxOverheadPercent < 0 || p.baselineStepSeconds <= 0)
        return true;
    // A relative tolerance: store-all itself (0%) must pass a 0% limit whatever the rounding.
    return stepSeconds(p.timeline) <=
           p.baselineStepSeconds * (1.0 + p.maxOverheadPercent / 100.0) * (1 + 1e-9);
}

const char *pinKindName(PinKind k)
{
    switch (k) {
    case PinKind::Keep: return "keep";
    case PinKind::Recompute: return "recompute";
    case PinKind::Offload: return "offload";
    }
    return "unknown";
}

const char *solveStatusName(SolveStatus s)
{
    switch (s) {
    case SolveStatus::Optimal: return "optimal";
    case SolveStatus::Feasible: return "feasible";
    case SolveStatus::Infeasible: return "infeasible";
    case SolveStatus::TimedOut: return "timed out";
    case SolveStatus::Cancelled: return "cancelled";
    }
    return "unknown";
}

} // namespace remat::core::solvers
