#pragma once
// Which storage PyTorch keeps for a saved tensor of a training graph:
//   std::vector<TensorId> base = pytorchStorageBases(tg);
//   if (base[t.index()] != t) ...   // t is a view in PyTorch; saving it keeps base's storage

#include "core/ir/graph.h"
#include "core/training/training_graph.h"
#include "core/util/ids.h"

#include <vector>

namespace remat::core::training {

/// Per tensor id, the tensor whose storage PyTorch keeps when it saves this one: the tensor
/// itself, or for a value PyTorch makes as a view (a reshape, flatten, squeeze, unsqueeze, chunk,
/// slice, expand, a select by one index, the exporter's zero Pad before a padded average pool, an
/// exported GLU's gate) the tensor owning its base's storage. summarize() counts
/// savedForBackwardBytes by it; ONNX, the simulator and the executors materialise these views.
/// With `forward`, strides are followed as torch does (see summarize()).
std::vector<TensorId> pytorchStorageBases(const TrainingGraph &graph,
                                          const ir::Graph *forward = nullptr);

} // namespace remat::core::training
