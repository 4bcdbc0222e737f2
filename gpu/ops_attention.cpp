// ScaledDotProductAttention (core/ops/attention.h), the fused attention of --attention sdpa (and of
// onnxruntime's MultiHeadAttention / GroupQueryAttention and ONNX Attention nodes), and its
// gradient: gpu/attention_plan.h turns the node into the tile kernels' problem, and
// gpu/kernels/attention.cu runs it flash-style, keeping what the CPU reference keeps (O and the
// float32 log-sum-exp, never the S x S scores). The backward's float accumulators are the gradient
// tensors themselves for float32 storage (zeroed, then added into); half storage accumulates in
// private scratch and rounds once. Private scratch besides: the per-batch operand offsets and
// D = rowsum(dO * O), [batches, Sq] floats (flash attention's softmax_d). Cases the kernels do not
// cover (attentionPlanOf) are refused by name, at prepare and here.
#include "gpu/attention_plan.h"
#include "gpu/kernels/attention.h"
#include "gpu/ops_internal.h"

#include "core/ir/graph.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace remat::gpu {

using core::Expected;
using core::makeError;
using core::Status;
using core::StatusCode;
using kernels::AttnStorage;

Expected<AttentionPlan> attentionPlanOf(const std::string &opName, const core::ir::Node &node,
                                        const std::vector<std::vector<int64_t>> &shapes, int device)
{
    auto g = core::ops::attentionGeometry(node, shapes);
    if (!g)
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("{}: {}", opName, g.status().message()));
    AttentionPlan plan = planAttention(*g);
    if (!plan.refusal.empty())
        return makeError(StatusCode::Unsupported,
                         fmt::format("op '{}': the CUDA fused attention does not cover {}", opName,
                                     plan.refusal));
    if (device < 0 && cudaGetDevice(&device) != cudaSuccess)
        device = 0;
    int limit = 0;
    if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
        cudaSuccess) {
        const int64_t need = std::max(kernels::attentionSharedBytes(g->d, g->dv, false),
                                      kernels::attentionSharedBytes(g->d, g->dv, true));
        if (need > limit)
            return makeError(StatusCode::Unsupported,
                             fmt::format("op '{}': head sizes {} / {} need {} B of shared memory "
                                         "per block, the device has {} B; run it with --backend "
                                         "cpu, or on CUDA with --attention eager",
                                         opName, g->d, g->dv, need, limit));
    }
    return plan;
}

namespace {

Expected<AttnStorage> storageOf(const OpContext &c, const DView *v, const char *what)
{
    REMAT_RETURN_IF_ERROR(c.require(v, what));
    switch (v->dtype) {
    case core::ir::DataType::Float: return AttnStorage::Float;
    case core::ir::DataType::Float16: return AttnStorage::Half;
    case core::ir::DataType::BFloat16: return AttnStorage::BFloat16;
    default:
        return c.unsupported(fmt::format("{} is {}; the fused attention runs float32, float16 "
                                         "and bfloat16",
                                         what, core::ir::dataTypeName(v->dtype)));
    }
}

/// The plan of this call, its storage type, and its offsets on the device.
struct Prepared
{
    AttentionPlan plan;
    AttnStorage storage = AttnStorage::Float;
    bool biasIsStorage = false;
    const void *bias = nullptr;
    const bool *mask = nullptr;
};

Expected<Prepared> prepare(OpContext &c)
{
    if (!c.node)
        return c.error("no node attributes");
    std::vector<std::vector<int64_t>> shapes(6);
    for (size_t k = 0; k < 6; ++k)
        if (const DView *v = c.input(k); v && (v->data || v->numel() == 0))
            shapes[k] = v->shape;
    Prepared p;
    REMAT_ASSIGN_OR_RETURN(p.plan, attentionPlanOf(c.opName, *c.node, shapes, -1));
    REMAT_ASSIGN_OR_RETURN(p.storage, storageOf(c, c.input(0), "Q"));
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "K"));
    REMAT_RETURN_IF_ERROR(c.require(c.input(2), "V"));
    for (size_t k : {size_t(1), size_t(2)})
        if (c.input(k)->dtype != c.input(0)->dtype)
            return c.unsupported(fmt::format("Q, K and V must share a dtype ({} and {})",
                                             core::ir::dataTypeName(c.input(0)->dtype),
                                             core::ir::dataTypeName(c.input(k)->dtype)));
    if (p.plan.hasBias) {
        const DView *bias = c.input(3);
        REMAT_RETURN_IF_ERROR(c.require(bias, "bias"));
        p.biasIsStorage = bias->dtype == c.input(0)->dtype;
        if (!p.biasIsStorage && bias->dtype != core::ir::DataType::Float)
            return c.unsupported("the bias must be float32 or Q's dtype");
        p.bias = bias->data;
    }
    if (p.plan.hasMask) {
        const DView *mask = c.input(4);
        REMAT_RETURN_IF_ERROR(c.require(mask, "mask"));
        if (mask->dtype != core::ir::DataType::Bool)
            return c.error("the mask must be bool");
        p.mask = mask->as<bool>();
    }
    const int64_t bytes = int64_t(p.plan.offsets.size() * sizeof(int64_t));
    REMAT_ASSIGN_OR_RETURN(void *offsets, c.rt->scratch(std::max<int64_t>(bytes, 1)));
    // From pageable memory the copy has taken the host vector in before it returns.
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(offsets, p.plan.offsets.data(), bytes));
    p.plan.bind(static_cast<const int64_t *>(offsets));
    return p;
}

