// The cut relaxation of checkmate/frontier.h: the frontier relaxation with the recompute
// cascade at a subset of first runs, as an LP (Clp) then a MILP (CBC). The validity argument is
// in the header.
#include "core/solvers/checkmate/frontier.h"
#include "core/solvers/checkmate/osi_cbc.h"

#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <vector>

namespace remat::core::solvers::checkmate {

namespace {

/// Where each stage falls among the cuts: before[s] = number of cuts < s (s in [0, n]), isCut.
struct CutIndex
{
    std::vector<int> before;
    std::vector<char> isCut;
    int k = 0;

    CutIndex(const Problem &p, const std::vector<int> &cuts)
        : before(size_t(p.n) + 1, 0), isCut(size_t(p.n), 0), k(int(cuts.size()))
    {
        for (int t : cuts)
            isCut[size_t(t)] = 1;
        for (int s = 0; s < p.n; ++s)
            before[size_t(s) + 1] = before[size_t(s)] + isCut[size_t(s)];
    }
    /// The last value of x[v,.]'s range is cut index lastX(v) (< firstX(v): none).
    int firstX(const Problem &p, int v) const
    {
        const int prod = p.producer[v];
        return before[size_t(prod)] + isCut[size_t(prod)];
    }
    int lastX(const Problem &p, int v) const
    {
        const int last = std::min(p.n - 1, std::max(p.valueLastUse[v], p.readers[v].back()));
        return before[size_t(last) + 1] - 1;
    }
    /// The window op i's first run falls in (-1: it is the cut C_{before[i]}), and the last
    /// window it may usefully run again in.
    int firstWindow(int i) const { return isCut[size_t(i)] ? -1 : before[size_t(i)]; }
    int lastWindow(const Problem &p, int i) const
    {
        if (!p.recomputable[i] || p.lastUse[i] <= i)
            return -1;
        return before[size_t(std::min(p.n - 1, p.lastUse[i]))];
    }
    /// Windows in which op i may run again: (after its first run, lastWindow].
    int firstRerunWindow(int i) const { return before[size_t(i)] + 1; }
};

bool counted(const Problem &p, int v) { return !p.readers[v].empty() && p.valueBytes[v] > 0; }

} // namespace

CutBoundResult cutBound(const Problem &p, int64_t budgetBytes, const std::vector<int> &cutsGiven,
                        double cutoffSeconds, double seconds, const StopToken &stop, bool branch)
{
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    CutBoundResult out;
    const int n = p.n;
    // Any first runs make a valid cut set: ascending, each once, inside the step.
    std::vector<int> cuts;
    for (int t : cutsGiven)
        if (t >= 0 && t < n)
            cuts.push_back(t);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    out.cuts = int(cuts.size());
    if (cuts.empty() || n == 0)
        return out;
    const CutIndex ci(p, cuts);
    const int kCuts = ci.k;
    constexpr double inf = std::numeric_limits<double>::infinity();

    const int64_t unit = relaxationByteUnit(p);
    double maxCost = 0;
    for (int i = 0; i < n; ++i)
        maxCost = std::max(maxCost, p.cost[i]);
    if (maxCost <= 0)
        return out;
    const double costDiv = maxCost / 1e4;

    SparseLp lp;
    auto addCol = [&](double c, bool integer) { return lp.addColumn(0, 1, c, integer); };
    // Column of x[v,k] / r[i,k], or -1 (constant 1), -2 (constant 0).
    std::vector<int> xFirst(size_t(p.values), 0);
    std::vector<std::vector<int>> xc(size_t(p.values)), rc(static_cast<size_t>(n));
    for (int v = 0; v < p.values; ++v) {
        if (!counted(p, v))
            continue;
        xFirst[size_t(v)] = ci.firstX(p, v);
        for (int k = ci.firstX(p, v); k <= ci.lastX(p, v); ++k) {
            const int t = cuts[size_t(k)];
            const bool direct = std::binary_search(p.inputs[t].begin(), p.inputs[t].end(), v);
            xc[size_t(v)].push_back(direct ? -1 : addCol(0, true));
        }
    }
    for (int i = 0; i < n; ++i)
        for (int k = ci.firstRerunWindow(i); k <= ci.lastWindow(p, i); ++k)
            rc[size_t(i)].push_back(addCol(p.cost[i] / costDiv, false));
    auto xAt = [&](int v, int k) {
        if (p.valueBytes[v] == 0)
            return k >= ci.firstX(p, v) - ci.isCut[size_t(p.producer[v])] ? -1 : -2;
        const int f = xFirst[size_t(v)];
        if (k < f) // before its first run, or at it (counted in the producer's own bytes)
            return ci.isCut[size_t(p.producer[v])] && k == f - 1 ? -1 : -2;
        if (k - f >= int(xc[size_t(v)].size()))
            return -2; // no one reads it any more
        return xc[size_t(v)][size_t(k - f)];
    };
    auto rAt = [&](int i, int k) {
        if (k == ci.firstWindow(i))
            return -1; // its first run is in this window
        const int f = ci.firstRerunWindow(i);
        if (k < f || k - f >= int(rc[size_t(i)].size()))
            return -2;
        return rc[size_t(i)][size_t(k - f)];
    };

    auto addRow = [&](const std::vector<std::pair<int, double>> &terms, double lo, double hi) {
        if (!lp.addRow(terms, lo, hi))
            out.infeasible = true;
    };
    // Residency carries over or comes from a run in the window.
    for (int v = 0; v < p.values; ++v) {
        if (!counted(p, v))
            continue;
        for (int k = xFirst[size_t(v)]; k < xFirst[size_t(v)] + int(xc[size_t(v)].size()); ++k)
            addRow({{xAt(v, k), 1}, {xAt(v, k - 1), -1}, {rAt(p.producer[v], k), -1}}, -inf, 0);
    }
    // Inputs of first runs inside windows, and of reruns (the cascade).
    auto available = [&](int u, int k) -> std::vector<std::pair<int, double>> {
        return {{xAt(u, k - 1), 1}, {rAt(p.producer[u], k), 1}};
    };
    for (int j = 0; j < n; ++j) {
        if (ci.isCut[size_t(j)])
            continue;
        const int k = ci.firstWindow(j);
        for (int u : p.inputs[j])
            if (p.valueBytes[u] > 0)
                addRow(available(u, k), 1, inf);
    }
    for (int i = 0; i < n; ++i)
        for (int k = ci.firstRerunWindow(i); k <= ci.lastWindow(p, i); ++k)
            for (int u : p.inputs[i]) {
                if (p.valueBytes[u] == 0)
                    continue;
                std::vector<std::pair<int, double>> terms = available(u, k);
                for (auto &[c, a] : terms)
                    a = -a;
                terms.push_back({rAt(i, k), 1});
                addRow(terms, -inf, 0);
            }
    // The cascade summed over windows: a value not resident at C_k that a first run reads later
    // (in window k' or at C_k') has its producer run between, and each of that run's inputs is
    // resident at C_k or made between C_k and then. Implied by the rows above for 0/1 points;
    // it cuts off the fractional ones where a value half resident at several cuts feeds half
    // runs in several windows (with it, more cuts no longer loosen the LP as much).
    for (int v = 0; v < p.values; ++v) {
        if (!counted(p, v))
            continue;
        const int prod = p.producer[v];
        for (int k = xFirst[size_t(v)]; k < xFirst[size_t(v)] + int(xc[size_t(v)].size()); ++k) {
            const int xv = xAt(v, k);
            if (xv < 0)
                continue;
            const auto next =
                std::upper_bound(p.readers[v].begin(), p.readers[v].end(), cuts[size_t(k)]);
            if (next == p.readers[v].end())
                continue;
            const int until = ci.before[size_t(*next)];
            for (int u : p.inputs[prod]) {
                if (p.valueBytes[u] == 0)
                    continue;
                std::vector<std::pair<int, double>> terms = {{xv, 1}, {xAt(u, k), 1}};
                for (int w = k + 1; w <= until; ++w)
                    terms.push_back({rAt(p.producer[u], w), 1});
                addRow(terms, 1, inf);
            }
        }
    }
    // Per cut, "made again after C_k": q[i,k] (continuous, no cost) for each op i that ran
    // before C_k and may usefully run after it. A value not resident at C_k that some first run
    // reads later has its producer run after C_k; that op's first run after C_k finds each input
    // resident since C_k or made after C_k; and it is one of the op's runs in the windows after
    // C_k. These hold for every 0/1 point of the rows above; they embed each cut's own
    // one-window relaxation (the strongest single LPs) in the many-cut LP, which alone lets a
    // value half resident at several cuts feed half runs in several windows.
    std::vector<std::vector<int>> qc(static_cast<size_t>(kCuts));
    for (int k = 0; k < kCuts; ++k) {
        const int t = cuts[size_t(k)];
        qc[size_t(k)].assign(size_t(t), -2);
        for (int i = 0; i < t; ++i)
            if (ci.lastWindow(p, i) > k)
                qc[size_t(k)][size_t(i)] = addCol(0, false);
    }
    auto qAt = [&](int i, int k) { // -1: i first runs at or after C_k (made then anyway)
        return i >= cuts[size_t(k)] ? -1 : qc[size_t(k)][size_t(i)];
    };
    for (int k = 0; k < kCuts; ++k) {
        const int t = cuts[size_t(k)];
        for (int i = 0; i < t; ++i) {
            const int q = qAt(i, k);
            if (q < 0)
                continue;
            std::vector<std::pair<int, double>> runs = {{q, 1}};
            for (int w = k + 1; w <= ci.lastWindow(p, i); ++w)
                runs.push_back({rAt(i, w), -1});
            addRow(runs, -inf, 0);
            for (int u : p.inputs[i])
                if (p.valueBytes[u] > 0)
                    addRow({{q, 1}, {xAt(u, k), -1}, {qAt(p.producer[u], k), -1}}, -inf, 0);
        }
    }
    for (int v = 0; v < p.values; ++v) {
        if (!counted(p, v))
            continue;
        for (int k = xFirst[size_t(v)]; k < xFirst[size_t(v)] + int(xc[size_t(v)].size()); ++k) {
            const int xv = xAt(v, k);
            if (xv < 0 || p.readers[v].back() <= cuts[size_t(k)])
                continue;
            addRow({{xv, 1}, {qAt(p.producer[v], k), 1}}, 1, inf);
        }
    }
    // Budget at each cut.
    std::vector<std::vector<std::pair<int, double>>> budgetRows(static_cast<size_t>(kCuts));
    for (int v = 0; v < p.values; ++v)
        if (counted(p, v))
            for (int k = xFirst[size_t(v)]; k < xFirst[size_t(v)] + int(xc[size_t(v)].size()); ++k)
                budgetRows[size_t(k)].push_back({xAt(v, k), double(p.valueBytes[v] / unit)});
    std::vector<int64_t> stickyBefore(size_t(n) + 1, 0);
    for (int t = 0; t < n; ++t)
        stickyBefore[size_t(t) + 1] = stickyBefore[size_t(t)] + p.stickyBytes[t];
    for (int k = 0; k < kCuts; ++k) {
        const int t = cuts[size_t(k)];
        const int64_t fixed = p.constantBytes + stickyBefore[size_t(t)] + p.stickyBytes[t] +
                              p.blockBytes[t] + p.transientBytes[t];
        const double cap = std::ceil(double(budgetBytes - fixed) / double(unit));
        if (!budgetRows[size_t(k)].empty())
            addRow(budgetRows[size_t(k)], -inf, cap);
        else if (cap < 0)
            out.infeasible = true;
    }
    out.columns = lp.columns();
    out.rows = lp.rows();
    if (out.infeasible || stop.stopRequested())
        return out;
    if (out.columns == 0) { // nothing can be recomputed or dropped: every plan is store-all
        out.lpSolved = out.solved = true;
        return out;
    }

    OsiClpSolverInterface si;
    lp.load(si);
    si.messageHandler()->setLogLevel(0);
    const auto deadline = begin + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(std::max(0.05, seconds)));
    watchStop(si, stop, deadline);
    si.getModelPtr()->setLogLevel(0);
    si.getModelPtr()->setMaximumWallSeconds(std::max(0.05, seconds));
    // No presolve (CBC 2.10's ClpPresolve crashes on infeasible models, and it ignores the
    // stop token).
    si.setHintParam(OsiDoPresolveInInitial, false, OsiHintDo);
    si.setHintParam(OsiDoPresolveInResolve, false, OsiHintDo);
    si.setHintParam(OsiDoDualInInitial, true, OsiHintTry);
    si.initialSolve();
    if (si.isProvenPrimalInfeasible()) {
        out.infeasible = true;
        return out;
    }
    if (!si.isProvenOptimal())
        return out;
    out.lpSolved = true;
    out.lpBound = std::max(0.0, si.getObjValue() * costDiv * (1 - 1e-7));
    out.bound = out.lpBound;
    out.rootSeconds = std::chrono::duration<double>(Clock::now() - begin).count();
    // CBC overruns its limit by about a root LP's work (see frontier_cbc.cpp).
    const double left =
        seconds - std::chrono::duration<double>(Clock::now() - begin).count() - out.rootSeconds;
    if (!branch || left <= 0.05 || stop.stopRequested())
        return out;
    // No deadline in Clp's stop handler inside CBC's node LPs (see branchFromRoot).
    watchStop(si, StopToken{});
    const BranchOutcome b = branchFromRoot(
        si, stop, cutoffSeconds > 0 ? cutoffSeconds / costDiv : -1, left, begin, 0.97 * seconds);
    if (b.provedCutoff) {
        // Nothing beats the cutoff: every frontier-ordered plan costs at least that much.
        out.bound = std::max(out.bound, cutoffSeconds * (1 - 1e-9));
        return out;
    }
    out.solved = b.solved;
    if (b.bound)
        out.bound = std::max(out.bound, *b.bound * costDiv * (1 - 1e-7));
    return out;
}

