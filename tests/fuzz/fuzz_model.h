#pragma once
// The small model the plan, session and profile targets read against: the shared corpus's
// mlp.onnx (3 Linear + ReLU), imported once per process with its training graph and roofline
// costs. Its path: $REMAT_FUZZ_MODEL, else <REMAT_SHARED_DIR>/corpus/with_weights/mlp.onnx.

#include "core/cost/costs.h"
#include "core/ir/graph.h"
#include "core/training/training_graph.h"

#include <memory>
#include <string>

namespace remat::fuzz {

struct SmallModel
{
    std::string path;
    std::shared_ptr<const core::ir::Graph> graph;
    std::shared_ptr<const core::training::TrainingGraph> training;
    std::shared_ptr<const core::cost::Costs> costs;
};

/// Loads on first use; a model that cannot be loaded stops the process (the harness is
/// misconfigured, not the reader wrong).
const SmallModel &smallModel();

} // namespace remat::fuzz
