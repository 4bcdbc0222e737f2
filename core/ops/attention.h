#pragma once
// ScaledDotProductAttention: not an ONNX op, the op the builder fuses an attention pattern into
// with --attention sdpa (core/training/fusions/attention.h), as F.scaled_dot_product_attention's
// flash / memory-efficient kernels run it. Its node is described once here and read by the shape
// rule, the gradient rule and the kernels.
//   Expected<AttentionGeometry> g = attentionGeometry(node, {q, k, v, bias, mask shapes});
//   g->outShape();  g->batches;  g->sq;  g->sk;
//
// Inputs: 0 Q [..., Sq, D]; 1 K [..., Sk, D] (k_transposed = 1: K^T [..., D, Sk], the layout the
// file's MatMul read); 2 V [..., Sk, Dv]; 3 optional additive bias and 4 optional boolean mask,
// each broadcastable to [..., Sq, Sk]. The leading dims of every input divide the output's
// (broadcasting, and grouped-query attention: K / V with fewer heads, each serving consecutive
// query heads, as transformers' repeat_kv lays them out).
// Attributes: `logit_ops` (ints) and `logit_values` (floats, one per op): what the file does to
// Q K^T before the Softmax, in order: 1 multiply by the value, 2 add the bias, 3 where the mask
// is true keep, else the value, 4 where the mask is false keep, else the value, 5 causal: where
// the key's index exceeds the query's (top-left aligned, as ONNX Attention's is_causal) the
// value. `dropout`: the ratio of the Dropout after the Softmax (0: none). `num_heads` (and
// `kv_num_heads`, default num_heads): when given, Q, K and V are laid out [B, S, heads * D] as
// onnxruntime's MultiHeadAttention / GroupQueryAttention and ONNX Attention's 3-D form read them
// (K never transposed); the output is [B, Sq, num_heads * Dv], the log-sum-exp [B, num_heads, Sq],
// and a bias or mask is read [B, heads, Sq, Sk] (broadcastable) as in the 4-D form.
// `projected` 1 (onnxruntime's com.microsoft Attention, whose Q, K, V projection is inside the
// node; needs num_heads): inputs 0 X [B, S, In], 1 W [In, Dq + Dk + Dv] (`qkv_hidden_sizes`, or
// three equal parts), 2 optional projection bias [Dq + Dk + Dv]; Q, K, V = X W + bias, split, in
// the [B, S, heads * D] layout; saved state 2 is then that QKV [B, S, Dq + Dk + Dv] (no dropout),
// which the backward reads as flash attention reads Q, K and V, and X and W for the projection's
// gradient. Input 5, optional, in the [B, S, heads * D] layout (not projected): a bias
// [Dq + Dk + Dv] added to Q, K and V before the attention (MultiHeadAttention's `bias`: the
// projections' biases folded into the node).
// Outputs: 0 the attention output [..., Sq, Dv]; saved state 1 the float32 log-sum-exp of each
// query row [..., Sq] (flash attention's softmax_lse), 2 the dropout RNG state (int64 [2]: seed
// and offset, philox_seed / philox_offset) when dropout > 0.

#include "core/ir/graph.h"
#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::ops {

inline constexpr const char *kAttentionOp = "ScaledDotProductAttention";
/// onnxruntime's contrib ops, in the table under their domain-qualified names (shape rules; the
/// builder turns MultiHeadAttention / GroupQueryAttention into the fused op in any mode,
/// core/training/fusions/attention.h, and refuses Attention, whose projection is inside).
inline constexpr const char *kMsMultiHeadAttention = "com.microsoft.MultiHeadAttention";
inline constexpr const char *kMsGroupQueryAttention = "com.microsoft.GroupQueryAttention";
inline constexpr const char *kMsAttention = "com.microsoft.Attention";

enum class LogitOp : int64_t {
    Scale = 1,
    AddBias = 2,
    MaskKeepTrue = 3,
    MaskKeepFalse = 4,
    Causal = 5
};

/// The sizes of one attention call, from its node and its inputs' static shapes.
struct AttentionGeometry
{
    std::vector<int64_t> lead; ///< the output's leading dims (batch, heads, ...)
    int64_t batches = 1;       ///< their product
    int64_t sq = 0, sk = 0, d = 0, dv = 0;
    bool kTransposed = false;
    /// Q, K, V (and the output) laid out [B, S, heads * D]: the dims above are per head, lead is
    /// [B, heads], and the kernels permute to and from [B, heads, S, D].
    bool seqFirst = false;
    int64_t heads = 0, kvHeads = 0;
    /// Q, K, V projected inside the op from X [B, S, inHidden] (com.microsoft Attention).
    bool projected = false, projectionBias = false;
    bool qkvBias = false; ///< input 5: [Dq + Dk + Dv] added to Q, K, V ([B, S, heads * D] only)
    int64_t inHidden = 0, qkvHidden = 0; ///< In and Dq + Dk + Dv
    std::vector<int64_t> qkvShape() const { return {lead.empty() ? 0 : lead[0], sq, qkvHidden}; }
    /// Per input 0..4: its leading dims padded on the left with 1 to lead's rank; for the bias and
    /// the mask, their [Sq, Sk] dims' sizes (1 or the full size) are `biasRows` / `biasCols`.
    std::vector<int64_t> leadOf[5];
    int64_t rowsOf[5] = {}, colsOf[5] = {};
    bool has[5] = {};
    std::vector<LogitOp> ops;
    std::vector<double> values;
    double dropout = 0;

    std::vector<int64_t> outShape() const;
    std::vector<int64_t> lseShape() const;
    /// Offset (in [..., rows, cols] matrices) of input `k`'s matrix for output batch `b`.
    int64_t matrixOf(int k, int64_t b) const;
    /// Q K^T and P V, the forward's two products (2 x MACs), and the five of the backward (the
    /// scores recomputed, dV, dP, dQ, dK): flash attention's FLOPs.
    double forwardFlops() const;
    double backwardFlops() const;
};

/// `shapes`: the static shapes of the node's inputs (absent ones empty). Errors name the node and
/// the mismatch.
Expected<AttentionGeometry> attentionGeometry(const ir::Node &node,
                                              const std::vector<std::vector<int64_t>> &shapes);

} // namespace remat::core::ops
