#pragma once
// Loads a checkmate::LinearModel into COIN-OR's OSI/CLP interface, and runs CBC's own driver on
// a CbcModel. Included only by *_cbc.cpp.
//   OsiClpSolverInterface si;  checkmate::loadModel(si, model, /*names=*/true);
//   checkmate::runCbcMain(cbcModel, data, 10.0, 1, 0, "-preprocess off -cutoff 42");
//   BranchOutcome b = checkmate::branchFromRoot(si, stop, cutoff, left, begin, 0.97 * seconds);

#include "core/solvers/checkmate/model.h"
#include "core/solvers/checkmate/problem.h"

#include "core/util/stop_token.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/ClpEventHandler.hpp>
#include <coin/ClpSimplex.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <fmt/format.h>

namespace remat::core::solvers::checkmate {

/// The byte unit of a relaxation's memory rows: the sizes' greatest common divisor, doubled
/// until the largest value is at most a million units (coefficients Clp takes well). Sizes then
/// round down and capacities up, so a relaxation only gets looser.
inline int64_t relaxationByteUnit(const Problem &p)
{
    int64_t g = 0, maxBytes = 1;
    for (int64_t b : p.valueBytes)
        if (b > 0) {
            g = std::gcd(g, b);
            maxBytes = std::max(maxBytes, b);
        }
    int64_t unit = g > 0 ? g : 1;
    while (maxBytes / unit > 1000000)
        unit *= 2;
    return unit;
}

/// A sparse LP / MILP built column by column and row by row, then loaded into OSI (the frontier
/// MILP and the cut relaxation build theirs so). A row term names a column (>= 0) or a constant:
/// kOne (-1) adds its coefficient to the row's constant part, kZero (-2) adds nothing.
struct SparseLp
{
    static constexpr int kOne = -1;
    static constexpr int kZero = -2;
    std::vector<double> colLo, colHi, obj;
    std::vector<char> isInt;
    std::vector<int> rowOf, colOf;
    std::vector<double> val, rowLo, rowHi;

