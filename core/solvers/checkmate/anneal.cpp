// checkmate::annealRecomputes: simulated annealing over Checkmate's R (which ops each stage
// recomputes before its own op), with S implied by liveness (a value lives from its run to its
// last read before the op runs again, which is the cheapest S for a given R). Any R is a valid
// plan in this form: a recompute of op i in stage t > i reads values whose ops first ran in
// earlier stages. So the search moves freely (add, drop or shift one recompute) and scores a
// plan by its recompute time plus a penalty on the bytes over the budget, summed over the
// sequence; the penalty weight rises while the plan stays over the budget and falls while it
// stays within it. Chains of cooling cycles, each cycle from the best plan so far.
//
// The eviction search (greedy.cpp) only recomputes a value just before the op that reads it;
// this search also finds recomputes placed earlier, where the value's inputs are still live,
// and kept until they are read: the plans Moccasin's retention intervals describe (on the
// 250-node random graph at 0.8 of the in-order peak: 6.98% -> 4.26% TDI, Moccasin 4.9%).
#include "core/solvers/checkmate/problem.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace remat::core::solvers::checkmate {

namespace {

using Clock = std::chrono::steady_clock;

class Annealer
{
public:
    Annealer(const Problem &p, int64_t budget) : m_p(p), m_budget(budget), m_memory(p)
    {
        double costSum = 0, byteSum = 0;
        for (int i = 0; i < p.n; ++i)
            if (p.recomputable[i] && !p.users[i].empty() && p.lastUse[i] > i) {
                m_candidates.push_back(i);
                costSum += p.cost[size_t(i)];
                byteSum += double(p.blockBytes[size_t(i)]);
            }
        // Penalty weight: seconds per byte over, about the cost of recomputing a byte.
        m_meanCost = std::max(1e-12, costSum / double(std::max<size_t>(1, m_candidates.size())));
        m_lambda = byteSum > 0 ? costSum / byteSum : 1.0;
    }

    bool usable() const { return !m_candidates.empty(); }

    /// Stage t's recomputes, ascending, from a sequence whose first runs are in op order.
    std::vector<std::vector<int>> fromSequence(const std::vector<int> &seq) const
    {
        std::vector<std::vector<int>> rec(size_t(m_p.n));
        std::vector<char> ran(size_t(m_p.n), 0);
        int stage = 0;
        for (int k : seq) {
            if (!ran[size_t(k)]) {
                ran[size_t(k)] = 1;
                stage = k + 1;
                continue;
            }
            if (stage < m_p.n)
                rec[size_t(stage)].push_back(k);
        }
        for (auto &r : rec) {
            std::sort(r.begin(), r.end());
            r.erase(std::unique(r.begin(), r.end()), r.end());
        }
        return rec;
    }

    std::vector<int> sequence(const std::vector<std::vector<int>> &rec) const
    {
        std::vector<int> seq;
        for (int t = 0; t < m_p.n; ++t) {
            seq.insert(seq.end(), rec[size_t(t)].begin(), rec[size_t(t)].end());
            seq.push_back(t);
        }
        return seq;
    }

    struct Score
    {
        double cost = 0;     ///< recompute seconds
        double overflow = 0; ///< bytes over the budget, summed over the runs
        int64_t peak = 0;
    };

    /// evaluate()'s figures plus the summed overflow, on the canonical sequence of `rec`.
    Score score(const std::vector<std::vector<int>> &rec)
    {
        const Problem &p = m_p;
        m_seq.clear();
        Score s;
        m_stageStart.resize(size_t(p.n) + 1);
        for (int t = 0; t < p.n; ++t) {
            m_stageStart[size_t(t)] = int(m_seq.size());
            for (int i : rec[size_t(t)]) {
                m_seq.push_back(i);
                s.cost += p.cost[size_t(i)];
            }
            m_seq.push_back(t);
        }
        m_stageStart[size_t(p.n)] = int(m_seq.size());
        m_memory.read(m_seq); // every recompute of op i comes after its first run in stage i
        const SequenceMemory::Walk w = m_memory.walk(m_seq, m_budget);
        s.peak = w.peakBytes;
        s.overflow = w.overBudget;
        return s;
    }

