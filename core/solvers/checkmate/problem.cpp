#include "core/solvers/checkmate/problem.h"

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
    p.inputs.resize(n);
    p.outputs.resize(n);
    std::vector<int> valueOf(graph.tensorCount(), -1);
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
            if (!t.requiredAtEnd && valueOf[in.index()] >= 0)
                p.inputs[k].push_back(valueOf[in.index()]);
        }
        std::sort(p.inputs[k].begin(), p.inputs[k].end());
        p.inputs[k].erase(std::unique(p.inputs[k].begin(), p.inputs[k].end()), p.inputs[k].end());
        for (int v : p.inputs[k])
            p.readers[v].push_back(k);
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
                const int v = p.values++;
                p.producer.push_back(k);
                p.valueBytes.push_back(t.bytes);
                p.valueTensor.push_back(out);
                p.readers.emplace_back();
                p.outputs[k].push_back(v);
                valueOf[out.index()] = v;
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
        case PinKind::Recompute: p.recomputePinned[i] = 1; break;
        case PinKind::Offload:
            return makeError(StatusCode::Unsupported,
                             "pin on '" + t.name +
                                 "': Checkmate's model has no offloading (use the offload solver)");
        }
    }
    // A value can be read in stage t if a reader runs there: at its own stage, or later when the
    // reader is recomputed (as long as the reader's own values can still be read).
    p.valueLastUse.assign(p.values, -1);
    for (int i = n - 1; i >= 0; --i) {
        for (int v : p.outputs[i]) {
            for (int j : p.readers[v])
                p.valueLastUse[v] =
                    std::max(p.valueLastUse[v], p.recomputable[j] ? std::max(j, p.lastUse[j]) : j);
            p.lastUse[i] = std::max(p.lastUse[i], p.valueLastUse[v]);
        }
    }
    return p;
}

