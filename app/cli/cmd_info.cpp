// remat info MODEL: what an ONNX file holds at a batch (opset, producer, node and op-type
// counts, parameters, inputs and outputs, forward activation bytes, namespace depth), as text
// or stable-keyed JSON. Errors print the importer's Status and exit non-zero.
#include "commands.h"
#include "model_loading.h"

#include "core/onnx/importer.h"
#include "core/util/bytes.h"

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
    std::vector<std::string> classify;
};

Expected<ir::ValueKind> parseKind(const std::string &text)
{
    if (text == "parameter")
        return ir::ValueKind::Parameter;
    if (text == "buffer")
        return ir::ValueKind::Buffer;
    if (text == "input")
        return ir::ValueKind::Input;
    return makeError(StatusCode::InvalidArgument,
                     "--classify kind '" + text + "' is not one of parameter, buffer, input");
}

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
    core::onnx::ImportOptions opt;
    for (const std::string &c : o.classify) {
        const size_t eq = c.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "error: --classify expects NAME=parameter|buffer|input, got '%s'\n", c.c_str());
            return 2;
        }
        auto kind = parseKind(c.substr(eq + 1));
        if (!kind) {
            std::fprintf(stderr, "error: %s\n", kind.status().message().c_str());
            return 2;
        }
        opt.kindOverrides[c.substr(0, eq)] = *kind;
    }
    auto g = importModel(o.input, opt);
    if (!g) {
        std::fprintf(stderr, "error: %s\n", g.status().toString().c_str());
        return 1;
    }
    std::map<std::string, int64_t> opTypes;
    for (const ir::Node &n : g->nodes())
        ++opTypes[n.domain.empty() ? n.opType : n.domain + "." + n.opType];
    int64_t params = 0, paramBytes = 0, paramElements = 0, buffers = 0, bufferBytes = 0;
    for (const ir::Value &v : g->values()) {
        if (v.kind == ir::ValueKind::Parameter) {
            ++params;
            paramBytes += v.bytes().value();
            paramElements += v.shape.numElements().value();
        } else if (v.kind == ir::ValueKind::Buffer) {
            ++buffers;
            bufferBytes += v.bytes().value();
        }
    }
    int64_t activationBytes = 0;
    for (const ir::Node &n : g->nodes())
        for (ValueId out : n.outputs)
            if (out.valid())
                activationBytes += g->value(out).bytes().value();
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
    for (ValueId id : g->inputs())
        if (g->value(id).kind == ir::ValueKind::Input)
            inputs.push_back(valueJson(g->value(id)));
    for (ValueId id : g->outputs())
        outputs.push_back(valueJson(g->value(id)));
    const ir::ModelInfo &info = g->info();

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
        j["inputs"] = inputs;
        j["outputs"] = outputs;
        j["activation_bytes"] = activationBytes;
        j["namespace_depth"] = g->namespaceDepth();
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    auto shapeText = [](const nlohmann::json &v) {
        return fmt::format("{} {} {}", v["name"].get<std::string>(), v["dtype"].get<std::string>(),
                           v["shape"].dump());
    };
    std::printf("%s\n", info.path.c_str());
    std::printf("  producer     %s %s, IR %lld, opset %lld\n", info.producerName.c_str(),
                info.producerVersion.c_str(), (long long)info.irVersion, (long long)info.opsetVersion);
    std::printf("  sha256       %s\n", info.sha256.c_str());
    std::printf("  batch        %lld\n", (long long)info.batch);
    std::printf("  nodes        %zu (namespace depth %d)\n", g->nodeCount(), g->namespaceDepth());
    std::printf("  values       %zu\n", g->valueCount());
    std::printf("  parameters   %lld tensors, %lld elements, %s\n", (long long)params, (long long)paramElements,
                formatBytes(paramBytes).c_str());
    std::printf("  buffers      %lld tensors, %s\n", (long long)buffers, formatBytes(bufferBytes).c_str());
    std::printf("  activations  %s (all node outputs, forward)\n", formatBytes(activationBytes).c_str());
    for (const auto &v : inputs)
        std::printf("  input        %s\n", shapeText(v).c_str());
    for (const auto &v : outputs)
        std::printf("  output       %s\n", shapeText(v).c_str());
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
    cmd->add_option("--classify", opts->classify,
                    "Override a value's kind: NAME=parameter|buffer|input (repeatable)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->callback([opts, &ctx] { ctx.exitCode = runInfo(*opts); });
}

} // namespace remat::app
