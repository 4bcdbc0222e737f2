// remat info MODEL: what an ONNX file holds at a batch (opset, producer, node and op-type
// counts, parameters, inputs and outputs, forward activation bytes, namespace depth), as text
// or stable-keyed JSON. Errors print the importer's Status and exit non-zero.
#include "commands.h"
#include "model_loading.h"

#include "core/onnx/importer.h"
#include "core/training/builder.h"
#include "core/util/bytes.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>

namespace remat::app {

namespace {

using namespace remat::core;

struct InfoOptions
{
    ModelInput input;
    bool json = false;
};

nlohmann::json valueJson(const ir::Value &v)
{
    nlohmann::json shape = nlohmann::json::array();
    for (const ir::Dim &d : v.shape.dims) {
        if (d.isStatic())
            shape.push_back(d.value);
        else
            shape.push_back(d.symbol.empty() ? std::string("?") : d.symbol);
    }
    return {{"name", v.name}, {"shape", shape}, {"dtype", ir::dataTypeName(v.dtype)}};
}

int runInfo(const InfoOptions &o)
{
    // info browses: any valid file is summarised, and what stops a training step is said.
    core::onnx::ImportOptions browse;
    browse.allowUnknownShapes = true;
    auto g = importModel(o.input, browse);
    if (!g) {
        std::fprintf(stderr, "error: %s\n", g.status().toString().c_str());
        return 1;
    }
    std::map<std::string, int64_t> opTypes;
    for (const ir::Node &n : g->nodes())
        ++opTypes[n.domain.empty() ? n.opType : n.domain + "." + n.opType];
    // Values of unknown shape (a browsed file) count nowhere; unknownShapes says how many.
    auto bytesOf = [](const ir::Value &v) -> int64_t {
        auto b = v.shape.isStatic() ? v.bytes() : Expected<int64_t>(int64_t(0));
        return b ? *b : 0;
    };
    int64_t params = 0, paramBytes = 0, paramElements = 0, buffers = 0, bufferBytes = 0, frozen = 0,
            frozenBytes = 0, unknownShapes = 0;
    // The model's tensors and why each has its kind: trainable, frozen or buffer.
    nlohmann::json modelState = nlohmann::json::array();
    std::vector<std::string> reasoned;
    for (const ir::Value &v : g->values()) {
        if (ir::isModelState(v.kind)) {
            nlohmann::json t = {{"name", v.name},
                                {"kind", v.kind == ir::ValueKind::Parameter
                                             ? "trainable"
                                             : ir::valueKindName(v.kind)},
                                {"bytes", bytesOf(v)}};
            if (!v.kindReason.empty()) {
                t["reason"] = v.kindReason;
                if (v.kind != ir::ValueKind::Parameter &&
                    v.kindReason.find("running statistic") == std::string::npos)
                    reasoned.push_back(v.name + ": " + ir::valueKindName(v.kind) + ", " +
                                       v.kindReason);
            }
            modelState.push_back(std::move(t));
        }
        if (v.kind == ir::ValueKind::Frozen) {
            ++frozen;
            frozenBytes += bytesOf(v);
        } else if (v.kind == ir::ValueKind::Parameter) {
            ++params;
            paramBytes += bytesOf(v);
            auto n = v.shape.isStatic() ? v.shape.numElements() : Expected<int64_t>(int64_t(0));
            paramElements += n ? *n : 0;
        } else if (v.kind == ir::ValueKind::Buffer) {
            ++buffers;
            bufferBytes += bytesOf(v);
        }
    }
    int64_t activationBytes = 0;
    for (const ir::Node &n : g->nodes())
        for (ValueId out : n.outputs)
            if (out.valid()) {
                activationBytes += bytesOf(g->value(out));
                unknownShapes += !g->value(out).shape.isStatic();
            }
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
    for (ValueId id : g->inputs())
        if (g->value(id).kind == ir::ValueKind::Input)
            inputs.push_back(valueJson(g->value(id)));
    for (ValueId id : g->outputs())
        outputs.push_back(valueJson(g->value(id)));
    const ir::ModelInfo &info = g->info();
    // With --attention sdpa: what the training builder fuses, and what it almost fused and why.
    std::vector<std::string> fused, notFused;
    Expected<training::Attention> attention = training::parseAttention(o.input.attention);
    if (!attention) {
        std::fprintf(stderr, "error: %s\n", attention.status().toString().c_str());
        return 1;
    }
    // Attention nodes (ONNX Attention, com.microsoft MultiHeadAttention / GroupQueryAttention /
    // Attention) are the fused op in either mode: listed in eager mode too.
    const bool attentionNodes =
        std::any_of(g->nodes().begin(), g->nodes().end(), [](const ir::Node &n) {
            return n.opType == "Attention" || n.opType == "MultiHeadAttention" ||
                   n.opType == "GroupQueryAttention";
        });
    const bool listAttention = *attention == training::Attention::Sdpa || attentionNodes;
    if (listAttention && info.trainingBlockers.empty()) {
        training::BuildOptions build;
        build.attention = *attention;
        auto tg = training::buildTrainingGraph(*g, build);
        if (tg) {
            fused = tg->info().fusedPatterns;
            notFused = tg->info().notFused;
        } else {
            notFused.push_back("no training step: " + tg.status().toString());
        }
    }

    if (o.json) {
        nlohmann::json j;
        j["model"] = info.path;
        j["sha256"] = info.sha256;
        j["producer"] = info.producerName;
        j["producer_version"] = info.producerVersion;
        j["ir_version"] = info.irVersion;
        j["opset"] = info.opsetVersion;
        j["batch"] = info.batch;
        j["nodes"] = g->nodeCount();
        j["values"] = g->valueCount();
        j["op_types"] = opTypes;
        j["params"] = params;
        j["param_elements"] = paramElements;
        j["param_bytes"] = paramBytes;
        j["buffers"] = buffers;
        j["buffer_bytes"] = bufferBytes;
        j["frozen_params"] = frozen;
        j["frozen_param_bytes"] = frozenBytes;
        j["model_state"] = modelState;
        j["inputs"] = inputs;
        j["outputs"] = outputs;
        j["activation_bytes"] = activationBytes;
        j["namespace_depth"] = g->namespaceDepth();
        j["semantics"] = o.input.semantics;
        j["import_notes"] = info.importNotes;
        j["training_blockers"] = info.trainingBlockers;
        j["unknown_shapes"] = unknownShapes;
        if (listAttention) {
            j["attention_fused"] = fused;
            j["attention_not_fused"] = notFused;
        }
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    auto shapeText = [](const nlohmann::json &v) {
        return fmt::format("{} {} {}", v["name"].get<std::string>(), v["dtype"].get<std::string>(),
                           v["shape"].dump());
    };
    std::printf("%s\n", info.path.c_str());
    std::printf("  producer     %s, IR %lld, opset %lld\n", ir::producerLabel(info).c_str(),
                (long long)info.irVersion, (long long)info.opsetVersion);
    std::printf("  sha256       %s\n", info.sha256.c_str());
    std::printf("  batch        %lld\n", (long long)info.batch);
    std::printf("  semantics    %s\n", o.input.semantics.c_str());
    for (const std::string &note : info.importNotes)
        std::printf("  note         %s\n", note.c_str());
    if (!info.trainingBlockers.empty()) {
        std::printf("  training     blocked: %s\n", info.trainingBlockers.front().c_str());
        for (size_t i = 1; i < info.trainingBlockers.size(); ++i)
            std::printf("               %s\n", info.trainingBlockers[i].c_str());
    }
    std::printf("  nodes        %zu (namespace depth %d)\n", g->nodeCount(), g->namespaceDepth());
    std::printf("  values       %zu\n", g->valueCount());
    std::printf("  parameters   %lld tensors, %lld elements, %s\n", (long long)params,
                (long long)paramElements, formatBytes(paramBytes).c_str());
    if (frozen > 0)
        std::printf("  frozen       %lld tensors, %s (weights that do not train)\n",
                    (long long)frozen, formatBytes(frozenBytes).c_str());
    std::printf("  buffers      %lld tensors, %s\n", (long long)buffers,
                formatBytes(bufferBytes).c_str());
    const size_t shownReasons = std::min<size_t>(reasoned.size(), 12);
    for (size_t i = 0; i < shownReasons; ++i)
        std::printf("  kind         %s\n", reasoned[i].c_str());
    if (reasoned.size() > shownReasons)
        std::printf("  kind         ... %zu more (--json lists every tensor)\n",
                    reasoned.size() - shownReasons);
    std::printf(
        "  activations  %s (all node outputs, forward%s)\n", formatBytes(activationBytes).c_str(),
        unknownShapes ? fmt::format("; {} of unknown size not counted", unknownShapes).c_str()
                      : "");
    for (const auto &v : inputs)
        std::printf("  input        %s\n", shapeText(v).c_str());
    for (const auto &v : outputs)
        std::printf("  output       %s\n", shapeText(v).c_str());
    if (listAttention) {
        std::printf("  attention    %zu fused by %s\n", fused.size(),
                    *attention == training::Attention::Sdpa ? "--attention sdpa"
                                                            : "the file (attention nodes)");
        for (const std::string &f : fused)
            std::printf("    %s\n", f.c_str());
        for (const std::string &f : notFused)
            std::printf("    %s\n", f.c_str());
    }
    std::printf("  op types\n");
    for (const auto &[op, count] : opTypes)
        std::printf("    %-24s %lld\n", op.c_str(), (long long)count);
    return 0;
}

} // namespace

void addInfoCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<InfoOptions>();
    CLI::App *cmd = app.add_subcommand("info", "Summarize an ONNX model at a batch");
    addModelArgument(*cmd, opts->input);
    addBatchOption(*cmd, opts->input);
    cmd->add_flag("--json", opts->json, "Print JSON with stable keys");
    cmd->add_option("--attention", opts->input.attention,
                    "sdpa: also list the attention patterns --attention sdpa fuses, and those it "
                    "almost fused with the reason (default eager: only the file's attention nodes, "
                    "fused in either mode)")
        ->check(CLI::IsMember({"eager", "sdpa"}));
    cmd->callback([opts, &ctx] { ctx.exitCode = runInfo(*opts); });
}

} // namespace remat::app
