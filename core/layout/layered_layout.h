#pragma once
// Layered (Sugiyama-style) layout of a directed graph of boxes: rank, order, place, route.
//   layout::LayeredInput in;  in.sizes = {{80, 30}, {80, 30}};  in.edges = {{0, 1}};
//   Expected<layout::LayeredResult> r = layout::layeredLayout(in, {});
//   r->nodes[1].y > r->nodes[0].bottom();  r->edges[0] is a polyline from box 0 down to box 1.

#include "core/layout/geometry.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace remat::core::layout {

/// Where a node's rank is forced. Used for the ports of a group interior: values entering a
/// group sit on its first rank, values leaving it on its last.
enum class RankPin : unsigned char {
    Free,  ///< ranked by the longest path, then pulled towards its consumers
    First, ///< rank 0 (the node must have no predecessors)
    Last,  ///< one rank below every free node (the node must have no successors)
};

struct LayeredInput
{
    std::vector<Size> sizes;                ///< one box per node
    std::vector<RankPin> pins;              ///< empty: every node Free
    std::vector<std::pair<int, int>> edges; ///< (from, to) node indices; duplicates allowed
};

struct LayeredOptions
{
    double nodeSpacing = 24; ///< horizontal gap between neighbouring boxes
    double edgeSpacing = 10; ///< horizontal gap between neighbouring edge bends (dummy nodes)
    double rankSpacing = 36; ///< vertical gap between ranks (room for edge labels)
    int orderSweeps = 8;     ///< barycenter sweeps (each down or up); the best order is kept
    int placeSweeps = 6;     ///< x-placement sweeps (each down or up)
    bool bundleEdges = true; ///< long edges from one source share one chain of bends
    StopToken stop;
};

struct LayeredResult
{
    std::vector<Rect> nodes;               ///< top-left boxes, same index as the input
    std::vector<int> ranks;                ///< rank of each input node (0 at the top)
    std::vector<std::vector<Point>> edges; ///< per input edge: source bottom .. target top
    Rect bounds;                           ///< (0, 0, width, height) enclosing everything
    size_t dummyCount = 0;                 ///< bend points introduced for long edges
    int64_t crossings = 0;                 ///< edge crossings of the final order
    int rankCount = 0;
};

/// Lays out the graph top-down. Cycles are broken by reversing back edges (found by depth-first
/// search in index order); self-loops get an empty route. Deterministic: the same input gives the
/// same output. Errors: an edge naming a missing node, mismatched pins, or Cancelled.
Expected<LayeredResult> layeredLayout(const LayeredInput &input,
                                      const LayeredOptions &options = {});

/// Counts crossings between consecutive ranks of an order, for tests and the benchmark.
/// `layers[r]` lists node ids left to right; `edges` join rank r to rank r + 1 only.
int64_t countCrossings(const std::vector<std::vector<int>> &layers,
                       const std::vector<std::pair<int, int>> &edges);

} // namespace remat::core::layout
