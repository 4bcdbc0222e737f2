#include "core/solvers/offload.h"

#include "core/sim/simulator.h"
#include "core/solvers/checkmate_problem.h"

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
    TensorId tensor;      ///< weights
    int instance = -1;    ///< activations: the producing position
    int from = -1;        ///< activations: the use before the gap
    int to = -1;          ///< activations: the read after the gap
    double score = 0;     ///< bytes x positions spent off the device
    bool forced = false;  ///< offload pin / stream-weights=always
};

struct Layout
{
    std::vector<int> seq;
    std::vector<int> lastRead;                  ///< per position (-1: unread)
    std::vector<std::vector<int>> reads;        ///< per position: positions reading that run
    std::vector<std::vector<int>> weightReads;  ///< per tensor: positions reading it (preloaded)
    std::vector<Candidate> candidates;
};

Layout layout(const checkmate::Problem &p, const training::TrainingGraph &graph, const std::vector<int> &seq)
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
                l.candidates.push_back({false, TensorId(), int(pos), prev, r, double(bytes) * (r - prev), false});
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
int prefetchPosition(const checkmate::Problem &p, const cost::Costs &costs, const std::vector<int> &seq,
                     int after, int to, int64_t bytes, bool justInTime)
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
            const int at = prefetchPosition(p, costs, l.seq, c->from, c->to, p.blockBytes[k], justInTime);
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
            prefetchBefore[prefetchPosition(p, costs, l.seq, after, r[j], bytes, justInTime)].push_back(t);
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

/// checkmate::sequenceForEvicted without the dense stages x values matrices: the same R (each
/// stage runs its op plus the recompute cascade of what it reads and nobody retained) and the
/// same pruning of unread runs, in time proportional to the runs instead of n x values. The
/// greedy below asks for hundreds of sequences per budget, which the dense form made seconds.
class Sequencer
{
public:
    explicit Sequencer(const checkmate::Problem &p)
        : m_p(p)
    {
        const bool hasBackward = p.firstNonForward < p.n;
        for (int v = 0; v < p.values; ++v) {
            const int i = p.producer[v];
            if (hasBackward && p.recomputePinned[i] && i < p.firstNonForward && p.recomputable[i])
                m_holes.push_back(v);
        }
        m_slot.assign(size_t(p.values), 0);
        for (int k = 0; k < p.n; ++k)
            for (size_t j = 0; j < p.outputs[k].size(); ++j)
                m_slot[p.outputs[k][j]] = int(j);
    }

    std::vector<int> sequence(const std::vector<char> &evicted)
    {
        const checkmate::Problem &p = m_p;
        const int n = p.n;
        m_retainedTo.assign(size_t(p.values), -1);
        for (int v = 0; v < p.values; ++v) {
            const int i = p.producer[v];
            if (p.keepPinned[i] && !p.readers[v].empty())
                m_retainedTo[v] = p.readers[v].back();
        }
        // Is value v resident across the boundary into stage t (Checkmate's S[t][v])?
        auto retained = [&](int t, int v) {
            const int i = p.producer[v];
            if (t <= i)
                return false;
            if (t <= m_retainedTo[v])
                return true;
            if (evicted[i] || t > p.valueLastUse[v])
                return false;
            // Recompute-pinned forward values are dropped across the forward/backward boundary.
            return !(t == p.firstNonForward && p.recomputePinned[i] && i < p.firstNonForward &&
                     p.recomputable[i]);
        };
        m_mark.assign(size_t(n), -1);
        m_runs.clear();
        std::vector<int> stageRuns;
        for (int t = 0; t < n; ++t) {
            stageRuns.clear();
            m_heap.clear();
            auto add = [&](int k) {
                m_mark[k] = t;
                m_heap.push_back(k);
                std::push_heap(m_heap.begin(), m_heap.end());
            };
            add(t);
            if (t == p.firstNonForward && t + 1 < n)
                for (int v : m_holes)
                    if (retained(t + 1, v) && !retained(t, v) && m_mark[p.producer[v]] != t)
                        add(p.producer[v]);
            // Highest op first: a recompute only adds lower ops (its producers).
            while (!m_heap.empty()) {
                std::pop_heap(m_heap.begin(), m_heap.end());
                const int k = m_heap.back();
                m_heap.pop_back();
                stageRuns.push_back(k);
                for (int v : p.inputs[k]) {
                    const int u = p.producer[v];
                    if (m_mark[u] == t || retained(t, v))
                        continue;
                    if (p.recomputable[u])
                        add(u);
                    else
                        m_retainedTo[v] = std::max(m_retainedTo[v], t);
                }
            }
            for (auto it = stageRuns.rbegin(); it != stageRuns.rend(); ++it)
                m_runs.push_back({t, *it});
        }
        // Drop runs nobody reads before the op's next run (first runs always stay).
        std::vector<char> keep(m_runs.size(), 0);
        m_pending.assign(size_t(n), 0);
        size_t kept = 0;
        for (size_t q = m_runs.size(); q-- > 0;) {
            const auto [t, k] = m_runs[q];
            if (k != t && !m_pending[k])
                continue;
            keep[q] = 1;
            ++kept;
            m_pending[k] = 0;
            for (int d : p.deps[k])
                m_pending[d] = 1;
        }
        std::vector<int> seq;
        seq.reserve(kept);
        for (size_t q = 0; q < m_runs.size(); ++q)
            if (keep[q])
                seq.push_back(m_runs[q].second);
        return seq;
    }

