#pragma once
// The attention fusion (--attention sdpa): every attention pattern of the forward graph becomes one
// ScaledDotProductAttention op (core/ops/attention.h), which keeps what PyTorch's flash /
// memory-efficient attention keeps for backward (Q, K, V, the output, a float32 log-sum-exp per
// query row, the dropout RNG state), never the S x S scores and probabilities.
//   FusionResult r = fuseAttention(view);   // view: fusions/fusion.h
//
// The pattern, as torch.onnx (1.x and the 2.x dynamo exporter), tf2onnx and onnxruntime's
// fusions write it (tests/python/attention_spellings.py), each intermediate read by the next node
// alone:
//   MatMul(Q', K') -> [Mul / Div by a constant scalar | Add(bias) | Where(mask, ., fill) |
//   Cast to its own dtype]* -> Softmax(last axis) -> [Cast]* -> [Dropout] -> [Cast]* ->
//   MatMul(., V')
// where Q' is Q, or Q times / over a constant scalar (torch 2's math path scales Q and K
// separately); K' is K^T: a Transpose swapping K's last two axes, or the dynamo exporter's
// Reshape [-1, Sk, D] -> Transpose(0, 2, 1) -> Reshape (absorbed; K read as [..., Sk, D]), any
// other tensor (read as K^T [..., D, Sk], e.g. GPT-2's permute(0, 2, 3, 1)), either possibly
// scaled by a constant scalar; K and V may be repeated over query-head groups as transformers'
// repeat_kv writes it (Unsqueeze(axis 2) -> Expand -> Reshape; tf.repeat's Tile in place of the
// Expand), absorbed so that K and V keep their own number of heads (grouped-query attention). At
// most one bias and one mask.
// A Softmax between two MatMuls that does not fit is reported in FusionResult::notFused with the
// reason (the probabilities read elsewhere, a scale that is not a constant, ...).

#include "core/training/fusions/fusion.h"
#include "core/util/status.h"

namespace remat::core::training::fusions {

FusionResult fuseAttention(const FusionView &view);

/// The attention nodes of the file, each as one ScaledDotProductAttention op in any --attention
/// mode (the file already says "fused": eager keeps what the fused kernel keeps): ONNX Attention
/// (opset 23; 4-D, or 3-D with q_num_heads / kv_num_heads; is_causal; a boolean or additive
/// attn_mask), com.microsoft MultiHeadAttention (3-D Q, K, V; unidirectional; attention_bias;
/// the projections' bias),
/// GroupQueryAttention (causal, K / V at their own heads) and Attention (the Q, K, V projection
/// inside: the fused op's `projected` form). What is not modelled (a KV cache, do_rotary, local
/// windows, softcap, packed QKV, key_padding_mask / mask_index ...) is an Unsupported error naming the node, the attribute or input, and
/// the way out.
Expected<std::vector<FusedPattern>> attentionNodes(const FusionView &view);

} // namespace remat::core::training::fusions
