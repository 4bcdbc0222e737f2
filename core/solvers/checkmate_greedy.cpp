// The Checkmate greedy (checkmate::greedyPlan): warm start of the MILP and the LP rounding, and
// the recomputation part of the offload solver. Its probes build sequences with a sparse
// sequencer equal to sequenceForEvicted (tests/solvers/tst_offload checks them against each other).
#include "core/solvers/checkmate_problem.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace remat::core::solvers::checkmate {

namespace {

using Clock = std::chrono::steady_clock;

/// sequenceForEvicted without the dense stages x values matrices: the same R (each
/// stage runs its op plus the recompute cascade of what it reads and nobody retained) and the
/// same pruning of unread runs, in time proportional to the runs instead of n x values. The
/// greedy below asks for hundreds of sequences per budget, which the dense form made seconds.
class Sequencer
{
public:
    explicit Sequencer(const Problem &p)
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
        const Problem &p = m_p;
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

    /// evaluate's peak of `seq`, cut short once it reaches `limit` (then some value
    /// >= limit): the greedy only asks "does it fit" or "is it lower".
    int64_t peak(const std::vector<int> &seq, int64_t limit)
    {
        const Problem &p = m_p;
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
    const Problem &m_p;
    std::vector<int> m_holes, m_retainedTo, m_mark, m_heap, m_slot, m_start, m_last, m_current;
    std::vector<int64_t> m_freed;
    std::vector<std::pair<int, int>> m_runs;
    std::vector<char> m_pending, m_ran;
};

/// greedyPlan (and its targeted fallback) over the sparse Sequencer: the same
/// candidates and order, gallop, bisection, put-back and deadline, so the same plans, only
/// without rebuilding dense matrices for every probe.
class GreedyRecompute
{
public:
    explicit GreedyRecompute(const Problem &p)
        : m_p(p), m_sequencer(p)
    {
    }

    std::vector<int> plan(int64_t budgetBytes, double seconds, const StopToken &stop)
    {
        const Problem &p = m_p;
        const Clock::time_point deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        std::vector<int> storeAll = storeAllSequence(p);
        if (evaluate(p, storeAll).peakBytes <= budgetBytes)
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
        const Problem &p = m_p;
        std::vector<char> evicted(size_t(p.n), 0), seen(size_t(p.n), 0);
        std::vector<int> seq = m_sequencer.sequence(evicted);
        std::vector<int> order;
        while (Clock::now() < deadline && !stop.stopRequested()) {
            const Evaluation e = evaluate(p, seq);
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
        const Problem &p = m_p;
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

    const Problem &m_p;
    Sequencer m_sequencer;
};

} // namespace

std::vector<int> greedyPlan(const Problem &p, int64_t budgetBytes, double seconds, const StopToken &stop)
{
    return GreedyRecompute(p).plan(budgetBytes, seconds, stop);
}

std::vector<int> stagedSequenceForEvicted(const Problem &p, const std::vector<char> &evicted)
{
    return Sequencer(p).sequence(evicted);
}

} // namespace remat::core::solvers::checkmate