Matrix solveR(const Problem &p, Matrix &s)
{
    const int n = p.n;
    Matrix r(n);
    auto retainFromFirstRun = [&](int v, int t) {
        for (int tt = p.producer[v] + 1; tt <= t; ++tt)
            s.at(tt, v) = 1;
    };
    for (int v = 0; v < p.values; ++v) {
        const int i = p.producer[v];
        if (p.keepPinned[i] && !p.readers[v].empty())
            retainFromFirstRun(v, p.readers[v].back());
        if (p.recomputePinned[i] && i < p.firstNonForward && p.firstNonForward < n &&
            p.recomputable[i])
            s.at(p.firstNonForward, v) = 0;
    }
    for (int t = 0; t < n; ++t) {
        r.at(t, t) = 1;
        if (t + 1 < n)
            for (int v = 0; v < p.values; ++v) {
                const int i = p.producer[v];
                if (i < t && s.at(t + 1, v) && !s.at(t, v)) {
                    if (p.recomputable[i])
                        r.at(t, i) = 1;
                    else
                        retainFromFirstRun(v, t + 1);
                }
            }
        for (int k = t; k >= 0; --k) {
            if (!r.at(t, k))
                continue;
            for (int v : p.inputs[k]) {
                const int u = p.producer[v];
                if (s.at(t, v) || r.at(t, u))
                    continue;
                if (p.recomputable[u])
                    r.at(t, u) = 1;
                else
                    retainFromFirstRun(v, t);
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

StagePlan stagePlanFromSequence(const Problem &p, const std::vector<int> &seq)
{
    StagePlan plan{Matrix(p.n), Matrix(p.n, p.values)};
    std::vector<int> stageOf(seq.size(), 0);
    int stage = 0;
    for (size_t q = 0; q < seq.size() && stage < p.n; ++q) {
        stageOf[q] = stage;
        plan.r.at(stage, seq[q]) = 1;
        if (seq[q] == stage)
            ++stage;
    }
    SequenceMemory reads(p);
    if (!reads.read(seq))
        return plan;
    for (size_t q = 0; q < seq.size(); ++q)
        for (int v : p.outputs[seq[q]]) {
            const int last = reads.lastRead(q, v);
            if (last >= 0)
                for (int t = stageOf[q] + 1; t <= stageOf[last]; ++t)
                    plan.s.at(t, v) = 1;
        }
    return plan;
}

SequenceMemory::SequenceMemory(const Problem &p) : m_p(p)
{
    m_slot.assign(size_t(p.values), 0); // index of value v among its producer's outputs
    for (int k = 0; k < p.n; ++k)
        for (size_t j = 0; j < p.outputs[k].size(); ++j)
            m_slot[size_t(p.outputs[k][j])] = int(j);
}

bool SequenceMemory::read(const std::vector<int> &seq)
{
    const Problem &p = m_p;
    const size_t q = seq.size();
    m_start.resize(q + 1);
    m_start[0] = 0;
    for (size_t r = 0; r < q; ++r)
        m_start[r + 1] = m_start[r] + int(p.outputs[size_t(seq[r])].size());
    m_last.assign(size_t(m_start[q]), -1);
    m_current.assign(size_t(p.n), -1);
    for (size_t r = 0; r < q; ++r) {
        for (int v : p.inputs[size_t(seq[r])]) {
            const int at = m_current[size_t(p.producer[size_t(v)])];
            if (at < 0)
                return false;
            m_last[size_t(m_start[size_t(at)] + m_slot[size_t(v)])] = int(r);
        }
        m_current[size_t(seq[r])] = int(r);
    }
    return true;
}

SequenceMemory::Walk SequenceMemory::walk(const std::vector<int> &seq, int64_t budget,
                                          int64_t limit)
{
    const Problem &p = m_p;
    const size_t q = seq.size();
    m_freed.assign(q, 0);
    for (size_t r = 0; r < q; ++r)
        for (int v : p.outputs[size_t(seq[r])]) {
            const int last = lastRead(r, v);
            m_freed[last >= 0 ? size_t(last) : r] += p.valueBytes[size_t(v)];
        }
    m_ran.assign(size_t(p.n), 0);
    Walk w;
    int64_t mem = p.constantBytes;
    w.peakBytes = mem;
    for (size_t r = 0; r < q && w.peakBytes < limit; ++r) {
        const int k = seq[r];
        mem += p.blockBytes[size_t(k)] + (m_ran[size_t(k)] ? 0 : p.stickyBytes[size_t(k)]);
        m_ran[size_t(k)] = 1;
        const int64_t here = mem + p.transientBytes[size_t(k)];
        if (here > w.peakBytes) {
            w.peakBytes = here;
            w.peakPosition = int(r);
        }
        if (here > budget)
            w.overBudget += double(here - budget);
        mem -= m_freed[r];
    }
    return w;
}

Evaluation evaluate(const Problem &p, const std::vector<int> &seq)
{
    Evaluation e;
    SequenceMemory memory(p);
    if (!memory.read(seq)) {
        e.peakBytes = std::numeric_limits<int64_t>::max();
        return e;
    }
    const SequenceMemory::Walk w = memory.walk(seq);
    e.peakBytes = w.peakBytes;
    e.peakPosition = w.peakPosition;
    std::vector<char> ran(p.n, 0);
    for (int k : seq) {
        if (ran[k]) {
            e.recomputeSeconds += p.cost[k];
            ++e.recomputes;
        }
        ran[k] = 1;
    }
    return e;
}

schedule::Schedule lowerSequence(const Problem &p, const training::TrainingGraph &graph,
                                 const std::vector<int> &seq)
{
    schedule::Schedule s;
    SequenceMemory reads(p);
    const bool readable = reads.read(seq);
    std::vector<std::vector<int>> freedAt(seq.size()); // values
    for (size_t q = 0; q < seq.size() && readable; ++q)
        for (int v : p.outputs[seq[q]]) {
            const int last = reads.lastRead(q, v);
            freedAt[last >= 0 ? size_t(last) : q].push_back(v);
        }
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
        for (int v : freedAt[q])
            s.free(p.valueTensor[v]);
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

std::vector<int> sequenceForEvicted(const Problem &p, const std::vector<char> &evicted)
{
    Matrix s(p.n, p.values);
    for (int v = 0; v < p.values; ++v)
        if (!evicted[p.producer[v]])
            for (int t = p.producer[v] + 1; t <= p.valueLastUse[v]; ++t)
                s.at(t, v) = 1;
    Matrix r = solveR(p, s);
    return sequenceFromR(p, r);
}

std::vector<int> repairToBudget(const Problem &p, Matrix s, int64_t budgetBytes, double seconds,
                                const StopToken &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    std::vector<char> tried(size_t(p.values), 0);
    auto planOf = [&](Matrix sm, std::vector<int> &seq) {
        Matrix r = solveR(p, sm);
        seq = sequenceFromR(p, r);
        return evaluate(p, seq);
    };
    std::vector<int> seq;
    Evaluation e = planOf(s, seq);
    while (Clock::now() < deadline && !stop.stopRequested()) {
        if (e.peakBytes <= budgetBytes)
            return seq;
        if (e.peakPosition < 0)
            return {};
        int stage = 0;
        for (int q = 0; q < e.peakPosition; ++q)
            if (seq[size_t(q)] == stage)
                ++stage;
        const int t = stage, k = seq[size_t(e.peakPosition)];
        // The cheapest few by bytes per second of one recompute, then the one whose actual
        // plan (with its recompute cascade) lowers the peak at the least added time.
        std::vector<std::pair<double, int>> ranked;
        for (int v = 0; v < p.values; ++v) {
            const int prod = p.producer[v];
            if (!s.at(t, v) || tried[size_t(v)] || !p.recomputable[prod] || p.keepPinned[prod] ||
                p.valueBytes[v] == 0 ||
                std::binary_search(p.inputs[k].begin(), p.inputs[k].end(), v))
                continue;
            ranked.push_back(
                {double(p.valueBytes[v]) / (p.cost[prod] + 1e-9 * (1 + p.cost[prod])), v});
        }
        if (ranked.empty())
            return {};
        const size_t probe = std::min<size_t>(ranked.size(), 6);
        std::partial_sort(ranked.begin(), ranked.begin() + long(probe), ranked.end(),
                          std::greater<>());
        int pick = -1;
        double bestRatio = -1;
        Matrix next;
        std::vector<int> nextSeq;
        Evaluation ne;
        for (size_t c = 0; c < probe; ++c) {
            const int v = ranked[c].second;
            Matrix cand = s;
            // Up to and including the next direct reader's stage, so the recompute happens
            // there (not in stage t, just before the peak).
            for (int t2 = t; t2 < p.n && cand.at(t2, v); ++t2) {
                cand.at(t2, v) = 0;
                if (t2 > t && std::binary_search(p.inputs[t2].begin(), p.inputs[t2].end(), v))
                    break;
            }
            std::vector<int> cs;
            const Evaluation ce = planOf(cand, cs);
            if (ce.peakBytes >= e.peakBytes) {
                tried[size_t(v)] = 1;
                continue;
            }
            const double ratio = double(e.peakBytes - ce.peakBytes) /
                                 (std::max(0.0, ce.recomputeSeconds - e.recomputeSeconds) + 1e-9);
            if (ratio > bestRatio) {
                bestRatio = ratio;
                pick = v;
                next = std::move(cand);
                nextSeq = std::move(cs);
                ne = ce;
            }
        }
        if (pick < 0)
            continue;
        std::fill(tried.begin(), tried.end(), 0);
        s = std::move(next);
        seq = std::move(nextSeq);
        e = ne;
    }
    return {};
}

std::vector<int> retainWhereItFits(const Problem &p, const std::vector<int> &seq,
                                   int64_t budgetBytes, double seconds, const StopToken &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    std::vector<int> best = seq;
    Evaluation bestEval = evaluate(p, best);
    if (bestEval.peakBytes > budgetBytes)
        return best;
    std::vector<std::pair<int, int>> failed; // (stage, op) tried without gain; not retried
    bool changed = true;
    while (changed && Clock::now() < deadline && !stop.stopRequested()) {
        changed = false;
        StagePlan plan = stagePlanFromSequence(p, best);
        // Recompute runs (stage, op), most expensive first.
        std::vector<std::pair<int, int>> runs;
        for (int t = 0; t < p.n; ++t)
            for (int i = 0; i < t; ++i)
                if (plan.r.at(t, i) && p.cost[i] > 0)
                    runs.push_back({t, i});
        std::stable_sort(runs.begin(), runs.end(),
                         [&](auto a, auto b) { return p.cost[a.second] > p.cost[b.second]; });
        for (auto [t, i] : runs) {
            if (Clock::now() >= deadline || stop.stopRequested())
                break;
            if (std::find(failed.begin(), failed.end(), std::pair{t, i}) != failed.end())
                continue;
            // Keep i's values from the last stage they existed in up to stage t.
            Matrix s = plan.s;
            for (int v : p.outputs[i]) {
                int t0 = t - 1;
                while (t0 > i && !s.at(t0, v) && !plan.r.at(t0, i))
                    --t0;
                for (int tt = t0 + 1; tt <= t; ++tt)
                    s.at(tt, v) = 1;
            }
            Matrix r = solveR(p, s);
            std::vector<int> cand = sequenceFromR(p, r);
            const Evaluation e = evaluate(p, cand);
            if (e.peakBytes <= budgetBytes &&
                e.recomputeSeconds < bestEval.recomputeSeconds * (1 - 1e-12)) {
                best = std::move(cand);
                bestEval = e;
                changed = true;
                break; // the stage plan changed: recollect the runs
            }
            failed.push_back({t, i});
        }
    }
    return best;
}

std::vector<int> lowestPeakSequence(const Problem &p)
{
    const bool hasBackward = p.firstNonForward < p.n;
    std::vector<char> forward(p.n, 0), all(p.n, 0);
    for (int i = 0; i < p.n; ++i) {
        const bool can = p.recomputable[i] && p.blockBytes[i] > 0 && !p.users[i].empty();
        all[i] = can;
        forward[i] = can && (!hasBackward || i < p.firstNonForward);
    }
    std::vector<int> best = storeAllSequence(p);
    int64_t bestPeak = evaluate(p, best).peakBytes;
    for (const auto *ev : {&forward, &all}) {
        std::vector<int> seq = sequenceForEvicted(p, *ev);
        const int64_t peak = evaluate(p, seq).peakBytes;
        if (peak < bestPeak) {
            bestPeak = peak;
            best = std::move(seq);
        }
    }
    return best;
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

std::string settingText(const SolveRequest &request, const std::string &key,
                        const std::string &fallback)
{
    auto it = request.settings.find(key);
    return it == request.settings.end() ? fallback : it->second;
}

int64_t estimateColumns(const Problem &p)
{
    int64_t cols = 0;
    for (int v = 0; v < p.values; ++v)
        cols += std::max(0, p.valueLastUse[v] - p.producer[v]); // S
    for (int i = 0; i < p.n; ++i) {
        const int64_t span = p.recomputable[i] ? std::max(0, p.lastUse[i] - i) : 0;
        cols += 2 * span + 1;                             // R and U
        cols += int64_t(p.inputs[i].size()) * (1 + span); // FREE
    }
    return cols;
}

Expected<Plan> finishPlan(const Problem &p, const SolveRequest &request,
                          const std::vector<int> &seq, const std::string &solverId)
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
        for (int v = 0; v < p.values; ++v)
            if (p.producer[v] < p.firstNonForward && rs.s.at(p.firstNonForward, v))
                plan.checkpoints.push_back(p.valueTensor[v]);
    }
    return plan;
}

} // namespace remat::core::solvers::checkmate
