#include "core/solvers/checkmate/warm.h"

#include "core/solvers/registry.h"
#include "core/util/bytes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace remat::core::solvers::checkmate {

std::vector<int> sequenceFromSchedule(const Problem &p, const schedule::Schedule &s)
{
    std::vector<int> seq;
    int nextFirst = 0;
    std::vector<char> ran(p.n, 0);
    for (const schedule::Step &step : s.steps) {
        if (step.kind != schedule::StepKind::Compute)
            continue;
        const int k = step.target;
        if (k < 0 || k >= p.n)
            return {};
        if (!ran[k]) {
            if (k != nextFirst)
                return {};
            ran[k] = 1;
            ++nextFirst;
        }
        seq.push_back(k);
    }
    if (nextFirst != p.n)
        return {};
    return seq;
}

WarmStart bestHeuristicSequence(const Problem &p, const SolveRequest &request, double seconds)
{
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    auto left = [&] {
        return seconds - std::chrono::duration<double>(Clock::now() - begin).count();
    };
    WarmStart best;
    auto consider = [&](const std::vector<int> &seq, const std::string &from) {
        if (seq.empty())
            return;
        // The canonical stage form (what the MILP's point describes) and, without pins, the
        // sequence as the solver ordered it.
        StagePlan plan = stagePlanFromSequence(p, seq);
        Matrix r = solveR(p, plan.s);
        std::vector<std::vector<int>> forms{sequenceFromR(p, r)};
        if (request.pins.empty())
            forms.push_back(seq);
        for (const auto &form : forms) {
            const Evaluation e = evaluate(p, form);
            if (e.peakBytes > request.budgetBytes)
                continue;
            if (best.sequence.empty() || e.recomputeSeconds < best.evaluation.recomputeSeconds) {
                best.sequence = form;
                best.evaluation = e;
                best.solver = from;
            }
        }
    };
    // The registered solvers are quick or give up quickly; the greedy may need the time.
    consider(greedyPlan(p, request.budgetBytes, std::max(0.5, 0.7 * seconds), request.stop),
             "greedy");
    std::vector<std::unique_ptr<Solver>> others;
    for (auto &s : makeSolvers())
        if (s->id().rfind("checkmate", 0) != 0 && s->id() != "offload" && s->capabilities().minTime)
            others.push_back(std::move(s));
    for (size_t q = 0; q < others.size(); ++q) {
        if (request.stop.stopRequested() || left() <= 0.05)
            break;
        SolveRequest sub;
        sub.graph = request.graph;
        sub.costs = request.costs;
        sub.objective = Objective::MinTime;
        sub.budgetBytes = request.budgetBytes;
        sub.pins = request.pins;
        sub.stop = request.stop;
        sub.timeLimitSeconds = std::max(1.0, left() / double(others.size() - q));
        Expected<Plan> plan = others[q]->solve(sub);
        if (!plan ||
            (plan->status != SolveStatus::Optimal && plan->status != SolveStatus::Feasible))
            continue;
        consider(sequenceFromSchedule(p, plan->schedule), others[q]->id());
    }
    return best;
}

bool betterForObjective(const Plan &a, const Plan &b, const SolveRequest &request)
{
    auto answered = [&](const Plan &x) {
        const bool ok = x.status == SolveStatus::Optimal || x.status == SolveStatus::Feasible;
        return ok && (request.objective == Objective::MinPeak ||
                      x.timeline.peakBytes <= request.budgetBytes);
    };
    if (!answered(a))
        return false;
    if (!answered(b))
        return true;
    const double ta = a.timeline.totalSeconds, tb = b.timeline.totalSeconds;
    const double tol = 1e-9 * std::max(ta, tb);
    if (request.objective == Objective::MinPeak) {
        if (a.timeline.peakBytes != b.timeline.peakBytes)
            return a.timeline.peakBytes < b.timeline.peakBytes;
        return ta < tb - tol;
    }
    if (std::abs(ta - tb) > tol)
        return ta < tb;
    return a.timeline.peakBytes < b.timeline.peakBytes;
}

Expected<Plan> withRegisteredFallback(Expected<Plan> own, const SolveRequest &request,
                                      const std::string &solverId, double seconds)
{
    if (request.stop.stopRequested())
        return own;
    if (own && own->status == SolveStatus::Cancelled)
        return own;
    std::vector<std::unique_ptr<Solver>> others;
    for (auto &s : makeSolvers()) {
        const Capabilities c = s->capabilities();
        const bool objectiveOk = request.objective == Objective::MinPeak ? c.minPeak : c.minTime;
        if (s->id().rfind("checkmate", 0) != 0 && s->id() != "offload" && objectiveOk)
            others.push_back(std::move(s));
    }
    std::optional<Plan> best;
    for (size_t q = 0; q < others.size(); ++q) {
        if (request.stop.stopRequested())
            return own;
        SolveRequest sub = request;
        sub.progress = nullptr;
        sub.settings.clear();
        sub.timeLimitSeconds = std::max(0.1, seconds / double(others.size()));
        Expected<Plan> plan = others[q]->solve(sub);
        if (plan && (!best || betterForObjective(*plan, *best, request)))
            best = std::move(*plan);
    }
    if (!best || (own && !betterForObjective(*best, *own, request)))
        return own;
    Plan out = std::move(*best);
    const std::string from = out.solver;
    const std::string why = own ? own->note : own.status().message();
    out.note = fmt::format(
        "{}'s own answer was worse ({}); the best registered plan, {}'s, is "
        "returned{}{}",
        solverId,
        own ? fmt::format("{}, peak {}, {:.1f}% recompute", solveStatusName(own->status),
                          formatBytes(own->timeline.peakBytes), own->timeline.tdiPercent())
            : std::string("no plan"),
        from, why.empty() ? "" : "; ", why);
    out.solver = solverId;
    out.settings = request.settings;
    out.settings["fallback-from"] = from;
    out.bound = own ? own->bound : -1;
    if (out.status == SolveStatus::Optimal)
        out.status = SolveStatus::Feasible;
    return out;
}

Expected<Plan> ownThenRegistered(const SolveRequest &request, const std::string &solverId,
                                 const std::function<Expected<Plan>()> &searchOwn,
                                 std::initializer_list<StatusCode> refusals)
{
    const auto begin = std::chrono::steady_clock::now();
    Expected<Plan> own = searchOwn();
    // A proven optimum stands; otherwise (model too large for CBC, time limit, only the warm
    // start) another registered solver may have the better plan on the true figures.
    if (own && own->status == SolveStatus::Optimal)
        return own;
    if (settingText(request, "fallback", "registered") == "off")
        return own;
    if (!own && std::find(refusals.begin(), refusals.end(), own.status().code()) != refusals.end())
        return own;
    const double left =
        request.timeLimitSeconds -
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    // The fallback runs inside the solve's time limit: a search that used it all keeps its own
    // plan (the registered solvers are rows of their own in a comparison). Only a search with no
    // plan at all gets half a second more, so that some plan comes back.
    const double fallbackSeconds = std::min(left, 0.25 * request.timeLimitSeconds);
    if (own && fallbackSeconds < 0.1) {
        own->note += own->note.empty() ? "" : "; ";
        own->note += "no time left to try the registered solvers";
        return own;
    }
    return withRegisteredFallback(std::move(own), request, solverId,
                                  std::max(own ? 0.1 : 0.5, fallbackSeconds));
}

} // namespace remat::core::solvers::checkmate
