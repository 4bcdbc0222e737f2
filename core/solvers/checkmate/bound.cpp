#include "core/solvers/checkmate/bound.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

namespace remat::core::solvers::checkmate {

FrontierBound frontierLowerBound(const Problem &p, int64_t budgetBytes,
                                 const FrontierBoundOptions &options)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::duration<double>(std::max(0.0, options.seconds));
    constexpr double inf = std::numeric_limits<double>::infinity();
    FrontierBound out;
    const int n = p.n;

    // Scaled units keep the multipliers and steps well conditioned.
    int64_t maxBytes = 1;
    for (int64_t b : p.valueBytes)
        maxBytes = std::max(maxBytes, b);
    double maxCost = 0;
    for (double c : p.cost)
        maxCost = std::max(maxCost, c);
    if (maxCost <= 0)
        return out; // nothing costs anything: 0 is the bound
    const double memUnit = double(maxBytes), costUnit = maxCost;

    // Capacity left for values live at frontier t.
    std::vector<double> cap(n);
    int64_t stickyBefore = 0;
    for (int t = 0; t < n; ++t) {
        const int64_t fixed = p.constantBytes + stickyBefore + p.stickyBytes[t] + p.blockBytes[t] +
                              p.transientBytes[t];
        cap[t] = double(budgetBytes - fixed) / memUnit;
        stickyBefore += p.stickyBytes[t];
    }

    // Per value: span of frontiers (producer, last reader], size, transition cost, forced stages.
    struct Item
    {
        int first, last;
        double mem, cost;
    };
    std::vector<Item> items;
    std::vector<std::vector<char>> forced;
    std::vector<int> itemValue;
    for (int v = 0; v < p.values; ++v) {
        if (p.readers[v].empty() || p.valueBytes[v] == 0)
            continue;
        const int prod = p.producer[v];
        Item it{prod + 1, p.readers[v].back(), double(p.valueBytes[v]) / memUnit,
                p.recomputable[prod] ? p.cost[prod] / double(p.outputs[prod].size()) / costUnit
                                     : inf};
        if (it.last < it.first)
            continue;
        std::vector<char> f(size_t(it.last - it.first + 1), 0);
        for (int j : p.readers[v])
            if (j >= it.first)
                f[size_t(j - it.first)] = 1;
        items.push_back(it);
        itemValue.push_back(v);
        forced.push_back(std::move(f));
    }
    // A frontier whose forced values alone overflow: no plan at all.
    {
        std::vector<double> forcedMem(n, 0);
        for (size_t q = 0; q < items.size(); ++q)
            for (int t = items[q].first; t <= items[q].last; ++t)
                if (forced[q][size_t(t - items[q].first)])
                    forcedMem[t] += items[q].mem;
        for (int t = 0; t < n; ++t)
            if (forcedMem[t] > cap[t] + 1e-12) {
                out.infeasible = true;
                return out;
            }
    }

