// remat export MODEL --format node-link --out FILE: the training graph of an ONNX model, costed
// by the roofline model, in the node-link JSON the Checkmate and Moccasin tools read.
#include "commands.h"
#include "model_loading.h"

#include "core/cost/roofline.h"
#include "core/io/node_link.h"

#include <cstdio>
#include <filesystem>
#include <memory>

namespace remat::app {

namespace {

using namespace remat::core;

struct ExportOptions
{
    ModelInput input;
    std::string format = "node-link";
    std::string out;
};

int runExport(const ExportOptions &o)
{
    if (o.format != "node-link") {
        std::fprintf(stderr, "error: unknown format '%s' (supported: node-link)\n",
                     o.format.c_str());
        return 2;
    }
    LoadStage failed = LoadStage::Import;
    Expected<LoadedModel> loaded = loadTrainingModel(o.input, {}, &failed);
    if (!loaded)
        return reportLoadError(o.input, loaded.status(), failed);
    const training::TrainingGraph &tg = loaded->training;
    const cost::Costs &costs = *loaded->problem->costs;
    const std::string name = std::filesystem::path(o.input.model).stem().string() + "_train";
    Status s = io::writeNodeLinkGraph(tg, costs, o.out, name);
    if (!s.isOk()) {
        std::fprintf(stderr, "error: %s\n", s.toString().c_str());
        return 1;
    }
    std::printf("%s: %zu ops (%zu forward, %zu backward), in-order peak %lld B -> %s\n",
                o.input.model.c_str(), tg.opCount(), tg.forwardOpCount(), tg.backwardOpCount(),
                static_cast<long long>(io::referencePeakBytes(tg)), o.out.c_str());
    return 0;
}

} // namespace

void addExportCommand(CLI::App &app, CommandContext &ctx)
{
    auto o = std::make_shared<ExportOptions>();
    CLI::App *cmd = app.add_subcommand(
        "export",
        "Export a model's training graph (node-link JSON for Checkmate / Moccasin tools)");
    addModelArgument(*cmd, o->input, "ONNX model");
    cmd->add_option("--format", o->format, "output format (node-link)")->capture_default_str();
    cmd->add_option("--out", o->out, "output file")->required();
    addBatchOption(*cmd, o->input, "batch size for a symbolic batch dimension", BatchCheck::None);
    cmd->callback([o, &ctx] { ctx.exitCode = runExport(*o); });
}

} // namespace remat::app
