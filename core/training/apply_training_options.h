#pragma once
// Applies TrainingOptions (training_options.h, where the memory model is written out) to a built
// training graph, and sums the model states of the result.
//   Expected<TrainingGraph> tg = applyTrainingOptions(*built, {.optimizer = Optimizer::Adam});
//   modelStateBytes(*tg).total();   // 16 bytes per parameter: weights, gradients, exp_avg(_sq)

#include "core/training/training_graph.h"
#include "core/training/training_options.h"
#include "core/util/status.h"

#include <cstdint>

namespace remat::core::training {

/// The training graph with the options applied (see above); `graph` when options are default.
/// `graph` must have no optimizer step yet. `forward`: the graph it was built from, whose node
/// attributes the autocast rules read (a Pad's mode); null reads the rules without them.
Expected<TrainingGraph> applyTrainingOptions(const TrainingGraph &graph,
                                             const TrainingOptions &options,
                                             const ir::Graph *forward = nullptr);

/// The resident model states of a training graph, per rank, by role.
struct ModelStateBytes
{
    int64_t parameterCount = 0;      ///< elements of the Parameter tensors, unsharded
    int64_t parameterBytes = 0;      ///< Parameter tensors (per rank)
    int64_t paramGradBytes = 0;      ///< ParameterGrad tensors that are final (per rank)
    int64_t masterWeightBytes = 0;   ///< MasterWeight tensors
    int64_t optimizerStateBytes = 0; ///< OptimizerState tensors
    int64_t total() const
    {
        return parameterBytes + paramGradBytes + masterWeightBytes + optimizerStateBytes;
    }
};
ModelStateBytes modelStateBytes(const TrainingGraph &graph);

} // namespace remat::core::training
