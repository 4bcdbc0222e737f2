#pragma once
// An ONNX model as the solvers see it: imported at a batch, its training graph, roofline costs.
// Header-only: only the suites that include it link the onnx, training and cost modules.
//   auto m = remat::tests::loadCostedModel(sharedPath("corpus/graph_only/resnet18.onnx"), 4);
//   QVERIFY2(m.hasValue(), m.status().toString().c_str());  // then m->graph, m->costs

#include "common/test_support.h"

#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/training/builder.h"

#include <QString>

#include <cstdint>

namespace remat::tests {

struct CostedModel
{
    core::training::TrainingGraph graph;
    core::cost::Costs costs;
};

/// `batch` 0 keeps the file's batch.
inline core::Expected<CostedModel> loadCostedModel(const QString &path, int64_t batch)
{
    core::onnx::ImportOptions o;
    o.batch = batch;
    REMAT_ASSIGN_OR_RETURN(core::ir::Graph g, core::onnx::importModel(toStd(path), o));
    CostedModel m;
    REMAT_ASSIGN_OR_RETURN(m.graph, core::training::buildTrainingGraph(g, {}));
    m.costs = core::cost::rooflineCosts(m.graph);
    return m;
}

} // namespace remat::tests
