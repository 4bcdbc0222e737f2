// The Checkmate greedy (checkmate::greedyPlan): warm start of the MILP and the LP rounding, and
// the recomputation part of the offload solver. Its probes build sequences with a sparse
// sequencer equal to sequenceForEvicted (tests/solvers/tst_offload checks them against each other).
#include "core/solvers/checkmate/problem.h"

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
    explicit Sequencer(const Problem &p) : m_p(p), m_memory(p)
    {
        const bool hasBackward = p.firstNonForward < p.n;
        for (int v = 0; v < p.values; ++v) {
            const int i = p.producer[v];
            if (hasBackward && p.recomputePinned[i] && i < p.firstNonForward && p.recomputable[i])
                m_holes.push_back(v);
        }
        m_gapStart.assign(size_t(p.n) + 1, 0);
        for (int k = 0; k < p.n; ++k)
            m_gapStart[k + 1] = m_gapStart[k] + std::max<int>(1, int(p.users[k].size()));
    }

    /// Gaps of op i: gap g is the stages (users[i][g-1], users[i][g]] (users[i][-1] = i), the
    /// last one also every stage after its last user. A dropped gap is not retained into: the
    /// op runs again where something in it reads the op (at the latest at users[i][g]).
    int gapCount() const { return m_gapStart.back(); }
    int gapStart(int i) const { return m_gapStart[i]; }
    int gapOf(int i, int t) const
    {
        const auto &u = m_p.users[i];
        const int g = int(std::lower_bound(u.begin(), u.end(), t) - u.begin());
        return m_gapStart[i] + std::min(g, m_gapStart[i + 1] - m_gapStart[i] - 1);
    }

    std::vector<int> sequence(const std::vector<char> &evicted)
    {
        std::vector<char> dropped(size_t(gapCount()), 0);
        for (int i = 0; i < m_p.n; ++i)
            if (evicted[i])
                std::fill(dropped.begin() + m_gapStart[i], dropped.begin() + m_gapStart[i + 1], 1);
        return sequenceDropped(dropped);
    }

    /// The stage of each run of the last sequence built.
    const std::vector<int> &stages() const { return m_stages; }

    std::vector<int> sequenceDropped(const std::vector<char> &dropped)
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
            if (t > p.valueLastUse[v] || dropped[size_t(gapOf(i, t))])
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
        m_stages.clear();
        for (size_t q = 0; q < m_runs.size(); ++q)
            if (keep[q]) {
                seq.push_back(m_runs[q].second);
                m_stages.push_back(m_runs[q].first);
            }
        return seq;
    }

    /// evaluate's peak of `seq`, cut short once it reaches `limit` (then some value
    /// >= limit): the greedy only asks "does it fit" or "is it lower".
    int64_t peak(const std::vector<int> &seq, int64_t limit)
    {
        if (!m_memory.read(seq))
            return std::numeric_limits<int64_t>::max();
        return m_memory.walk(seq, std::numeric_limits<int64_t>::max(), limit).peakBytes;
    }

private:
    const Problem &m_p;
    SequenceMemory m_memory;
    std::vector<int> m_holes, m_retainedTo, m_gapStart, m_stages, m_mark, m_heap;
    std::vector<std::pair<int, int>> m_runs;
    std::vector<char> m_pending;
};