    /// checkmate::evaluate's peak of `seq`, cut short once it reaches `limit` (then some value
    /// >= limit): the greedy only asks "does it fit" or "is it lower".
    int64_t peak(const std::vector<int> &seq, int64_t limit)
    {
        const checkmate::Problem &p = m_p;
        const size_t q = seq.size();
        m_start.resize(q + 1);
        m_start[0] = 0;
        for (size_t i = 0; i < q; ++i)
            m_start[i + 1] = m_start[i] + int(p.outputs[seq[i]].size());
        m_last.assign(size_t(m_start[q]), -1);
        m_current.assign(size_t(p.n), -1);
        for (size_t i = 0; i < q; ++i) {
            for (int v : p.inputs[seq[i]]) {
                const int at = m_current[p.producer[v]];
                if (at < 0)
                    return std::numeric_limits<int64_t>::max();
                m_last[size_t(m_start[at] + m_slot[v])] = static_cast<int>(i);
            }
            m_current[seq[i]] = static_cast<int>(i);
        }
        m_freed.assign(q, 0);
        for (size_t i = 0; i < q; ++i) {
            const auto &outs = p.outputs[seq[i]];
            for (size_t j = 0; j < outs.size(); ++j) {
                const int last = m_last[size_t(m_start[i]) + j];
                m_freed[last >= 0 ? size_t(last) : i] += p.valueBytes[outs[j]];
            }
        }
        m_ran.assign(size_t(p.n), 0);
        int64_t mem = p.constantBytes, highest = mem;
        for (size_t i = 0; i < q && highest < limit; ++i) {
            const int k = seq[i];
            mem += p.blockBytes[k] + (m_ran[k] ? 0 : p.stickyBytes[k]);
            m_ran[k] = 1;
            highest = std::max(highest, mem + p.transientBytes[k]);
            mem -= m_freed[i];
        }
        return highest;
    }

private:
    const checkmate::Problem &m_p;
    std::vector<int> m_holes, m_retainedTo, m_mark, m_heap, m_slot, m_start, m_last, m_current;
    std::vector<int64_t> m_freed;
    std::vector<std::pair<int, int>> m_runs;
    std::vector<char> m_pending, m_ran;
};

/// checkmate::greedyPlan (and its targeted fallback) over the sparse Sequencer: the same
/// candidates and order, gallop, bisection, put-back and deadline, so the same plans, only
/// without rebuilding dense matrices for every probe.
class GreedyRecompute
{
public:
    explicit GreedyRecompute(const checkmate::Problem &p)
        : m_p(p), m_sequencer(p)
    {
    }

