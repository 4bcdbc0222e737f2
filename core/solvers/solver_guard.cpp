// The framework around every solver's own search (Solver::solve): exceptions become a Status,
// and the plan returned is checked against store-all under the same pins, so no solver hands a
// user a plan that is worse than doing nothing at all.
#include "core/sim/simulator.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/offload_pins.h"
#include "core/solvers/solver.h"
#include "core/util/bytes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <optional>

namespace remat::core::solvers {

namespace {

bool answered(SolveStatus s) { return s == SolveStatus::Optimal || s == SolveStatus::Feasible; }

/// a is no worse than b on peak and time and strictly better on one (times within 1e-9).
bool dominates(const sim::Timeline &a, const sim::Timeline &b)
{
    const double ta = stepSeconds(a), tb = stepSeconds(b);
    const double tol = 1e-9 * std::max(ta, tb);
    const bool noWorse = a.peakBytes <= b.peakBytes && ta <= tb + tol;
    const bool better = a.peakBytes < b.peakBytes || ta < tb - tol;
    return noWorse && better;
}

/// Peak, step time and, with a baseline, the time overhead, then recompute: the step time is
/// the cost, recompute only part of it (an offload plan recomputes nothing and may be slowest).
std::string figures(const sim::Timeline &t, double baselineStepSeconds)
{
    const std::string overhead =
        baselineStepSeconds > 0
            ? fmt::format(" ({:+.1f}% time)", timeOverheadPercent(t, baselineStepSeconds))
            : std::string();
    return fmt::format("peak {}, step {:.4g} s{}, {:.1f}% recompute", formatBytes(t.peakBytes),
                       stepSeconds(t), overhead, t.tdiPercent());
}
std::string figures(const Plan &p) { return figures(p.timeline, p.baselineStepSeconds); }

template <typename Search> Expected<Plan> runGuarded(const std::string &id, Search &&search)
{
    try {
        return search();
    } catch (const std::bad_alloc &) {
        return makeError(StatusCode::ResourceExhausted,
                         id + ": ran out of host memory while solving (std::bad_alloc); try a "
                              "smaller batch, a budget objective or another solver");
    } catch (const std::exception &e) {
        return makeError(StatusCode::Internal, id + ": the search failed: " + e.what());
    } catch (...) {
        return makeError(StatusCode::Internal,
                         id + ": the search failed with an unknown exception");
    }
}

/// store-all's plan for `request`, its offload pins streamed as for every other solver.
Expected<Plan> storeAllBaseline(const SolveRequest &request)
{
    return runGuarded("store-all", [&]() -> Expected<Plan> {
        if (!hasOffloadPins(request))
            return storeAllPlan(request);
        REMAT_ASSIGN_OR_RETURN(Plan base, storeAllPlan(offloadPinsAsKeep(request)));
        return streamOffloadPins(std::move(base), request);
    });
}

/// The row for a solver that cannot honour the request's pins: infeasible, saying which pin,
/// with store-all's schedule without pins to look at (so the row never vanishes from a table).
Expected<Plan> pinRefusedPlan(const SolveRequest &request, const std::string &id,
                              const Capabilities &caps, const Status &why)
{
    SolveRequest bare = request;
    bare.pins.clear();
    Expected<Plan> base = runGuarded("store-all", [&] { return storeAllPlan(bare); });
    if (!base)
        return why;
    Plan out = std::move(*base);
    out.solver = id;
    out.status = SolveStatus::Infeasible;
    out.objective = request.objective;
    out.budgetBytes = request.budgetBytes;
    out.pins = request.pins;
    out.settings = request.settings;
    out.checkpoints.clear();
    out.solverObjective = 0;
    out.solverObjectiveName.clear();
    const std::optional<PinKind> kind =
        !caps.pins ? std::nullopt : std::optional<PinKind>(PinKind::Offload);
    out.note = fmt::format("infeasible: cannot honour {} ({}); the schedule shown is store-all's "
                           "without pins",
                           describeFirstPin(request, kind), why.message());
    return out;
}

/// The post-check: `plan` against store-all's plan for the same request. Returns the plan to
/// hand out (the solver's, or store-all's schedule under the solver's name with a note).
Plan checkAgainstStoreAll(Plan plan, const SolveRequest &request, const std::string &id)
{
    if (plan.status == SolveStatus::Cancelled)
        return plan;
    // A baseline that cannot be built (an offload pin store-all's lowering cannot honour)
    // leaves nothing to check against.
    Expected<Plan> base = storeAllBaseline(request);
    if (!base)
        return plan;
    const sim::Timeline &b = base->timeline;
    const double ref = stepSeconds(b);
    const auto figures = [ref](const sim::Timeline &t) { return solvers::figures(t, ref); };
    const bool minTime = request.objective == Objective::MinTime;
    const bool baseFits = !minTime || b.peakBytes <= request.budgetBytes;
    std::string why;
    if (minTime && baseFits) {
        // Store-all fits and recomputes nothing: anything slower, over the budget or without
        // an answer loses to it on the objective.
        const double tb = stepSeconds(b), tp = stepSeconds(plan.timeline);
        if (!answered(plan.status) || plan.timeline.peakBytes > request.budgetBytes)
            why = fmt::format("{} found no plan within the budget ({}), but store-all fits it ({})",
                              id, solveStatusName(plan.status), figures(b));
        else if (tp > tb + 1e-9 * std::max(tp, tb))
            why = fmt::format("store-all fits the budget ({}); {}'s plan ({}) was slower",
                              figures(b), id, figures(plan.timeline));
    } else if (dominates(b, plan.timeline)) {
        why = fmt::format("{}'s plan ({}) was worse than store-all ({}) on peak and time", id,
                          figures(plan.timeline), figures(b));
    }
    if (why.empty())
        return plan;
    Plan out = std::move(*base);
    out.solver = plan.solver.empty() ? id : plan.solver;
    out.objective = plan.objective;
    out.budgetBytes = plan.budgetBytes;
    out.pins = plan.pins;
    out.settings = plan.settings;
    out.solveSeconds = plan.solveSeconds;
    out.solverObjectiveName = "store-all returned instead";
    out.solverObjective = 0;
    out.bound = -1;
    if (minTime && baseFits)
        out.status = b.recomputeSeconds == 0 ? SolveStatus::Optimal : SolveStatus::Feasible;
    else if (minTime)
        out.status = plan.status == SolveStatus::Infeasible ? SolveStatus::Infeasible : plan.status;
    else
        out.status = SolveStatus::Feasible;
    out.note =
        "store-all returned: " + why + (plan.note.empty() ? std::string() : " (" + plan.note + ")");
    return out;
}

} // namespace

void appendOptimizerStep(schedule::Schedule &s, const training::TrainingGraph &graph)
{
    const size_t n = graph.tensorCount();
    const std::vector<unsigned char> onHost = schedule::preloadedOnHost(s, graph);
    std::vector<unsigned char> resident(n, 0);
    for (size_t t = 0; t < n; ++t)
        resident[t] = graph.tensors()[t].preloaded && !onHost[t];
    for (const schedule::Step &st : s.steps) {
        if (st.kind == schedule::StepKind::Free)
            resident[st.tensor().index()] = 0;
        else if (st.kind == schedule::StepKind::Prefetch)
            resident[st.tensor().index()] = 1;
        else if (st.kind == schedule::StepKind::Compute)
            for (TensorId out : graph.op(st.op()).outputs)
                resident[out.index()] = 1;
    }
    schedule::Schedule tail;
    for (size_t k = graph.opCount() - graph.optimizerOpCount(); k < graph.opCount(); ++k) {
        const training::Op &op = graph.op(OpId(static_cast<int32_t>(k)));
        std::vector<TensorId> streamed;
        for (TensorId in : op.inputs)
            if (!resident[in.index()] &&
                std::find(streamed.begin(), streamed.end(), in) == streamed.end())
                streamed.push_back(in);
        for (TensorId t : streamed)
            tail.prefetch(t);
        tail.compute(op.id);
        for (TensorId t : streamed)
            tail.free(t);
    }
    auto at = s.steps.end();
    if (!s.steps.empty() && s.steps.back().kind == schedule::StepKind::Phase &&
        s.steps.back().mark() == schedule::PhaseMark::End)
        at = s.steps.end() - 1;
    s.steps.insert(at, tail.steps.begin(), tail.steps.end());
}

Expected<WithoutOptimizerStep> withoutOptimizerStep(const SolveRequest &request)
{
    REMAT_ASSIGN_OR_RETURN(training::TrainingGraph inner, request.graph->withoutOptimizerStep());
    cost::Costs costs = *request.costs;
    costs.opSeconds.resize(inner.opCount());
    return WithoutOptimizerStep{std::move(inner), std::move(costs)};
}

Expected<Plan> Solver::solveWithOptimizerStep(const SolveRequest &request) const
{
    const training::TrainingGraph &full = *request.graph;
    REMAT_ASSIGN_OR_RETURN(const WithoutOptimizerStep inner, withoutOptimizerStep(request));
    REMAT_ASSIGN_OR_RETURN(Plan plan, solve(inner.request(request)));
    if (plan.schedule.steps.empty())
        return plan;
    appendOptimizerStep(plan.schedule, full);
    REMAT_ASSIGN_OR_RETURN(
        plan.timeline, sim::simulate(plan.schedule, full, *request.costs, {.recordPoints = false}));
    const bool answeredPlan = answered(plan.status);
    if (request.objective == Objective::MinTime && answeredPlan &&
        plan.timeline.peakBytes > request.budgetBytes) {
        plan.status = SolveStatus::Infeasible;
        const std::string why = fmt::format(
            "infeasible: with the optimizer step the peak is {} (the update at step {}), over the "
            "budget {}",
            formatBytes(plan.timeline.peakBytes), plan.timeline.peakStep,
            formatBytes(request.budgetBytes));
        plan.note = plan.note.empty() ? why : why + "; " + plan.note;
    }
    return plan;
}

namespace {

/// Store-all's plan for `request` without pins or limits: the reference of every overhead.
Expected<Plan> plainStoreAll(const SolveRequest &request)
{
    SolveRequest bare = request;
    bare.pins.clear();
    bare.objective = Objective::MinPeak;
    bare.budgetBytes = 0;
    bare.maxOverheadPercent = -1;
    bare.progress = {};
    return makeStoreAllSolver()->solve(bare);
}

} // namespace

Expected<Plan> Solver::solve(const SolveRequest &request) const
{
    if (!request.graph || !request.costs)
        return solveUnlimited(request);
    const bool within = request.objective == Objective::MinPeak && request.maxOverheadPercent >= 0;
    Expected<Plan> solved = within && !capabilities().maxOverhead ? solveWithinOverhead(request)
                                                                  : solveUnlimited(request);
    if (!solved)
        return solved;
    Plan plan = std::move(*solved);
    plan.maxOverheadPercent = within ? request.maxOverheadPercent : -1;
    if (plan.baselineStepSeconds <= 0) {
        if (id() == "store-all" && request.pins.empty()) {
            plan.baselineStepSeconds = stepSeconds(plan.timeline);
        } else if (Expected<Plan> base = plainStoreAll(request)) {
            plan.baselineStepSeconds = stepSeconds(base->timeline);
        }
    }
    const auto setting = request.settings.find("stream");
    if (within && answered(plan.status) && plan.baselineStepSeconds > 0 && request.pins.empty() &&
        id() != "store-all" && (setting == request.settings.end() || setting->second != "off")) {
        const auto begin = std::chrono::steady_clock::now();
        const double limit = plan.baselineStepSeconds * (1 + request.maxOverheadPercent / 100);
        plan = streamKeptTensors(std::move(plan), request, limit);
        plan.solveSeconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    }
    if (!withinMaxOverhead(plan) && answered(plan.status)) {
        // A solver that claims the limit (its own time constraint) and misses it in the
        // simulator: the simulator has the last word, as on the budget.
        plan.status = SolveStatus::Infeasible;
        const std::string why = fmt::format(
            "infeasible: the plan's simulated step is {:.1f}% over store-all's, over the limit "
            "{:g}%",
            timeOverheadPercent(plan), request.maxOverheadPercent);
        plan.note = plan.note.empty() ? why : why + "; " + plan.note;
    }
    return plan;
}

Expected<Plan> Solver::solveWithinOverhead(const SolveRequest &request) const
{
    const auto begin = std::chrono::steady_clock::now();
    const double limitPercent = request.maxOverheadPercent;
    const std::string name = id();
    REMAT_ASSIGN_OR_RETURN(const Plan base, plainStoreAll(request));
    const double baseStep = stepSeconds(base.timeline);
    const auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    const auto finish = [&](Plan p, std::string how) {
        p.objective = Objective::MinPeak;
        p.budgetBytes = 0;
        p.maxOverheadPercent = limitPercent;
        p.baselineStepSeconds = baseStep;
        p.solveSeconds = elapsed();
        if (!how.empty())
            p.note = p.note.empty() ? how : how + "; " + p.note;
        return p;
    };
    SolveRequest plain = request;
    plain.maxOverheadPercent = -1;
    REMAT_ASSIGN_OR_RETURN(Plan lowest, solve(plain));
    if (request.stop.stopRequested() || lowest.status == SolveStatus::Cancelled)
        return finish(std::move(lowest), "cancelled");
    lowest.baselineStepSeconds = baseStep;
    lowest.maxOverheadPercent = limitPercent;
    if (answered(lowest.status) && withinMaxOverhead(lowest))
        return finish(std::move(lowest),
                      fmt::format("within {:g}% slower: its lowest-peak plan is {:+.1f}%",
                                  limitPercent, timeOverheadPercent(lowest)));
    if (!capabilities().minTime) {
        const std::string why = fmt::format(
            "infeasible: cannot honour --max-overhead {:g}: its lowest-peak plan ({}) is over "
            "the limit and it has no min-time objective to trade memory for time",
            limitPercent, figures(lowest));
        lowest.status = SolveStatus::Infeasible;
        return finish(std::move(lowest), why);
    }
    // The least step time under a budget falls as the budget grows (monotone in an exact
    // solver's model, nearly so in a heuristic's): bisect for the smallest budget whose
    // min-time plan is within the limit. Every plan is simulated; the lowest-peak plan within
    // the limit is kept whatever the order it came in. At store-all's peak the guard returns
    // store-all (0%) at worst, so there is always an answer.
    int64_t lo = answered(lowest.status) ? lowest.timeline.peakBytes : 0;
    int64_t hi = base.timeline.peakBytes;
    std::optional<Plan> best;
    int solves = 0;
    const auto tryBudget = [&](int64_t budget) -> Expected<bool> {
        SolveRequest r = plain;
        r.objective = Objective::MinTime;
        r.budgetBytes = budget;
        const double left = request.timeLimitSeconds - elapsed();
        r.timeLimitSeconds = std::max(1.0, std::min(request.timeLimitSeconds, left / 4));
        r.progress = {};
        ++solves;
        REMAT_ASSIGN_OR_RETURN(Plan p, solve(r));
        p.baselineStepSeconds = baseStep;
        p.maxOverheadPercent = limitPercent;
        const bool ok =
            answered(p.status) && p.timeline.peakBytes <= budget && withinMaxOverhead(p);
        if (ok) {
            if (!best || p.timeline.peakBytes < best->timeline.peakBytes ||
                (p.timeline.peakBytes == best->timeline.peakBytes &&
                 stepSeconds(p.timeline) < stepSeconds(best->timeline)))
                best = std::move(p);
        }
        return ok;
    };
    REMAT_ASSIGN_OR_RETURN(bool atTop, tryBudget(hi));
    if (atTop && best)
        hi = std::min(hi, best->timeline.peakBytes);
    const int64_t resolution = std::max<int64_t>(1, base.timeline.peakBytes / 1000);
    while (hi - lo > resolution && solves < 40 && !request.stop.stopRequested() &&
           elapsed() < request.timeLimitSeconds) {
        const int64_t mid = lo + (hi - lo) / 2;
        REMAT_ASSIGN_OR_RETURN(bool ok, tryBudget(mid));
        if (ok)
            hi = std::min(mid, best->timeline.peakBytes);
        else
            lo = mid;
        if (request.progress) {
            SolveProgress pr;
            pr.elapsedSeconds = elapsed();
            pr.incumbent = best ? double(best->timeline.peakBytes) : -1;
            pr.message =
                fmt::format("budget bisection within {:g}%: {} solves", limitPercent, solves);
            request.progress(pr);
        }
    }
    if (!best) {
        const std::string why =
            fmt::format("infeasible: no plan within --max-overhead {:g} (its lowest-peak plan: {})",
                        limitPercent, figures(lowest));
        lowest.status = SolveStatus::Infeasible;
        return finish(std::move(lowest), why);
    }
    Plan out = std::move(*best);
    out.status = SolveStatus::Feasible;
    out.solver = name;
    std::string how = fmt::format("lowest peak within {:g}% slower: budget bisection over {} "
                                  "min-time plans ({:+.1f}%; its lowest-peak plan is {:+.1f}%)",
                                  limitPercent, solves, timeOverheadPercent(out.timeline, baseStep),
                                  timeOverheadPercent(lowest));
    return finish(std::move(out), std::move(how));
}

Expected<Plan> Solver::solveUnlimited(const SolveRequest &request) const
{
    if (request.graph && request.costs && request.graph->optimizerOpCount() > 0 &&
        request.costs->opSeconds.size() == request.graph->opCount())
        return solveWithOptimizerStep(request);
    const auto begin = std::chrono::steady_clock::now();
    const std::string name = id();
    const Capabilities caps = capabilities();
    // Offload pins for solvers that only choose what stays on the device: solve with them as
    // keep pins, then stream those tensors (offload after forward, prefetch before backward).
    const bool streamPins = hasOffloadPins(request) && !caps.offloadPins;
    SolveRequest keepRequest;
    if (streamPins)
        keepRequest = offloadPinsAsKeep(request);
    Expected<Plan> plan =
        runGuarded(name, [&] { return searchPlan(streamPins ? keepRequest : request); });
    if (plan && streamPins)
        plan = runGuarded(name, [&] { return streamOffloadPins(std::move(*plan), request); });
    // A pin the solver cannot honour is an answer (infeasible, naming the pin), not a vanished row.
    if (!plan && !request.pins.empty() &&
        plan.status().message().find("pin") != std::string::npos &&
        (plan.status().code() == StatusCode::Unsupported ||
         plan.status().code() == StatusCode::InvalidArgument))
        return pinRefusedPlan(request, name, caps, plan.status());
    if (!plan || name == "store-all")
        return plan;
    auto settingOff = [&](const char *key) {
        auto it = request.settings.find(key);
        return it != request.settings.end() && it->second == "off";
    };
    if (settingOff("post-check"))
        return plan;
    Plan checked = checkAgainstStoreAll(std::move(*plan), request, name);
    // The simulator has the last word on the budget: a solver's own memory model (rotor's
    // discretised slots, a DP's per-stage sums) can under-count, and a min-time answer over its
    // budget is not an answer.
    if (request.objective == Objective::MinTime && answered(checked.status) &&
        checked.timeline.peakBytes > request.budgetBytes) {
        checked.status = SolveStatus::Infeasible;
        const std::string why = fmt::format(
            "infeasible: the plan's simulated peak {} is over the budget {} ({}'s own memory "
            "model counted less)",
            formatBytes(checked.timeline.peakBytes), formatBytes(request.budgetBytes), name);
        checked.note = checked.note.empty() ? why : why + "; " + checked.note;
    }
    checked.solveSeconds =
        std::max(checked.solveSeconds,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    return checked;
}

const Plan *dominatingPlan(const Plan &plan, const std::vector<Plan> &plans)
{
    if (!answered(plan.status))
        return nullptr;
    const Plan *by = nullptr;
    for (const Plan &q : plans)
        if (&q != &plan && answered(q.status) && dominates(q.timeline, plan.timeline) &&
            (!by || dominates(q.timeline, by->timeline)))
            by = &q;
    return by;
}

size_t flagDominatedPlans(std::vector<Plan> &plans)
{
    std::vector<std::string> notes;
    for (const Plan &p : plans) {
        const Plan *by = dominatingPlan(p, plans);
        notes.push_back(by ? fmt::format("dominated by {} ({} against {})", by->solver,
                                         figures(*by), figures(p))
                           : std::string());
    }
    size_t flagged = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
        if (notes[i].empty())
            continue;
        ++flagged;
        plans[i].note = plans[i].note.empty() ? notes[i] : notes[i] + "; " + plans[i].note;
    }
    return flagged;
}

} // namespace remat::core::solvers
