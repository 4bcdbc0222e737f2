#pragma once
// A standard decoder-only transformer written as a graph-only ONNX file (no weights: every
// parameter is a graph input named like the Hugging Face state_dict key), as torch.onnx 1.x
// exports transformers' LLaMA / GPT-2 eager code, so that the importer, the attention fusion and
// the storage model read it like a real export. Read from a config.json by core/io/hf_config.h.
//   DecoderSpec s;  s.layers = 32;  s.hidden = 4096;  ...;  s.seq = 4096;
//   Status st = writeDecoderModel(s, "llama.onnx");
//
// One layer: norm -> q, k, v projections (optional bias) -> heads [B, H, S, Dh] -> rotary (rope)
// -> repeat_kv when K/V heads < heads (Unsqueeze / Expand / Reshape) -> MatMul(q, k^T) / sqrt(Dh)
// -> + causal mask -> Softmax -> MatMul(., v) -> o projection -> residual; norm -> MLP (SwiGLU:
// down(silu(gate(x)) * up(x)); GELU: proj(gelu(fc(x))) with biases) -> residual. RMSNorm is
// written as torch exports it (Pow, ReduceMean, Add eps, Sqrt, Reciprocal, Mul, Mul weight);
// LayerNorm as LayerNormalization (opset 17). Positions: rotary tables (Constant nodes with
// transformers' values), or a learned [max_positions, hidden] embedding gathered at 0..S-1. The
// head: final norm, then the tied embedding or lm_head.weight. The causal mask is a folded
// Trilu of a constant.

#include "core/util/status.h"

#include <cstdint>
#include <string>

namespace remat::core::onnx {

struct DecoderSpec
{
    std::string modelType = "llama"; ///< names the state_dict keys: "gpt2" or the LLaMA family
    int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0;
    int64_t headDim = 0; ///< 0: hidden / heads
    bool swiglu = true;  ///< hidden_act silu / swish -> SwiGLU; gelu* -> GELU MLP
    bool geluTanh = false;
    bool rmsNorm = true;
    double normEps = 1e-5;
    bool rope = true;
    double ropeTheta = 10000; ///< rope_theta
    int64_t maxPositions = 0; ///< learned position table rows (rope: unused)
    bool tieEmbeddings = false;
    bool qkvBias = false;    ///< Qwen2's q/k/v biases, attention_bias
    bool linearBias = false; ///< GPT-2: every linear and its MLP have biases
    int64_t seq = 0, batch = 1;
};

/// Clear errors for sizes that do not make a decoder (heads not dividing the hidden size, K/V heads
/// not dividing the heads, a sequence longer than learned positions ...).
Status validateDecoderSpec(const DecoderSpec &spec);

Status writeDecoderModel(const DecoderSpec &spec, const std::string &path);

} // namespace remat::core::onnx
