#include "core/io/hf_config.h"

#include "core/util/reader_guard.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>

namespace remat::core::io {

namespace {

using nlohmann::json;

Expected<onnx::DecoderSpec> parse(const std::string &text, const std::string &what)
{
    auto bad = [&](const std::string &m) {
        return makeError(StatusCode::InvalidArgument, what + ": " + m);
    };
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return makeError(StatusCode::ParseError, what + ": not a JSON object");
    // a key, or its GPT-2 alias; nullopt when neither is there
    auto find = [&](const char *key, const char *alias = nullptr) -> const json * {
        if (auto it = j.find(key); it != j.end() && !it->is_null())
            return &*it;
        if (alias)
            if (auto it = j.find(alias); it != j.end() && !it->is_null())
                return &*it;
        return nullptr;
    };
    std::string error;
    auto whole = [&](const char *key, const char *alias, bool required,
                     int64_t fallback) -> int64_t {
        const json *v = find(key, alias);
        if (!v) {
            if (required && error.empty())
                error = fmt::format("missing \"{}\"{}", key,
                                    alias ? fmt::format(" (or \"{}\")", alias) : std::string());
            return fallback;
        }
        if (!v->is_number_integer() || v->get<int64_t>() <= 0) {
            if (error.empty())
                error =
                    fmt::format("\"{}\" must be a positive whole number, not {}", key, v->dump());
            return fallback;
        }
        return v->get<int64_t>();
    };
    onnx::DecoderSpec s;
    if (const json *t = find("model_type"); t && t->is_string())
        s.modelType = t->get<std::string>();
    s.layers = whole("num_hidden_layers", "n_layer", true, 0);
    s.hidden = whole("hidden_size", "n_embd", true, 0);
    s.heads = whole("num_attention_heads", "n_head", true, 0);
    s.vocab = whole("vocab_size", nullptr, true, 0);
    s.kvHeads = whole("num_key_value_heads", nullptr, false, s.heads);
    s.ffn = whole("intermediate_size", "n_inner", false, 4 * s.hidden);
    s.headDim = whole("head_dim", nullptr, false, 0);
    s.maxPositions = whole("max_position_embeddings", "n_positions", false, 0);
    if (!error.empty())
        return bad(error);
    std::string act = "silu";
    if (const json *a = find("hidden_act", "activation_function")) {
        if (!a->is_string())
            return bad("\"hidden_act\" must be a string");
        act = a->get<std::string>();
    }
    if (act == "silu" || act == "swish" || act == "swiglu") {
        s.swiglu = true;
    } else if (act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh" ||
               act == "gelu_fast" || act == "gelu_python") {
        s.swiglu = false;
        s.geluTanh = act != "gelu" && act != "gelu_python";
    } else {
        return bad(fmt::format("hidden_act \"{}\" is not supported (silu, swish, gelu, gelu_new, "
                               "gelu_pytorch_tanh)",
                               act));
    }
    if (const json *e = find("rms_norm_eps"); e && e->is_number()) {
        s.rmsNorm = true;
        s.normEps = e->get<double>();
    } else {
        s.rmsNorm = false;
        if (const json *l = find("layer_norm_eps", "layer_norm_epsilon"); l && l->is_number())
            s.normEps = l->get<double>();
    }
    // learned positions: GPT-2 style configs (no rope_theta, position table given)
    const bool learned =
        s.modelType == "gpt2" || s.modelType == "opt" || s.modelType == "gpt_bigcode";
    s.rope = !learned;
    if (const json *t = find("rope_theta"); t && t->is_number())
        s.ropeTheta = t->get<double>();
    if (learned && s.maxPositions <= 0)
        return bad("learned positions need \"max_position_embeddings\" (or \"n_positions\")");
    s.tieEmbeddings = s.modelType == "gpt2"; // GPT2Config's default
    if (const json *t = find("tie_word_embeddings"); t && t->is_boolean())
        s.tieEmbeddings = t->get<bool>();
    if (const json *b = find("attention_bias"); b && b->is_boolean())
        s.qkvBias = b->get<bool>();
    if (s.modelType == "qwen2")
        s.qkvBias = true; // Qwen2's q / k / v projections have biases (not in its config)
    s.linearBias = s.modelType == "gpt2";
    if (s.modelType == "gpt2" && s.kvHeads != s.heads)
        return bad("a gpt2 config has as many K/V heads as heads");
    s.seq = 1; // checked by the caller's sizes; validate the rest here
    if (Status st = onnx::validateDecoderSpec(s); !st.isOk())
        return bad(st.message());
    s.seq = 0;
    return s;
}

} // namespace

Expected<onnx::DecoderSpec> decoderSpecFromConfig(const std::string &text, const std::string &what)
{
    return guardReader(what, [&] { return parse(text, what); });
}

} // namespace remat::core::io
