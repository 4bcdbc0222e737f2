#include "model_loading.h"

#include <cstdio>

namespace remat::app {

using namespace remat::core;

CLI::Option *addModelArgument(CLI::App &cmd, ModelInput &input, const std::string &help)
{
    return cmd.add_option("model", input.model, help)->required();
}

CLI::Option *addBatchOption(CLI::App &cmd, ModelInput &input, const std::string &help, BatchCheck check)
{
    CLI::Option *o = cmd.add_option("--batch", input.batch, help);
    if (check == BatchCheck::NonNegative)
        o->check(CLI::NonNegativeNumber);
    return o;
}

Expected<ir::Graph> importModel(const ModelInput &input, onnx::ImportOptions options)
{
    options.batch = input.batch;
    return onnx::importModel(input.model, options);
}

Expected<LoadedModel> loadTrainingModel(const ModelInput &input, const training::BuildOptions &build,
                                        LoadStage *failedStage)
{
    Expected<ir::Graph> graph = importModel(input);
    if (!graph) {
        if (failedStage)
            *failedStage = LoadStage::Import;
        return graph.status();
    }
    Expected<training::TrainingGraph> tg = training::buildTrainingGraph(*graph, build);
    if (!tg) {
        if (failedStage)
            *failedStage = LoadStage::Build;
        return tg.status();
    }
    return LoadedModel{std::move(*graph), std::move(*tg)};
}

int reportLoadError(const ModelInput &input, const Status &status, LoadStage stage)
{
    if (stage == LoadStage::Build)
        std::fprintf(stderr, "error: %s: %s\n", input.model.c_str(), status.toString().c_str());
    else
        std::fprintf(stderr, "error: %s\n", status.toString().c_str());
    return 1;
}

} // namespace remat::app