    std::vector<int> plan(int64_t budgetBytes, double seconds, const StopToken &stop)
    {
        const checkmate::Problem &p = m_p;
        const Clock::time_point deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        std::vector<int> storeAll = checkmate::storeAllSequence(p);
        if (checkmate::evaluate(p, storeAll).peakBytes <= budgetBytes)
            return storeAll;
        const int firstBackward = p.firstNonForward;
        std::vector<int> candidates;
        std::vector<double> score(size_t(p.n), 0);
        for (int i = 0; i < p.n; ++i) {
            if (!p.recomputable[i] || p.blockBytes[i] == 0 || p.users[i].empty())
                continue;
            const double span = double(p.users[i].back() - i);
            score[i] = double(p.blockBytes[i]) * span / (p.cost[i] + 1e-12 * (1 + p.cost[i]));
            candidates.push_back(i);
        }
        if (candidates.empty())
            return {};
        std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
            const bool fa = a < firstBackward, fb = b < firstBackward;
            return fa != fb ? fa : score[a] > score[b];
        });
        auto evictedPrefix = [&](size_t m) {
            std::vector<char> ev(size_t(p.n), 0);
            for (size_t j = 0; j < m; ++j)
                ev[candidates[j]] = 1;
            return ev;
        };
        auto fits = [&](const std::vector<char> &ev, std::vector<int> *seqOut) {
            std::vector<int> seq = m_sequencer.sequence(ev);
            const bool ok = m_sequencer.peak(seq, budgetBytes + 1) <= budgetBytes;
            if (ok && seqOut)
                *seqOut = std::move(seq);
            return ok;
        };
        std::vector<int> best;
        size_t lo = 0, hi = 0;
        for (size_t m = 1;; m = std::min(candidates.size(), m * 2)) {
            if (Clock::now() >= deadline || stop.stopRequested())
                return {};
            if (fits(evictedPrefix(m), &best)) {
                hi = m;
                break;
            }
            lo = m;
            if (m == candidates.size())
                return targeted(budgetBytes, deadline, stop);
        }
        while (lo + 1 < hi && Clock::now() < deadline && !stop.stopRequested()) {
            const size_t mid = (lo + hi) / 2;
            if (fits(evictedPrefix(mid), nullptr))
                hi = mid;
            else
                lo = mid;
        }
        std::vector<char> evicted = evictedPrefix(hi);
        fits(evicted, &best);
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

private:
    /// Evicts one block resident at the current peak at a time (most bytes per second of
    /// recompute first) until the plan fits.
    std::vector<int> targeted(int64_t budgetBytes, Clock::time_point deadline, const StopToken &stop)
    {
        const checkmate::Problem &p = m_p;
        std::vector<char> evicted(size_t(p.n), 0), seen(size_t(p.n), 0);
        std::vector<int> seq = m_sequencer.sequence(evicted);
        std::vector<int> order;
        while (Clock::now() < deadline && !stop.stopRequested()) {
            const checkmate::Evaluation e = checkmate::evaluate(p, seq);
            if (e.peakBytes <= budgetBytes)
                return seq;
            if (e.peakPosition < 0)
                return {};
            // Blocks resident at the peak (produced at or before it, read after it), most bytes
            // per second of recompute first. The sequence and its peak stay put while picks
            // fail, so they are ranked once per accepted eviction.
            std::vector<char> live = liveAt(seq, e.peakPosition);
            order.clear();
            std::fill(seen.begin(), seen.end(), 0);
            const int peakOp = seq[size_t(e.peakPosition)];
            for (int q = 0; q <= e.peakPosition; ++q) {
                const int k = seq[size_t(q)];
                if (!live[size_t(q)] || seen[k] || evicted[k] || !p.recomputable[k] || k == peakOp)
                    continue;
                seen[k] = 1;
                order.push_back(k);
            }
            auto score = [&](int k) { return double(p.blockBytes[k]) / (p.cost[k] + 1e-9 * (1 + p.cost[k])); };
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score(a) > score(b); });
            bool lowered = false;
            for (size_t j = 0; j < order.size(); ++j) {
                if (j > 0 && (Clock::now() >= deadline || stop.stopRequested()))
                    return {};
                evicted[order[j]] = 1;
                std::vector<int> next = m_sequencer.sequence(evicted);
                if (m_sequencer.peak(next, e.peakBytes) < e.peakBytes) {
                    seq = std::move(next);
                    lowered = true;
                    break;
                }
                evicted[order[j]] = 0; // no help: keep it and try the next one
            }
            if (!lowered)
                return {};
        }
        return {};
    }

    /// Per position up to `at`: does some value of that run get read after `at` (before the
    /// op runs again)?
    std::vector<char> liveAt(const std::vector<int> &seq, int at) const
    {
        const checkmate::Problem &p = m_p;
        std::vector<char> live(seq.size(), 0);
        std::vector<int> current(size_t(p.n), -1);
        for (size_t q = 0; q < seq.size(); ++q) {
            for (int v : p.inputs[seq[q]]) {
                const int from = current[p.producer[v]];
                if (from >= 0 && int(q) > at)
                    live[size_t(from)] = 1;
            }
            current[seq[q]] = static_cast<int>(q);
        }
        return live;
    }

    const checkmate::Problem &m_p;
    Sequencer m_sequencer;
};

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
        floor = std::max(floor, p.constantBytes + sticky + in + p.blockBytes[k] + p.transientBytes[k]);
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
               "are offloaded right after they are produced. Streamed weights start in host memory. "
               "Combined with recomputation: the op sequence is store-all or a Checkmate-greedy "
               "recomputation plan at a fraction of the budget, and the plan with the shortest "
               "simulated step (copy stalls included) under the budget wins.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        return c;
    }
    Expected<Plan> solve(const SolveRequest &request) const override;
};

