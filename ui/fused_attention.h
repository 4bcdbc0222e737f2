#pragma once
// The attention patterns a training step fused (--attention sdpa), as the explorer shows them:
// one group per pattern that opens to the original nodes, and per node what it was fused into
// (or, for a pattern that almost matched, why it was not).
//   std::vector<ir::NodeGroup> groups = fusedAttentionGroups(*step->training);
//   graph.withNodeGroups(groups);   // each pattern a collapsible namespace
//   int site = fusedSiteOf(*step->training, node);   // index into info().fusedSites, or -1

#include "core/ir/graph.h"
#include "core/training/training_graph.h"

#include <vector>

namespace remat::ui {

/// The name of each fused pattern's group in the graph.
inline constexpr const char *kFusedAttentionGroup = "fused attention";

/// One group per fused pattern that absorbed other nodes (an ONNX Attention node is one node
/// already): the pattern's nodes, the fused op's own node last.
std::vector<core::ir::NodeGroup> fusedAttentionGroups(const core::training::TrainingGraph &graph);

/// The index in graph.info().fusedSites of the pattern `node` belongs to (the fused op's node or
/// one it absorbed); -1 when none.
int fusedSiteOf(const core::training::TrainingGraph &graph, core::NodeId node);

/// The index in graph.info().notFusedSites of the near miss at `node` (its Softmax); -1 when
/// none.
int nearMissAt(const core::training::TrainingGraph &graph, core::NodeId node);

} // namespace remat::ui
