// ONNX bytes -> import at the file's batch and at 3 -> training graph -> roofline costs ->
// store-all and chen-sqrtn -> simulate (pipeline.h).
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/training/builder.h"

namespace remat::fuzz {

using namespace remat::core;

Status runOnnx(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const std::string bytes(reinterpret_cast<const char *>(data), size);
    // A folder that does not exist: external data (resolved next to the model) is never found.
    const std::string origin = "/nonexistent-remat-fuzz/fuzz.onnx";
    Status first;
    for (int64_t batch : {int64_t(0), int64_t(3)}) {
        onnx::ImportOptions options;
        options.batch = batch;
        options.maxFileBytes = int64_t(kMaxInputBytes);
        auto graph = onnx::importModelFromBytes(bytes, origin, options);
        requireNamesOrigin(graph.status(), origin, "onnx::importModelFromBytes");
        if (batch == 0)
            first = graph.status();
        if (!graph)
            continue;
        if (graph->nodeCount() > kMaxPipelineOps)
            continue;
        auto training = training::buildTrainingGraph(*graph);
        if (!training)
            continue;
        const cost::Costs costs = cost::rooflineCosts(*training);
        (void)runSchedules(*training, costs);
    }
    return first;
}

} // namespace remat::fuzz
