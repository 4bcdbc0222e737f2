#include "core/solvers/checkmate_problem.h"

#include "core/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

namespace remat::core::solvers::checkmate {

using training::Op;
using training::Phase;
using training::Tensor;

Expected<Problem> buildProblem(const training::TrainingGraph &graph, const cost::Costs &costs,
                               const std::vector<Pin> &pins)
{
    Problem p;
    p.n = static_cast<int>(graph.opCount());
    const int n = p.n;
    if (costs.opSeconds.size() != graph.opCount())
        return makeError(StatusCode::InvalidArgument,
                         "costs have " + std::to_string(costs.opSeconds.size()) +
                             " op times, the graph has " + std::to_string(n) + " ops");
    p.deps.resize(n);
    p.users.resize(n);
    p.blockBytes.assign(n, 0);
    p.stickyBytes.assign(n, 0);
    p.transientBytes.assign(n, 0);
    p.cost.assign(n, 0);
    p.recomputable.assign(n, 1);
    p.lastUse.assign(n, -1);
    p.keepPinned.assign(n, 0);
    p.recomputePinned.assign(n, 0);
    p.blockTensors.resize(n);
    p.transientTensors.resize(n);
    p.firstNonForward = n;
    for (const Tensor &t : graph.tensors())
        if (t.preloaded)
            p.constantBytes += t.bytes;
    for (const Op &op : graph.ops()) {
        const int k = op.id.value;
        if (op.phase != Phase::Forward && p.firstNonForward == n)
            p.firstNonForward = k;
        p.cost[k] = costs.opSeconds[k];
        p.transientBytes[k] += op.workspaceBytes;
        for (TensorId in : op.inputs) {
            const Tensor &t = graph.tensor(in);
            if (t.preloaded || !t.producer.valid())
                continue;
            if (t.producer.value >= k)
                return makeError(StatusCode::InvalidArgument,
                                 "op '" + op.name + "' reads '" + t.name +
                                     "' before it is produced: ops are not in topological order");
            p.deps[k].push_back(t.producer.value);
        }
        std::sort(p.deps[k].begin(), p.deps[k].end());
        p.deps[k].erase(std::unique(p.deps[k].begin(), p.deps[k].end()), p.deps[k].end());
        for (int d : p.deps[k])
            p.users[d].push_back(k);
        for (TensorId out : op.outputs) {
            const Tensor &t = graph.tensor(out);
            if (t.requiredAtEnd) {
                p.stickyBytes[k] += t.bytes;
            } else if (t.consumers.empty()) {
                p.transientBytes[k] += t.bytes;
                p.transientTensors[k].push_back(out);
            } else {
                p.blockBytes[k] += t.bytes;
                p.blockTensors[k].push_back(out);
            }
        }
        // Re-running an op that writes a kept-to-end output (a weight gradient) would double
        // count it; such ops run exactly once.
        if (p.stickyBytes[k] > 0)
            p.recomputable[k] = 0;
    }
    for (const Pin &pin : pins) {
        if (!pin.tensor.valid() || pin.tensor.index() >= graph.tensorCount())
            return makeError(StatusCode::InvalidArgument, "pin names an unknown tensor");
        const Tensor &t = graph.tensor(pin.tensor);
        if (!t.producer.valid())
            return makeError(StatusCode::InvalidArgument,
                             "pin on '" + t.name + "': only computed tensors can be pinned");
        const int i = t.producer.value;
        switch (pin.kind) {
        case PinKind::Keep:
            p.keepPinned[i] = 1;
            p.recomputable[i] = 0;
            break;
        case PinKind::Recompute:
            p.recomputePinned[i] = 1;
            break;
        case PinKind::Offload:
            return makeError(StatusCode::Unsupported,
                             "pin on '" + t.name +
                                 "': Checkmate's model has no offloading (use the offload solver)");
        }
    }
    for (int i = n - 1; i >= 0; --i)
        for (int j : p.users[i])
            p.lastUse[i] = std::max(p.lastUse[i], p.recomputable[j] ? std::max(j, p.lastUse[j]) : j);
    return p;
}

Matrix solveR(const Problem &p, Matrix &s)
{
    const int n = p.n;
    Matrix r(n);
    auto retainFromFirstRun = [&](int u, int t) {
        for (int tt = u + 1; tt <= t; ++tt)
            s.at(tt, u) = 1;
    };
    for (int i = 0; i < n; ++i) {
        if (p.keepPinned[i] && !p.users[i].empty())
            retainFromFirstRun(i, p.users[i].back());
        if (p.recomputePinned[i] && i < p.firstNonForward && p.firstNonForward < n &&
            p.recomputable[i])
            s.at(p.firstNonForward, i) = 0;
    }
    for (int t = 0; t < n; ++t) {
        r.at(t, t) = 1;
        if (t + 1 < n)
            for (int i = 0; i < t; ++i)
                if (s.at(t + 1, i) && !s.at(t, i)) {
                    if (p.recomputable[i])
                        r.at(t, i) = 1;
                    else
                        retainFromFirstRun(i, t + 1);
                }
        for (int v = t; v >= 0; --v) {
            if (!r.at(t, v))
                continue;
            for (int u : p.deps[v]) {
                if (s.at(t, u) || r.at(t, u))
                    continue;
                if (p.recomputable[u])
                    r.at(t, u) = 1;
                else
                    retainFromFirstRun(u, t);
            }
        }
    }
    return r;
}

std::vector<int> sequenceFromR(const Problem &p, const Matrix &r)
{
    std::vector<std::pair<int, int>> runs; // (stage, op)
    for (int t = 0; t < p.n; ++t)
        for (int k = 0; k <= t; ++k)
            if (r.at(t, k))
                runs.push_back({t, k});
    std::vector<char> keep(runs.size(), 0), pendingRead(p.n, 0);
    for (size_t q = runs.size(); q-- > 0;) {
        auto [t, k] = runs[q];
        if (k != t && !pendingRead[k])
            continue; // nobody reads this run before the op's next run
        keep[q] = 1;
        pendingRead[k] = 0;
        for (int d : p.deps[k])
            pendingRead[d] = 1;
    }
    std::vector<int> seq;
    for (size_t q = 0; q < runs.size(); ++q)
        if (keep[q])
            seq.push_back(runs[q].second);
    return seq;
}

namespace {

/// For each position of `seq`, the last later position reading that run's block (-1: none), or
/// an empty vector when some op reads an input that was never computed.
std::vector<int> lastReads(const Problem &p, const std::vector<int> &seq)
{
    std::vector<int> current(p.n, -1), last(seq.size(), -1);
    for (size_t q = 0; q < seq.size(); ++q) {
        for (int d : p.deps[seq[q]]) {
            if (current[d] < 0)
                return {};
            last[current[d]] = static_cast<int>(q);
        }
        current[seq[q]] = static_cast<int>(q);
    }
    return last;
}

} // namespace

StagePlan stagePlanFromSequence(const Problem &p, const std::vector<int> &seq)
{
    StagePlan plan{Matrix(p.n), Matrix(p.n)};
    std::vector<int> stageOf(seq.size(), 0);
    int stage = 0;
    for (size_t q = 0; q < seq.size() && stage < p.n; ++q) {
        stageOf[q] = stage;
        plan.r.at(stage, seq[q]) = 1;
        if (seq[q] == stage)
            ++stage;
    }
    std::vector<int> last = lastReads(p, seq);
    if (last.empty())
        return plan;
    for (size_t q = 0; q < seq.size(); ++q)
        if (last[q] >= 0)
            for (int t = stageOf[q] + 1; t <= stageOf[last[q]]; ++t)
                plan.s.at(t, seq[q]) = 1;
    return plan;
}

Evaluation evaluate(const Problem &p, const std::vector<int> &seq)
{
    Evaluation e;
    std::vector<int> last = lastReads(p, seq);
    if (last.empty() && !seq.empty()) {
        e.peakBytes = std::numeric_limits<int64_t>::max();
        return e;
    }
    std::vector<std::vector<int>> freedAt(seq.size());
    for (size_t q = 0; q < seq.size(); ++q)
        if (last[q] >= 0)
            freedAt[last[q]].push_back(static_cast<int>(q));
    std::vector<char> ran(p.n, 0);
    int64_t mem = p.constantBytes;
    e.peakBytes = mem;
    for (size_t q = 0; q < seq.size(); ++q) {
        const int k = seq[q];
        const int64_t sticky = ran[k] ? 0 : p.stickyBytes[k];
        if (ran[k]) {
            e.recomputeSeconds += p.cost[k];
            ++e.recomputes;
        }
        ran[k] = 1;
        mem += p.blockBytes[k] + sticky;
        e.peakBytes = std::max(e.peakBytes, mem + p.transientBytes[k]);
        for (int r : freedAt[q])
            mem -= p.blockBytes[seq[r]];
        if (last[q] < 0)
            mem -= p.blockBytes[k];
    }
    return e;
}

schedule::Schedule lowerSequence(const Problem &p, const training::TrainingGraph &graph,
                                 const std::vector<int> &seq)
{
    schedule::Schedule s;
    std::vector<int> last = lastReads(p, seq);
    std::vector<std::vector<int>> freedAt(seq.size());
    for (size_t q = 0; q < seq.size() && !last.empty(); ++q)
        if (last[q] >= 0)
            freedAt[last[q]].push_back(static_cast<int>(q));
    s.phase(schedule::PhaseMark::ForwardBegin);
    bool backwardMarked = false;
    std::vector<char> ran(p.n, 0);
    for (size_t q = 0; q < seq.size(); ++q) {
        const int k = seq[q];
        if (!ran[k] && !backwardMarked && graph.op(OpId(k)).phase == Phase::Backward) {
            s.phase(schedule::PhaseMark::BackwardBegin);
            backwardMarked = true;
        }
        ran[k] = 1;
        s.compute(OpId(k));
        for (TensorId t : p.transientTensors[k])
            s.free(t);
        for (int r : freedAt[q])
            for (TensorId t : p.blockTensors[seq[r]])
                s.free(t);
        if (!last.empty() && last[q] < 0)
            for (TensorId t : p.blockTensors[k])
                s.free(t);
    }
    s.phase(schedule::PhaseMark::End);
    return s;
}

std::vector<int> storeAllSequence(const Problem &p)
{
    std::vector<int> seq(p.n);
    std::iota(seq.begin(), seq.end(), 0);
    return seq;
}

namespace {

std::vector<int> sequenceForEvicted(const Problem &p, const std::vector<char> &evicted)
{
    Matrix s(p.n);
    for (int i = 0; i < p.n; ++i)
        if (!evicted[i])
            for (int t = i + 1; t <= p.lastUse[i]; ++t)
                s.at(t, i) = 1;
    Matrix r = solveR(p, s);
    return sequenceFromR(p, r);
}

} // namespace

std::vector<int> greedyPlan(const Problem &p, int64_t budgetBytes, double seconds,
                            const StopToken &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    std::vector<int> storeAll = storeAllSequence(p);
    if (evaluate(p, storeAll).peakBytes <= budgetBytes)
        return storeAll;
    // Candidates: ops whose block could be dropped and recomputed, best bytes x lifetime per
    // second of recompute first.
    std::vector<int> candidates;
    std::vector<double> score(p.n, 0);
    for (int i = 0; i < p.n; ++i) {
        if (!p.recomputable[i] || p.blockBytes[i] == 0 || p.users[i].empty())
            continue;
        const double span = double(p.users[i].back() - i);
        score[i] = double(p.blockBytes[i]) * span / (p.cost[i] + 1e-12 * (1 + p.cost[i]));
        candidates.push_back(i);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return score[a] > score[b]; });
    auto evictedPrefix = [&](size_t m) {
        std::vector<char> ev(p.n, 0);
        for (size_t j = 0; j < m; ++j)
            ev[candidates[j]] = 1;
        return ev;
    };
    auto fits = [&](const std::vector<char> &ev, std::vector<int> *seqOut) {
        std::vector<int> seq = sequenceForEvicted(p, ev);
        bool ok = evaluate(p, seq).peakBytes <= budgetBytes;
        if (ok && seqOut)
            *seqOut = std::move(seq);
        return ok;
    };
    std::vector<int> best;
    if (!fits(evictedPrefix(candidates.size()), &best))
        return {};
    // Smallest prefix that fits (peak is close to monotone in the prefix length).
    size_t lo = 0, hi = candidates.size();
    while (lo + 1 < hi && Clock::now() < deadline && !stop.stopRequested()) {
        size_t mid = (lo + hi) / 2;
        if (fits(evictedPrefix(mid), nullptr))
            hi = mid;
        else
            lo = mid;
    }
    std::vector<char> evicted = evictedPrefix(hi);
    fits(evicted, &best);
    // Put back the evictions that cost the most recompute while the plan still fits.
    std::vector<int> back(candidates.begin(), candidates.begin() + long(hi));
    std::stable_sort(back.begin(), back.end(), [&](int a, int b) { return p.cost[a] > p.cost[b]; });
    for (int i : back) {
        if (Clock::now() >= deadline || stop.stopRequested())
            break;
        evicted[i] = 0;
        std::vector<int> seq;
        if (fits(evicted, &seq))
            best = std::move(seq);
        else
            evicted[i] = 1;
    }
    return best;
}