    /// After score(rec): the inputs of op i that a recompute in stage t would keep alive
    /// longer (the run it would read is otherwise last read before stage t), which a recompute
    /// cascade runs again in stage t instead.
    void staleInputs(const std::vector<std::vector<int>> &rec, int t, int i, std::vector<int> &out)
    {
        const Problem &p = m_p;
        const int at = m_stageStart[size_t(t)];
        for (int v : p.inputs[size_t(i)]) {
            const int u = p.producer[size_t(v)];
            if (!p.recomputable[size_t(u)] ||
                std::binary_search(rec[size_t(t)].begin(), rec[size_t(t)].end(), u))
                continue;
            // The run of u that stage t reads: the last one before the stage starts.
            int run = -1;
            for (int q = at - 1; q >= m_stageStart[size_t(u)]; --q)
                if (m_seq[size_t(q)] == u) {
                    run = q;
                    break;
                }
            if (run < 0)
                continue;
            const int last = m_memory.lastRead(size_t(run), v);
            if (last < at)
                out.push_back(u);
        }
    }

    /// Independent chains from `seq` (each with its own random moves) until the time is up or
    /// kChains have run: one chain's trajectory decides much (on the 250-node graph some end at
    /// 4.26%, others at 6.3%), so the time goes to several instead of one long one.
    std::vector<int> run(const std::vector<int> &seq, double seconds, const StopToken &stop)
    {
        const auto begin = Clock::now();
        std::vector<int> best = seq;
        Score bestScore = score(fromSequence(seq));
        for (int c = 0; c < kChains; ++c) {
            const double left =
                seconds - std::chrono::duration<double>(Clock::now() - begin).count();
            if (left <= 0 || stop.stopRequested())
                break;
            std::vector<int> cand = chain(seq, left, stop, 0x9e3779b97f4a7c15ull * uint64_t(c + 1));
            const Score sc = score(fromSequence(cand));
            if (sc.peak <= m_budget &&
                (bestScore.peak > m_budget || sc.cost < bestScore.cost * (1 - 1e-12))) {
                best = std::move(cand);
                bestScore = sc;
            }
        }
        return best;
    }

