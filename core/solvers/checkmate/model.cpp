#include "core/solvers/checkmate/model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

namespace remat::core::solvers::checkmate {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Builder
{
    LinearModel &m;
    int addCol(double lo, double hi, double obj, bool isInt, std::string name)
    {
        m.colLower.push_back(lo);
        m.colUpper.push_back(hi);
        m.objective.push_back(obj);
        m.integer.push_back(isInt ? 1 : 0);
        m.names.push_back(std::move(name));
        return static_cast<int>(m.colLower.size() - 1);
    }
    /// Adds a row from (column, coefficient) pairs; columns < 0 are dropped (fixed at 0).
    void addRow(const std::vector<std::pair<int, double>> &terms, double lo, double hi)
    {
        const int row = static_cast<int>(m.rowLower.size());
        for (auto [c, v] : terms)
            if (c >= 0 && v != 0) {
                m.rowOf.push_back(row);
                m.colOf.push_back(c);
                m.value.push_back(v);
            }
        m.rowLower.push_back(lo);
        m.rowUpper.push_back(hi);
    }
};

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a, b); }

} // namespace

int LinearModel::rCol(int t, int i) const { return i < t ? rIndex[t][i] : -1; }
int LinearModel::sCol(int t, int v) const { return sIndex[t][v]; }

size_t LinearModel::integers() const
{
    return size_t(std::count(integer.begin(), integer.end(), char(1)));
}