    int addColumn(double lo, double hi, double cost, bool integer)
    {
        colLo.push_back(lo);
        colHi.push_back(hi);
        obj.push_back(cost);
        isInt.push_back(integer);
        return int(colLo.size()) - 1;
    }
    /// lo <= sum of the terms <= hi. A row of constants alone is checked, not added: false where
    /// it fails (the model is infeasible).
    bool addRow(const std::vector<std::pair<int, double>> &terms, double lo, double hi)
    {
        const int r = int(rowLo.size());
        double constant = 0;
        bool any = false;
        for (auto [c, a] : terms) {
            if (c == kOne)
                constant += a;
            else if (c >= 0 && a != 0) {
                rowOf.push_back(r);
                colOf.push_back(c);
                val.push_back(a);
                any = true;
            }
        }
        if (!any)
            return constant >= lo - 1e-9 && constant <= hi + 1e-9;
        rowLo.push_back(lo - constant);
        rowHi.push_back(hi - constant);
        return true;
    }
    size_t columns() const { return colLo.size(); }
    size_t rows() const { return rowLo.size(); }
    /// Loads the model into `si` (infinite row bounds clamped to OSI's infinity), integers marked.
    void load(OsiClpSolverInterface &si)
    {
        CoinPackedMatrix matrix(false, rowOf.data(), colOf.data(), val.data(), int(val.size()));
        matrix.setDimensions(int(rowLo.size()), int(colLo.size()));
        const double big = si.getInfinity();
        for (double &x : rowLo)
            x = std::max(-big, x);
        for (double &x : rowHi)
            x = std::min(big, x);
        si.loadProblem(matrix, colLo.data(), colHi.data(), obj.data(), rowLo.data(), rowHi.data());
        for (size_t c = 0; c < colLo.size(); ++c)
            if (isInt[c])
                si.setInteger(int(c));
    }
};

/// Stops a Clp solve (simplex iterations, factorizations) when `stop` fires or the wall clock
/// passes `deadline`, so a root LP of a large model honours Cancel and its time limit within a
/// few iterations. Clp reads `maximumSeconds` only at its own checkpoints (and as CPU time, which
/// lags the wall clock on a loaded machine); this is read every iteration.
class ClpStopHandler : public ClpEventHandler
{
public:
    using Clock = std::chrono::steady_clock;
    explicit ClpStopHandler(StopToken stop, Clock::time_point deadline = Clock::time_point::max())
        : m_stop(std::move(stop)), m_deadline(deadline)
    {
    }
    ClpStopHandler(const ClpStopHandler &other) = default;
    ClpEventHandler *clone() const override { return new ClpStopHandler(*this); }
    int event(Event whichEvent) override
    {
        if ((whichEvent == endOfIteration || whichEvent == endOfFactorization ||
             whichEvent == startOfIterationInDual) &&
            (m_stop.stopRequested() ||
             (m_deadline != Clock::time_point::max() && Clock::now() >= m_deadline)))
            return 0; // Clp: status 5, stopped by an event
        return -1;
    }

private:
    StopToken m_stop;
    Clock::time_point m_deadline;
};

/// Installs a ClpStopHandler on `si`'s simplex (Clp keeps a copy); `deadline`: a wall-clock
/// time after which the simplex stops too.
inline void watchStop(
    OsiClpSolverInterface &si, const StopToken &stop,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max())
{
    ClpStopHandler handler(stop, deadline);
    si.getModelPtr()->passInEventHandler(&handler);
}

/// Stops CBC's branch and bound (between nodes, cut passes and solutions) when `stop` fires.
class CbcStopHandler : public CbcEventHandler
{
public:
    explicit CbcStopHandler(StopToken stop) : m_stop(std::move(stop)) {}
    CbcStopHandler(const CbcStopHandler &other) = default;
    CbcEventHandler *clone() const override { return new CbcStopHandler(*this); }
    CbcAction event(CbcEvent) override { return m_stop.stopRequested() ? stop : noAction; }

private:
    StopToken m_stop;
};

inline void loadModel(OsiClpSolverInterface &si, const LinearModel &m, bool withNames)
{
    const int nnz = static_cast<int>(m.value.size());
    CoinPackedMatrix matrix(false, m.rowOf.data(), m.colOf.data(), m.value.data(), nnz);
    // The triplet constructor sizes the matrix by the largest index seen; empty trailing rows
    // or columns still need to exist.
    matrix.setDimensions(static_cast<int>(m.rows()), static_cast<int>(m.columns()));
    const double inf = si.getInfinity();
    auto finite = [inf](std::vector<double> v) {
        for (double &x : v)
            x = std::max(-inf, std::min(inf, x));
        return v;
    };
    const std::vector<double> colLo = finite(m.colLower), colHi = finite(m.colUpper);
    const std::vector<double> rowLo = finite(m.rowLower), rowHi = finite(m.rowUpper);
    si.loadProblem(matrix, colLo.data(), colHi.data(), m.objective.data(), rowLo.data(),
                   rowHi.data());
    for (size_t c = 0; c < m.columns(); ++c)
        if (m.integer[c])
            si.setInteger(static_cast<int>(c));
    if (withNames)
        for (size_t c = 0; c < m.columns(); ++c)
            si.setColName(static_cast<int>(c), m.names[c]);
    si.setObjSense(1.0);
}

/// CbcMain1 on `model` (after CbcMain0 on `data`): wall-clock limit `seconds`, `threads`, CBC's
/// log level and `extra` options, space separated ("-preprocess off -cutoff 42"), then -solve.
inline void runCbcMain(CbcModel &model, CbcSolverUsefulData &data, double seconds, int threads,
                       int logLevel, const std::string &extra)
{
    const std::string secText = fmt::format("{:.3f}", std::max(0.05, seconds));
    const std::string threadText = std::to_string(std::max(1, threads));
    const std::string logText = std::to_string(logLevel);
    std::vector<std::string> words;
    for (size_t at = 0; at < extra.size();) {
        const size_t end = std::min(extra.find(' ', at), extra.size());
        if (end > at)
            words.push_back(extra.substr(at, end - at));
        at = end + 1;
    }
    std::vector<const char *> argv = {"remat-checkmate", "-log", logText.c_str(), "-timeMode",
                                      "elapsed",         "-sec", secText.c_str()};
    if (threads > 1) {
        argv.push_back("-threads");
        argv.push_back(threadText.c_str());
    }
    for (const std::string &w : words)
        argv.push_back(w.c_str());
    argv.push_back("-solve");
    argv.push_back("-quit");
    CbcMain1(
        static_cast<int>(argv.size()), argv.data(), model, [](CbcModel *, int) { return 0; }, data);
}

/// What branchFromRoot proved, in the model's objective units.
struct BranchOutcome
{
    /// Cut short: by CBC's limit, past `lateAfter`, by a cancel, or anything short of a finished
    /// search (CBC's status 0): only a finished search proves anything about the cutoff.
    bool stopped = false;
    /// The search finished with no solution under the cutoff: every solution costs at least it.
    bool provedCutoff = false;
    /// The search finished with a solution: `bound` is the optimum.
    bool solved = false;
    /// A lower bound on the optimum: the optimum where solved, else CBC's best possible (the
    /// least bound of its open nodes), left out where it is not finite or, from a stopped
    /// search, at or above the cutoff (that would amount to a proof only a finished one gives).
    std::optional<double> bound;
};

/// Branch and bound on `si` after its root LP was solved there: CBC on one thread, quiet, no
/// preprocessing and no heuristics, for `seconds` (at least 0.1) with `extra` options after
/// those ("-cuts off"); `cutoff` > 0: only solutions below it are searched for. A search that
/// ends more than `lateAfter` seconds after `begin` counts as stopped (belt and braces: CBC
/// overruns its own limit). Clp's own limit on `si` is lifted (CBC keeps its own time limit; a
/// Clp deadline inside its node LPs would make CBC read stopped LPs as pruned nodes and claim
/// bounds it never proved); a ClpStopHandler installed by watchStop stays, so give it no
/// deadline.
inline BranchOutcome branchFromRoot(OsiClpSolverInterface &si, const StopToken &stop, double cutoff,
                                    double seconds, std::chrono::steady_clock::time_point begin,
                                    double lateAfter, const std::string &extra = {})
{
    si.getModelPtr()->setMaximumWallSeconds(-1);
    CbcModel model(si);
    CbcSolverUsefulData data;
    data.noPrinting_ = true;
    data.useSignalHandler_ = false;
    CbcMain0(model, data);
    model.messageHandler()->setLogLevel(0);
    CbcStopHandler stopHandler(stop);
    model.passInEventHandler(&stopHandler);
    std::string options = "-preprocess off -heuristicsOnOff off";
    if (cutoff > 0)
        options += fmt::format(" -cutoff {:.17g}", cutoff * (1 + 1e-9) + 1e-9);
    runCbcMain(model, data, std::max(0.1, seconds), 1, 0, options + " " + extra);
    const double used =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    BranchOutcome out;
    // A cancel may stop node LPs (Clp's stop handler) before CBC notices: nothing is proven.
    out.stopped = model.isSecondsLimitReached() || model.status() != 0 || used > lateAfter ||
                  stop.stopRequested();
    double bound = model.getBestPossibleObjValue();
    if (!out.stopped && !model.bestSolution() && cutoff > 0) {
        out.provedCutoff = true;
        return out;
    }
    if (!out.stopped && model.bestSolution()) {
        bound = model.getObjValue();
        out.solved = true;
    }
    if (std::isfinite(bound) && std::abs(bound) < 1e40 &&
        (!out.stopped || cutoff <= 0 || bound < cutoff))
        out.bound = bound;
    return out;
}

} // namespace remat::core::solvers::checkmate
