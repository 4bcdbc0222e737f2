#pragma once
// What the CUDA fused attention runs for one ScaledDotProductAttention node: the tile kernels'
// Problem (gpu/kernels/attention_tile.h) and its per-batch operand offsets, from the node's
// AttentionGeometry, or the reason the kernels do not run it. Header-only and free of CUDA, so
// the CPU test of the tiled algorithm (tests/exec/tst_attention_tiles.cpp) builds the same plan.
//   AttentionPlan plan = planAttention(geometry);   // plan.refusal non-empty: not covered
//   plan.bind(plan.offsets.data());  forwardTiled(plan.problem, ...);

#include "core/ops/attention.h"
#include "core/util/status.h"
#include "gpu/kernels/attention_tile.h"

#include <string>
#include <vector>

namespace remat::gpu {

struct AttentionPlan
{
    kernels::attn::Problem problem;
    /// Per output batch, the element offset of its matrix in Q, K, V, the output (and dO), the
    /// bias and the mask: six blocks of `batches` values (bias / mask blocks 0 when absent).
    std::vector<int64_t> offsets;
    bool hasBias = false, hasMask = false;
    /// Non-empty: a case the CUDA kernels do not cover, with the way out.
    std::string refusal;

    /// Points the problem's operands at `base`, a copy of `offsets` (host or device).
    void bind(const int64_t *base)
    {
        const int64_t n = problem.batches;
        problem.q.offset = base;
        problem.k.offset = base + n;
        problem.v.offset = base + 2 * n;
        problem.o.offset = base + 3 * n;
        problem.biasOffset = base + 4 * n;
        problem.maskOffset = base + 5 * n;
    }
};

/// The plan of one call. Not covered (refusal set): dropout > 0 (the CPU reference draws the
/// keep mask with a host std::mt19937_64 over the whole call, which a device kernel cannot
/// replay without materialising the S x S mask the fused op exists to avoid), the Q, K, V
/// projection inside the op (com.microsoft Attention), the Q, K, V bias input (MultiHeadAttention's
/// `bias`), more than kMaxLogitOps logit ops.
inline AttentionPlan planAttention(const core::ops::AttentionGeometry &g)
{
    namespace attn = kernels::attn;
    AttentionPlan plan;
    if (g.dropout > 0)
        plan.refusal = "attention dropout (the CPU reference's mask comes from a host generator "
                       "over the whole call, which the CUDA kernel does not replay); run it with "
                       "--backend cpu, or on CUDA with --attention eager (the CUDA Dropout op)";
    else if (g.projected)
        plan.refusal = "the Q, K, V projection inside the node (com.microsoft Attention); run it "
                       "with --backend cpu";
    else if (g.qkvBias)
        plan.refusal = "the Q, K, V bias input (MultiHeadAttention's bias); run it with --backend "
                       "cpu";
    else if (g.ops.size() > size_t(attn::kMaxLogitOps))
        plan.refusal = "more than 8 ops between Q K^T and the Softmax; run it with --backend cpu";
    if (!plan.refusal.empty())
        return plan;
    attn::Problem &p = plan.problem;
    p.batches = g.batches;
    p.sq = g.sq;
    p.sk = g.sk;
    p.d = g.d;
    p.dv = g.dv;
    p.nOps = int(g.ops.size());
    for (size_t o = 0; o < g.ops.size(); ++o) {
        p.ops[o] = int(g.ops[o]);
        p.values[o] = float(g.values[o]);
    }
    plan.hasBias = g.has[3];
    plan.hasMask = g.has[4];
    p.biasRows = g.has[3] ? g.rowsOf[3] : 1;
    p.biasCols = g.has[3] ? g.colsOf[3] : 1;
    p.maskRows = g.has[4] ? g.rowsOf[4] : 1;
    p.maskCols = g.has[4] ? g.colsOf[4] : 1;
    const int64_t n = g.batches;
    plan.offsets.assign(size_t(6 * n), 0);
    // [B, S, heads * D]: matrix m = batch * heads + head starts at batch * S * heads * D + head * D
    const auto seqFirst = [&](int64_t m, int64_t heads, int64_t s, int64_t width) {
        return (m / heads) * s * heads * width + (m % heads) * width;
    };
    for (int64_t b = 0; b < n; ++b) {
        int64_t *at = plan.offsets.data() + b;
        if (g.seqFirst) {
            at[0] = seqFirst(g.matrixOf(0, b), g.heads, g.sq, g.d);
            at[n] = seqFirst(g.matrixOf(1, b), g.kvHeads, g.sk, g.d);
            at[2 * n] = seqFirst(g.matrixOf(2, b), g.kvHeads, g.sk, g.dv);
            at[3 * n] = seqFirst(b, g.heads, g.sq, g.dv);
        } else {
            at[0] = g.matrixOf(0, b) * g.sq * g.d;
            at[n] = g.matrixOf(1, b) * g.sk * g.d;
            at[2 * n] = g.matrixOf(2, b) * g.sk * g.dv;
            at[3 * n] = b * g.sq * g.dv;
        }
        if (g.has[3])
            at[4 * n] = g.matrixOf(3, b) * g.rowsOf[3] * g.colsOf[3];
        if (g.has[4])
            at[5 * n] = g.matrixOf(4, b) * g.rowsOf[4] * g.colsOf[4];
    }
    p.q = {nullptr, g.seqFirst ? g.heads * g.d : g.d, 1};
    p.o = {nullptr, g.seqFirst ? g.heads * g.dv : g.dv, 1};
    p.v = {nullptr, g.seqFirst ? g.kvHeads * g.dv : g.dv, 1};
    if (g.kTransposed)
        p.k = {nullptr, 1, g.sk}; // K^T [D, Sk]: key j, element e at e * Sk + j
    else
        p.k = {nullptr, g.seqFirst ? g.kvHeads * g.d : g.d, 1};
    plan.bind(plan.offsets.data());
    return plan;
}

/// planAttention for a node and its inputs' shapes, as the CUDA backend runs it (defined in
/// gpu/ops_attention.cpp): Unsupported naming the op, what is not covered and the way out (a
/// refusal, or head sizes whose tiles exceed `device`'s shared memory; -1: the current device).
core::Expected<AttentionPlan> attentionPlanOf(const std::string &opName, const core::ir::Node &node,
                                              const std::vector<std::vector<int64_t>> &shapes,
                                              int device);

} // namespace remat::gpu
