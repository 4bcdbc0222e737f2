// remat solve MODEL --solver ID [--objective min-peak|min-time] [--budget BYTES | --budget-ratio R]
//   [--pin keep:VALUE] [--pin recompute:VALUE] [--time-limit S] [--out plan.json] [--json]
//   [--batch N]
// remat solve MODEL --compare [--json]: every solver, one table.
// remat solve MODEL --objective min-peak --max-overhead P: the lowest peak within P% of
//   store-all's step time.
// MODEL is an ONNX file, or a benchmark node-link .json graph.
#include "commands.h"
#include "model_loading.h"
#include "time_source.h"

#include "core/io/plan_file.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/chain_frontier.h"
#include "core/solvers/frontier_knee.h"
#include "core/solvers/registry.h"
#include "core/util/bytes.h"
#if __has_include("core/io/node_link.h")
#include "core/io/node_link.h"
#define REMAT_SOLVE_NODE_LINK 1
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace remat::app {

namespace {

using namespace remat::core;

struct SolveOptions
{
    ModelInput input;
    std::string solver;
    std::string objective; ///< empty: min-time when a budget is given, else min-peak
    std::string budget;
    double budgetRatio = 0;
    double maxOverhead = -1; ///< --max-overhead P (percent); < 0: none
    std::vector<std::string> pins;
    std::vector<std::string> settings; ///< --setting KEY=VALUE, solver-specific knobs
    double timeLimit = 60;
    std::string out;
    bool json = false;
    bool compare = false;
    bool pareto = false;
    int paretoPoints = 12;
    int paretoSlots = 2000;
    int paretoRows = 40;
    std::string profile;
};

bool endsWith(const std::string &s, const std::string &tail)
{
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The model's problem, or a benchmark node-link graph's with its own costs; with --profile, its
// costs are the profile's (`report` says where each op's time came from).
Expected<std::shared_ptr<const pipeline::Problem>>
loadSolveProblem(const SolveOptions &o, cost::ProfileCostsReport *report)
{
    if (endsWith(o.input.model, ".json")) {
#ifdef REMAT_SOLVE_NODE_LINK
        REMAT_ASSIGN_OR_RETURN(io::NodeLinkGraph g, io::readNodeLinkGraph(o.input.model));
        REMAT_ASSIGN_OR_RETURN(
            auto problem,
            pipeline::makeProblem(
                nullptr, std::make_shared<const training::TrainingGraph>(std::move(g.graph)),
                std::make_shared<const cost::Costs>(std::move(g.costs))));
        return withProfile(std::move(problem), o.profile, report);
#else
        return makeError(StatusCode::Unsupported,
                         o.input.model + ": node-link graphs are not supported by this build");
#endif
    }
    REMAT_ASSIGN_OR_RETURN(LoadedModel m, loadTrainingModel(o.input));
    return withProfile(m.problem, o.profile, report);
}

Expected<std::map<std::string, std::string>> parseSettings(const std::vector<std::string> &texts)
{
    std::map<std::string, std::string> out;
    for (const std::string &t : texts) {
        const size_t eq = t.find('=');
        if (eq == std::string::npos || eq == 0)
            return makeError(StatusCode::InvalidArgument,
                             "--setting '" + t + "': expected KEY=VALUE, e.g. stream=off");
        out[t.substr(0, eq)] = t.substr(eq + 1);
    }
    return out;
}

bool answeredPlan(const solvers::Plan &p)
{
    return p.status == solvers::SolveStatus::Optimal || p.status == solvers::SolveStatus::Feasible;
}

/// An answered plan within its request's --max-overhead (every plan when there is none).
bool honoursMaxOverhead(const solvers::Plan &p)
{
    return answeredPlan(p) && solvers::withinMaxOverhead(p);
}

/// "far end" notes for a compare table: every answered plan more than
/// kFarEndOverheadPercent slower than store-all, with the knee of the table's plans (store-all
/// among them) beside it. Returns the notes by plan index (empty: not flagged).
std::vector<std::string> farEndNotes(const std::vector<solvers::Plan> &plans,
                                     const sim::Timeline &storeAll)
{
    std::vector<std::string> notes(plans.size());
    std::vector<solvers::CostPoint> pts{{storeAll.peakBytes, solvers::stepSeconds(storeAll)}};
    std::vector<const solvers::Plan *> of{nullptr};
    for (const solvers::Plan &p : plans)
        if (answeredPlan(p)) {
            pts.push_back({p.timeline.peakBytes, solvers::stepSeconds(p.timeline)});
            of.push_back(&p);
        }
    const std::optional<size_t> knee =
        solvers::frontierKnee(pts, storeAll.peakBytes, solvers::stepSeconds(storeAll));
    if (!knee)
        return notes;
    const std::string kneeText =
        of[*knee] ? fmt::format("{} at peak {}, {:+.1f}% time", of[*knee]->solver,
                                formatBytes(pts[*knee].peakBytes),
                                solvers::timeOverheadPercent(of[*knee]->timeline,
                                                             solvers::stepSeconds(storeAll)))
                  : std::string("store-all itself");
    for (size_t i = 0; i < plans.size(); ++i) {
        const solvers::Plan &p = plans[i];
        const double over =
            solvers::timeOverheadPercent(p.timeline, solvers::stepSeconds(storeAll));
        if (answeredPlan(p) && over > solvers::kFarEndOverheadPercent && of[*knee] != &p)
            notes[i] = fmt::format(
                "far end of the frontier ({:+.0f}% time); the knee of these plans: {} (past it "
                "1% less memory costs more than {:g}% more time)",
                over, kneeText, solvers::kKneeTimePerMemory);
    }
    return notes;
}

Expected<std::vector<solvers::Pin>> parsePins(const std::vector<std::string> &texts,
                                              const training::TrainingGraph &tg)
{
    std::vector<solvers::Pin> pins;
    for (const std::string &t : texts) {
        const size_t colon = t.find(':');
        if (colon == std::string::npos)
            return makeError(StatusCode::InvalidArgument,
                             "--pin '" + t +
                                 "': expected keep:VALUE, recompute:VALUE or offload:VALUE");
        const std::string kind = t.substr(0, colon), name = t.substr(colon + 1);
        const std::optional<solvers::PinKind> pinKind = solvers::parsePinKind(kind);
        if (!pinKind)
            return makeError(StatusCode::InvalidArgument,
                             "--pin '" + t + "': unknown kind '" + kind + "'");
        solvers::Pin pin;
        pin.kind = *pinKind;
        const TensorId *id = tg.findTensor(name);
        if (!id)
            return makeError(StatusCode::NotFound,
                             "--pin '" + t + "': no tensor named '" + name + "'");
        pin.tensor = *id;
        pins.push_back(pin);
    }
    return pins;
}

nlohmann::json planJson(const solvers::Plan &p, const training::TrainingGraph &tg)
{
    nlohmann::json ck = nlohmann::json::array();
    for (TensorId t : p.checkpoints)
        ck.push_back(tg.tensor(t).name);
    nlohmann::json j{{"solver", p.solver},
                     {"status", solvers::solveStatusName(p.status)},
                     {"objective", solvers::objectiveName(p.objective)},
                     {"budget_bytes", p.budgetBytes},
                     {"peak_bytes", p.timeline.peakBytes},
                     {"activation_peak_bytes", p.timeline.activationPeakBytes},
                     {"compute_time", p.timeline.computeSeconds},
                     {"recompute_time", p.timeline.recomputeSeconds},
                     {"tdi_percent", p.timeline.tdiPercent()},
                     {"copy_time", p.timeline.copySeconds},
                     {"step_seconds", solvers::stepSeconds(p.timeline)},
                     {"store_all_step_seconds", p.baselineStepSeconds},
                     {"time_overhead_percent", solvers::timeOverheadPercent(p)},
                     {"solver_objective", p.solverObjective},
                     {"solver_objective_name", p.solverObjectiveName},
                     {"bound", p.bound},
                     {"solve_seconds", p.solveSeconds},
                     {"note", p.note},
                     {"checkpoints", ck}};
    if (p.maxOverheadPercent >= 0) {
        j["max_overhead_percent"] = p.maxOverheadPercent;
        j["honours_max_overhead"] = honoursMaxOverhead(p);
    }
    return j;
}

/// The budget-versus-recompute frontier, from two sources merged:
/// - chain-dp: rotor's DP table read at every memory (solvers/chain_frontier.h), each
///   breakpoint's plan simulated: optimal in the DP's chain model (memory in slots), not proven
///   against the simulator;
/// - sweep: every min-time solver at --pareto-points budgets from the lowest peak any solver
///   reaches to store-all's peak, with the best proven lower bound (checkmate-milp's, in its
///   fixed-order model): "exact" where the bound meets the plan, "bounded" where a bound
///   exists, "not proven" otherwise.
/// A point another point beats on peak and recompute is dropped; every figure is simulated.
int runPareto(const SolveOptions &o, const training::TrainingGraph &tg, const cost::Costs &costs,
              const std::vector<solvers::Pin> &pins, const sim::Timeline &storeAll,
              const solvers::SolverRegistry &registry)
{
    auto request = [&](solvers::Objective objective, int64_t budget, const solvers::Solver &s) {
        solvers::SolveRequest r;
        r.graph = &tg;
        r.costs = &costs;
        r.objective = objective;
        r.budgetBytes = budget;
        r.pins = pins;
        r.timeLimitSeconds = s.capabilities().needsCbc ? std::min(o.timeLimit, 10.0) : o.timeLimit;
        return r;
    };
    auto answered = [](const solvers::Plan &p) {
        return p.status == solvers::SolveStatus::Optimal ||
               p.status == solvers::SolveStatus::Feasible;
    };
    struct Point
    {
        std::string provenance; ///< "chain-dp" or "sweep"
        std::string solver;
        int64_t budget = 0;         ///< the sweep's budget; chain-dp: the plan's own peak
        sim::Timeline timeline;     ///< the simulator's figures
        double boundSeconds = -1;   ///< proven lower bound on recompute seconds (-1: none)
        int64_t boundBudget = -1;   ///< the budget that bound was proven at (>= the peak)
        int memorySlots = -1;       ///< chain-dp: the DP memory the plan was read at
        bool exactOverSets = false; ///< from a plain chain's exact DP that held (chain_frontier.h)
    };
    std::vector<Point> points;

    // The chain DP: one table, every memory.
    std::optional<solvers::ChainFrontier> chain;
    std::string chainSkipped;
    {
        solvers::SolveRequest r;
        r.graph = &tg;
        r.costs = &costs;
        r.pins = pins;
        r.timeLimitSeconds = o.timeLimit;
        solvers::ChainFrontierOptions co;
        co.slotCount = o.paretoSlots;
        auto f = solvers::chainFrontier(r, co);
        if (f) {
            for (const solvers::FrontierPoint &p : f->candidates) {
                const bool exactDp = p.source == "exact chain DP";
                points.push_back({"chain-dp",
                                  p.source == "store-all" ? "store-all"
                                  : exactDp               ? "exact-dp"
                                                          : "rotor",
                                  p.timeline.peakBytes, p.timeline,
                                  p.source == "store-all" ? 0.0 : -1.0,
                                  p.source == "store-all" ? p.timeline.peakBytes : -1,
                                  p.memorySlots, exactDp && f->exactOverCheckpointSets});
            }
            chain = std::move(*f);
        } else {
            chainSkipped = f.status().message();
        }
    }

    int64_t lowest = storeAll.peakBytes;
    for (const Point &p : points)
        lowest = std::min(lowest, p.timeline.peakBytes);
    for (const auto &s : registry.solvers()) {
        if (!s->capabilities().minPeak || s->id() == "offload")
            continue;
        auto p = s->solve(request(solvers::Objective::MinPeak, 0, *s));
        if (p && answered(*p))
            lowest = std::min(lowest, p->timeline.peakBytes);
    }
    const int n = std::max(2, o.paretoPoints);
    for (int k = 0; k < n; ++k) {
        Point pt;
        pt.provenance = "sweep";
        pt.budget = lowest + (storeAll.peakBytes - lowest) * k / (n - 1);
        std::optional<solvers::Plan> best;
        for (const auto &s : registry.solvers()) {
            if (!s->capabilities().minTime || s->id() == "offload")
                continue;
            auto p = s->solve(request(solvers::Objective::MinTime, pt.budget, *s));
            if (!p)
                continue;
            // checkmate-milp's bound is on recompute seconds over every frontier-ordered plan.
            if (s->id() == "checkmate-milp" && p->bound >= 0 &&
                p->status != solvers::SolveStatus::Infeasible)
                pt.boundSeconds = std::max(pt.boundSeconds, p->bound);
            if (!answered(*p) || p->timeline.peakBytes > pt.budget)
                continue;
            // The fastest simulated step under the budget (copy stalls count, not only recompute).
            const double t = solvers::stepSeconds(p->timeline);
            const double bt = best ? solvers::stepSeconds(best->timeline) : 0;
            if (!best || t < bt || (t == bt && p->timeline.peakBytes < best->timeline.peakBytes))
                best = std::move(*p);
        }
        if (!best)
            continue;
        pt.solver = best->solver;
        pt.timeline = best->timeline;
        if (best->solver == "store-all" && best->timeline.recomputeSeconds == 0)
            pt.boundSeconds = 0;
        if (pt.boundSeconds >= 0)
            pt.boundBudget = pt.budget;
        points.push_back(std::move(pt));
    }
    // The least recompute never rises as the budget grows, so a bound proven at budget B holds
    // for every plan peaking at or below B: each point (the chain DP's hundreds included) takes
    // the best bound of the sweep budgets at or above its peak.
    for (Point &p : points)
        for (const Point &q : points)
            if (q.provenance == "sweep" && q.boundBudget >= p.timeline.peakBytes &&
                q.boundSeconds > p.boundSeconds) {
                p.boundSeconds = q.boundSeconds;
                p.boundBudget = q.boundBudget;
            }
    // Drop points another point beats on peak and step time (of equal points, the first: the
    // chain DP's, then the sweep's by budget).
    std::vector<const Point *> frontier;
    for (size_t i = 0; i < points.size(); ++i) {
        const double ta = solvers::stepSeconds(points[i].timeline);
        const int64_t pa = points[i].timeline.peakBytes;
        bool dominated = false;
        for (size_t j = 0; j < points.size() && !dominated; ++j) {
            const double tb = solvers::stepSeconds(points[j].timeline);
            const int64_t pb = points[j].timeline.peakBytes;
            const double tol = 1e-9 * std::max(ta, tb);
            const bool noWorse = pb <= pa && tb <= ta + tol;
            const bool better = pb < pa || tb < ta - tol;
            dominated = i != j && noWorse && (better || j < i);
        }
        if (!dominated)
            frontier.push_back(&points[i]);
    }
    std::sort(frontier.begin(), frontier.end(), [](const Point *a, const Point *b) {
        return a->timeline.peakBytes < b->timeline.peakBytes;
    });
    const double baseStep = solvers::stepSeconds(storeAll);
    auto overheadOf = [&](const Point &p) {
        return solvers::timeOverheadPercent(p.timeline, baseStep);
    };
    const Point *knee = nullptr;
    {
        std::vector<solvers::CostPoint> pts;
        for (const Point *p : frontier)
            pts.push_back({p->timeline.peakBytes, solvers::stepSeconds(p->timeline)});
        if (auto k = solvers::frontierKnee(pts, storeAll.peakBytes, baseStep))
            knee = frontier[*k];
    }
    const double oneCompute = storeAll.oneComputeSeconds > 0 ? storeAll.oneComputeSeconds : 1;
    auto kindOf = [&](const Point &p) {
        if (p.exactOverSets)
            return std::string("exact-sets");
        if (p.boundSeconds < 0)
            return std::string("not proven");
        return p.timeline.recomputeSeconds <= p.boundSeconds * (1 + 1e-6) + 1e-15
                   ? std::string("exact")
                   : std::string("bounded");
    };
    auto gapPercent = [&](const Point &p) {
        return p.boundSeconds >= 0
                   ? 100.0 * (p.timeline.recomputeSeconds - p.boundSeconds) / oneCompute
                   : -1.0;
    };
    if (o.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const Point *p : frontier)
            list.push_back({{"provenance", p->provenance},
                            {"solver", p->solver},
                            {"budget_bytes", p->budget},
                            {"memory_slots", p->memorySlots},
                            {"peak_bytes", p->timeline.peakBytes},
                            {"activation_peak_bytes", p->timeline.activationPeakBytes},
                            {"recompute_time", p->timeline.recomputeSeconds},
                            {"tdi_percent", p->timeline.tdiPercent()},
                            {"step_seconds", solvers::stepSeconds(p->timeline)},
                            {"time_overhead_percent", overheadOf(*p)},
                            {"knee", p == knee},
                            {"lower_bound_tdi_percent",
                             p->boundSeconds >= 0 ? 100.0 * p->boundSeconds / oneCompute : -1.0},
                            {"gap_tdi_percent", gapPercent(*p)},
                            {"bound_budget_bytes", p->boundBudget},
                            {"kind", kindOf(*p)},
                            {"simulated", true}});
        nlohmann::json j{{"store_all_peak_bytes", storeAll.peakBytes},
                         {"store_all_step_seconds", baseStep},
                         {"knee_time_per_memory", solvers::kKneeTimePerMemory},
                         {"lowest_peak_bytes", lowest},
                         {"sweep_budgets", n},
                         {"frontier", list}};
        if (chain)
            j["chain_dp"] = {{"stages", chain->stages},
                             {"one_op_per_stage", chain->opChain},
                             {"slots", chain->slotCount},
                             {"slot_bytes", chain->slotBytes},
                             {"breakpoints", chain->breakpoints},
                             {"plans_simulated", chain->candidates.size()},
                             {"seconds", chain->seconds},
                             {"complete", chain->complete},
                             {"exact_over_checkpoint_sets", chain->exactOverCheckpointSets},
                             {"exact_dp_mismatches", chain->exactMismatches},
                             {"non_dominated_alone", chain->points.size()}};
        else
            j["chain_dp"] = {{"skipped", chainSkipped}};
        j["time_source"] = cost::timeSourceName(costs.timeSource);
        std::printf("%s\n", j.dump(1).c_str());
        return frontier.empty() ? 1 : 0;
    }
    fmt::print("{}: Pareto frontier, lowest peak {} to store-all's {} (times: {})\n", o.input.model,
               formatBytes(lowest), formatBytes(storeAll.peakBytes),
               cost::timeSourceName(costs.timeSource));
    if (chain)
        fmt::print("chain DP: {} stages{}, {} slots of {} ({} breakpoints, {} plans simulated, "
                   "{} non-dominated among them, {:.0f} ms){}\n",
                   chain->stages, chain->opChain ? " (one op each)" : " (blocks kept whole)",
                   chain->slotCount, formatBytes(int64_t(std::ceil(chain->slotBytes))),
                   chain->breakpoints, chain->candidates.size(), chain->points.size(),
                   chain->seconds * 1e3,
                   std::string(chain->complete ? "" : "; stopped by the time limit") +
                       (chain->exactOverCheckpointSets ? "; exact over checkpoint sets"
                        : chain->exactMismatches > 0
                            ? fmt::format("; the exact DP's figures differed from the "
                                          "simulator's on {} plans",
                                          chain->exactMismatches)
                            : std::string()));
    else
        fmt::print("chain DP skipped: {}\n", chainSkipped);
    fmt::print("sweep: every min-time solver at {} budgets\n", n);
    fmt::print("{:>12} {:<9} {:<15} {:>12} {:>11} {:>8} {:>13} {:<10}\n", "peak", "source",
               "solver", "budget", "recompute %", "time %", "lower bound %", "kind");
    // With options the chain DP's frontier runs to hundreds of points: the table shows every
    // sweep point and the first, the last and evenly spread chain-DP points up to the limit.
    std::vector<const Point *> shown = frontier;
    if (o.paretoRows > 0 && frontier.size() > size_t(o.paretoRows)) {
        shown.clear();
        const size_t n = frontier.size(), rows = std::max<size_t>(2, size_t(o.paretoRows));
        std::vector<char> pick(n, 0);
        for (size_t k = 0; k < rows; ++k)
            pick[(k * (n - 1) + (rows - 1) / 2) / (rows - 1)] = 1;
        for (size_t i = 0; i < n; ++i)
            if (pick[i] || frontier[i]->provenance == "sweep" || frontier[i] == knee)
                shown.push_back(frontier[i]);
    }
    for (const Point *p : shown)
        fmt::print("{:>12} {:<9} {:<15} {:>12} {:>11.2f} {:>8} {:>13} {:<10}{}\n",
                   formatBytes(p->timeline.peakBytes), p->provenance, p->solver,
                   p->provenance == "sweep" ? formatBytes(p->budget) : std::string("-"),
                   p->timeline.tdiPercent(), fmt::format("{:+.1f}", overheadOf(*p)),
                   p->boundSeconds >= 0
                       ? fmt::format("{:.2f}", 100.0 * p->boundSeconds / oneCompute)
                       : std::string("-"),
                   kindOf(*p), p == knee ? "  <- knee" : "");
    if (knee)
        fmt::print("knee: {} at {} ({:+.1f}% time): past it 1% less memory costs more than {:g}% "
                   "more time (on the frontier's lower convex hull, in percent of store-all's "
                   "peak and step)\n",
                   knee->solver, formatBytes(knee->timeline.peakBytes), overheadOf(*knee),
                   solvers::kKneeTimePerMemory);
    if (shown.size() < frontier.size())
        fmt::print("{} of the {} frontier points shown (--pareto-rows 0 prints all; --json has "
                   "all)\n",
                   shown.size(), frontier.size());
    fmt::print("every figure is the simulator's. chain-dp: the least DP time at each memory of "
               "rotor's chain model (memory rounded up to slots; --pareto-slots for finer); "
               "sweep: the fastest min-time plan at a budget; time % is the simulated step over "
               "store-all's (the cost points are compared on). kind: exact = a proven lower bound "
               "(checkmate-milp, fixed op order) meets the plan; exact-sets = a plain chain's "
               "exact DP (no checkpoint set, each dropped run recomputed once, has a lower peak "
               "at no more recompute); bounded = the bound is below it (a bound proven at a "
               "budget also holds for every lower peak); not proven = no bound\n");
    return frontier.empty() ? 1 : 0;
}

int runSolve(const SolveOptions &o)
{
    auto fail = [](const Status &s) {
        std::fprintf(stderr, "remat solve: %s\n", s.toString().c_str());
        return 1;
    };
    if (!o.compare && !o.pareto && o.solver.empty())
        return fail(makeError(StatusCode::InvalidArgument, "give --solver ID or --compare"));
    cost::ProfileCostsReport report;
    auto loaded = loadSolveProblem(o, &report);
    if (!loaded)
        return fail(loaded.status());
    const pipeline::Problem &problem = **loaded;
    const training::TrainingGraph &tg = *problem.training;
    auto pins = parsePins(o.pins, tg);
    if (!pins)
        return fail(pins.status());
    Expected<std::map<std::string, std::string>> settings = parseSettings(o.settings);
    if (!settings)
        return fail(settings.status());

    int64_t budget = 0;
    const sim::Timeline *storeAll = &problem.storeAll.timeline;
    if (!o.budget.empty()) {
        auto b = parseBytes(o.budget);
        if (!b)
            return fail(b.status());
        budget = *b;
    } else if (o.budgetRatio > 0) {
        budget = static_cast<int64_t>(o.budgetRatio * double(storeAll->peakBytes));
    }
    // A budget with no objective asks for the least recompute within it (as the planner does);
    // without a budget the lowest peak is all there is to ask for.
    const bool budgetGiven = !o.budget.empty() || o.budgetRatio > 0;
    std::string objectiveSource = "--objective";
    if (o.objective.empty())
        objectiveSource = o.maxOverhead >= 0 ? "default: --max-overhead was given"
                          : budgetGiven      ? "default: a budget was given"
                                             : "default: no budget given";
    auto objective = solvers::parseObjective(!o.objective.empty()               ? o.objective
                                             : budgetGiven && o.maxOverhead < 0 ? "min-time"
                                                                                : "min-peak");
    if (!objective)
        return fail(objective.status());
    if (*objective == solvers::Objective::MinTime && budget <= 0)
        return fail(makeError(StatusCode::InvalidArgument,
                              "min-time needs --budget BYTES or --budget-ratio R"));
    if (o.maxOverhead >= 0 && *objective != solvers::Objective::MinPeak)
        return fail(makeError(StatusCode::InvalidArgument,
                              "--max-overhead P asks for the lowest peak within P% of store-all's "
                              "step time: use it with --objective min-peak (min-time under a "
                              "budget already gives the fastest plan)"));
    if (o.maxOverhead >= 0 && o.pareto)
        return fail(makeError(StatusCode::InvalidArgument,
                              "--max-overhead does not apply to --pareto (the frontier has every "
                              "overhead); read the row at or under P% there"));

    const solvers::SolverRegistry registry = solvers::makeRegistry();
    if (o.pareto)
        return runPareto(o, tg, *problem.costs, *pins, *storeAll, registry);
    std::vector<const solvers::Solver *> chosen;
    if (o.compare) {
        // Applicable: the solver states it handles the objective. A solver that cannot honour
        // the pins still gets its row ("infeasible: cannot honour offload pin on X").
        for (const auto &s : registry.solvers()) {
            const solvers::Capabilities c = s->capabilities();
            const bool objectiveOk =
                *objective == solvers::Objective::MinPeak ? c.minPeak : c.minTime;
            if (objectiveOk)
                chosen.push_back(s.get());
        }
    } else {
        const solvers::Solver *s = registry.find(o.solver);
        if (!s) {
            std::string ids;
            for (const std::string &id : registry.ids())
                ids += (ids.empty() ? "" : ", ") + id;
            return fail(makeError(StatusCode::NotFound,
                                  "unknown solver '" + o.solver + "' (available: " + ids + ")"));
        }
        chosen.push_back(s);
    }

    nlohmann::json list = nlohmann::json::array();
    std::vector<solvers::Plan> plans;
    std::vector<std::pair<std::string, std::string>> errors;
    for (const solvers::Solver *s : chosen) {
        solvers::SolveRequest r;
        r.graph = &tg;
        r.costs = problem.costs.get();
        r.objective = *objective;
        r.budgetBytes = budget;
        r.maxOverheadPercent = o.maxOverhead;
        r.settings = *settings;
        r.pins = *pins;
        r.timeLimitSeconds = o.timeLimit;
        auto plan = s->solve(r);
        if (!plan) {
            if (!o.compare)
                return fail(plan.status());
            errors.emplace_back(s->id(), plan.status().toString());
            list.push_back(
                {{"solver", s->id()}, {"status", "error"}, {"error", plan.status().toString()}});
            continue;
        }
        list.push_back(planJson(*plan, tg));
        plans.push_back(std::move(*plan));
    }

    // A compare says which plans another solver's plan beats on peak and time, and which
    // min-peak answers lie at the frontier's far end (with the knee beside them).
    std::vector<std::string> farEnd;
    if (o.compare) {
        solvers::flagDominatedPlans(plans);
        if (*objective == solvers::Objective::MinPeak) {
            farEnd = farEndNotes(plans, *storeAll);
            for (size_t i = 0; i < plans.size(); ++i)
                if (!farEnd[i].empty())
                    plans[i].note =
                        plans[i].note.empty() ? farEnd[i] : farEnd[i] + "; " + plans[i].note;
        }
        size_t k = 0;
        for (nlohmann::json &e : list)
            if (!e.contains("error") && k < plans.size()) {
                e["far_end"] = !farEnd.empty() && !farEnd[k].empty();
                e["note"] = plans[k++].note;
            }
    }

    if (!o.out.empty() && !plans.empty()) {
        if (o.compare)
            return fail(makeError(StatusCode::InvalidArgument, "--out needs a single --solver"));
        if (Status s = io::savePlan(o.out, plans.front(), tg, io::ModelIdentity::of(tg)); !s)
            return fail(s);
    }

    if (o.json) {
        // Every entry says which objective ran and why, with its budget and pins.
        for (nlohmann::json &e : list) {
            e["objective"] = solvers::objectiveName(*objective);
            e["objective_source"] = objectiveSource;
            e["budget_bytes"] = budget;
            if (o.maxOverhead >= 0)
                e["max_overhead_percent"] = o.maxOverhead;
            e["pins"] = o.pins;
            addTimeSourceJson(e, *problem.costs, o.profile.empty() ? nullptr : &report);
        }
        std::printf("%s\n", (o.compare ? list : list.front()).dump(1).c_str());
    } else {
        std::string pinText;
        for (const std::string &p : o.pins)
            pinText += (pinText.empty() ? "" : ", ") + p;
        fmt::print(
            "{}: {} forward ops, store-all peak {} (activations {}), objective {} ({}){}{}\n",
            o.input.model, tg.forwardOpCount(), formatBytes(storeAll->peakBytes),
            formatBytes(storeAll->activationPeakBytes), solvers::objectiveName(*objective),
            objectiveSource,
            (budget > 0 ? ", budget " + formatBytes(budget) : std::string()) +
                (o.maxOverhead >= 0
                     ? fmt::format(", at most {:g}% slower than store-all", o.maxOverhead)
                     : std::string()),
            pinText.empty() ? std::string() : ", pins " + pinText);
        fmt::print("times: {}, store-all step {:.4g} s\n",
                   timeSourceText(*problem.costs, o.profile.empty() ? nullptr : &report),
                   storeAll->totalSeconds);
        // The step time is the cost: recompute is part of it, copies not hidden under compute
        // the rest (an offload plan recomputes nothing and may be the slowest).
        fmt::print("{:<15} {:<11} {:>12} {:>15} {:>11} {:>10} {:>8} {:>10}\n", "solver", "status",
                   "peak", "activation peak", "recompute %", "step s", "time %", "solve ms");
        for (size_t i = 0; i < plans.size(); ++i) {
            const solvers::Plan &p = plans[i];
            fmt::print(
                "{:<15} {:<11} {:>12} {:>15} {:>11.1f} {:>10.4g} {:>8} {:>10.1f}{}\n", p.solver,
                solvers::solveStatusName(p.status), formatBytes(p.timeline.peakBytes),
                formatBytes(p.timeline.activationPeakBytes), p.timeline.tdiPercent(),
                solvers::stepSeconds(p.timeline),
                fmt::format("{:+.1f}", solvers::timeOverheadPercent(p)), p.solveSeconds * 1e3,
                !farEnd.empty() && !farEnd[i].empty() ? "  far end" : "");
        }
        for (const auto &[id, e] : errors)
            fmt::print("{:<15} error: {}\n", id, e);
        if (o.compare && o.maxOverhead >= 0) {
            std::string refused;
            for (const solvers::Plan &p : plans)
                if (!honoursMaxOverhead(p))
                    refused += (refused.empty() ? "" : ", ") + p.solver;
            for (const auto &[id, e] : errors)
                refused += (refused.empty() ? "" : ", ") + id;
            const solvers::Plan *best = nullptr;
            for (const solvers::Plan &p : plans)
                if (honoursMaxOverhead(p) &&
                    (!best || p.timeline.peakBytes < best->timeline.peakBytes))
                    best = &p;
            if (best)
                fmt::print("lowest peak within {:g}%: {} ({}, {:+.1f}% time)\n", o.maxOverhead,
                           best->solver, formatBytes(best->timeline.peakBytes),
                           solvers::timeOverheadPercent(*best));
            if (!refused.empty())
                fmt::print("could not honour --max-overhead {:g}: {}\n", o.maxOverhead, refused);
        }
        if (o.compare)
            for (const solvers::Plan &p : plans)
                if (!p.note.empty())
                    fmt::print("{}: {}\n", p.solver, p.note);
        if (!o.compare && !plans.empty()) {
            const solvers::Plan &p = plans.front();
            if (!p.note.empty())
                fmt::print("note: {}\n", p.note);
            fmt::print("{} checkpoints; {}: {:.6g}\n", p.checkpoints.size(),
                       p.solverObjectiveName.empty() ? "solver objective" : p.solverObjectiveName,
                       p.solverObjective);
            if (!o.out.empty())
                fmt::print("plan written to {}\n", o.out);
        }
    }
    if (!o.compare && !plans.empty() && plans.front().status == solvers::SolveStatus::Infeasible)
        return 3;
    return plans.empty() ? 1 : 0;
}

} // namespace

void addSolveCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<SolveOptions>();
    CLI::App *cmd = app.add_subcommand("solve", "Find a checkpointing plan for a model");
    addModelArgument(*cmd, opts->input, "ONNX model, or a benchmark node-link .json graph");
    cmd->add_option("--solver", opts->solver, "solver id (see --compare for the list)");
    cmd->add_flag("--compare", opts->compare, "run every solver and print one table");
    cmd->add_flag(
        "--pareto", opts->pareto,
        "budget vs recompute frontier: rotor's DP read at every memory (every breakpoint's "
        "plan simulated), merged with every min-time solver at --pareto-points budgets from "
        "the lowest peak to store-all, with proven lower bounds where CBC gives them");
    cmd->add_option("--pareto-points", opts->paretoPoints,
                    "budgets in the --pareto sweep (default 12)");
    cmd->add_option("--pareto-rows", opts->paretoRows,
                    "most rows the --pareto table prints (default 40: every sweep point and "
                    "chain-DP points evenly spread by peak; 0 prints all; --json has all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--pareto-slots", opts->paretoSlots,
                    "memory slots of the --pareto chain DP (default 2000; more is finer, capped "
                    "at 60 M table entries)")
        ->check(CLI::Range(10, 1000000));
    cmd->add_option(
        "--objective", opts->objective,
        "min-peak or min-time (default: min-time when a budget is given, else min-peak)");
    auto *budget = cmd->add_option("--budget", opts->budget, "device budget, e.g. 6GiB, 512MiB");
    cmd->add_option("--budget-ratio", opts->budgetRatio, "budget as a fraction of store-all's peak")
        ->excludes(budget);
    cmd->add_option("--max-overhead", opts->maxOverhead,
                    "with --objective min-peak: the lowest peak whose simulated step time is at "
                    "most P percent over store-all's (e.g. 35)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--pin", opts->pins,
                    "keep:VALUE, recompute:VALUE or offload:VALUE (repeatable)");
    cmd->add_option("--time-limit", opts->timeLimit, "seconds per solver (default 60)");
    cmd->add_option("--setting", opts->settings,
                    "KEY=VALUE solver knob (repeatable): rotor's slots, tape-options, "
                    "frontier-slots; stream=off keeps --max-overhead answers from streaming kept "
                    "tensors to the host");
    cmd->add_option("--out", opts->out, "write the plan (remat-plan JSON)");
    cmd->add_flag("--json", opts->json, "print JSON instead of a table");
    addProfileOption(*cmd, opts->profile);
    addBatchOption(*cmd, opts->input, "batch size (default: the file's)", BatchCheck::None);
    addTrainingOptions(*cmd, opts->input);
    cmd->callback([opts, &ctx]() { ctx.exitCode = runSolve(*opts); });
}

} // namespace remat::app
