#pragma once
// The exact optimum of Checkmate's stage model on tiny graphs, by exhaustive dynamic
// programming: the reference checkmate-milp is checked against (tst_checkmate,
// tst_checkmate_time).
//   double r = remat::tests::stagePlanOptimum(problem, budget);   // +inf: no plan fits

#include "core/solvers/checkmate/problem.h"

#include <cstdint>
#include <limits>
#include <map>

namespace remat::tests {

using remat::core::solvers::checkmate::Problem;

/// Exact optimum of Checkmate's stage model (frontier advancing, ops recomputed whole, each value
/// released after its last reader in a stage unless retained), by dynamic programming over the
/// set of values retained across each stage boundary. Returns +inf when no plan fits.
inline double stagePlanOptimum(const Problem &p, int64_t budget)
{
    const int n = p.n;
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::map<uint64_t, double> dp{{0u, 0.0}};
    int64_t stickyBefore = 0;
    for (int t = 0; t < n; ++t) {
        uint64_t avail = 0; // values that may be retained into stage t + 1
        for (int v = 0; v < p.values; ++v)
            if (t + 1 < n && p.producer[v] <= t && p.valueLastUse[v] >= t + 1)
                avail |= uint64_t(1) << v;
        std::map<uint64_t, double> next;
        for (auto [sT, cost] : dp) {
            for (uint64_t sN = avail;; sN = (sN - 1) & avail) {
                uint32_t r = 1u << t;
                bool ok = true;
                for (int v = 0; v < p.values; ++v)
                    if ((sN >> v & 1) && !(sT >> v & 1) && p.producer[v] < t) {
                        ok = ok && p.recomputable[p.producer[v]];
                        r |= 1u << p.producer[v];
                    }
                for (int k = t; k >= 0 && ok; --k) {
                    if (!(r >> k & 1))
                        continue;
                    for (int v : p.inputs[k])
                        if (!(sT >> v & 1) && !(r >> p.producer[v] & 1)) {
                            ok = ok && p.recomputable[p.producer[v]];
                            r |= 1u << p.producer[v];
                        }
                }
                double extra = 0;
                if (ok) {
                    int64_t mem = p.constantBytes + stickyBefore;
                    for (int v = 0; v < p.values; ++v)
                        if (sT >> v & 1)
                            mem += p.valueBytes[v];
                    for (int k = 0; k <= t && ok; ++k) {
                        if (!(r >> k & 1))
                            continue;
                        if (k < t)
                            extra += p.cost[k];
                        mem += p.blockBytes[k] + (k == t ? p.stickyBytes[t] : 0);
                        if (mem + p.transientBytes[k] > budget)
                            ok = false;
                        for (int v : p.inputs[k]) {
                            bool laterReader = false;
                            for (int j : p.readers[v])
                                laterReader = laterReader || (j > k && j <= t && (r >> j & 1));
                            if (!laterReader && !(sN >> v & 1))
                                mem -= p.valueBytes[v];
                        }
                    }
                }
                if (ok) {
                    auto it = next.find(sN);
                    if (it == next.end() || cost + extra < it->second)
                        next[sN] = cost + extra;
                }
                if (sN == 0)
                    break;
            }
        }
        dp = std::move(next);
        stickyBefore += p.stickyBytes[t];
    }
    auto it = dp.find(0u);
    return it == dp.end() ? inf : it->second;
}

} // namespace remat::tests
