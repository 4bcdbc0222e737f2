// checkmate-lp: the LP relaxation of Checkmate's MILP (CLP) at (1 - eps) x budget, then
// two-phase rounding: S rounded at a threshold, R rebuilt exactly (the cheapest R for that S).
// Every candidate is evaluated under the simulator's model; over-budget candidates are dropped.
#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/checkmate/model.h"
#include "core/solvers/checkmate/osi_cbc.h"
#include "core/solvers/checkmate/problem.h"
#include "core/solvers/checkmate/warm.h"

#include <coin/ClpSimplex.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <sstream>

namespace remat::core::solvers {

namespace {

using Clock = std::chrono::steady_clock;

/// "0,0.05,0.1": a comma list of numbers; anything else is an InvalidArgument naming the setting.
Expected<std::vector<double>> parseList(const std::string &text, const char *setting)
{
    std::vector<double> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty())
            continue;
        double v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || p != item.data() + item.size() || !std::isfinite(v))
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format("checkmate-lp: setting {}: '{}' is not a number (give a comma list "
                            "such as 0,0.05,0.1)",
                            setting, item));
        out.push_back(v);
    }
    return out;
}

struct LpResult
{
    bool optimal = false;
    bool infeasible = false;
    double objective = 0;
    std::vector<double> x;
};

LpResult solveLp(const checkmate::LinearModel &m, Clock::time_point deadline, const StopToken &stop,
                 bool presolve)
{
    LpResult r;
    OsiClpSolverInterface si;
    checkmate::loadModel(si, m, false);
    // The deadline is read every simplex iteration: Clp's own limit is CPU time read at its
    // checkpoints, and on a loaded machine it let a 3 s limit run for 8 s (resnet50 at batch 2).
    checkmate::watchStop(si, stop, deadline);
    if (stop.stopRequested())
        return r;
    // Clp's presolve runs for seconds on the larger models (ResNet50, the 250-node random graph)
    // without reading the stop token or its clock; the simplex reads both every iteration.
    if (!presolve)
        si.setHintParam(OsiDoPresolveInInitial, false, OsiHintDo);
    si.messageHandler()->setLogLevel(0);
    ClpSimplex *clp = si.getModelPtr();
    clp->setMaximumWallSeconds(
        std::max(0.05, std::chrono::duration<double>(deadline - Clock::now()).count()));
    clp->setLogLevel(0);
    si.initialSolve();
    r.optimal = si.isProvenOptimal();
    r.infeasible = si.isProvenPrimalInfeasible();
    if (r.optimal) {
        r.objective = si.getObjValue() * m.objectiveScale;
        r.x.assign(si.getColSolution(), si.getColSolution() + si.getNumCols());
    }
    return r;
}