/// Per position up to `at`: does some value of that run get read after `at` (before the op
/// runs again)?
std::vector<char> liveRunsAt(const Problem &p, const std::vector<int> &seq, int at)
{
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

/// The greedy: candidates ranked by bytes x lifetime per second of recompute (forward blocks
/// first: recomputing a gradient re-runs the backward chain behind it), a gallop to the first
/// evicted prefix that fits (the peak is not monotone in the prefix), bisection below it, then
/// put back the costliest evictions while the plan still fits; a targeted fallback when no
/// prefix fits. Every probe goes through the sparse Sequencer.
class GreedyRecompute
{
public:
    explicit GreedyRecompute(const Problem &p) : m_p(p), m_sequencer(p) {}

    std::vector<int> plan(int64_t budgetBytes, double seconds, const StopToken &stop)
    {
        const Problem &p = m_p;
        const Clock::time_point deadline =
            Clock::now() +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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
        std::stable_sort(back.begin(), back.end(),
                         [&](int a, int b) { return p.cost[a] > p.cost[b]; });
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
    std::vector<int> targeted(int64_t budgetBytes, Clock::time_point deadline,
                              const StopToken &stop)
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
            std::vector<char> live = liveRunsAt(p, seq, e.peakPosition);
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
            auto score = [&](int k) {
                return double(p.blockBytes[k]) / (p.cost[k] + 1e-9 * (1 + p.cost[k]));
            };
            std::stable_sort(order.begin(), order.end(),
                             [&](int a, int b) { return score(a) > score(b); });
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

    const Problem &m_p;
    Sequencer m_sequencer;
};

/// Local search over dropped retention gaps (a block is kept from its first run to its last
/// use except across dropped gaps between consecutive readers, where it is recomputed), every
/// probe scored by evaluate on the staged sequence: keep a dropped gap (most recompute time
/// first) and, while that overflows the budget, drop the gap at the peak (or the whole block)
/// whose recompute cascade costs least until it fits; keep the change when the plan got
/// cheaper. When nothing improves, a perturbation (two gaps kept at once) restarts the search
/// from the best plan, until the time is up or many perturbations in a row found nothing.
class EvictionSearch
{
public:
    EvictionSearch(const Problem &p, int64_t budgetBytes)
        : m_p(p), m_budget(budgetBytes), m_sequencer(p)
    {
    }

    struct State
    {
        std::vector<char> dropped;
        std::vector<int> seq, stages;
        Evaluation eval;
        bool valid() const { return !seq.empty(); } ///< default-constructed: none
    };

    State probe(const std::vector<char> &dropped)
    {
        State s;
        s.dropped = dropped;
        s.seq = m_sequencer.sequenceDropped(dropped);
        s.stages = m_sequencer.stages();
        s.eval = evaluate(m_p, s.seq);
        return s;
    }

    bool candidate(int i) const
    {
        return m_p.recomputable[i] && m_p.blockBytes[i] > 0 && !m_p.users[i].empty();
    }

    /// Drops gaps resident at the peak until `s` fits (at most `depth` steps; gap `locked` is
    /// never dropped). Returns false when it gets stuck.
    bool repair(State &s, int locked, int depth, const Clock::time_point deadline,
                const StopToken &stop)
    {
        const Problem &p = m_p;
        for (int round = 0; s.eval.peakBytes > m_budget; ++round) {
            if (round >= depth || s.eval.peakPosition < 0 || Clock::now() >= deadline ||
                stop.stopRequested())
                return false;
            const std::vector<char> live = liveRunsAt(p, s.seq, s.eval.peakPosition);
            const int peakOp = s.seq[size_t(s.eval.peakPosition)];
            const int peakStage = s.stages[size_t(s.eval.peakPosition)];
            std::vector<int> order;
            std::vector<char> seen(size_t(p.n), 0);
            for (int q = 0; q <= s.eval.peakPosition; ++q) {
                const int k = s.seq[size_t(q)];
                if (!live[size_t(q)] || seen[k] || !candidate(k) || k == peakOp)
                    continue;
                seen[k] = 1;
                order.push_back(k);
            }
            auto score = [&](int k) {
                return double(p.blockBytes[k]) / (p.cost[k] + 1e-9 * (1 + p.cost[k]));
            };
            std::stable_sort(order.begin(), order.end(),
                             [&](int a, int b) { return score(a) > score(b); });
            State bestFit, bestStep;
            double bestStepScore = -1;
            size_t tried = 0;
            for (int k : order) {
                if (tried >= kRepairWidth)
                    break;
                // The gap the peak lies in, then the whole block.
                const int g = m_sequencer.gapOf(k, peakStage);
                for (int option = 0; option < 2; ++option) {
                    std::vector<char> dr = s.dropped;
                    bool changed = false;
                    if (option == 0) {
                        if (g == locked || dr[size_t(g)])
                            continue;
                        dr[size_t(g)] = 1;
                        changed = true;
                    } else {
                        for (int h = m_sequencer.gapStart(k); h < m_sequencer.gapStart(k + 1); ++h)
                            if (h != locked && !dr[size_t(h)]) {
                                dr[size_t(h)] = 1;
                                changed = true;
                            }
                        if (!changed || m_sequencer.gapStart(k + 1) - m_sequencer.gapStart(k) == 1)
                            continue;
                    }
                    ++tried;
                    State next = probe(dr);
                    if (next.eval.peakBytes >= s.eval.peakBytes)
                        continue;
                    if (next.eval.peakBytes <= m_budget) {
                        if (!bestFit.valid() ||
                            next.eval.recomputeSeconds < bestFit.eval.recomputeSeconds)
                            bestFit = std::move(next);
                        continue;
                    }
                    const double added = next.eval.recomputeSeconds - s.eval.recomputeSeconds;
                    const double stepScore = double(s.eval.peakBytes - next.eval.peakBytes) /
                                             (std::max(0.0, added) + 1e-12);
                    if (stepScore > bestStepScore) {
                        bestStepScore = stepScore;
                        bestStep = std::move(next);
                    }
                }
            }
            if (bestFit.valid()) {
                s = std::move(bestFit);
                return true;
            }
            if (!bestStep.valid())
                return false;
            s = std::move(bestStep);
        }
        return true;
    }

    std::vector<int> improve(const std::vector<int> &seq, double seconds, const StopToken &stop)
    {
        const Problem &p = m_p;
        const auto begin = Clock::now();
        // Two starts: the evicted set the sequence stands for (ops that run more than once),
        // and every block evicted (the search then takes back what fits, dearest first).
        std::vector<int> runs(size_t(p.n), 0);
        for (int k : seq)
            ++runs[size_t(k)];
        std::vector<char> fromSeq(size_t(m_sequencer.gapCount()), 0), all = fromSeq;
        for (int i = 0; i < p.n; ++i)
            for (int h = m_sequencer.gapStart(i); h < m_sequencer.gapStart(i + 1) && candidate(i);
                 ++h) {
                fromSeq[size_t(h)] = runs[i] > 1;
                all[size_t(h)] = 1;
            }
        std::vector<int> best = seq;
        Evaluation bestEval = evaluate(p, seq);
        const std::vector<char> *starts[] = {&fromSeq, &all};
        for (int q = 0; q < 2; ++q) {
            const double left =
                seconds - std::chrono::duration<double>(Clock::now() - begin).count();
            if (left <= 0 || stop.stopRequested())
                break;
            std::vector<int> cand = search(*starts[q], q == 0 ? left / 2 : left, stop);
            if (cand.empty())
                continue;
            const Evaluation e = evaluate(p, cand);
            if (e.peakBytes <= m_budget &&
                (bestEval.peakBytes > m_budget || e.recomputeSeconds < bestEval.recomputeSeconds)) {
                best = std::move(cand);
                bestEval = e;
            }
        }
        return best;
    }

    /// The search from one start; empty when it cannot make the start fit.
    std::vector<int> search(const std::vector<char> &dropped, double seconds, const StopToken &stop)
    {
        const Problem &p = m_p;
        const Clock::time_point deadline =
            Clock::now() +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        State current = probe(dropped);
        if (current.eval.peakBytes > m_budget && !repair(current, -1, 50, deadline, stop))
            return {};
        State best = current;
        int stale = 0; // perturbations since the best last improved
        uint64_t rng = 0x9e3779b97f4a7c15ull;
        auto random = [&](uint64_t bound) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            return rng % bound;
        };
        auto droppedGaps = [&](const State &s) {
            std::vector<int> gaps;
            for (int g = 0; g < int(s.dropped.size()); ++g)
                if (s.dropped[size_t(g)])
                    gaps.push_back(g);
            return gaps;
        };
        std::vector<int> gapOp(size_t(m_sequencer.gapCount()));
        for (int i = 0; i < p.n; ++i)
            for (int h = m_sequencer.gapStart(i); h < m_sequencer.gapStart(i + 1); ++h)
                gapOp[size_t(h)] = i;
        while (Clock::now() < deadline && !stop.stopRequested()) {
            // First improvement over the dropped gaps, dearest op first, until a full pass
            // gains nothing.
            bool improved = true;
            while (improved && Clock::now() < deadline && !stop.stopRequested()) {
                improved = false;
                std::vector<int> order = droppedGaps(current);
                std::stable_sort(order.begin(), order.end(),
                                 [&](int a, int b) { return p.cost[gapOp[a]] > p.cost[gapOp[b]]; });
                for (int g : order) {
                    if (Clock::now() >= deadline || stop.stopRequested())
                        break;
                    if (!current.dropped[size_t(g)])
                        continue;
                    std::vector<char> dr = current.dropped;
                    dr[size_t(g)] = 0;
                    State next = probe(dr);
                    if (next.eval.recomputeSeconds >= current.eval.recomputeSeconds * (1 - 1e-12))
                        continue; // keeping it alone saves nothing: repairs only add
                    if (!repair(next, g, 4, deadline, stop))
                        continue;
                    if (next.eval.recomputeSeconds < current.eval.recomputeSeconds * (1 - 1e-12)) {
                        current = std::move(next);
                        improved = true;
                    }
                }
            }
            if (current.eval.recomputeSeconds < best.eval.recomputeSeconds * (1 - 1e-12)) {
                best = current;
                stale = 0;
            } else if (++stale > kPatience) {
                break;
            }
            // Perturb the best plan: keep a few dropped gaps, drop a few kept ones, repair,
            // search again from there.
            const std::vector<int> gaps = droppedGaps(best);
            if (gaps.empty())
                break;
            State next;
            for (int attempt = 0; attempt < 8 && !next.valid(); ++attempt) {
                if (Clock::now() >= deadline || stop.stopRequested())
                    break;
                std::vector<char> dr = best.dropped;
                const int moves = 1 + int(random(4));
                for (int j = 0; j < moves; ++j) {
                    dr[size_t(gaps[random(gaps.size())])] = 0;
                    const int h = int(random(dr.size()));
                    if (candidate(gapOp[size_t(h)]))
                        dr[size_t(h)] = 1;
                }
                State cand = probe(dr);
                if (repair(cand, -1, 20, deadline, stop))
                    next = std::move(cand);
            }
            if (!next.valid()) {
                if (++stale > kPatience)
                    break;
                continue;
            }
            current = std::move(next);
        }
        if (current.eval.peakBytes <= m_budget &&
            current.eval.recomputeSeconds < best.eval.recomputeSeconds)
            best = current;
        return best.seq;
    }

private:
    static constexpr size_t kRepairWidth = 16;
    static constexpr int kPatience = 300;
    const Problem &m_p;
    int64_t m_budget;
    Sequencer m_sequencer;
};

} // namespace

std::vector<int> greedyPlan(const Problem &p, int64_t budgetBytes, double seconds,
                            const StopToken &stop)
{
    return GreedyRecompute(p).plan(budgetBytes, seconds, stop);
}

std::vector<int> stagedSequenceForEvicted(const Problem &p, const std::vector<char> &evicted)
{
    return Sequencer(p).sequence(evicted);
}

} // namespace remat::core::solvers::checkmate

namespace remat::core::solvers::checkmate {

std::vector<int> improveEvictedSet(const Problem &p, const std::vector<int> &seq,
                                   int64_t budgetBytes, double seconds, const StopToken &stop)
{
    return EvictionSearch(p, budgetBytes).improve(seq, seconds, stop);
}

} // namespace remat::core::solvers::checkmate
