#pragma once
// The binomial reversal table of Revolve, exposed for tests.
//   RevolveTable t(100, 5);  t.forwardSteps(100, 5) == revolveBinomialFormula(100, 5);

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::core::solvers {

/// T(l, s): the fewest forward step evaluations (the one right before each reverse step not
/// counted) to reverse l steps with s snapshot slots, the input's slot included; and the first
/// advance of an optimal schedule.
class RevolveTable
{
public:
    RevolveTable(int maxSteps, int maxSnaps);
    int64_t forwardSteps(int l, int s) const;
    int split(int l, int s) const;

private:
    int64_t &at(int l, int s) { return m_t[std::size_t(l) * (m_s + 1) + s]; }
    int m_l, m_s;
    std::vector<int64_t> m_t;
    std::vector<int> m_split;
};

/// Griewank & Walther's closed form t(l, s) = r*l - C(s+r, s+1) with C(s+r-1, s) < l <= C(s+r, s).
int64_t revolveBinomialFormula(int64_t l, int64_t s);

} // namespace remat::core::solvers
