#pragma once
// Per-node figures the explorer shows and colours by: output bytes, forward FLOPs, model summary.
//   ui::ModelMetrics m = ui::computeMetrics(graph);
//   m.nodeFlops[n.index()];  m.summary.activationBytes;

#include "core/ir/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::ui {

struct ModelSummary
{
    int64_t nodes = 0;
    int64_t parameters = 0; ///< trainable elements
    int64_t parameterBytes = 0;
    int64_t frozenBytes = 0; ///< weights that do not train (ir::ValueKind::Frozen)
    int64_t bufferBytes = 0;
    int64_t activationBytes = 0; ///< sum of every node output (what store-all would keep, at most)
    double forwardFlops = 0;
    int64_t batch = 0;
    int64_t unknownShapes = 0; ///< node outputs whose bytes are unknown
};

struct ModelMetrics
{
    std::vector<int64_t> nodeOutputBytes; ///< per NodeId: bytes of all its outputs (-1 unknown)
    std::vector<double> nodeFlops;        ///< per NodeId: forward floating-point operations
    ModelSummary summary;
};

/// Forward FLOPs of one node: the figure of its op definition (core/ops: 2 x MACs for Conv / Gemm /
/// MatMul, a few per element for element-wise ops and normalisations, zero for data movement),
/// the same the training graph's cost model uses.
double forwardFlops(const core::ir::Graph &graph, const core::ir::Node &node);

ModelMetrics computeMetrics(const core::ir::Graph &graph);

/// "32×64×56×56"; "?" for unknown dims.
std::string shapeLabel(const core::ir::Shape &shape);
/// "1.23 GFLOP"
std::string formatFlops(double flops);

} // namespace remat::ui