std::vector<int> lowestPeakSequence(const Problem &p)
{
    std::vector<char> all(p.n, 0);
    for (int i = 0; i < p.n; ++i)
        all[i] = p.recomputable[i] && p.blockBytes[i] > 0 && !p.users[i].empty();
    std::vector<int> evicted = sequenceForEvicted(p, all);
    std::vector<int> storeAll = storeAllSequence(p);
    return evaluate(p, evicted).peakBytes < evaluate(p, storeAll).peakBytes ? evicted : storeAll;
}

Status checkRequest(const SolveRequest &request)
{
    if (!request.graph || !request.costs)
        return makeError(StatusCode::InvalidArgument, "solve request without a graph or costs");
    if (request.objective == Objective::MinTime && request.budgetBytes <= 0)
        return makeError(StatusCode::InvalidArgument, "min-time needs a positive budget");
    if (request.graph->opCount() == 0)
        return makeError(StatusCode::InvalidArgument, "the training graph has no ops");
    return Status::ok();
}

double settingNumber(const SolveRequest &request, const std::string &key, double fallback)
{
    auto it = request.settings.find(key);
    if (it == request.settings.end())
        return fallback;
    try {
        return std::stod(it->second);
    } catch (...) {
        return fallback;
    }
}

std::string settingText(const SolveRequest &request, const std::string &key, const std::string &fallback)
{
    auto it = request.settings.find(key);
    return it == request.settings.end() ? fallback : it->second;
}

