#pragma once
// Checkpoint solvers: a costed training graph, an objective and a budget in; a Plan out.
//   auto registry = solvers::makeRegistry();            // explicit list, see registry.h
//   SolveRequest req{.graph = &tg, .costs = &costs, .objective = Objective::MinPeak};
//   Expected<Plan> p = registry.find("chen-sqrtn")->solve(req);
//   p->timeline.peakBytes;   // always the simulator's figure, never the solver's estimate

#include "core/cost/costs.h"
#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/training/training_graph.h"
#include "core/util/stop_token.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace remat::core::solvers {

enum class Objective : unsigned char {
    MinPeak, ///< the lowest peak memory, whatever the recompute cost
    MinTime, ///< the least recompute time with peak <= budget
};
const char *objectiveName(Objective o); ///< "min-peak", "min-time"
Expected<Objective> parseObjective(const std::string &text);

enum class PinKind : unsigned char {
    Keep,      ///< resident from its compute until its last backward use
    Recompute, ///< never stored across the forward/backward boundary
    Offload,   ///< moved to host memory between uses
};
const char *pinKindName(PinKind k); ///< "keep", "recompute", "offload"
/// The kind pinKindName names; nullopt for any other text.
std::optional<PinKind> parsePinKind(std::string_view name);

struct Pin
{
    TensorId tensor;
    PinKind kind = PinKind::Keep;
    bool operator==(const Pin &) const = default;
};

enum class SolveStatus : unsigned char { Optimal, Feasible, Infeasible, TimedOut, Cancelled };
const char *solveStatusName(SolveStatus s); ///< "optimal", "feasible", ...

/// Live progress, for MILP incumbents and long searches. Called from the solving thread.
struct SolveProgress
{
    double fraction = -1;  ///< 0..1, or -1 when unknown
    double incumbent = -1; ///< best objective so far (-1: none)
    double bound = -1;     ///< best proven bound (-1: none)
    double elapsedSeconds = 0;
    std::string message;
};

struct SolveRequest
{
    const training::TrainingGraph *graph = nullptr;
    const cost::Costs *costs = nullptr;
    Objective objective = Objective::MinPeak;
    int64_t budgetBytes = 0; ///< device bytes, total peak (MinTime); ignored by MinPeak
    /// MinPeak only: the lowest peak whose simulated step time is at most this many percent
    /// over store-all's (`--max-overhead P`); negative: no limit. Solver::solve honours it for
    /// every solver (budget bisection over min-time plans, or a filter); see solve().
    double maxOverheadPercent = -1;
    std::vector<Pin> pins;
    double timeLimitSeconds = 60;
    StopToken stop;
    std::function<void(const SolveProgress &)> progress; ///< may be empty
    std::map<std::string, std::string> settings;         ///< solver-specific knobs
};

struct Plan
{
    std::string solver; ///< registry id
    SolveStatus status = SolveStatus::Feasible;
    Objective objective = Objective::MinPeak;
    int64_t budgetBytes = 0;
    double maxOverheadPercent = -1; ///< the request's limit (-1: none)
    /// Store-all's simulated step on the same graph (no pins, optimizer step included): the
    /// reference of timeOverheadPercent(). 0: not known (a plan not made by Solver::solve).
    double baselineStepSeconds = 0;
    schedule::Schedule schedule;
    /// Checkpoint-set solvers: the forward tensors kept across the forward/backward boundary.
    std::vector<TensorId> checkpoints;
    std::vector<Pin> pins;
    double solverObjective = 0;      ///< the paper's own proxy objective value
    std::string solverObjectiveName; ///< what that number means ("sum(ckpt)+max segment bytes")
    double bound = -1; ///< a proven bound on the objective (-1: none), MILP gap from it
    double solveSeconds = 0;
    std::map<std::string, std::string> settings;
    std::string note;       ///< e.g. "chain of 53 articulation points", "infeasible: min 1.2 GiB"
    sim::Timeline timeline; ///< the simulator's figures for `schedule` (points not recorded)
};

/// How long a solver takes on a corpus graph: whether the planner may run it on its own.
enum class SpeedClass : unsigned char {
    Interactive, ///< well under a second: re-run live as the budget slider moves
    Search,      ///< seconds to minutes (MILP, LP rounding, offload search): only when asked
};

