#pragma once
// Feng & Huang's search, exposed for tests and for side-by-side runs with the authors' code.
//   FengHuangGraph g = fengHuangGraph(facts);          // tensors as vertices, ops as edges
//   Expected<FengHuangResult> r = solveFengHuang(g, forbidden, stop, 8);
//   r->best;   // sum(checkpoint bytes, source and sink excluded) + m, the authors' objective

#include "core/solvers/lowering.h"
#include "core/util/stop_token.h"

#include <array>
#include <utility>
#include <vector>

namespace remat::core::solvers {

/// The authors' graph form: vertices are tensors weighted by bytes (saved state charged to its
/// op's first flow output), each op input gives an edge into each op output; vertex 0 is the
/// source (the network input), `sink` the network output (or a virtual sink).
struct FengHuangGraph
{
    std::vector<double> cost;
    std::vector<TensorId> tensor; ///< invalid for virtual vertices
    std::vector<std::pair<int32_t, int32_t>> edges;
    int32_t source = 0, sink = -1;
};

struct FengHuangCandidate
{
    double objective = 0;
    double maxTerm = 0;
    std::vector<int32_t> vertices; ///< the checkpoint vertices (source and sink included)
};

struct FengHuangResult
{
    double best = 0;                            ///< the authors' objective at its optimum
    std::vector<FengHuangCandidate> candidates; ///< distinct sets, best objective first
    size_t maxTerms = 0, evaluated = 0;
    std::array<size_t, 4> levels{}; ///< leaf, linear, branch, complicate pieces
    bool coverFallback = false;
    double treeSeconds = 0; ///< building the division tree
};

FengHuangGraph fengHuangGraph(const GraphFacts &facts);

/// keepBest: how many distinct candidate sets to return, best objective first. The search stops
/// at the first max term m >= slack * best objective so far (slack 1: the authors' optimum
/// exactly, as every objective is at least its m; larger: near-optimal sets too).
Expected<FengHuangResult> solveFengHuang(const FengHuangGraph &graph,
                                         const std::vector<char> &forbidden, const StopToken &stop,
                                         size_t keepBest, double slack = 1.0);

} // namespace remat::core::solvers
