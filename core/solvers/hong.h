#pragma once
// Hong et al.'s first objective on a chain view, exposed for the exhaustive check.
//   double v = hongRunObjective(view, {2, 5});   // sum(checkpoint bytes) + largest run bytes

#include "core/solvers/lowering.h"

#include <vector>

namespace remat::core::solvers {

/// sum of the chosen boundaries' bytes + the largest run between consecutive chosen boundaries
/// (the network input and output close the first and last run); `chosen` ascending, 0-based.
double hongRunObjective(const ChainView &view, const std::vector<int> &chosen);

} // namespace remat::core::solvers
