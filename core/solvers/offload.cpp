#include "core/solvers/offload.h"

#include "core/sim/simulator.h"
#include "core/solvers/checkmate/problem.h"
#include "core/util/bytes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

namespace remat::core::solvers {

namespace {

using Clock = std::chrono::steady_clock;
using training::Tensor;

/// A stretch between two device uses of a tensor during which it can live in host memory.
/// Activations: one instance's block between its production or a read and its next read.
/// Weights: the whole tensor (streamed: starts on the host, prefetched before each run of
/// reads, freed after it).
struct Candidate
{
    bool weight = false;
    TensorId tensor;     ///< weights
    int instance = -1;   ///< activations: the producing position
    int from = -1;       ///< activations: the use before the gap
    int to = -1;         ///< activations: the read after the gap
    double score = 0;    ///< bytes x positions spent off the device
    bool forced = false; ///< offload pin / stream-weights=always
};

struct Layout
{
    std::vector<int> seq;
    std::vector<int> lastRead;                 ///< per position (-1: unread)
    std::vector<std::vector<int>> reads;       ///< per position: positions reading that run
    std::vector<std::vector<int>> weightReads; ///< per tensor: positions reading it (preloaded)
    std::vector<Candidate> candidates;
};

Layout layout(const checkmate::Problem &p, const training::TrainingGraph &graph,
              const std::vector<int> &seq)
{
    Layout l;
    l.seq = seq;
    const size_t q = seq.size();
    l.lastRead.assign(q, -1);
    l.reads.assign(q, {});
    l.weightReads.assign(graph.tensorCount(), {});
    std::vector<int> current(p.n, -1);
    for (size_t pos = 0; pos < q; ++pos) {
        const int k = seq[pos];
        for (int d : p.deps[k]) {
            l.reads[current[d]].push_back(static_cast<int>(pos));
            l.lastRead[current[d]] = static_cast<int>(pos);
        }
        for (TensorId in : graph.op(OpId(k)).inputs) {
            const Tensor &t = graph.tensor(in);
            auto &r = l.weightReads[in.index()];
            if (t.preloaded && t.bytes > 0 && (r.empty() || r.back() != int(pos)))
                r.push_back(static_cast<int>(pos));
        }
        current[k] = static_cast<int>(pos);
    }
    for (size_t pos = 0; pos < q; ++pos) {
        const int64_t bytes = p.blockBytes[seq[pos]];
        if (bytes == 0)
            continue;
        int prev = static_cast<int>(pos);
        for (int r : l.reads[pos]) {
            if (r - prev >= 2)
                l.candidates.push_back(
                    {false, TensorId(), int(pos), prev, r, double(bytes) * (r - prev), false});
            prev = r;
        }
    }
    for (const Tensor &t : graph.tensors()) {
        const auto &r = l.weightReads[t.id.index()];
        if (!t.preloaded || r.empty())
            continue;
        double span = r.front() + 1 + double(q - 1 - size_t(r.back()));
        for (size_t j = 1; j < r.size(); ++j)
            if (r[j] - r[j - 1] >= 2)
                span += r[j] - r[j - 1] - 1;
        l.candidates.push_back({true, t.id, -1, -1, -1, double(t.bytes) * span, false});
    }
    return l;
}

/// The position before whose compute a prefetch of `bytes` must start to arrive by `to`
/// (copy time covered by the compute in between), never before `after + 1`.
int prefetchPosition(const checkmate::Problem &p, const cost::Costs &costs,
                     const std::vector<int> &seq, int after, int to, int64_t bytes, bool justInTime)
{
    if (justInTime)
        return std::max(to, after + 1);
    const double copy = double(bytes) / costs.hostToDeviceBandwidth;
    double covered = 0;
    int pos = to;
    while (pos - 1 > after && covered < copy) {
        --pos;
        covered += p.cost[seq[pos]];
    }
    return std::max(pos, after + 1);
}

schedule::Schedule buildSchedule(const checkmate::Problem &p, const training::TrainingGraph &graph,
                                 const cost::Costs &costs, const Layout &l,
                                 const std::vector<char> &chosen, bool justInTime)
{
    const size_t q = l.seq.size();
    std::vector<std::vector<TensorId>> prefetchBefore(q), offloadAfter(q), freeAfter(q);
    std::vector<char> hasHostCopy(graph.tensorCount(), 0), offloadedInstance(q, 0);
    // Activations.
    std::vector<std::vector<const Candidate *>> byInstance(q);
    for (size_t c = 0; c < l.candidates.size(); ++c)
        if (chosen[c] && !l.candidates[c].weight)
            byInstance[l.candidates[c].instance].push_back(&l.candidates[c]);
    for (size_t pos = 0; pos < q; ++pos) {
        if (byInstance[pos].empty())
            continue;
        const int k = l.seq[pos];
        bool needOffload = false;
        for (TensorId t : p.blockTensors[k])
            needOffload = needOffload || !hasHostCopy[t.index()];
        if (needOffload)
            for (TensorId t : p.blockTensors[k])
                if (!hasHostCopy[t.index()]) {
                    offloadAfter[pos].push_back(t);
                    hasHostCopy[t.index()] = 1;
                }
        for (const Candidate *c : byInstance[pos]) {
            for (TensorId t : p.blockTensors[k])
                freeAfter[c->from].push_back(t);
            const int at =
                prefetchPosition(p, costs, l.seq, c->from, c->to, p.blockBytes[k], justInTime);
            for (TensorId t : p.blockTensors[k])
                prefetchBefore[at].push_back(t);
        }
    }
    // Weights: start on the host; each run of reads closer than two positions shares one copy.
    for (size_t c = 0; c < l.candidates.size(); ++c) {
        if (!chosen[c] || !l.candidates[c].weight)
            continue;
        const TensorId t = l.candidates[c].tensor;
        const auto &r = l.weightReads[t.index()];
        const int64_t bytes = graph.tensor(t).bytes;
        for (size_t j = 0; j < r.size(); ++j) {
            if (j > 0 && r[j] - r[j - 1] < 2)
                continue; // same run of reads: stays resident
            if (j > 0)
                freeAfter[r[j - 1]].push_back(t);
            const int after = j == 0 ? -1 : r[j - 1];
            prefetchBefore[prefetchPosition(p, costs, l.seq, after, r[j], bytes, justInTime)]
                .push_back(t);
        }
        freeAfter[r.back()].push_back(t);
    }

    schedule::Schedule s;
    s.phase(schedule::PhaseMark::ForwardBegin);
    bool backwardMarked = false;
    std::vector<char> ran(p.n, 0);
    std::vector<std::vector<int>> freedAt(q);
    for (size_t pos = 0; pos < q; ++pos)
        if (l.lastRead[pos] >= 0)
            freedAt[l.lastRead[pos]].push_back(static_cast<int>(pos));
    for (size_t pos = 0; pos < q; ++pos) {
        const int k = l.seq[pos];
        if (!ran[k] && !backwardMarked && graph.op(OpId(k)).phase == training::Phase::Backward) {
            s.phase(schedule::PhaseMark::BackwardBegin);
            backwardMarked = true;
        }
        ran[k] = 1;
        for (TensorId t : prefetchBefore[pos])
            s.prefetch(t);
        s.compute(OpId(k));
        for (TensorId t : offloadAfter[pos])
            s.offload(t);
        for (TensorId t : p.transientTensors[k])
            s.free(t);
        // Instances whose gap starts here leave the device (their host copy stays).
        std::vector<TensorId> leaving = freeAfter[pos];
        for (int r : freedAt[pos])
            for (TensorId t : p.blockTensors[l.seq[r]])
                leaving.push_back(t);
        if (l.lastRead[pos] < 0)
            for (TensorId t : p.blockTensors[k])
                leaving.push_back(t);
        for (TensorId t : leaving)
            s.free(t);
    }
    s.phase(schedule::PhaseMark::End);
    return s;
}

/// A floor under checkmate::evaluate's peak for every valid sequence: when op k first runs (in
/// order, after every lower op's first run), the values it reads, its outputs, its transients
/// and every kept-to-end output so far are all resident.
int64_t peakLowerBound(const checkmate::Problem &p)
{
    int64_t sticky = 0, floor = p.constantBytes;
    for (int k = 0; k < p.n; ++k) {
        sticky += p.stickyBytes[k];
        int64_t in = 0;
        for (int v : p.inputs[k])
            in += p.valueBytes[v];
        floor =
            std::max(floor, p.constantBytes + sticky + in + p.blockBytes[k] + p.transientBytes[k]);
    }
    return floor;
}

class OffloadSolver final : public Solver
{
public:
    std::string id() const override { return "offload"; }
    std::string title() const override { return "Tensor streaming (Scorch / POFO style)"; }
    std::string description() const override
    {
        return "Weights and chosen activations live in host memory between uses and are "
               "prefetched on the copy lane early enough for the copy to hide behind the compute "
               "before their next use (host<->device bandwidth from the cost model); activations "
               "are offloaded right after they are produced. Streamed weights start in host "
               "memory. "
               "Combined with recomputation: the op sequence is store-all or a Checkmate-greedy "
               "recomputation plan at a fraction of the budget, and the plan with the shortest "
               "simulated step (copy stalls included) under the budget wins.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.offloadPins = true; // offload-pinned tensors are forced stretches of its own search
        c.speed = SpeedClass::Search;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override;
};

Expected<Plan> OffloadSolver::searchPlan(const SolveRequest &request) const
{
    const auto begin = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
    REMAT_RETURN_IF_ERROR(checkmate::checkRequest(request));
    const training::TrainingGraph &graph = *request.graph;
    std::vector<Pin> modelPins;
    std::vector<TensorId> offloadPinned;
    for (const Pin &pin : request.pins) {
        if (pin.kind == PinKind::Offload)
            offloadPinned.push_back(pin.tensor);
        else
            modelPins.push_back(pin);
    }
    REMAT_ASSIGN_OR_RETURN(checkmate::Problem p,
                           checkmate::buildProblem(graph, *request.costs, modelPins));
    const bool minPeak = request.objective == Objective::MinPeak;
    const std::string weightsMode = checkmate::settingText(request, "stream-weights", "auto");
    const bool recompute = checkmate::settingText(request, "recompute", "auto") != "never";

    // Op sequences to stream over: no recomputation first, then greedy recomputation plans that
    // leave room for the streamed tensors.
    std::vector<std::vector<int>> sequences{
        checkmate::stagedSequenceForEvicted(p, std::vector<char>(size_t(p.n), 0))};
    if (recompute) {
        checkmate::Problem streamed = p;
        streamed.constantBytes = 0; // weights may all be streamed
        const int64_t peakFloor = peakLowerBound(streamed);
        for (double f : {0.9, 0.75, 0.6, 0.45, 0.3}) {
            if (elapsed() > 0.5 * request.timeLimitSeconds || request.stop.stopRequested())
                break;
            // No recomputation plan gets below the floor (min-peak has no budget at all): the
            // greedy would only search until its deadline.
            if (static_cast<int64_t>(f * double(request.budgetBytes)) < peakFloor)
                break;
            std::vector<int> seq = checkmate::greedyPlan(
                streamed, static_cast<int64_t>(f * double(request.budgetBytes)),
                std::min(5.0, 0.05 * request.timeLimitSeconds), request.stop);
            if (!seq.empty() &&
                std::find(sequences.begin(), sequences.end(), seq) == sequences.end())
                sequences.push_back(std::move(seq));
        }
    }

    struct Best
    {
        schedule::Schedule schedule;
        sim::Timeline timeline;
        size_t streamed = 0;
        size_t sequence = 0;
    };
    std::optional<Best> best, lowest;
    sim::SimOptions so;
    so.recordPoints = false;
    auto better = [&](const sim::Timeline &a, const sim::Timeline &b) {
        if (minPeak)
            return a.peakBytes < b.peakBytes ||
                   (a.peakBytes == b.peakBytes && a.totalSeconds < b.totalSeconds);
        return a.totalSeconds < b.totalSeconds ||
               (a.totalSeconds == b.totalSeconds && a.peakBytes < b.peakBytes);
    };
    for (size_t si = 0; si < sequences.size(); ++si) {
        if (request.stop.stopRequested())
            break;
        Layout l = layout(p, graph, sequences[si]);
        std::vector<size_t> order;
        std::vector<char> forced(l.candidates.size(), 0);
        for (size_t c = 0; c < l.candidates.size(); ++c) {
            Candidate &cand = l.candidates[c];
            if (cand.weight && weightsMode == "never")
                continue;
            bool pinned = cand.weight && weightsMode == "always";
            if (!cand.weight)
                for (TensorId t : p.blockTensors[l.seq[cand.instance]])
                    pinned = pinned || std::find(offloadPinned.begin(), offloadPinned.end(), t) !=
                                           offloadPinned.end();
            if (pinned)
                forced[c] = 1;
            else
                order.push_back(c);
        }
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return l.candidates[a].score > l.candidates[b].score;
        });
        // Prefetches start early enough to hide the copy ("ahead"), or right before the read
        // ("just in time": lower peak, copies stall the compute lane).
        for (bool justInTime : {false, true}) {
            auto trial = [&](size_t m) -> std::optional<Best> {
                std::vector<char> chosen = forced;
                for (size_t j = 0; j < m; ++j)
                    chosen[order[j]] = 1;
                schedule::Schedule s =
                    buildSchedule(p, graph, *request.costs, l, chosen, justInTime);
                Expected<sim::Timeline> tl = sim::simulate(s, graph, *request.costs, so);
                if (!tl)
                    return std::nullopt;
                return Best{std::move(s), *tl, m, si};
            };
            auto consider = [&](std::optional<Best> b) {
                if (!b)
                    return;
                if (!lowest || b->timeline.peakBytes < lowest->timeline.peakBytes)
                    lowest = *b;
                const bool fits = minPeak || b->timeline.peakBytes <= request.budgetBytes;
                if (fits && (!best || better(b->timeline, best->timeline)))
                    best = std::move(b);
            };
            std::optional<Best> all = trial(order.size());
            if (minPeak || !all || all->timeline.peakBytes > request.budgetBytes) {
                consider(std::move(all));
                continue;
            }
            consider(trial(0));
            // Fewest streamed candidates (by score) that fit: less copying, fewer stalls.
            size_t lo = 0, hi = order.size();
            std::optional<Best> hiPlan = std::move(all);
            while (lo + 1 < hi && elapsed() < request.timeLimitSeconds &&
                   !request.stop.stopRequested()) {
                const size_t mid = (lo + hi) / 2;
                std::optional<Best> b = trial(mid);
                if (b && b->timeline.peakBytes <= request.budgetBytes) {
                    hi = mid;
                    hiPlan = std::move(b);
                } else {
                    lo = mid;
                }
            }
            consider(std::move(hiPlan));
            if (best)
                break; // hiding the copies fits: no need to stall
        }
    }
    if (request.stop.stopRequested() && !best)
        return makeError(StatusCode::Cancelled, "offload cancelled");
    Plan plan;
    plan.solver = id();
    plan.objective = request.objective;
    plan.budgetBytes = request.budgetBytes;
    plan.pins = request.pins;
    plan.settings = request.settings;
    plan.solverObjectiveName = "simulated step seconds (copies overlapped)";
    const bool feasible = best.has_value();
    Best &chosen = feasible ? *best : *lowest;
    if (!feasible && !lowest)
        return makeError(StatusCode::Internal, "offload: no candidate schedule simulated");
    plan.schedule = std::move(chosen.schedule);
    REMAT_ASSIGN_OR_RETURN(plan.timeline, sim::simulate(plan.schedule, graph, *request.costs, so));
    plan.solverObjective = plan.timeline.totalSeconds;
    plan.status =
        feasible ? (request.stop.stopRequested() ? SolveStatus::Cancelled : SolveStatus::Feasible)
                 : SolveStatus::Infeasible;
    plan.note = fmt::format(
        "{} streamed stretches on {}; host peak {}; copy lane busy {:.4g} s; "
        "{} op sequences tried",
        chosen.streamed, chosen.sequence == 0 ? "the store-all order" : "a recomputation plan",
        formatBytes(plan.timeline.hostPeakBytes), plan.timeline.copySeconds, sequences.size());
    if (!feasible)
        plan.note =
            fmt::format("infeasible: the lowest peak found is {} B; ", plan.timeline.peakBytes) +
            plan.note;
    plan.solveSeconds = elapsed();
    return plan;
}

} // namespace

std::unique_ptr<Solver> makeOffloadSolver() { return std::make_unique<OffloadSolver>(); }

} // namespace remat::core::solvers
