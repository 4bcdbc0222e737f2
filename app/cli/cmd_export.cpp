// remat export MODEL --format node-link --out FILE: the training graph of an ONNX model, costed
// by the roofline model, in the node-link JSON the Checkmate and Moccasin tools read.
#include "commands.h"

#include "core/cost/roofline.h"
#include "core/io/node_link.h"
#include "core/onnx/importer.h"
#include "core/training/builder.h"

#include <cstdio>
#include <filesystem>
#include <memory>

namespace remat::app {

namespace {

using namespace remat::core;

struct ExportOptions
{
    std::string model;
    std::string format = "node-link";
    std::string out;
    int64_t batch = 0;
};

int runExport(const ExportOptions &o)
{
    if (o.format != "node-link") {
        std::fprintf(stderr, "error: unknown format '%s' (supported: node-link)\n", o.format.c_str());
        return 2;
    }
    core::onnx::ImportOptions opt;
    opt.batch = o.batch;
    auto g = core::onnx::importModel(o.model, opt);
    if (!g) {
        std::fprintf(stderr, "error: %s\n", g.status().toString().c_str());
        return 1;
    }
    auto tg = training::buildTrainingGraph(*g, {});
    if (!tg) {
        std::fprintf(stderr, "error: %s: %s\n", o.model.c_str(), tg.status().toString().c_str());
        return 1;
    }
    const cost::Costs costs = cost::rooflineCosts(*tg);
    const std::string name = std::filesystem::path(o.model).stem().string() + "_train";
    Status s = io::writeNodeLinkGraph(*tg, costs, o.out, name);
    if (!s.isOk()) {
        std::fprintf(stderr, "error: %s\n", s.toString().c_str());
        return 1;
    }
    std::printf("%s: %zu ops (%zu forward, %zu backward), in-order peak %lld B -> %s\n",
                o.model.c_str(), tg->opCount(), tg->forwardOpCount(), tg->backwardOpCount(),
                static_cast<long long>(io::referencePeakBytes(*tg)), o.out.c_str());
    return 0;
}

} // namespace

void addExportCommand(CLI::App &app, CommandContext &ctx)
{
    auto o = std::make_shared<ExportOptions>();
    CLI::App *cmd = app.add_subcommand(
        "export", "Export a model's training graph (node-link JSON for Checkmate / Moccasin tools)");
    cmd->add_option("model", o->model, "ONNX model")->required();
    cmd->add_option("--format", o->format, "output format (node-link)")->capture_default_str();
    cmd->add_option("--out", o->out, "output file")->required();
    cmd->add_option("--batch", o->batch, "batch size for a symbolic batch dimension");
    cmd->callback([o, &ctx] { ctx.exitCode = runExport(*o); });
}

} // namespace remat::app
