// The frontier relaxation of checkmate/bound.h as a small MILP on CBC, with the recompute
// cascade: binary x[t,v] (value v live at op t's first run), continuous y[t,v] (v's producer runs
// between the first runs of ops t-1 and t), per-frontier budget rows over binaries only (CBC
// lifts them into cover cuts). Any bound CBC proves on it is a bound on every frontier-ordered
// plan, and far fewer columns than Checkmate's model.
#include "core/solvers/checkmate/frontier.h"
#include "core/solvers/checkmate/osi_cbc.h"

#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace remat::core::solvers::checkmate {

namespace {

int64_t columnsWith(const Problem &p, bool shortSpans)
{
    int64_t cols = 0;
    for (int v = 0; v < p.values; ++v)
        if (!p.readers[v].empty() && p.valueBytes[v] > 0)
            cols +=
                2 * std::max(0, (shortSpans ? p.readers[v].back()
                                            : std::max(p.valueLastUse[v], p.readers[v].back())) -
                                    p.producer[v]);
    return cols;
}

constexpr int64_t kShortSpansAbove = 65000;

} // namespace

int64_t frontierMilpColumns(const Problem &p)
{
    const int64_t full = columnsWith(p, false);
    return full > kShortSpansAbove ? columnsWith(p, true) : full;
}