CutSearchResult searchCutBound(const Problem &p, int64_t budgetBytes, double cutoffSeconds,
                               double seconds, const StopToken &stop)
{
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    auto spent = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
    CutSearchResult out;
    if (p.n == 0)
        return out;
    // The search takes up to 80% of the time, CBC on the best cut set the rest.
    const double searchSeconds = 0.8 * seconds;
    auto tryCuts = [&](std::vector<int> cuts) {
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        const double left = searchSeconds - spent();
        if (left <= 0 || stop.stopRequested() || out.infeasible)
            return -1.0;
        const CutBoundResult r = cutBound(p, budgetBytes, cuts, -1, left, stop, false);
        ++out.lps;
        if (r.infeasible) {
            out.infeasible = true;
            return -1.0;
        }
        if (!r.lpSolved)
            return -1.0;
        if (r.bound > out.bound || out.cuts.empty()) {
            out.bound = std::max(out.bound, r.bound);
            out.cuts = cuts;
        }
        return r.bound;
    };
    // Single cuts on a grid, then every first run around the best.
    const int gridStep = std::max(1, p.n / 64);
    for (int t = gridStep / 2; t < p.n; t += gridStep)
        tryCuts({t});
    if (out.cuts.empty())
        return out;
    const int centre = out.cuts.front();
    for (int t = std::max(0, centre - gridStep); t <= std::min(p.n - 1, centre + gridStep); ++t)
        tryCuts({t});
    // Then one cut more at a time while one improves on the bound (the LP relaxation is not
    // monotone in the cut set, so each set is tried on its own and the best kept).
    for (int round = 0; round < 12; ++round) {
        const std::vector<int> base = out.cuts;
        const double before = out.bound;
        // The grid, and the first run halfway between each two neighbouring cuts: the window
        // between two cuts that both helped has no memory row of its own, and a grid step is
        // coarse against a repeated block (ResNet-152 b16 at 731.91 MiB: 1055, halfway between
        // 1044 and 1066, three bottlenecks of layer1 apart by 11 ops, lets CBC raise the bound
        // from 24.70% to 25.21% in 30 s where without it CBC raises nothing).
        std::vector<int> candidates;
        for (int t = gridStep / 2; t < p.n; t += gridStep)
            candidates.push_back(t);
        for (size_t k = 1; k < base.size(); ++k)
            candidates.push_back((base[k - 1] + base[k]) / 2);
        for (int t : candidates)
            if (!std::binary_search(base.begin(), base.end(), t)) {
                std::vector<int> more = base;
                more.push_back(t);
                tryCuts(more);
            }
        if (out.bound <= before * (1 + 1e-6))
            break;
        // The cut just added, moved to every first run within a grid step of it.
        std::vector<int> added;
        std::set_difference(out.cuts.begin(), out.cuts.end(), base.begin(), base.end(),
                            std::back_inserter(added));
        for (int a : added)
            for (int t = std::max(0, a - gridStep); t <= std::min(p.n - 1, a + gridStep); ++t)
                if (t != a && !std::binary_search(base.begin(), base.end(), t)) {
                    std::vector<int> moved = base;
                    moved.push_back(t);
                    tryCuts(moved);
                }
    }
    out.searchSeconds = spent();
    // Branch and bound on the best set: its integer optimum only grows with more cuts.
    const double left = seconds - spent();
    if (left > 0.1 && !stop.stopRequested() && !out.infeasible) {
        const CutBoundResult r = cutBound(p, budgetBytes, out.cuts, cutoffSeconds, left, stop);
        if (r.infeasible)
            out.infeasible = true;
        else {
            out.bound = std::max(out.bound, r.bound);
            out.solved = r.solved;
            out.provedCutoff = cutoffSeconds > 0 && r.bound >= cutoffSeconds * (1 - 1e-6);
        }
    }
    return out;
}

} // namespace remat::core::solvers::checkmate