LinearModel buildModel(const Problem &p, const ModelOptions &options)
{
    LinearModel m;
    Builder b{m};
    const int n = p.n;
    m.n = n;

    // Memory unit: the gcd of all sizes, coarsened until sizes fit in about 1e6 units, so the
    // LP stays well scaled. Sizes round up and capacities down, so the model never understates.
    int64_t g = 0, maxBytes = 0;
    auto consider = [&](int64_t v) {
        if (v > 0) {
            g = gcd64(g, v);
            maxBytes = std::max(maxBytes, v);
        }
    };
    for (int i = 0; i < n; ++i) {
        consider(p.stickyBytes[i]);
        consider(p.transientBytes[i]);
    }
    for (int v = 0; v < p.values; ++v)
        consider(p.valueBytes[v]);
    m.unit = g > 0 ? g : 1;
    while (maxBytes / m.unit > 1000000)
        m.unit *= 2;
    auto up = [&](int64_t bytes) { return double((bytes + m.unit - 1) / m.unit); };

    // Objective scale: integral costs divided by their gcd (CBC then prunes by whole units),
    // otherwise the largest cost becomes 1e4.
    double maxCost = 0;
    bool integral = true;
    int64_t cg = 0;
    for (double c : p.cost) {
        maxCost = std::max(maxCost, c);
        if (std::abs(c - std::round(c)) > 1e-9 || c > 9e15)
            integral = false;
        else if (c > 0)
            cg = gcd64(cg, int64_t(std::llround(c)));
    }
    double costDiv = 1;
    if (integral && cg > 0)
        costDiv = double(cg);
    else if (maxCost > 0)
        costDiv = maxCost / 1e4;
    m.objectiveScale = costDiv;

    std::vector<int64_t> stickyBefore(n + 1, 0);
    for (int t = 0; t < n; ++t)
        stickyBefore[t + 1] = stickyBefore[t] + p.stickyBytes[t];

    if (options.minimisePeak)
        m.peakColumn = b.addCol(0, kInf, 1.0, false, "peak");

    m.rIndex.assign(n, {});
    m.sIndex.assign(n, {});
    for (int t = 0; t < n; ++t) {
        m.rIndex[t].assign(t, -1);
        m.sIndex[t].assign(p.values, -1);
        for (int i = 0; i < t; ++i)
            if (p.recomputable[i] && t <= p.lastUse[i])
                m.rIndex[t][i] = b.addCol(0, 1, options.minimisePeak ? 0.0 : p.cost[i] / costDiv,
                                          true, "r" + std::to_string(t) + "_" + std::to_string(i));
        for (int v = 0; v < p.values; ++v) {
            const int i = p.producer[v];
            if (i >= t || t > p.valueLastUse[v])
                continue;
            double lo = 0, hi = 1;
            if (p.keepPinned[i] && !p.readers[v].empty() && t <= p.readers[v].back())
                lo = 1;
            if (p.recomputePinned[i] && p.recomputable[i] && t == p.firstNonForward)
                hi = 0;
            m.sIndex[t][v] =
                b.addCol(lo, hi, 0, true, "s" + std::to_string(t) + "_" + std::to_string(v));
        }
    }
    auto rTerm = [&](int t, int k) { return k == t ? -2 : m.rCol(t, k); }; // -2: constant 1
    auto active = [&](int t, int k) { return k == t || m.rCol(t, k) >= 0; };

    // (1c) a value can only be retained if it existed in the previous stage.
    for (int t = 1; t < n; ++t)
        for (int v = 0; v < p.values; ++v) {
            const int sc = m.sCol(t, v), i = p.producer[v];
            if (sc < 0 || i == t - 1)
                continue;
            const int rPrev = m.rCol(t - 1, i), sPrev = m.sCol(t - 1, v);
            if (rPrev < 0 && sPrev < 0) {
                m.colUpper[sc] = 0;
                continue;
            }
            b.addRow({{sc, 1}, {rPrev, -1}, {sPrev, -1}}, -kInf, 0);
        }
    // (1b) an op's inputs are computed in this stage or retained.
    for (int t = 0; t < n; ++t)
        for (int k = 0; k <= t; ++k) {
            if (!active(t, k))
                continue;
            for (int v : p.inputs[k]) {
                const int r = m.rCol(t, p.producer[v]), sc = m.sCol(t, v);
                if (k == t) {
                    if (r < 0 && sc < 0) {
                        m.trivialInfeasible = true;
                        m.infeasibleReason =
                            "op " + std::to_string(k) + " cannot read value " + std::to_string(v);
                        continue;
                    }
                    b.addRow({{r, 1}, {sc, 1}}, 1, kInf);
                } else {
                    b.addRow({{rTerm(t, k), 1}, {r, -1}, {sc, -1}}, -kInf, 0);
                }
            }
        }
    // FREE[t,v,k]: value v is released right after op k runs in stage t. Only upper bounds are
    // needed (freeing only helps the budget): k runs, no later reader of v runs in this stage, v
    // is not retained into the next stage, and at most one release per stage.
    // Stages whose memory cannot reach the budget whatever is recomputed or retained (every
    // value that can exist in the stage, once, plus the largest workspace) need no memory
    // rows: dropping them keeps every model point a plan within budget.
    std::vector<char> safe(size_t(n), 0);
    if (!options.minimisePeak && options.skipSafeStages) {
        std::vector<int64_t> bornAt(size_t(n) + 1, 0), diesAfter(size_t(n) + 1, 0);
        for (int v = 0; v < p.values; ++v) {
            bornAt[size_t(p.producer[v])] += p.valueBytes[v];
            diesAfter[size_t(std::max(p.producer[v], p.valueLastUse[v]))] += p.valueBytes[v];
        }
        int64_t values = 0, maxTransient = 0;
        for (int t = 0; t < n; ++t) {
            values += bornAt[size_t(t)];
            maxTransient = std::max(maxTransient, p.transientBytes[t]);
            const int64_t most =
                p.constantBytes + stickyBefore[t] + p.stickyBytes[t] + values + maxTransient;
            safe[size_t(t)] = most <= options.budgetBytes;
            values -= diesAfter[size_t(t)];
        }
    }
    std::vector<std::vector<std::array<int, 3>>> freeAt(n); // per stage: (k, col, v)
    for (int t = 0; t < n; ++t) {
        if (safe[size_t(t)])
            continue;
        std::vector<std::vector<int>> freesOf(size_t(p.values));
        std::vector<int> touched;
        for (int k = 0; k <= t; ++k) {
            if (!active(t, k))
                continue;
            for (int v : p.inputs[k]) {
                if (p.valueBytes[v] == 0)
                    continue;
                bool laterReaderIsT = false;
                std::vector<int> laterReaders;
                for (int j : p.readers[v])
                    if (j > k && j <= t && active(t, j)) {
                        if (j == t)
                            laterReaderIsT = true;
                        else
                            laterReaders.push_back(m.rCol(t, j));
                    }
                if (laterReaderIsT)
                    continue;
                const int f = b.addCol(0, 1, 0, false,
                                       "f" + std::to_string(t) + "_" + std::to_string(v) + "_" +
                                           std::to_string(k));
                m.frees.push_back({t, v, k, f});
                if (freesOf[v].empty())
                    touched.push_back(v);
                freesOf[v].push_back(f);
                freeAt[t].push_back({k, f, v});
                if (k < t)
                    b.addRow({{f, 1}, {m.rCol(t, k), -1}}, -kInf, 0);
                for (int rj : laterReaders)
                    b.addRow({{f, 1}, {rj, 1}}, -kInf, 1);
            }
        }
        for (int v : touched) {
            std::vector<std::pair<int, double>> once, present;
            for (int f : freesOf[v]) {
                once.push_back({f, 1});
                present.push_back({f, 1});
            }
            if (t + 1 < n)
                once.push_back({m.sCol(t + 1, v), 1});
            b.addRow(once, -kInf, 1);
            present.push_back({m.rCol(t, p.producer[v]), -1});
            present.push_back({m.sCol(t, v), -1});
            b.addRow(present, -kInf, 0);
        }
    }
    // U[t,k]: block bytes in use right after op k runs in stage t (before its inputs are
    // released), by the recurrence U[t,k] = U[t,k'] - released after k' + block_k R[t,k].
    m.uCols.assign(n, {});
    m.uFixedStart.assign(n, 0);
    for (int t = 0; t < n; ++t) {
        m.uFixedStart[t] = m.uFixed.size();
        if (safe[size_t(t)])
            continue;
        int prevK = -1, prevU = -1;
        for (int k = 0; k <= t; ++k) {
            if (!active(t, k))
                continue;
            const int64_t fixedBytes =
                p.constantBytes + stickyBefore[t] + (k == t ? p.stickyBytes[t] : 0);
            double hi = kInf;
            const double trans = up(p.transientBytes[k]);
            if (!options.minimisePeak) {
                const int64_t capBytes = options.budgetBytes - fixedBytes;
                const double cap =
                    capBytes < 0 ? -1 : std::floor(double(capBytes) / double(m.unit));
                hi = k == t ? cap - trans : cap;
                if (hi < 0) {
                    m.trivialInfeasible = true;
                    m.infeasibleReason =
                        "op " + std::to_string(k) + "'s first run alone exceeds the budget";
                    hi = 0;
                }
            }
            int u = b.addCol(0, hi, 0, false, "u" + std::to_string(t) + "_" + std::to_string(k));
            m.uCols[t].push_back({k, u});
            std::vector<std::pair<int, double>> terms{{u, 1}};
            double rhs = 0;
            double outUnits = 0;
            for (int v : p.outputs[k])
                outUnits += up(p.valueBytes[v]);
            if (k == t)
                rhs += outUnits;
            else
                terms.push_back({m.rCol(t, k), -outUnits});
            if (prevU < 0) {
                for (int v = 0; v < p.values; ++v)
                    if (m.sCol(t, v) >= 0 && p.valueBytes[v] > 0)
                        terms.push_back({m.sCol(t, v), -up(p.valueBytes[v])});
            } else {
                terms.push_back({prevU, -1});
                for (const auto &[fk, f, fv] : freeAt[t])
                    if (fk == prevK)
                        terms.push_back({f, up(p.valueBytes[fv])});
            }
            b.addRow(terms, rhs, rhs);
            const double fixedUnits = up(fixedBytes);
            m.uFixed.push_back(fixedUnits);
            if (options.minimisePeak) {
                std::vector<std::pair<int, double>> peakRow{{u, 1}, {m.peakColumn, -1}};
                double rhsPeak = -fixedUnits;
                if (k == t)
                    rhsPeak -= trans;
                else
                    peakRow.push_back({m.rCol(t, k), trans});
                b.addRow(peakRow, -kInf, rhsPeak);
            } else if (k < t && trans > 0) {
                b.addRow({{u, 1}, {m.rCol(t, k), trans}}, -kInf, hi);
            }
            if (k == t && options.frontierRows && !options.minimisePeak && t + 1 < n) {
                // Valid for every integer point: a value retained into t + 1 is never released
                // in stage t, and op t's inputs are not released before op t runs.
                double forcedUnits = outUnits;
                std::vector<std::pair<int, double>> row;
                for (int v : p.inputs[t])
                    forcedUnits += up(p.valueBytes[v]);
                for (int v = 0; v < p.values; ++v) {
                    const int sc = m.sCol(t + 1, v);
                    if (sc < 0 || p.valueBytes[v] == 0 || p.producer[v] == t ||
                        std::binary_search(p.inputs[t].begin(), p.inputs[t].end(), v))
                        continue;
                    row.push_back({sc, up(p.valueBytes[v])});
                }
                if (!row.empty())
                    b.addRow(row, -kInf, hi - forcedUnits);
            }
            prevK = k;
            prevU = u;
        }
    }
    if (options.maxRecomputeSeconds >= 0) {
        // The time constraint, in the objective's units (cost / costDiv); the last row.
        std::vector<std::pair<int, double>> time;
        for (int t = 0; t < n; ++t)
            for (int i = 0; i < t; ++i)
                if (m.rCol(t, i) >= 0 && p.cost[i] > 0)
                    time.push_back({m.rCol(t, i), p.cost[i] / costDiv});
        if (!time.empty())
            b.addRow(time, -kInf, options.maxRecomputeSeconds / costDiv);
    }
    return m;
}