    // Candidate plans: S[t,v] = live at frontiers t-1 and t (the producer's own run counts as
    // live), R by solveR.
    int64_t overPeak = -1;
    Matrix overS;
    auto tryPlan = [&](const std::vector<std::vector<char>> &live) {
        Matrix sm(n, p.values);
        for (int v = 0; v < p.values; ++v)
            if (p.valueBytes[v] == 0) // free to keep
                for (int t = p.producer[v] + 1; t <= p.valueLastUse[v]; ++t)
                    sm.at(t, v) = 1;
        for (size_t q = 0; q < items.size(); ++q) {
            const Item &it = items[q];
            const int v = itemValue[q];
            for (int t = it.first; t <= it.last; ++t) {
                const bool prev = t == it.first || live[q][size_t(t - 1 - it.first)];
                if (prev && live[q][size_t(t - it.first)])
                    sm.at(t, v) = 1;
            }
        }
        Matrix r = solveR(p, sm);
        std::vector<int> seq = sequenceFromR(p, r);
        const Evaluation e = evaluate(p, seq);
        if (e.peakBytes <= budgetBytes) {
            if (out.sequence.empty() || e.recomputeSeconds < out.evaluation.recomputeSeconds) {
                out.sequence = std::move(seq);
                out.evaluation = e;
            }
        } else if (overPeak < 0 || e.peakBytes < overPeak) {
            overPeak = e.peakBytes; // the closest miss of this pass, repaired afterwards
            overS = sm;
        }
    };
    auto consider = [&](std::vector<int> seq) {
        if (seq.empty())
            return;
        const Evaluation e = evaluate(p, seq);
        if (e.peakBytes <= budgetBytes &&
            (out.sequence.empty() || e.recomputeSeconds < out.evaluation.recomputeSeconds)) {
            out.sequence = std::move(seq);
            out.evaluation = e;
        }
    };
    // For plan passes only: a reload also pays, roughly, for the producer's inputs that no
    // natural reader keeps alive by then (one level of the recompute cascade).
    std::vector<std::vector<double>> cascade(items.size());
    for (size_t q = 0; q < items.size(); ++q) {
        const Item &it = items[q];
        const int prod = p.producer[itemValue[q]];
        cascade[q].assign(size_t(it.last - it.first + 1), 0.0);
        for (int u : p.inputs[prod]) {
            if (p.readers[u].empty())
                continue;
            const int pu = p.producer[u];
            const double cu =
                p.recomputable[pu] ? p.cost[pu] / double(p.outputs[pu].size()) / costUnit : 10.0;
            for (int t = std::max(it.first, p.readers[u].back() + 1); t <= it.last; ++t)
                cascade[q][size_t(t - it.first)] += cu;
        }
    }
    std::vector<std::vector<char>> live(items.size());
    // One subgradient run on capacities cap x scale; returns the best dual value.
    using Deadline = std::chrono::time_point<Clock, std::chrono::duration<double, std::nano>>;
    auto run = [&](double scale, Deadline until, int maxIterations, bool plans, bool cascadeCosts) {
        std::vector<double> c(n);
        for (int t = 0; t < n; ++t)
            c[t] = cap[t] * scale;
        std::vector<double> lambda(n, 0.0), g(n), bestLambda(n, 0.0);
        std::vector<char> choice; // backtracking bits
        double best = 0;
        const double target = options.upperBound > 0 ? options.upperBound / costUnit : -1;
        double theta = 1.0;
        int sinceImprove = 0;
        for (int iter = 0; iter < maxIterations; ++iter) {
            if (Clock::now() > until || options.stop.stopRequested())
                break;
            if (!cascadeCosts)
                ++out.iterations;
            double value = 0;
            for (int t = 0; t < n; ++t) {
                value -= lambda[t] * c[t];
                g[t] = -c[t];
            }
            for (size_t q = 0; q < items.size(); ++q) {
                const Item &it = items[q];
                const int len = it.last - it.first + 1;
                choice.assign(size_t(len) * 2, 0);
                double l = 0, d = inf; // state at the producer's own run: live
                for (int j = 0; j < len; ++j) {
                    const int t = it.first + j;
                    const double fromDead =
                        d + it.cost + (cascadeCosts ? cascade[q][size_t(j)] : 0.0);
                    double nl;
                    if (fromDead < l) {
                        nl = fromDead;
                        choice[size_t(2 * j)] = 1; // live at t came from dead
                    } else {
                        nl = l;
                    }
                    nl += lambda[t] * it.mem;
                    double nd = inf;
                    if (!forced[q][size_t(j)]) {
                        if (l < d) {
                            nd = l;
                            choice[size_t(2 * j + 1)] = 1; // dead at t came from live
                        } else {
                            nd = d;
                        }
                    }
                    l = nl;
                    d = nd;
                }
                // Nothing needs the value after its last reader: end in the cheaper state.
                bool state = l <= d;
                value += state ? l : d;
                live[q].assign(size_t(len), 0);
                for (int j = len - 1; j >= 0; --j) {
                    live[q][size_t(j)] = state;
                    state = state ? !choice[size_t(2 * j)] : choice[size_t(2 * j + 1)];
                }
                for (int j = 0; j < len; ++j)
                    if (live[q][size_t(j)])
                        g[it.first + j] += it.mem;
            }
            if (plans && iter % 5 == 4)
                tryPlan(live);
            if (value > best + 1e-12) {
                best = value;
                bestLambda = lambda;
                sinceImprove = 0;
            } else if (++sinceImprove >= 30) {
                theta *= 0.5;
                sinceImprove = 0;
                lambda = bestLambda;
                if (theta < 1e-6)
                    break;
                continue;
            }
            double norm = 0;
            for (int t = 0; t < n; ++t) {
                const double gt = lambda[t] > 0 || g[t] > 0 ? g[t] : 0.0;
                norm += gt * gt;
            }
            if (norm <= 1e-18) {
                if (plans)
                    tryPlan(live);
                break; // the relaxed optimum fits every frontier
            }
            const double goal = target > best ? target : best * 1.05 + 1e-3;
            const double step = theta * (goal - value) / norm;
            for (int t = 0; t < n; ++t)
                lambda[t] = std::max(0.0, lambda[t] + step * g[t]);
        }
        return best;
    };
    const double best = run(1.0, deadline, options.maxIterations, options.plans, false);
    if (options.plans) {
        // The relaxation ignores the memory of recompute runs: tighter capacities leave room.
        const auto planEnd =
            Clock::now() + std::chrono::duration<double>(std::max(0.0, options.planSeconds));
        const double scales[] = {1.0, 0.99, 0.98, 0.97, 0.95, 0.93,
                                 0.9, 0.87, 0.84, 0.8,  0.75, 0.7};
        auto repairMiss = [&](double share) {
            if (overPeak < 0)
                return;
            const double left = std::chrono::duration<double>(planEnd - Clock::now()).count();
            consider(
                repairToBudget(p, overS, budgetBytes, std::max(0.0, left * share), options.stop));
            overPeak = -1;
        };
        repairMiss(0.2);
        for (size_t k = 0; k < std::size(scales); ++k) {
            const double left = std::chrono::duration<double>(planEnd - Clock::now()).count();
            if (left <= 0)
                break;
            const double before = out.sequence.empty() ? -1 : out.evaluation.recomputeSeconds;
            run(scales[k],
                Deadline(Clock::now()) +
                    std::chrono::duration<double>(left / double(2 * (std::size(scales) - k))),
                options.maxIterations, true, true);
            if (out.sequence.empty())
                repairMiss(1.0 / double(std::size(scales) - k));
            // Tighter capacities only give dearer plans once one fits and stopped improving.
            if (before >= 0 && out.evaluation.recomputeSeconds >= before)
                break;
        }
    }
    // Bounds come from exact shortest paths, so any value is valid; shave float noise.
    out.bound = std::max(0.0, best * costUnit * (1 - 1e-9));
    return out;
}

} // namespace remat::core::solvers::checkmate