Status attentionF(OpContext &c)
{
    REMAT_ASSIGN_OR_RETURN(Prepared p, prepare(c));
    const kernels::attn::Problem &pr = p.plan.problem;
    DView *y = c.output(0), *lse = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (y->numel() != pr.batches * pr.sq * pr.dv || y->dtype != c.input(0)->dtype)
        return c.error("output size or dtype mismatch");
    if (lse && lse->data) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(lse, "log-sum-exp"));
        if (lse->numel() != pr.batches * pr.sq)
            return c.error("log-sum-exp size mismatch");
    }
    return c.check(kernels::attentionForward(c.rt->stream(), pr, p.storage, c.input(0)->data,
                                             c.input(1)->data, c.input(2)->data, p.bias,
                                             p.biasIsStorage, p.mask, y->data,
                                             lse && lse->data ? lse->f() : nullptr),
                   "fused attention forward");
}

Status attentionB(OpContext &c)
{
    REMAT_ASSIGN_OR_RETURN(Prepared p, prepare(c));
    const kernels::attn::Problem &pr = p.plan.problem;
    DView *y = c.output(0), *lse = c.output(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "saved output"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(lse, "log-sum-exp"));
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    if (y->dtype != c.input(0)->dtype || dy->dtype != c.input(0)->dtype ||
        y->numel() != dy->numel())
        return c.error("output gradient size or dtype mismatch");
    cudaStream_t s = c.rt->stream();
    REMAT_ASSIGN_OR_RETURN(void *delta,
                           c.rt->scratch(std::max<int64_t>(pr.batches * pr.sq * 4, 1)));
    REMAT_RETURN_IF_ERROR(c.check(kernels::attentionRowDelta(s, pr, p.storage, y->data, dy->data,
                                                             static_cast<float *>(delta)),
                                  "fused attention row delta"));
    // float accumulators: the gradient itself when float32, else scratch rounded afterwards
    float *acc[4] = {};
    AttnStorage storeAs[4] = {p.storage, p.storage, p.storage,
                              p.biasIsStorage ? p.storage : AttnStorage::Float};
    for (size_t k = 0; k < 4; ++k) {
        DView *d = c.inputGrad(k);
        if (!d || !d->data || (k == 3 && !p.plan.hasBias))
            continue;
        if (d->numel() != c.input(k)->numel() || d->dtype != c.input(k)->dtype)
            return c.error("gradient size or dtype mismatch");
        if (storeAs[k] == AttnStorage::Float) {
            acc[k] = d->f();
        } else {
            REMAT_ASSIGN_OR_RETURN(void *scratch,
                                   c.rt->scratch(std::max<int64_t>(d->numel() * 4, 1)));
            acc[k] = static_cast<float *>(scratch);
        }
        REMAT_RETURN_IF_ERROR(zeroDevice(c, acc[k], d->numel() * 4));
    }
    REMAT_RETURN_IF_ERROR(
        c.check(kernels::attentionBackward(s, pr, p.storage, c.input(0)->data, c.input(1)->data,
                                           c.input(2)->data, p.bias, p.biasIsStorage, p.mask,
                                           dy->data, lse->f(), static_cast<const float *>(delta),
                                           acc[0], acc[1], acc[2], acc[3]),
                "fused attention backward"));
    for (size_t k = 0; k < 4; ++k)
        if (acc[k] && storeAs[k] != AttnStorage::Float)
            REMAT_RETURN_IF_ERROR(
                c.check(kernels::attentionStore(s, storeAs[k], acc[k], c.inputGrad(k)->data,
                                                c.inputGrad(k)->numel()),
                        "fused attention gradient store"));
    return Status::ok();
}

} // namespace

void addAttentionOps(OpTable &t)
{
    t[core::ops::kAttentionOp] = attentionF;
    t[std::string(core::ops::kAttentionOp) + "Grad"] = attentionB;
}

} // namespace remat::gpu
