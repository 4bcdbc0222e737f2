#pragma once
// A Hugging Face config.json read as the decoder it describes (core/onnx/decoder_model.h), keys as
// transformers spells them: num_hidden_layers, hidden_size, num_attention_heads,
// num_key_value_heads (default: the heads), intermediate_size (default 4 x hidden), hidden_act
// (silu / swish: SwiGLU; gelu, gelu_new, gelu_pytorch_tanh: a GELU MLP), vocab_size,
// rms_norm_eps (present: RMSNorm; else layer_norm_eps / layer_norm_epsilon: LayerNorm),
// max_position_embeddings, rope_theta / model_type (rotary unless the model uses learned
// positions: gpt2, opt), tie_word_embeddings, head_dim, attention_bias. GPT-2's own names
// (n_layer, n_embd, n_head, n_inner, n_positions, activation_function) are read as GPT2Config's
// attribute_map reads them.
//   Expected<onnx::DecoderSpec> s = io::decoderSpecFromConfig(readFile("config.json"), "config.json");

#include "core/onnx/decoder_model.h"
#include "core/util/status.h"

#include <string>

namespace remat::core::io {

/// `text` is the file's contents; `what` names it in errors (a missing or malformed key, sizes
/// that do not make a decoder). Sequence and batch are left 0 / 1 for the caller.
Expected<onnx::DecoderSpec> decoderSpecFromConfig(const std::string &text, const std::string &what);

} // namespace remat::core::io
