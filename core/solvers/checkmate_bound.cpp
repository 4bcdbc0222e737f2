#include "core/solvers/checkmate_bound.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

namespace remat::core::solvers::checkmate {

FrontierBound frontierLowerBound(const Problem &p, int64_t budgetBytes, const FrontierBoundOptions &options)
{
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(std::max(0.0, options.seconds));
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
    for (int v = 0; v < p.values; ++v) {
        if (p.readers[v].empty() || p.valueBytes[v] == 0)
            continue;
        const int prod = p.producer[v];
        Item it{prod + 1, p.readers[v].back(), double(p.valueBytes[v]) / memUnit,
                p.recomputable[prod] ? p.cost[prod] / double(p.outputs[prod].size()) / costUnit : inf};
        if (it.last < it.first)
            continue;
        std::vector<char> f(size_t(it.last - it.first + 1), 0);
        for (int j : p.readers[v])
            if (j >= it.first)
                f[size_t(j - it.first)] = 1;
        items.push_back(it);
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

    std::vector<double> lambda(n, 0.0), g(n), bestLambda(n, 0.0);
    std::vector<char> choice; // backtracking: 1 = came from dead into live
    std::vector<char> liveAt;
    double best = 0;
    const double target = options.upperBound > 0 ? options.upperBound / costUnit : -1;
    double theta = 1.0;
    int sinceImprove = 0;
    for (int iter = 0; iter < options.maxIterations; ++iter) {
        if (Clock::now() > deadline || options.stop.stopRequested())
            break;
        ++out.iterations;
        double value = 0;
        for (int t = 0; t < n; ++t) {
            value -= lambda[t] * cap[t];
            g[t] = -cap[t];
        }
        for (size_t q = 0; q < items.size(); ++q) {
            const Item &it = items[q];
            const int len = it.last - it.first + 1;
            choice.assign(size_t(len) * 2, 0);
            double live = 0, dead = inf; // state at the producer's own run: live
            for (int j = 0; j < len; ++j) {
                const int t = it.first + j;
                // live at t: from live, or from dead paying a run
                const double fromDead = dead + it.cost;
                double nl;
                if (fromDead < live) {
                    nl = fromDead;
                    choice[size_t(2 * j)] = 1;
                } else {
                    nl = live;
                }
                nl += lambda[t] * it.mem;
                double nd = inf;
                if (!forced[q][size_t(j)]) {
                    if (live < dead) {
                        nd = live;
                        choice[size_t(2 * j + 1)] = 1; // dead at t came from live
                    } else {
                        nd = dead;
                    }
                }
                live = nl;
                dead = nd;
            }
            // The value needs nothing after its last reader: end in the cheaper state.
            bool state = live <= dead;
            value += state ? live : dead;
            liveAt.assign(size_t(len), 0);
            for (int j = len - 1; j >= 0; --j) {
                liveAt[size_t(j)] = state;
                if (state)
                    state = !choice[size_t(2 * j)];
                else
                    state = choice[size_t(2 * j + 1)];
            }
            for (int j = 0; j < len; ++j)
                if (liveAt[size_t(j)])
                    g[it.first + j] += it.mem;
        }
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
        if (norm <= 1e-18)
            break; // a relaxed optimum that fits every frontier: the bound is exact for it
        const double goal = target > best ? target : best * 1.05 + 1e-3;
        const double step = theta * (goal - value) / norm;
        for (int t = 0; t < n; ++t)
            lambda[t] = std::max(0.0, lambda[t] + step * g[t]);
    }
    // Bounds come from exact shortest paths, so any value is valid; shave float noise.
    out.bound = std::max(0.0, best * costUnit * (1 - 1e-9));
    return out;
}

} // namespace remat::core::solvers::checkmate
