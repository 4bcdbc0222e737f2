#pragma once
// The attention fusion (--attention sdpa): every attention pattern of the forward graph becomes one
// ScaledDotProductAttention op (core/ops/attention.h), which keeps what PyTorch's flash /
// memory-efficient attention keeps for backward (Q, K, V, the output, a float32 log-sum-exp per
// query row, the dropout RNG state), never the S x S scores and probabilities.
//   FusionResult r = fuseAttention(view);   // view: fusions/fusion.h
//
// The pattern, as torch.onnx (1.x and the 2.x dynamo exporter), tf2onnx and onnxruntime's
// fusions write it, each intermediate read by the next node alone:
//   MatMul(Q', K') -> [Mul / Div by a constant scalar | Add(bias) | Where(mask, ., fill) |
//   Cast to its own dtype]* -> Softmax(last axis) -> [Cast]* -> [Dropout] -> [Cast]* ->
//   MatMul(., V')
// where Q' is Q, or Q times / over a constant scalar (torch 2's math path scales Q and K
// separately); K' is K^T: a Transpose swapping K's last two axes (absorbed; K read as
// [..., Sk, D]), any other tensor (read as K^T [..., D, Sk], e.g. GPT-2's permute(0, 2, 3, 1)),
// either possibly scaled by a constant scalar; K and V may be repeated over query-head groups as
// transformers' repeat_kv writes it (Unsqueeze(axis 2) -> Expand -> Reshape), absorbed so that K
// and V keep their own number of heads (grouped-query attention). At most one bias and one mask.
// A Softmax between two MatMuls that does not fit is reported in FusionResult::notFused with the
// reason (the probabilities read elsewhere, a scale that is not a constant, ...).

#include "core/training/fusions/fusion.h"
#include "core/util/status.h"

namespace remat::core::training::fusions {

FusionResult fuseAttention(const FusionView &view);

/// ONNX's own Attention nodes (opset 23) in their plain form (4-D Q, K, V; no mask, past or
/// causal flag): each as one ScaledDotProductAttention op, in any --attention mode (the file
/// already says "fused"). Other forms, and onnxruntime's com.microsoft MultiHeadAttention /
/// GroupQueryAttention, are an Unsupported error naming the node and what is missing.
Expected<std::vector<FusedPattern>> attentionNodes(const FusionView &view);

} // namespace remat::core::training::fusions