class CheckmateLpSolver final : public Solver
{
public:
    std::string id() const override { return "checkmate-lp"; }
    std::string title() const override { return "Checkmate LP relaxation + two-phase rounding"; }
    std::string description() const override
    {
        return "The LP relaxation of Checkmate's MILP solved with CLP at (1 - eps) x budget for a "
               "few margins eps, then two-phase rounding: S rounded at thresholds 0.1..0.9, R "
               "rebuilt exactly as the cheapest recomputation for that S. Every candidate is "
               "evaluated in the simulator's memory model and over-budget ones are rejected (the "
               "published method often breaks its budget). The LP value at the full budget is a "
               "proven lower bound on the recompute time in Checkmate's model.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.minPeak = false;
        c.needsCbc = true;
        c.speed = SpeedClass::Search;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override;

private:
    Expected<Plan> searchOwn(const SolveRequest &request) const;
};

Expected<Plan> CheckmateLpSolver::searchPlan(const SolveRequest &request) const
{
    return checkmate::ownThenRegistered(request, id(), [&] { return searchOwn(request); },
                                        {StatusCode::InvalidArgument, StatusCode::Unsupported});
}

Expected<Plan> CheckmateLpSolver::searchOwn(const SolveRequest &request) const
{
    const auto begin = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
    // Every phase (model building, each LP, each rounding, the greedy fallback) stops at this
    // deadline: the time limit is the solve's, not the first LP's.
    const Clock::time_point deadline =
        begin + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::max(0.0, request.timeLimitSeconds)));
    auto pastDeadline = [&] { return Clock::now() >= deadline; };
    REMAT_RETURN_IF_ERROR(checkmate::checkRequest(request));
    if (request.objective != Objective::MinTime)
        return makeError(StatusCode::Unsupported,
                         "checkmate-lp solves min-time under a budget only");
    REMAT_ASSIGN_OR_RETURN(checkmate::Problem p,
                           checkmate::buildProblem(*request.graph, *request.costs, request.pins));
    REMAT_ASSIGN_OR_RETURN(
        const std::vector<double> margins,
        parseList(checkmate::settingText(request, "eps", "0,0.05,0.1,0.2,0.3"), "eps"));
    REMAT_ASSIGN_OR_RETURN(const std::vector<double> thresholds,
                           parseList(checkmate::settingText(request, "thresholds",
                                                            "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"),
                                     "thresholds"));
    const double maxColumns = checkmate::settingNumber(request, "max-columns", 3e6);

    auto finishWith = [&](const std::vector<int> &seq, SolveStatus status, double bound,
                          double objective, const std::string &note) -> Expected<Plan> {
        REMAT_ASSIGN_OR_RETURN(Plan plan, checkmate::finishPlan(p, request, seq, id()));
        plan.status = status;
        plan.bound = bound;
        plan.solverObjective = objective;
        plan.solverObjectiveName = "LP lower bound on recompute seconds (Checkmate's model)";
        plan.note = note;
        plan.solveSeconds = elapsed();
        if ((status == SolveStatus::Optimal || status == SolveStatus::Feasible) &&
            plan.timeline.peakBytes > request.budgetBytes)
            return makeError(
                StatusCode::Internal,
                fmt::format("checkmate-lp: candidate peaks at {} B over the budget {} B",
                            plan.timeline.peakBytes, request.budgetBytes));
        return plan;
    };
    auto infeasiblePlan = [&](const std::string &why) {
        std::vector<int> seq = checkmate::lowestPeakSequence(p);
        return finishWith(seq, SolveStatus::Infeasible, -1, 0,
                          fmt::format("infeasible: {}; the lowest peak found is {} B", why,
                                      checkmate::evaluate(p, seq).peakBytes));
    };

    std::vector<int> storeAll = checkmate::storeAllSequence(p);
    if (checkmate::evaluate(p, storeAll).peakBytes <= request.budgetBytes)
        return finishWith(storeAll, SolveStatus::Optimal, 0, 0, "store-all fits the budget");
    if (checkmate::estimateColumns(p) > maxColumns)
        return makeError(StatusCode::ResourceExhausted,
                         fmt::format("checkmate-lp: the LP would have about {} columns (limit {})",
                                     checkmate::estimateColumns(p), maxColumns));

    std::vector<int> best;
    checkmate::Evaluation bestEval;
    std::string bestHow;
    double lowerBound = -1;
    size_t candidates = 0, overBudget = 0, lpsSolved = 0;
    bool stopped = false;
    for (double eps : margins) {
        if (request.stop.stopRequested() || elapsed() > request.timeLimitSeconds) {
            stopped = true;
            break;
        }
        checkmate::ModelOptions mo;
        mo.budgetBytes =
            static_cast<int64_t>(std::floor((1.0 - eps) * double(request.budgetBytes)));
        const checkmate::LinearModel model = checkmate::buildModel(p, mo);
        // Building the model of a large graph takes tenths of a second: look again before the LP.
        if (request.stop.stopRequested() || pastDeadline()) {
            stopped = true;
            break;
        }
        if (model.trivialInfeasible) {
            if (eps == 0)
                return infeasiblePlan(model.infeasibleReason);
            continue;
        }
        LpResult lp = solveLp(model, deadline, request.stop,
                              checkmate::settingText(request, "lp-presolve", "off") == "on");
        if (request.stop.stopRequested()) {
            stopped = true;
            break;
        }
        if (!lp.optimal && pastDeadline()) {
            stopped = true; // the LP was cut at the deadline: no point to round
            break;
        }
        ++lpsSolved;
        if (!lp.optimal) {
            if (eps == 0 && lp.infeasible)
                return infeasiblePlan("the LP relaxation is infeasible, so is the MILP");
            continue;
        }
        if (eps == 0)
            lowerBound = std::max(0.0, lp.objective);
        if (request.progress) {
            SolveProgress pr;
            pr.elapsedSeconds = elapsed();
            pr.bound = lowerBound;
            pr.incumbent = best.empty() ? -1 : bestEval.recomputeSeconds;
            // The LP's objective is recompute seconds: a lower bound on any rounding's.
            pr.message = fmt::format("LP at {:.0f}% of the budget: recompute >= {:.3f} ms",
                                     100 * (1 - eps), lp.objective * 1e3);
            request.progress(pr);
        }
        for (double threshold : thresholds) {
            // Each rounding rebuilds R and simulates (tenths of a second on resnet50): one
            // candidate at least, then only while time is left.
            if (candidates > 0 && (pastDeadline() || request.stop.stopRequested())) {
                stopped = true;
                break;
            }
            checkmate::Matrix s = model.sFromPoint(p, lp.x, threshold);
            checkmate::Matrix r = checkmate::solveR(p, s);
            std::vector<int> seq = checkmate::sequenceFromR(p, r);
            checkmate::Evaluation e = checkmate::evaluate(p, seq);
            ++candidates;
            if (e.peakBytes > request.budgetBytes) {
                ++overBudget;
                continue;
            }
            if (best.empty() || e.recomputeSeconds < bestEval.recomputeSeconds) {
                best = std::move(seq);
                bestEval = e;
                bestHow = fmt::format("eps {:g}, threshold {:g}", eps, threshold);
            }
        }
        // A rounding that meets the LP bound cannot be improved.
        if (!best.empty() && lowerBound >= 0 &&
            bestEval.recomputeSeconds <= lowerBound * (1 + 1e-9))
            break;
        if (stopped)
            break;
    }
    const std::string stats =
        fmt::format("{} LPs, {} roundings, {} over budget", lpsSolved, candidates, overBudget);
    if (best.empty() && request.stop.stopRequested())
        return makeError(StatusCode::Cancelled, "checkmate-lp cancelled before any plan");
    if (best.empty()) {
        // No rounding fits: fall back to the greedy plan so the answer is still under budget.
        // Within what is left of the limit (a quarter of a second at least: some plan is owed).
        std::vector<int> greedy = checkmate::greedyPlan(
            p, request.budgetBytes, std::clamp(request.timeLimitSeconds - elapsed(), 0.25, 10.0),
            request.stop);
        if (greedy.empty()) {
            // Not proven infeasible: report that no plan was found, with the lowest peak.
            std::vector<int> seq = checkmate::lowestPeakSequence(p);
            return finishWith(seq, SolveStatus::TimedOut, lowerBound, lowerBound,
                              fmt::format("no plan within the budget found ({}); the plan shown is "
                                          "the lowest peak found ({} B, over the budget)",
                                          stats, checkmate::evaluate(p, seq).peakBytes));
        }
        checkmate::Evaluation e = checkmate::evaluate(p, greedy);
        return finishWith(greedy, stopped ? SolveStatus::TimedOut : SolveStatus::Feasible,
                          lowerBound, lowerBound,
                          "no rounding fits the budget (" + stats + "); greedy fallback plan, " +
                              fmt::format("{:.6g} s of recompute", e.recomputeSeconds));
    }
    const bool optimal = lowerBound >= 0 && bestEval.recomputeSeconds <= lowerBound * (1 + 1e-9);
    return finishWith(
        best,
        optimal                        ? SolveStatus::Optimal
        : request.stop.stopRequested() ? SolveStatus::Cancelled
        : stopped                      ? SolveStatus::TimedOut
                                       : SolveStatus::Feasible,
        lowerBound, lowerBound,
        fmt::format("best rounding at {}; LP bound {:.6g}; {}", bestHow, lowerBound, stats));
}

} // namespace

std::unique_ptr<Solver> makeCheckmateLpSolver() { return std::make_unique<CheckmateLpSolver>(); }

} // namespace remat::core::solvers