struct Capabilities
{
    bool anyDag = true; ///< false: runs on the chain of articulation points only
    bool minPeak = true;
    bool minTime = true;
    bool pins = true;                ///< keep / recompute pins
    bool offloadPins = false;        ///< offload pins (most checkpoint solvers refuse them)
    bool optimalForItsModel = false; ///< claims optimality (checked against brute force)
    bool needsCbc = false;
    /// Honours SolveRequest::maxOverheadPercent in its own search (a time constraint);
    /// otherwise Solver::solve bisects the budget over its min-time plans, or filters.
    bool maxOverhead = false;
    SpeedClass speed = SpeedClass::Interactive;
};

class Solver
{
public:
    virtual ~Solver() = default;
    Solver() = default;
    Solver(const Solver &) = delete;
    Solver &operator=(const Solver &) = delete;

    virtual std::string id() const = 0;          ///< "chen-sqrtn"
    virtual std::string title() const = 0;       ///< "Chen et al. 2016, sqrt(n) segments"
    virtual std::string description() const = 0; ///< a paragraph for the UI and --help
    virtual Capabilities capabilities() const = 0;
    /// Solves and simulates, under the framework's guard (solver_guard.cpp): an exception
    /// thrown by the search (std::bad_alloc from a large DP table, a third-party library's
    /// error) becomes a Status naming the solver, and the returned plan is checked against
    /// store-all under the same pins: one that is worse on peak and time, or slower when
    /// store-all fits the budget, is replaced by store-all's plan with a note saying so.
    /// Errors: invalid request, cancellation before any plan exists, an escaped exception.
    /// A graph with an optimizer step (training_options.h) is solved without its update ops
    /// (the state they read stays resident, so the solver budgets for it); the updates are then
    /// appended after the backward and the plan re-simulated on the whole graph: the figures
    /// include the optimizer step, and a min-time plan whose update goes over the budget is
    /// infeasible, saying so.
    /// Every plan carries store-all's simulated step (baselineStepSeconds). A min-peak request
    /// with maxOverheadPercent >= 0 for a solver without Capabilities::maxOverhead is answered
    /// as the lowest peak within the limit: the solver's min-peak plan when it is within; else,
    /// for a solver with min-time, a bisection of the budget between that plan's peak and
    /// store-all's over its min-time plans (each simulated; the lowest-peak plan within the
    /// limit kept, store-all at worst); else infeasible, saying it cannot honour the limit.
    Expected<Plan> solve(const SolveRequest &request) const;

protected:
    /// The solver's own search, called only through solve().
    virtual Expected<Plan> searchPlan(const SolveRequest &request) const = 0;

private:
    Expected<Plan> solveWithOptimizerStep(const SolveRequest &request) const;
    Expected<Plan> solveUnlimited(const SolveRequest &request) const;
    Expected<Plan> solveWithinOverhead(const SolveRequest &request) const;
};

/// The one cost every table, chart, dominance check and time objective reads: the simulated
/// step (compute, recompute, and copy-lane time not hidden under compute).
inline double stepSeconds(const sim::Timeline &t) { return t.totalSeconds; }
/// The step's time over store-all's, in percent (0 when the baseline is not known).
double timeOverheadPercent(const sim::Timeline &t, double baselineStepSeconds);
inline double timeOverheadPercent(const Plan &p)
{
    return timeOverheadPercent(p.timeline, p.baselineStepSeconds);
}
/// Whether `p` honours its request's max-overhead limit (true when there is none).
bool withinMaxOverhead(const Plan &p);

/// The answered plan in `plans` (not `plan` itself) that beats answered `plan` on peak and time
/// (no worse on both, better on one), the strongest such; nullptr when none does.
const Plan *dominatingPlan(const Plan &plan, const std::vector<Plan> &plans);

/// Appends "dominated by X" to the note of every answered plan (optimal or feasible) that
/// another answered plan in `plans` beats on peak and time (no worse on both, better on one),
/// for tables that compare solvers on one problem. Returns how many plans were flagged.
size_t flagDominatedPlans(std::vector<Plan> &plans);

} // namespace remat::core::solvers
