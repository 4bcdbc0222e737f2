#include "core/training/autocast.h"

#include "core/ir/graph.h"
#include "core/ops/autocast_composite.h"

#include <fmt/format.h>

#include <algorithm>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace remat::core::training {

namespace {

using ops::AutocastPolicy;

int64_t elementsOf(const Tensor &t)
{
    const int64_t size = ir::elementSize(t.dtype);
    return size > 0 ? t.bytes / size : 0;
}

void retype(Tensor &t, ir::DataType d)
{
    if (t.dtype == d)
        return;
    const int64_t n = elementsOf(t);
    t.dtype = d;
    t.bytes = n * ir::elementSize(d);
}

/// autocast's is_eligible: a floating-point tensor that is not float64.
bool eligible(ir::DataType d) { return ir::isFloatingPoint(d) && d != ir::DataType::Double; }

/// torch.promote_types over float32, bfloat16 and float16 (the two halves promote to float32).
ir::DataType promote(ir::DataType a, ir::DataType b)
{
    if (a == b)
        return a;
    return ir::DataType::Float;
}

const char *shortName(ir::DataType d)
{
    switch (d) {
    case ir::DataType::BFloat16: return "bf16";
    case ir::DataType::Float16: return "fp16";
    case ir::DataType::Float: return "fp32";
    default: return "cast";
    }
}

/// Ops that lay a weight out without computing (the exporter's Transpose of a Linear weight ...):
/// their result is the weight itself to autocast's cache (summarize's rule for weight views).
bool isWeightLayout(const std::string &type)
{
    static const std::set<std::string> k = {"Transpose", "Reshape", "Unsqueeze", "Squeeze",
                                            "Flatten",   "Slice",   "Split",     "Concat",
                                            "Identity",  "Expand",  "Gather"};
    return k.count(type) > 0;
}

/// Ops on no autocast list whose result takes input 0's type, not a promotion with their affine
/// parameters (a bfloat16 batch norm with float32 weights returns bfloat16).
bool followsFirstInput(const std::string &type)
{
    static const std::set<std::string> k = {"BatchNormalization", "LayerNormalization",
                                            "InstanceNormalization", "GroupNormalization",
                                            "LpNormalization"};
    return k.count(type) > 0;
}

struct PlannedCast
{
    size_t input = 0; ///< index into the op's inputs
    ir::DataType to = ir::DataType::Float;
    bool cached = false;
    int copies = 1; ///< separate casts PyTorch makes of it (not cached): one copy of that many
};

struct CastRecord
{
    OpId castOp;
    TensorId copy;
};

} // namespace

