#include "core/training/tensor_parallel.h"

#include "core/ops/attention.h"

#include <fmt/format.h>

#include <numeric>
#include <string>

namespace remat::core::training {

namespace {

bool isActivationRole(TensorRole r)
{
    return r == TensorRole::Activation || r == TensorRole::SavedState || r == TensorRole::Input;
}

/// "grad:x", "grad:x#2" -> "x"; empty when not a gradient name.
std::string forwardName(const std::string &name)
{
    if (name.rfind("grad:", 0) != 0)
        return {};
    std::string base = name.substr(5);
    if (const size_t hash = base.rfind('#'); hash != std::string::npos)
        base.resize(hash);
    return base;
}

void splitAxis(Tensor &t, int axis, int64_t ranks)
{
    std::vector<ir::Dim> &d = t.shape.dims;
    if (axis < 0 || size_t(axis) >= d.size() || !d[size_t(axis)].isStatic() ||
        d[size_t(axis)].value % ranks != 0)
        return;
    d[size_t(axis)].value /= ranks;
}

} // namespace

Status shardTensorParallel(const TrainingGraph &graph, std::vector<Op> &ops,
                           std::vector<Tensor> &tensors, int64_t t, bool sequenceParallel)
{
    if (t <= 1)
        return Status::ok();
    const size_t nt = tensors.size();
    std::vector<char> split(nt, 0), weight(nt, 0), splitParam(nt, 0);
    std::vector<int> paramAxis(nt, -1);
    enum Kind : char { Other, Column, Row };
    std::vector<Kind> kind(ops.size(), Other);
    std::vector<TensorId> activationIn(ops.size());

    // Splits a weight and what it is computed from (Transpose(W) -> W).
    auto markWeight = [&](TensorId id, int axis, auto &&self) -> void {
        splitParam[id.index()] = 1;
        if (paramAxis[id.index()] < 0)
            paramAxis[id.index()] = axis;
        const Tensor &w = tensors[id.index()];
        if (!w.producer.valid())
            return;
        for (TensorId in : ops[w.producer.index()].inputs)
            if (weight[in.index()] || tensors[in.index()].role == TensorRole::Parameter)
                self(in, -1, self);
    };

    // Heads inside split regions: (node, heads, what).
    struct Heads
    {
        std::string node;
        int64_t heads;
        const char *what;
    };
    std::vector<Heads> heads;

    for (size_t i = 0; i < graph.forwardOpCount(); ++i) {
        const Op &op = ops[i];
        bool anyWeight = false, allWeight = true, anySplit = false;
        int weightInput = -1;
        for (size_t k = 0; k < op.inputs.size(); ++k) {
            const TensorId in = op.inputs[k];
            const Tensor &x = tensors[in.index()];
            if (x.role == TensorRole::Parameter || weight[in.index()]) {
                anyWeight = true;
                if (weightInput < 0)
                    weightInput = int(k);
            } else if (x.role != TensorRole::Constant) {
                allWeight = false;
                if (!activationIn[i].valid())
                    activationIn[i] = in;
                anySplit = anySplit || split[in.index()];
            }
        }
        if (anyWeight && allWeight) { // computed from weights alone: a weight
            for (TensorId out : op.outputs)
                weight[out.index()] = 1;
            continue;
        }
        const bool linear = (op.type == "MatMul" || op.type == "Gemm") && weightInput >= 0;
        const bool embedding = op.type == "Gather" && weightInput == 0;
        bool outSplit = anySplit;
        if (linear) {
            kind[i] = anySplit ? Row : Column;
            outSplit = !anySplit;
            const Tensor &w = tensors[op.inputs[size_t(weightInput)].index()];
            const bool gemm = op.type == "Gemm";
            // MatMul(x, W[K, N]); Gemm as torch writes it, W[N, K] (transB = 1)
            int axis = -1;
            if (w.shape.dims.size() == 2)
                axis = (kind[i] == Column) == gemm ? 0 : 1;
            if (weightInput == 0)
                axis = -1; // W @ x: the shape is left as is
            markWeight(op.inputs[size_t(weightInput)], axis, markWeight);
        } else if (embedding) {
            outSplit = false;
            markWeight(op.inputs[0], 0, markWeight);
        } else if (anySplit && weightInput >= 0) {
            for (TensorId in : op.inputs)
                if (tensors[in.index()].role == TensorRole::Parameter || weight[in.index()])
                    markWeight(in, int(tensors[in.index()].shape.dims.size()) - 1, markWeight);
        }
        for (TensorId out : op.outputs)
            split[out.index()] = outSplit;

        if (!anySplit)
            continue;
        // head counts of the split region
        if (op.type == ops::kAttentionOp && op.inputs.size() >= 3) {
            const char *what[] = {"query heads", "key heads", "value heads"};
            // onnxruntime's [B, S, heads x D] layout says its heads in attributes
            const int64_t n = op.fusedNode ? op.fusedNode->attrInt("num_heads", 0) : 0;
            if (n > 0) {
                heads.push_back({op.name, n, what[0]});
                heads.push_back({op.name, op.fusedNode->attrInt("kv_num_heads", n), what[1]});
            }
            for (size_t k = 0; k < 3 && n == 0; ++k) {
                const ir::Shape &s = tensors[op.inputs[k].index()].shape;
                if (s.dims.size() == 4 && s.dims[1].isStatic())
                    heads.push_back({op.name, s.dims[1].value, what[k]});
            }
        } else if (op.type == "Softmax" && !op.inputs.empty()) {
            const ir::Shape &s = tensors[op.inputs[0].index()].shape;
            if (s.dims.size() == 4 && s.dims[1].isStatic())
                heads.push_back({op.name, s.dims[1].value, "attention heads of the scores"});
        } else if (op.type == "Reshape" && !op.inputs.empty() && !op.outputs.empty()) {
            const ir::Shape &in = tensors[op.inputs[0].index()].shape;
            const ir::Shape &out = tensors[op.outputs[0].index()].shape;
            const size_t r = out.dims.size();
            if (in.isStatic() && out.isStatic() && r == in.dims.size() + 1 && r >= 3 &&
                out.dims[r - 2].value * out.dims[r - 1].value == in.dims.back().value &&
                out.dims[r - 2].value > 1)
                heads.push_back({op.name, out.dims[r - 2].value, "heads"});
        }
    }

    for (const Heads &h : heads) {
        if (h.heads % t == 0)
            continue;
        int64_t g = 0;
        for (const Heads &x : heads)
            g = std::gcd(g, x.heads);
        std::string divisors;
        for (int64_t d = 1; d <= g; ++d)
            if (g % d == 0)
                divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
        return makeError(
            StatusCode::InvalidArgument,
            fmt::format("--tensor-parallel {}: node '{}' splits attention into {} {}, which {} "
                        "ranks cannot share (Megatron-LM gives each rank whole heads, query and "
                        "K/V heads alike): give --tensor-parallel one of {}",
                        t, h.node, h.heads, h.what, t, divisors));
    }

    // Communication workspace (sequence parallelism), from the full sizes.
    if (sequenceParallel) {
        for (size_t i = 0; i < graph.forwardOpCount(); ++i) {
            if (kind[i] == Other)
                continue;
            const OpId bwd = graph.backwardOf(OpId(int32_t(i)));
            if (kind[i] == Column && activationIn[i].valid()) {
                const int64_t full = tensors[activationIn[i].index()].bytes;
                ops[i].workspaceBytes += full; // all-gathered input
                if (bwd.valid())
                    ops[bwd.index()].workspaceBytes += 2 * full; // re-gathered, full input grad
            } else if (kind[i] == Row && !ops[i].outputs.empty()) {
                const int64_t full = tensors[ops[i].outputs[0].index()].bytes;
                ops[i].workspaceBytes += full; // before the reduce-scatter
                if (bwd.valid())
                    ops[bwd.index()].workspaceBytes += full; // all-gathered output gradient
            }
        }
    }

    // Per-rank bytes. A gradient follows the forward tensor of the value it is the gradient of
    // (by source value; by name where the builder left the source unset).
    std::vector<TensorId> byValue;
    for (const Tensor &x : tensors)
        if (x.source.valid() && x.role != TensorRole::ActivationGrad &&
            x.role != TensorRole::ParameterGrad && x.role != TensorRole::Loss) {
            if (byValue.size() <= x.source.index())
                byValue.resize(x.source.index() + 1);
            if (!byValue[x.source.index()].valid())
                byValue[x.source.index()] = x.id;
        }
    auto forwardTensor = [&](const Tensor &grad) -> const TensorId * {
        if (grad.source.valid() && grad.source.index() < byValue.size() &&
            byValue[grad.source.index()].valid())
            return &byValue[grad.source.index()];
        return graph.findTensor(forwardName(grad.name));
    };
    for (Tensor &x : tensors) {
        bool divide = false;
        const size_t i = x.id.index();
        switch (x.role) {
        case TensorRole::Parameter: divide = splitParam[i]; break;
        case TensorRole::Activation:
        case TensorRole::SavedState:
            divide = weight[i] ? bool(splitParam[i]) : split[i] || sequenceParallel;
            break;
        case TensorRole::ActivationGrad:
        case TensorRole::ParameterGrad: {
            const TensorId *f = forwardTensor(x);
            if (!f)
                break;
            const Tensor &fw = tensors[f->index()];
            if (fw.role == TensorRole::Parameter || weight[f->index()])
                divide = splitParam[f->index()];
            else if (isActivationRole(fw.role))
                divide = split[f->index()] || (sequenceParallel && fw.role != TensorRole::Input);
            break;
        }
        default: break;
        }
        if (!divide)
            continue;
        x.bytes = shareOf(x.bytes, t);
        if (x.role == TensorRole::Parameter)
            splitAxis(x, paramAxis[i], t);
    }
    return Status::ok();
}

} // namespace remat::core::training