Expected<Plan> OffloadSolver::solve(const SolveRequest &request) const
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
    std::vector<std::vector<int>> sequences{Sequencer(p).sequence(std::vector<char>(size_t(p.n), 0))};
    if (recompute) {
        checkmate::Problem streamed = p;
        streamed.constantBytes = 0; // weights may all be streamed
        GreedyRecompute greedy(streamed);
        const int64_t peakFloor = peakLowerBound(streamed);
        for (double f : {0.9, 0.75, 0.6, 0.45, 0.3}) {
            if (elapsed() > 0.5 * request.timeLimitSeconds || request.stop.stopRequested())
                break;
            // No recomputation plan gets below the floor (min-peak has no budget at all): the
            // greedy would only search until its deadline.
            if (static_cast<int64_t>(f * double(request.budgetBytes)) < peakFloor)
                break;
            std::vector<int> seq = greedy.plan(
                static_cast<int64_t>(f * double(request.budgetBytes)),
                std::min(5.0, 0.05 * request.timeLimitSeconds), request.stop);
            if (!seq.empty() && std::find(sequences.begin(), sequences.end(), seq) == sequences.end())
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
                    pinned = pinned || std::find(offloadPinned.begin(), offloadPinned.end(), t) != offloadPinned.end();
            if (pinned)
                forced[c] = 1;
            else
                order.push_back(c);
        }
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return l.candidates[a].score > l.candidates[b].score; });
        // Prefetches start early enough to hide the copy ("ahead"), or right before the read
        // ("just in time": lower peak, copies stall the compute lane).
        for (bool justInTime : {false, true}) {
            auto trial = [&](size_t m) -> std::optional<Best> {
                std::vector<char> chosen = forced;
                for (size_t j = 0; j < m; ++j)
                    chosen[order[j]] = 1;
                schedule::Schedule s = buildSchedule(p, graph, *request.costs, l, chosen, justInTime);
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
            while (lo + 1 < hi && elapsed() < request.timeLimitSeconds && !request.stop.stopRequested()) {
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
    plan.status = feasible ? (request.stop.stopRequested() ? SolveStatus::Cancelled : SolveStatus::Feasible)
                           : SolveStatus::Infeasible;
    plan.note = fmt::format("{} streamed stretches on {}; host peak {} B; copy lane busy {:.4g} s; "
                            "{} op sequences tried",
                            chosen.streamed, chosen.sequence == 0 ? "the store-all order"
                                                                  : "a recomputation plan",
                            plan.timeline.hostPeakBytes, plan.timeline.copySeconds, sequences.size());
    if (!feasible)
        plan.note = fmt::format("infeasible: the lowest peak found is {} B; ", plan.timeline.peakBytes) +
                    plan.note;
    plan.solveSeconds = elapsed();
    return plan;
}

} // namespace

std::unique_ptr<Solver> makeOffloadSolver() { return std::make_unique<OffloadSolver>(); }

std::vector<int> offloadSequenceForEvicted(const checkmate::Problem &p, const std::vector<char> &evicted)
{
    return Sequencer(p).sequence(evicted);
}

std::vector<int> offloadGreedyPlan(const checkmate::Problem &p, int64_t budgetBytes, double seconds,
                                   const StopToken &stop)
{
    return GreedyRecompute(p).plan(budgetBytes, seconds, stop);
}

} // namespace remat::core::solvers