std::vector<double> LinearModel::pointFromPlan(const Problem &p, const StagePlan &plan) const
{
    std::vector<double> x(columns(), 0.0);
    for (int t = 0; t < n; ++t) {
        for (int i = 0; i < t; ++i)
            if (rIndex[t][i] >= 0)
                x[rIndex[t][i]] = plan.r.at(t, i);
        for (int v = 0; v < p.values; ++v)
            if (sIndex[t][v] >= 0)
                x[sIndex[t][v]] = plan.s.at(t, v);
    }
    auto ran = [&](int t, int k) { return k == t || plan.r.at(t, k); };
    for (const FreeVar &f : frees) {
        bool v = ran(f.t, f.k) && !(f.t + 1 < n && plan.s.at(f.t + 1, f.i));
        for (int j : p.readers[f.i])
            if (j > f.k && j <= f.t && ran(f.t, j))
                v = false;
        x[f.col] = v ? 1 : 0;
    }
    // U by the recurrence, with the rows' own rounding.
    auto upb = [&](int64_t bytes) { return double((bytes + unit - 1) / unit); };
    std::vector<std::vector<const FreeVar *>> freesByStage(n);
    for (const FreeVar &f : frees)
        freesByStage[f.t].push_back(&f);
    double peak = 0;
    for (int t = 0; t < n; ++t) {
        double u = 0;
        int prevK = -1;
        for (size_t j = 0; j < uCols[t].size(); ++j) {
            const auto [k, col] = uCols[t][j];
            if (prevK < 0) {
                for (int v = 0; v < p.values; ++v)
                    if (plan.s.at(t, v))
                        u += upb(p.valueBytes[v]);
            } else {
                for (const FreeVar *f : freesByStage[t])
                    if (f->k == prevK && x[f->col] > 0.5)
                        u -= upb(p.valueBytes[f->i]);
            }
            if (ran(t, k))
                for (int v : p.outputs[k])
                    u += upb(p.valueBytes[v]);
            x[col] = u;
            peak = std::max(peak, u + (ran(t, k) ? upb(p.transientBytes[k]) : 0) +
                                      uFixed[uFixedStart[t] + j]);
            prevK = k;
        }
    }
    if (peakColumn >= 0)
        x[peakColumn] = peak;
    return x;
}

Matrix LinearModel::rFromPoint(const Problem &p, const std::vector<double> &x) const
{
    Matrix r(p.n);
    for (int t = 0; t < n; ++t) {
        r.at(t, t) = 1;
        for (int i = 0; i < t; ++i)
            if (rIndex[t][i] >= 0 && x[rIndex[t][i]] > 0.5)
                r.at(t, i) = 1;
    }
    return r;
}

Matrix LinearModel::sFromPoint(const Problem &p, const std::vector<double> &x,
                               double threshold) const
{
    Matrix s(p.n, p.values);
    for (int t = 0; t < n; ++t)
        for (int v = 0; v < p.values; ++v)
            if (sIndex[t][v] >= 0 && x[sIndex[t][v]] >= threshold)
                s.at(t, v) = 1;
    return s;
}

} // namespace remat::core::solvers::checkmate
