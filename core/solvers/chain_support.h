#pragma once
// Helpers the chain solvers share: pins on boundaries, and checkpoint sets from boundaries.
//   ChainPins cp = chainPins(view, facts, request.pins);
//   std::vector<TensorId> keep = keepFromBoundaries(view, chosen);

#include "core/solvers/lowering.h"

#include <vector>

namespace remat::core::solvers {

struct ChainPins
{
    std::vector<char> forced;    ///< boundary must be kept (a keep pin on it)
    std::vector<char> forbidden; ///< boundary may not be kept (a recompute pin on it)
};

ChainPins chainPins(const ChainView &view, const GraphFacts &facts, const std::vector<Pin> &pins);

/// The union of the chosen boundaries' tensor sets.
std::vector<TensorId> keepFromBoundaries(const ChainView &view, const std::vector<int> &chosen);

/// Error text when a graph has no chain a chain-only solver can use.
Status requireChain(const ChainView &view, const std::string &solverId);

} // namespace remat::core::solvers