FrontierMilpResult frontierMilpBound(const Problem &p, int64_t budgetBytes, double cutoffSeconds,
                                     double seconds, const StopToken &stop,
                                     const std::string &lpMethod, const std::string &cbcOptions)
{
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    FrontierMilpResult out;
    const int n = p.n;
    // Large graphs: values exist only up to their last direct reader, and keeping them longer
    // (for recomputing their readers) is free; looser but several times smaller.
    const bool naturalSpans = columnsWith(p, false) > kShortSpansAbove;
    out.shortSpans = naturalSpans;
    constexpr double inf = std::numeric_limits<double>::infinity();

    const int64_t unit = relaxationByteUnit(p);
    double maxCost = 0;
    bool integral = true;
    int64_t cg = 0;
    for (int i = 0; i < n; ++i) {
        const double c = p.cost[i] / double(std::max<size_t>(1, p.outputs[i].size()));
        maxCost = std::max(maxCost, c);
        if (std::abs(c - std::round(c)) > 1e-9 || c > 9e15)
            integral = false;
        else if (c > 0)
            cg = std::gcd(cg, int64_t(std::llround(c)));
    }
    if (maxCost <= 0)
        return out;
    const double costDiv = integral && cg > 0 ? double(cg) : maxCost / 1e4;

    std::vector<int64_t> stickyBefore(size_t(n) + 1, 0);
    for (int t = 0; t < n; ++t)
        stickyBefore[size_t(t) + 1] = stickyBefore[size_t(t)] + p.stickyBytes[t];

    // Columns.
    SparseLp lp;
    auto addCol = [&](double lo, double hi, double c, bool integer) {
        return lp.addColumn(lo, hi, c, integer);
    };
    // x[v][t - first] column (-1: constant 1 at a direct reader; -2: constant 0), y likewise.
    std::vector<int> first(size_t(p.values), 0), last(size_t(p.values), -1);
    std::vector<std::vector<int>> xc(size_t(p.values)), yc(size_t(p.values));
    for (int v = 0; v < p.values; ++v) {
        if (p.readers[v].empty() || p.valueBytes[v] == 0)
            continue;
        const int prod = p.producer[v];
        first[size_t(v)] = prod + 1;
        last[size_t(v)] =
            naturalSpans ? p.readers[v].back() : std::max(p.valueLastUse[v], p.readers[v].back());
        const double c =
            p.recomputable[prod] ? p.cost[prod] / double(p.outputs[prod].size()) / costDiv : 0;
        for (int t = first[size_t(v)]; t <= last[size_t(v)]; ++t) {
            const bool direct = std::binary_search(p.inputs[t].begin(), p.inputs[t].end(), v);
            xc[size_t(v)].push_back(direct ? -1 : addCol(0, 1, 0, true));
            yc[size_t(v)].push_back(p.recomputable[prod] ? addCol(0, 1, c, false) : -2);
        }
    }
    auto xAt = [&](int v, int t) { // column, -1 (live for sure), -2 (dead for sure)
        if (t == p.producer[v])
            return -1;
        if (t < first[size_t(v)])
            return -2;
        if (t >
            last[size_t(v)]) // after its last direct reader: dead, or (short spans) free to keep
            return naturalSpans ? -1 : -2;
        return xc[size_t(v)][size_t(t - first[size_t(v)])];
    };
    auto yAt = [&](int v, int t) {
        if (t < first[size_t(v)] || t > last[size_t(v)])
            return -2;
        return yc[size_t(v)][size_t(t - first[size_t(v)])];
    };

    auto addRow = [&](const std::vector<std::pair<int, double>> &terms, double lo, double hi) {
        if (!lp.addRow(terms, lo, hi))
            out.infeasible = true;
    };
    for (int v = 0; v < p.values; ++v) {
        if (last[size_t(v)] < first[size_t(v)])
            continue;
        for (int t = first[size_t(v)]; t <= last[size_t(v)]; ++t) {
            // Live again needs a run: x[t] <= x[t-1] + y[t] (no run possible: x[t] <= x[t-1]).
            addRow({{xAt(v, t), 1}, {xAt(v, t - 1), -1}, {yAt(v, t), -1}}, -inf, 0);
            // The run needs each input of the producer live at frontier t-1 or run itself.
            const int y = yAt(v, t);
            if (y < 0)
                continue;
            for (int u : p.inputs[p.producer[v]]) {
                if (p.producer[u] >= t - 1 || p.valueBytes[u] == 0)
                    continue;
                addRow({{y, 1}, {xAt(u, t - 1), -1}, {yAt(u, t), -1}}, -inf, 0);
            }
        }
    }
    // Budget at each first run.
    std::vector<std::vector<std::pair<int, double>>> budgetRows(static_cast<size_t>(n));
    for (int v = 0; v < p.values; ++v)
        for (int t = first[size_t(v)]; t <= last[size_t(v)]; ++t)
            budgetRows[size_t(t)].push_back({xAt(v, t), double(p.valueBytes[v] / unit)});
    for (int t = 0; t < n; ++t) {
        const int64_t fixed = p.constantBytes + stickyBefore[size_t(t)] + p.stickyBytes[t] +
                              p.blockBytes[t] + p.transientBytes[t];
        const double cap = std::ceil(double(budgetBytes - fixed) / double(unit));
        if (!budgetRows[size_t(t)].empty())
            addRow(budgetRows[size_t(t)], -inf, cap);
        else if (cap < 0)
            out.infeasible = true;
    }
    out.columns = lp.columns();
    out.rows = lp.rows();
    if (out.infeasible)
        return out;

    OsiClpSolverInterface si;
    lp.load(si);
    si.messageHandler()->setLogLevel(0);
    watchStop(si, stop);
    si.getModelPtr()->setMaximumWallSeconds(std::max(0.2, seconds));
    // Root LP without presolve (CBC 2.10's ClpPresolve crashes on infeasible models).
    si.setHintParam(OsiDoPresolveInInitial, false, OsiHintDo);
    si.setHintParam(OsiDoPresolveInResolve, false, OsiHintDo);
    if (lpMethod == "primal") {
        si.setHintParam(OsiDoDualInInitial, false, OsiHintDo);
        si.initialSolve();
    } else if (lpMethod == "barrier") {
        si.getModelPtr()->setLogLevel(
            0); // ClpSimplex's own handler: OsiClp's level does not reach it
        si.getModelPtr()->barrier(true);
        si.resolve();
    } else {
        si.setHintParam(OsiDoDualInInitial, true, OsiHintTry);
        si.initialSolve();
    }
    if (si.isProvenPrimalInfeasible()) {
        out.infeasible = true;
        return out;
    }
    if (!si.isProvenOptimal())
        return out;
    out.bound = std::max(0.0, si.getObjValue() * costDiv * (1 - 1e-9));
    out.rootSeconds = std::chrono::duration<double>(Clock::now() - begin).count();
    // CBC reads its clock between cut passes, each about a root LP's work: it ends up to a
    // root LP after its limit (ResNet50 at 0.8: 1.2-2.2 s over a 3 s limit on a loaded
    // machine). What is left after that margin is CBC's, or nothing if too little is.
    const double left =
        seconds - std::chrono::duration<double>(Clock::now() - begin).count() - out.rootSeconds;
    if (left <= 0.05 || stop.stopRequested())
        return out;

    // Clp's stop handler stays on (a cancel stops node LPs too), without a deadline.
    const BranchOutcome b =
        branchFromRoot(si, stop, cutoffSeconds > 0 ? cutoffSeconds / costDiv : -1, left, begin,
                       0.97 * seconds, cbcOptions);
    if (b.provedCutoff) {
        // Nothing beats the cutoff: every frontier-ordered plan costs at least that much.
        out.bound = std::max(out.bound, cutoffSeconds * (1 - 1e-9));
        out.provedCutoff = true;
        return out;
    }
    out.solved = b.solved;
    if (b.bound)
        out.bound = std::max(out.bound, *b.bound * costDiv * (1 - 1e-9));
    return out;
}

} // namespace remat::core::solvers::checkmate