Expected<TrainingGraph> applyAutocast(const TrainingGraph &g, const AutocastOptions &o,
                                      const ir::Graph *forward)
{
    if (o.lowerPrecision != ir::DataType::BFloat16 && o.lowerPrecision != ir::DataType::Float16)
        return makeError(StatusCode::InvalidArgument,
                         "autocast: the lower precision must be bfloat16 or float16");
    for (const Op &op : g.ops())
        if (op.phase == Phase::Optimizer)
            return makeError(StatusCode::InvalidArgument,
                             "autocast: the graph already has an optimizer step");
    const ir::DataType half = o.lowerPrecision;
    std::vector<Tensor> tensors = g.tensors();
    const size_t fwdCount = g.forwardOpCount();

    // Weights and layout views of them: `trainable` when a Parameter is behind them (the cast
    // cache's leaf that requires grad), `weight` for any preloaded weight (frozen ones too).
    std::vector<char> weight(tensors.size(), 0), trainable(tensors.size(), 0);
    for (const Tensor &t : tensors) {
        const bool isWeight = t.role == TensorRole::Parameter || t.role == TensorRole::Buffer ||
                              t.role == TensorRole::Frozen;
        weight[t.id.index()] = isWeight;
        trainable[t.id.index()] = t.role == TensorRole::Parameter;
    }
    for (size_t i = 0; i < fwdCount; ++i) {
        const Op &op = g.op(OpId(int32_t(i)));
        if (!isWeightLayout(op.type) || op.inputs.empty())
            continue;
        bool allWeights = true, anyTrainable = false, anyWeight = false;
        for (TensorId in : op.inputs) {
            const Tensor &t = tensors[in.index()];
            allWeights = allWeights && (weight[in.index()] || t.role == TensorRole::Constant);
            anyWeight = anyWeight || weight[in.index()];
            anyTrainable = anyTrainable || trainable[in.index()];
        }
        if (!allWeights || !anyWeight)
            continue;
        for (TensorId out : op.outputs) {
            weight[out.index()] = 1;
            trainable[out.index()] = anyTrainable;
        }
    }

    // Computed from no data input: weights, buffers, constants and what the forward derives from
    // them alone (a mask built from constants, a bias's layout).
    std::vector<char> dataFree(tensors.size(), 0);
    for (const Tensor &t : tensors)
        dataFree[t.id.index()] = t.preloaded && t.role != TensorRole::Input;
    for (size_t i = 0; i < fwdCount; ++i) {
        const Op &op = g.op(OpId(int32_t(i)));
        bool all = !op.inputs.empty();
        for (TensorId in : op.inputs)
            all = all && dataFree[in.index()];
        for (TensorId out : op.outputs)
            dataFree[out.index()] = all;
    }
    // Computed from constants alone: what the module makes in forward (nn.LSTM's zero states).
    std::vector<char> fromConstants(tensors.size(), 0);
    for (const Tensor &t : tensors)
        fromConstants[t.id.index()] = t.role == TensorRole::Constant;
    for (size_t i = 0; i < fwdCount; ++i) {
        const Op &op = g.op(OpId(int32_t(i)));
        bool all = !op.inputs.empty();
        for (TensorId in : op.inputs)
            all = all && fromConstants[in.index()];
        for (TensorId out : op.outputs)
            fromConstants[out.index()] = all;
    }
    std::vector<AutocastPolicy> policyOf(fwdCount, AutocastPolicy::Fallthrough);
    std::vector<char> epilogue(fwdCount, 0); // ops PyTorch runs inside their product's kernel
    const auto producerType = [&](TensorId t) -> std::string {
        const OpId p = tensors[t.index()].producer;
        return p.valid() && p.index() < fwdCount ? g.op(p).type : std::string();
    };
    const auto lowerProduct = [&](TensorId t) {
        const OpId p = tensors[t.index()].producer;
        const std::string type = producerType(t);
        return (type == "MatMul" || type == "Gemm") &&
               policyOf[p.index()] == AutocastPolicy::LowerPrecision;
    };
    // A lower-precision product, or one scaled by a zero-dim constant (baddbmm's alpha).
    const auto isHalfProduct = [&](TensorId t) {
        if (lowerProduct(t))
            return true;
        if (producerType(t) != "Mul")
            return false;
        const Op &mul = g.op(tensors[t.index()].producer);
        if (mul.inputs.size() != 2)
            return false;
        for (size_t k = 0; k < 2; ++k) {
            const Tensor &other = tensors[mul.inputs[1 - k].index()];
            if (lowerProduct(mul.inputs[k]) && other.role == TensorRole::Constant &&
                other.shape.rank() == 0)
                return true;
        }
        return false;
    };

    // Whether PyTorch runs a linear's product and its bias as one addmm: at::linear (torch 1.13)
    // does for a 2-D input and a contiguous 3-D one (_flatten_3d_linear); on any other input
    // (4-D and more, or a transposed view: tokens of a feature map) it runs matmul, then add_,
    // rounding the product before the bias is added. A 3-D input counts as transposed when the
    // Transpose that made it moves a dimension of more than one element.
    const auto oneKernelLinear = [&](TensorId product) {
        const Op &mm = g.op(tensors[product.index()].producer);
        if (mm.inputs.empty())
            return false;
        const Tensor &x = tensors[mm.inputs[0].index()];
        if (x.shape.rank() > 3)
            return false;
        if (x.shape.rank() < 3 || !x.producer.valid() || x.producer.index() >= fwdCount)
            return true;
        const Op &t = g.op(x.producer);
        if (t.type != "Transpose" || t.inputs.empty())
            return true;
        const Tensor &in = tensors[t.inputs[0].index()];
        const ir::Node *tn = attributeNode(t, forward);
        if (!tn || !in.shape.isStatic())
            return true;
        const std::vector<int64_t> sizes = in.shape.sizes();
        std::vector<int64_t> perm = tn->attrInts("perm", {});
        if (perm.empty())
            for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d)
                perm.push_back(d);
        int64_t last = -1; // the input dims of more than one element must keep their order
        for (int64_t d : perm) {
            if (d < 0 || d >= int64_t(sizes.size()) || sizes[size_t(d)] == 1)
                continue;
            if (d < last)
                return false;
            last = d;
        }
        return true;
    };

    // 1. Each forward op's policy, the casts it needs and its outputs' dtypes, in forward order
    //    (an op reads the dtypes its producers were given).
    std::vector<std::vector<PlannedCast>> casts(fwdCount);
    for (size_t i = 0; i < fwdCount; ++i) {
        const Op &op = g.op(OpId(int32_t(i)));
        if (op.type == "Cast")
            continue; // the export's own cast: its `to` decides, as .to() does under autocast
        const ops::OpDef *def = ops::findOp(op.type);
        const ir::Node *node = attributeNode(op, forward);
        const size_t rank = op.inputs.empty() ? 0 : tensors[op.inputs[0].index()].shape.rank();
        if (const ops::AutocastComposite *composite = ops::autocastComposite(op.type);
            def && composite) {
            // A composite of listed ops (nn.LSTM on the CPU ...): its rule says how each input is
            // read and what dtype each output has.
            const ops::AutocastComposite &rule = *composite;
            ops::AutocastCompositeContext ctx;
            ctx.node = node;
            ctx.device = o.device;
            ctx.half = half;
            for (size_t k = 0; k < op.inputs.size(); ++k) {
                const auto pos = size_t(op.inputRoles[k].index);
                if (ctx.inputs.size() <= pos) {
                    ctx.inputs.resize(pos + 1, ir::DataType::Undefined);
                    ctx.inputSizes.resize(pos + 1);
                    ctx.fromConstants.resize(pos + 1, 0);
                }
                const Tensor &t = tensors[op.inputs[k].index()];
                ctx.inputs[pos] = t.dtype;
                ctx.fromConstants[pos] = fromConstants[op.inputs[k].index()];
                if (t.shape.isStatic())
                    ctx.inputSizes[pos] = t.shape.sizes();
            }
            policyOf[i] = ops::autocastPolicy(*def, node, rank, o.device);
            for (size_t k = 0; k < op.inputs.size(); ++k) {
                const TensorId in = op.inputs[k];
                const ir::DataType from = tensors[in.index()].dtype;
                int copies = 1;
                const ir::DataType to = rule.input ? rule.input(ctx, op.inputRoles[k].index, copies)
                                                   : ir::DataType::Undefined;
                if (!eligible(from) || to == ir::DataType::Undefined || to == from)
                    continue;
                const bool cached =
                    to == half && from == ir::DataType::Float && trainable[in.index()];
                casts[i].push_back({k, to, cached, cached ? 1 : std::max(1, copies)});
            }
            for (size_t k = 0; k < op.outputs.size(); ++k) {
                Tensor &t = tensors[op.outputs[k].index()];
                if ((t.role != TensorRole::Activation && t.role != TensorRole::SavedState) ||
                    g.tensor(op.outputs[k]).dtype != ir::DataType::Float || !rule.output)
                    continue;
                const ir::DataType d = rule.output(ctx, op.outputRoles[k].index);
                if (d != ir::DataType::Undefined)
                    retype(t, d);
            }
            continue;
        }
        AutocastPolicy policy =
            def ? ops::autocastPolicy(*def, node, rank, o.device) : AutocastPolicy::Fallthrough;
        // torch's exporter writes linear(x, W, b) on a batch of matrices as MatMul then Add(b),
        // and baddbmm(mask, q, k) (nn.MultiheadAttention's masked scores) as MatMul, Mul by alpha,
        // Add of the mask times beta: one lower-precision op in PyTorch each, so the Add runs with
        // the product and its other operand (computed from no input) is cast.
        if (policy == AutocastPolicy::Fallthrough && op.type == "Add" && op.inputs.size() == 2) {
            for (size_t a = 0; a < 2; ++a)
                if (isHalfProduct(op.inputs[a]) && dataFree[op.inputs[1 - a].index()]) {
                    policy = AutocastPolicy::LowerPrecision;
                    if (!lowerProduct(op.inputs[a])) {
                        // baddbmm: the alpha Mul and the mask Add are in its kernel
                        epilogue[i] = 1;
                        epilogue[tensors[op.inputs[a].index()].producer.index()] = 1;
                    } else if (oneKernelLinear(op.inputs[a])) {
                        epilogue[i] = 1;
                    }
                }
        }
        policyOf[i] = policy;

        // The operands autocast may cast and promotion reads: floating-point data inputs, not an
        // op's float configuration (Resize's scales, a Pad's constant): its differentiable ones.
        std::vector<size_t> floating;
        for (size_t k = 0; k < op.inputs.size(); ++k) {
            const bool data = !def || !def->differentiable || !node ||
                              def->differentiable(*node, size_t(op.inputRoles[k].index));
            if (data && eligible(tensors[op.inputs[k].index()].dtype))
                floating.push_back(k);
        }
        if (floating.empty())
            continue;
        ir::DataType target = half;
        switch (policy) {
        case AutocastPolicy::LowerPrecision: target = half; break;
        case AutocastPolicy::Fp32: target = ir::DataType::Float; break;
        case AutocastPolicy::Promote:
        case AutocastPolicy::Fallthrough: {
            // result_type: operands with dims outrank zero-dim ones of the same category.
            bool anyDims = false;
            for (size_t k : floating)
                anyDims = anyDims || tensors[op.inputs[k].index()].shape.rank() > 0;
            bool first = true;
            for (size_t k : floating) {
                const Tensor &t = tensors[op.inputs[k].index()];
                if (anyDims && t.shape.rank() == 0)
                    continue;
                target = first ? t.dtype : promote(target, t.dtype);
                first = false;
            }
            if (policy == AutocastPolicy::Fallthrough && followsFirstInput(op.type) &&
                eligible(tensors[op.inputs[0].index()].dtype))
                target = tensors[op.inputs[0].index()].dtype;
            break;
        }
        }
        if (policy != AutocastPolicy::Fallthrough)
            for (size_t k : floating) {
                const TensorId in = op.inputs[k];
                if (tensors[in.index()].dtype == target)
                    continue;
                // cached_cast: only lower-precision casts of float32 trainable leaves are cached.
                const bool cached = target == half &&
                                    tensors[in.index()].dtype == ir::DataType::Float &&
                                    trainable[in.index()];
                casts[i].push_back({k, target, cached, 1});
            }
        for (TensorId out : op.outputs) {
            Tensor &t = tensors[out.index()];
            if (t.role == TensorRole::Activation && g.tensor(out).dtype == ir::DataType::Float)
                retype(t, target);
        }
    }

    // 2. The ops again, with the casts before their readers and a CastGrad after each backward
    //    that produces a gradient through one.
    std::vector<Op> ops;
    ops.reserve(g.opCount() + 2 * fwdCount);
    std::vector<OpId> newId(g.opCount());
    std::map<std::pair<int32_t, int>, CastRecord> cache;     // (tensor, dtype) -> cached copy
    std::vector<std::map<int, CastRecord>> castAt(fwdCount); // forward op -> ONNX position
    std::map<int32_t, int> gradCopies;                       // copy -> gradients named so far
    std::set<std::string> names;                             // of the copies
    const auto addTensor = [&](Tensor t) {
        t.id = TensorId(int32_t(tensors.size()));
        tensors.push_back(std::move(t));
        return tensors.back().id;
    };
    // The same layout of the same weight made twice (each call of a Linear on a 1-D input
    // exports its own Transpose of the weight; a hypernetwork calls one twice) is one view of one
    // cached cast in PyTorch: autocast caches the leaf's copy, and the view is taken of that.
    std::vector<int32_t> canon(tensors.size());
    for (size_t t = 0; t < canon.size(); ++t)
        canon[t] = int32_t(t);
    {
        std::map<std::vector<int64_t>, int32_t> layouts; // type, attributes, inputs -> output
        for (size_t i = 0; i < fwdCount; ++i) {
            const Op &op = g.op(OpId(int32_t(i)));
            if (!isWeightLayout(op.type) || op.outputs.size() != 1 ||
                !weight[op.outputs[0].index()])
                continue;
            const ir::Node *node = attributeNode(op, forward);
            if (!node)
                continue;
            std::vector<int64_t> key{int64_t(std::hash<std::string>{}(op.type)),
                                     node->attrInt("axis", -99)};
            for (int64_t p : node->attrInts("perm", {}))
                key.push_back(p);
            key.push_back(-1);
            for (TensorId in : op.inputs)
                key.push_back(canon[in.index()]);
            auto [it, inserted] = layouts.emplace(std::move(key), op.outputs[0].value);
            canon[op.outputs[0].index()] = it->second;
        }
    }
    for (size_t i = 0; i < fwdCount; ++i) {
        Op op = g.op(OpId(int32_t(i)));
        for (const PlannedCast &pc : casts[i]) {
            const TensorId src = op.inputs[pc.input];
            const std::pair<int32_t, int> key{canon[src.index()], int(pc.to)};
            CastRecord rec;
            if (auto hit = cache.find(key); pc.cached && hit != cache.end()) {
                rec = hit->second;
            } else {
                const Tensor source = tensors[src.index()];
                Tensor copy;
                copy.name = pc.cached
                                ? fmt::format("{}::{}", source.name, shortName(pc.to))
                                : fmt::format("{}::{}@{}", source.name, shortName(pc.to), op.name);
                if (!names.insert(copy.name).second) // the same tensor at two positions
                    copy.name += fmt::format("#{}", op.inputRoles[pc.input].index);
                copy.role = weight[src.index()] && pc.to != ir::DataType::Float
                                ? TensorRole::WeightCast
                                : TensorRole::Activation;
                copy.dtype = pc.to;
                copy.shape = source.shape;
                // `copies` separate casts of one tensor (a bidirectional LSTM's input, cast once
                // per direction) are one Cast here whose result holds them all: the backends
                // write the first, memory counts every one.
                copy.bytes = pc.copies * elementsOf(source) * ir::elementSize(pc.to);
                const TensorId copyId = addTensor(std::move(copy));

                auto node = std::make_shared<ir::Node>();
                node->id = op.source;
                node->name = pc.cached ? "autocast/" + source.name
                                       : fmt::format("{}/autocast_in{}", op.name,
                                                     op.inputRoles[pc.input].index);
                node->opType = "Cast";
                node->attributes.push_back({"to", int64_t(pc.to)});
                if (forward && op.source.valid() && op.source.index() < forward->nodeCount())
                    node->ns = forward->node(op.source).ns;
                Op c;
                c.id = OpId(int32_t(ops.size()));
                c.name = node->name;
                c.type = "Cast";
                c.phase = Phase::Forward;
                c.inputs = {src};
                c.inputRoles = {Operand{}};
                c.outputs = {copyId};
                c.outputRoles = {Operand{}};
                c.source = op.source;
                c.fusedNode = std::move(node);
                c.flops = double(pc.copies * elementsOf(source));
                rec = {c.id, copyId};
                ops.push_back(std::move(c));
                if (pc.cached)
                    cache[key] = rec;
            }
            castAt[i][op.inputRoles[pc.input].index] = rec;
            op.inputs[pc.input] = rec.copy;
        }
        newId[i] = OpId(int32_t(ops.size()));
        op.id = newId[i];
        if (epilogue[i]) {
            const ir::Node *base = attributeNode(op, forward);
            auto node = base ? std::make_shared<ir::Node>(*base) : std::make_shared<ir::Node>();
            node->attributes.push_back({kProductEpilogueAttribute, int64_t(1)});
            if (!base) {
                node->name = op.name;
                node->opType = op.type;
            }
            op.fusedNode = std::move(node);
        }
        ops.push_back(std::move(op));
    }
    for (size_t j = fwdCount; j < g.opCount(); ++j) {
        Op op = g.op(OpId(int32_t(j)));
        struct CastBack
        {
            CastRecord cast;
            TensorId gradOfCopy, gradOfSource;
        };
        std::vector<CastBack> castBack;
        if (op.phase == Phase::Loss) {
            // L = sum(y * R): R takes y's dtype, as the seed gradient does.
            for (size_t k = 0; k + 1 < op.inputs.size(); k += 2)
                retype(tensors[op.inputs[k + 1].index()], tensors[op.inputs[k].index()].dtype);
        }
        if (op.forwardOf.valid()) {
            const size_t f = op.forwardOf.index();
            op.forwardOf = newId[f];
            const std::map<int, CastRecord> &at = castAt[f];
            for (size_t k = 0; k < op.inputs.size() && !at.empty(); ++k)
                if (op.inputRoles[k].kind == Operand::Kind::FwdInput)
                    if (auto c = at.find(op.inputRoles[k].index); c != at.end())
                        op.inputs[k] = c->second.copy;
            for (size_t k = 0; k < op.outputs.size() && !at.empty(); ++k) {
                if (op.outputRoles[k].kind != Operand::Kind::InputGrad)
                    continue;
                auto c = at.find(op.outputRoles[k].index);
                if (c == at.end())
                    continue;
                const Tensor copy = tensors[c->second.copy.index()];
                const int n = gradCopies[copy.id.value]++;
                Tensor grad;
                grad.name = n == 0 ? "grad:" + copy.name : fmt::format("grad:{}#{}", copy.name, n);
                grad.role = TensorRole::ActivationGrad;
                grad.dtype = copy.dtype;
                grad.shape = copy.shape;
                grad.bytes = copy.bytes;
                const TensorId gradId = addTensor(std::move(grad));
                castBack.push_back({c->second, gradId, op.outputs[k]});
                op.outputs[k] = gradId;
            }
        }
        newId[j] = OpId(int32_t(ops.size()));
        op.id = newId[j];
        ops.push_back(std::move(op));
        // Each gradient through a cast is cast back at once, before anything sums it.
        for (const CastBack &cb : castBack) {
            const Op &cast = ops[cb.cast.castOp.index()];
            const int n = gradCopies[-1 - cb.cast.castOp.value]++;
            Op back;
            back.id = OpId(int32_t(ops.size()));
            back.name = n == 0 ? cast.name + "/grad" : fmt::format("{}/grad#{}", cast.name, n);
            back.type = "CastGrad";
            back.phase = Phase::Backward;
            back.forwardOf = cb.cast.castOp;
            back.inputs = {cb.gradOfCopy};
            back.inputRoles = {{Operand::Kind::OutputGrad, 0}};
            back.outputs = {cb.gradOfSource};
            back.outputRoles = {{Operand::Kind::InputGrad, 0}};
            back.source = cast.source;
            back.fusedNode = cast.fusedNode;
            back.flops = double(elementsOf(tensors[cb.cast.copy.index()]));
            ops.push_back(std::move(back));
        }
    }

    // 3. A gradient has its tensor's dtype (the gradients of the copies have theirs already).
    std::map<int32_t, ir::DataType> dtypeOfValue;
    for (const Op &op : ops)
        if (op.phase == Phase::Forward)
            for (TensorId out : op.outputs)
                if (tensors[out.index()].source.valid())
                    dtypeOfValue[tensors[out.index()].source.value] = tensors[out.index()].dtype;
    for (const Tensor &t : tensors)
        if (t.preloaded && t.source.valid() &&
            (t.role == TensorRole::Parameter || t.role == TensorRole::Buffer ||
             t.role == TensorRole::Input))
            dtypeOfValue[t.source.value] = t.dtype;
    for (Tensor &t : tensors) {
        if ((t.role != TensorRole::ActivationGrad && t.role != TensorRole::Loss) ||
            !t.source.valid() || t.preloaded)
            continue;
        if (auto d = dtypeOfValue.find(t.source.value); d != dtypeOfValue.end())
            retype(t, d->second);
    }
    for (Op &op : ops) {
        op.bytesAccessed = 0;
        for (TensorId t : op.inputs)
            op.bytesAccessed += tensors[t.index()].bytes;
        for (TensorId t : op.outputs)
            op.bytesAccessed += tensors[t.index()].bytes;
    }
    auto out = TrainingGraph::assemble(g.info(), std::move(ops), std::move(tensors));
    if (!out)
        return out.status().withContext("autocast");
    return out;
}

} // namespace remat::core::training
