// remat make-decoder --config config.json --seq N [--batch B] --out model.onnx: a graph-only ONNX
// of the decoder a Hugging Face config.json describes (core/io/hf_config.h reads it,
// core/onnx/decoder_model.h writes it), parameters as graph inputs named like the state_dict's
// keys, no weights: the 8B fine-tuning question asked without exporting 8B weights.
#include "commands.h"

#include "core/io/hf_config.h"
#include "core/onnx/decoder_model.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

namespace remat::app {

namespace {

using namespace remat::core;

struct MakeDecoderOptions
{
    std::string config, out;
    int64_t seq = 0, batch = 1;
};

int runMakeDecoder(const MakeDecoderOptions &o)
{
    std::ifstream in(o.config, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "error: --config %s: cannot open the file\n", o.config.c_str());
        return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    Expected<onnx::DecoderSpec> spec = io::decoderSpecFromConfig(text.str(), o.config);
    if (!spec) {
        std::fprintf(stderr, "error: %s\n", spec.status().toString().c_str());
        return 1;
    }
    spec->seq = o.seq;
    spec->batch = o.batch;
    if (Status s = onnx::writeDecoderModel(*spec, o.out); !s.isOk()) {
        std::fprintf(stderr, "error: %s\n", s.toString().c_str());
        return 1;
    }
    const int64_t dh = spec->headDim > 0 ? spec->headDim : spec->hidden / spec->heads;
    std::printf("%s: %s decoder, %lld layers, hidden %lld, %lld heads of %lld (%lld K/V), FFN %lld "
                "(%s), vocabulary %lld, %s, %s positions%s; batch %lld, sequence %lld\n",
                o.out.c_str(), spec->modelType.c_str(), (long long)spec->layers,
                (long long)spec->hidden, (long long)spec->heads, (long long)dh,
                (long long)spec->kvHeads, (long long)spec->ffn,
                spec->swiglu ? "SwiGLU" : (spec->geluTanh ? "GELU tanh" : "GELU"),
                (long long)spec->vocab, spec->rmsNorm ? "RMSNorm" : "LayerNorm",
                spec->rope ? "rotary" : "learned", spec->tieEmbeddings ? ", tied embeddings" : "",
                (long long)spec->batch, (long long)spec->seq);
    return 0;
}

} // namespace

void addMakeDecoderCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<MakeDecoderOptions>();
    CLI::App *cmd = app.add_subcommand(
        "make-decoder", "Write a graph-only ONNX decoder (no weights) from a Hugging Face "
                        "config.json, to open, derive and fit like any export");
    cmd->add_option("--config", opts->config,
                    "config.json (resources/configs/ has a few open models' sizes)")
        ->required();
    cmd->add_option("--seq", opts->seq, "sequence length")->required()->check(CLI::PositiveNumber);
    cmd->add_option("--batch", opts->batch, "batch (default 1)")->check(CLI::PositiveNumber);
    cmd->add_option("--out", opts->out, "the ONNX file to write")->required();
    cmd->callback([opts, &ctx] { ctx.exitCode = runMakeDecoder(*opts); });
}

} // namespace remat::app