int64_t estimateColumns(const Problem &p)
{
    int64_t cols = 0;
    for (int i = 0; i < p.n; ++i) {
        const int64_t span = std::max(0, p.lastUse[i] - i);
        cols += span * (p.recomputable[i] ? 3 : 1); // S, and for recomputable ops R and U
        // FREE: one per input edge of every stage op i may run in.
        cols += int64_t(p.deps[i].size()) * (1 + (p.recomputable[i] ? span : 0));
    }
    return cols;
}

Expected<Plan> finishPlan(const Problem &p, const SolveRequest &request, const std::vector<int> &seq,
                          const std::string &solverId)
{
    Plan plan;
    plan.solver = solverId;
    plan.objective = request.objective;
    plan.budgetBytes = request.budgetBytes;
    plan.pins = request.pins;
    plan.settings = request.settings;
    plan.schedule = lowerSequence(p, *request.graph, seq);
    sim::SimOptions options;
    options.recordPoints = false;
    REMAT_ASSIGN_OR_RETURN(plan.timeline,
                           sim::simulate(plan.schedule, *request.graph, *request.costs, options));
    // Checkpoints: forward blocks live across the forward/backward boundary.
    if (p.firstNonForward < p.n) {
        StagePlan rs = stagePlanFromSequence(p, seq);
        for (int i = 0; i < p.firstNonForward; ++i)
            if (rs.s.at(p.firstNonForward, i))
                for (TensorId t : p.blockTensors[i])
                    plan.checkpoints.push_back(t);
    }
    return plan;
}

} // namespace remat::core::solvers::checkmate