    std::vector<int> chain(const std::vector<int> &seq, double seconds, const StopToken &stop,
                           uint64_t seed)
    {
        const Problem &p = m_p;
        const auto begin = Clock::now();
        std::vector<std::vector<int>> cur = fromSequence(seq);
        Score curScore = score(cur);
        std::vector<std::vector<int>> best = cur;
        Score bestScore = curScore;
        const bool startFits = curScore.peak <= m_budget;
        double lambda = m_lambda;
        const double t0 = 0.3 * m_meanCost, t1 = 0.002 * m_meanCost;
        const double lambdaFloor = lambda / 100;
        // Cycles of cooling from t0 to t1, each from the best plan so far: about 1000 moves per
        // candidate op, fewer when the time limit would not hold kCycles of them.
        size_t cycleLength = std::max<size_t>(2048, kCycleMovesPerCandidate * m_candidates.size()),
               inCycle = 0;
        int staleCycles = 0;
        bool improvedInCycle = false;
        auto energy = [&](const Score &s) { return s.cost + lambda * s.overflow; };
        uint64_t rng = seed | 1;
        auto random = [&](uint64_t bound) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            return bound ? rng % bound : 0;
        };
        auto uniform = [&] { return double(random(1u << 30)) / double(1u << 30); };
        std::vector<std::pair<int, int>> runs; // (stage, op) of every recompute
        auto collect = [&] {
            runs.clear();
            for (int t = 0; t < p.n; ++t)
                for (int i : cur[size_t(t)])
                    runs.push_back({t, i});
        };
        auto insert = [&](std::vector<std::vector<int>> &rec, int t, int i) {
            auto &r = rec[size_t(t)];
            auto it = std::lower_bound(r.begin(), r.end(), i);
            if (it != r.end() && *it == i)
                return false;
            r.insert(it, i);
            return true;
        };
        auto erase = [&](std::vector<std::vector<int>> &rec, int t, int i) {
            auto &r = rec[size_t(t)];
            auto it = std::lower_bound(r.begin(), r.end(), i);
            if (it == r.end() || *it != i)
                return false;
            r.erase(it);
            return true;
        };
        // A stage where op i may usefully run again: mostly one whose own op reads it.
        auto stageFor = [&](int i) {
            const auto &u = p.users[size_t(i)];
            if (!u.empty() && random(4) != 0) {
                const int t = u[random(u.size())];
                if (t > i && t <= p.lastUse[size_t(i)])
                    return t;
            }
            return i + 1 + int(random(uint64_t(p.lastUse[size_t(i)] - i)));
        };
        size_t iterations = 0, sinceBest = 0;
        double temperature = t0;
        int overBudgetStreak = 0;
        bool stale = false; // the score buffers hold a rejected plan
        std::vector<int> cascade, added;
        collect();
        while (true) {
            if ((iterations & 255) == 0) {
                const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
                if (elapsed >= seconds || stop.stopRequested())
                    break;
                // Once the speed is known: cycles short enough that kCycles fit in the time.
                if (iterations == 2048)
                    cycleLength = std::min(
                        cycleLength,
                        std::max<size_t>(2048, size_t(double(iterations) / std::max(1e-9, elapsed) *
                                                      seconds / kCycles)));
            }
            if (inCycle >= cycleLength) {
                // The next cycle starts again from the best plan; kStaleCycles in a row that find
                // nothing better end the chain.
                inCycle = 0;
                staleCycles = improvedInCycle ? 0 : staleCycles + 1;
                improvedInCycle = false;
                if (staleCycles >= kStaleCycles)
                    break;
                if (bestScore.peak <= m_budget) {
                    cur = best;
                    curScore = score(cur);
                    stale = false;
                    collect();
                    sinceBest = 0;
                }
            }
            temperature = t0 * std::pow(t1 / t0, double(inCycle) / double(cycleLength));
            ++inCycle;
            ++iterations;
            // One move, made in place and undone when rejected.
            const int kind = runs.empty() ? 1 : int(random(10));
            int ta = -1, ia = -1, tb = -1, ib = -1; // removed (ta, ia), added (tb, ib)
            if (kind < 3) {                         // drop a recompute
                const auto [t, i] = runs[random(runs.size())];
                ta = t;
                ia = i;
            } else if (kind < 6) { // add one
                ib = m_candidates[random(m_candidates.size())];
                tb = stageFor(ib);
            } else if (kind < 9) { // shift one to a nearby stage
                const auto [t, i] = runs[random(runs.size())];
                ta = t;
                ia = i;
                ib = i;
                const int span = 1 + int(random(8));
                tb = t + (random(2) ? span : -span);
                if (tb <= i || tb > p.lastUse[size_t(i)])
                    continue;
            } else { // swap: drop one, add another
                const auto [t, i] = runs[random(runs.size())];
                ta = t;
                ia = i;
                ib = m_candidates[random(m_candidates.size())];
                tb = stageFor(ib);
            }
            // A share of the adds bring the recompute cascade of inputs no longer live there.
            cascade.clear();
            if (ib >= 0 && uniform() < kCascadeShare) {
                if (stale) {
                    score(cur);
                    stale = false;
                }
                staleInputs(cur, tb, ib, cascade);
            }
            if (ta >= 0 && !erase(cur, ta, ia))
                continue;
            if (ib >= 0 && !insert(cur, tb, ib)) {
                if (ta >= 0)
                    insert(cur, ta, ia);
                continue;
            }
            added.clear();
            for (int u : cascade)
                if (insert(cur, tb, u))
                    added.push_back(u);
            const Score next = score(cur);
            stale = true;
            const double delta = energy(next) - energy(curScore);
            if (delta <= 0 || uniform() < std::exp(-delta / temperature)) {
                stale = false;
                curScore = next;
                collect();
                if (next.peak <= m_budget && (bestScore.peak > m_budget ||
                                              next.cost < bestScore.cost * (1 - 1e-12) - 1e-15)) {
                    best = cur;
                    bestScore = next;
                    sinceBest = 0;
                    improvedInCycle = true;
                }
            } else {
                for (int u : added)
                    erase(cur, tb, u);
                if (ib >= 0)
                    erase(cur, tb, ib);
                if (ta >= 0)
                    insert(cur, ta, ia);
            }
            // The penalty adapts: a plan that stays over the budget makes overflow dearer.
            if (curScore.overflow > 0) {
                overBudgetStreak = std::max(0, overBudgetStreak);
                if (++overBudgetStreak > 200) {
                    lambda *= 1.5;
                    overBudgetStreak = 0;
                    curScore = score(cur);
                    stale = false;
                }
            } else if (--overBudgetStreak < -200) {
                // ... and a plan that stays within it makes overflow cheaper again, so the search
                // keeps crossing the budget instead of freezing on one side of it.
                lambda = std::max(lambdaFloor, lambda / 1.2);
                overBudgetStreak = 0;
                curScore = score(cur);
                stale = false;
            }
            // Long without a better plan: go back to the best one.
            if (++sinceBest > kRestartAfter && bestScore.peak <= m_budget) {
                cur = best;
                curScore = score(cur);
                stale = false;
                collect();
                sinceBest = 0;
            }
        }
        if (bestScore.peak > m_budget && startFits)
            return seq;
        return sequence(best);
    }

private:
    // Tuned on the 250-node random graph at 0.8 (19 s of annealing): cascades on every add got
    // stuck at 6.3%, on none at 6.0%, on a fifth to a third of them reached 4.26%; one long
    // chain ended at 4.26% or 6.3% depending on its moves, so several chains run. Cycles of
    // 1000 or 1500 moves per candidate reached 4.26%, 500 did not.
    static constexpr double kCascadeShare = 0.2;
    static constexpr int kCycles = 6;
    static constexpr size_t kCycleMovesPerCandidate = 1000;
    static constexpr int kStaleCycles = 3;
    static constexpr size_t kRestartAfter = 20000;
    static constexpr int kChains = 8;
    const Problem &m_p;
    int64_t m_budget;
    SequenceMemory m_memory;
    double m_meanCost = 1, m_lambda = 1;
    std::vector<int> m_candidates, m_seq, m_stageStart;
};

} // namespace

std::vector<int> annealRecomputes(const Problem &p, const std::vector<int> &seq,
                                  int64_t budgetBytes, double seconds, const StopToken &stop)
{
    for (int i = 0; i < p.n; ++i)
        if (p.recomputePinned[size_t(i)])
            return seq; // liveness alone cannot keep these out of the backward stages
    Annealer a(p, budgetBytes);
    if (!a.usable() || seconds <= 0)
        return seq;
    // Through R again: drops recomputes nobody reads before the op runs again.
    std::vector<int> out = sequenceFromR(p, stagePlanFromSequence(p, a.run(seq, seconds, stop)).r);
    const Evaluation before = evaluate(p, seq), after = evaluate(p, out);
    if (after.peakBytes > budgetBytes ||
        (before.peakBytes <= budgetBytes && after.recomputeSeconds >= before.recomputeSeconds))
        return seq;
    return out;
}

} // namespace remat::core::solvers::checkmate
