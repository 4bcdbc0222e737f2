#include "core/training/apply_training_options.h"

#include "core/training/autocast.h"
#include "core/training/tensor_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace remat::core::training {

namespace {

/// Whether the precision stores tensors half (-true and -master); autocast's dtypes are the
/// autocast pass's (autocast.h), and its weights stay float32.
bool isHalf(Precision p) { return p != Precision::Fp32 && !isAutocast(p); }

/// Float32 tensor -> the same elements in 2 bytes.
void toHalf(Tensor &t, Precision p)
{
    if (t.dtype != ir::DataType::Float)
        return;
    t.dtype = halfTypeOf(p);
    t.bytes = t.bytes / 2;
}

int64_t elements(const Tensor &t)
{
    const int64_t size = ir::elementSize(t.dtype);
    return size > 0 ? t.bytes / size : 0;
}

/// Optimizer state tensors of one parameter: name suffix and element count.
std::vector<std::pair<std::string, int64_t>> stateShapes(Optimizer o, const Tensor &param)
{
    const int64_t n = elements(param);
    switch (o) {
    case Optimizer::None:
    case Optimizer::Sgd: return {};
    case Optimizer::SgdMomentum: return {{"momentum_buffer", n}};
    case Optimizer::Adam:
    case Optimizer::AdamW: return {{"exp_avg", n}, {"exp_avg_sq", n}};
    case Optimizer::Adafactor: {
        const std::vector<ir::Dim> &d = param.shape.dims;
        bool known = d.size() >= 2;
        for (const ir::Dim &x : d)
            known = known && x.isStatic();
        if (!known)
            return {{"exp_avg_sq", n}};
        const int64_t rows = d[d.size() - 2].value, cols = d.back().value;
        const int64_t lead = rows > 0 && cols > 0 ? n / (rows * cols) : 0;
        if (lead < 1 || lead * rows * cols != n)
            return {{"exp_avg_sq", n}}; // a split not along a matrix axis: unfactored
        return {{"exp_avg_sq_row", lead * rows}, {"exp_avg_sq_col", lead * cols}};
    }
    }
    return {};
}

const char *updateType(Optimizer o)
{
    switch (o) {
    case Optimizer::Sgd: return "SgdUpdate";
    case Optimizer::SgdMomentum: return "SgdMomentumUpdate";
    case Optimizer::Adam: return "AdamUpdate";
    case Optimizer::AdamW: return "AdamWUpdate";
    case Optimizer::Adafactor: return "AdafactorUpdate";
    case Optimizer::None: break;
    }
    return "";
}

/// FLOPs per updated element (torch.optim's single-tensor arithmetic).
double updateFlopsPerElement(Optimizer o)
{
    switch (o) {
    case Optimizer::Sgd: return 2;
    case Optimizer::SgdMomentum: return 4;
    case Optimizer::Adam: return 12;
    case Optimizer::AdamW: return 14;
    case Optimizer::Adafactor: return 16;
    case Optimizer::None: break;
    }
    return 0;
}

/// Transient update buffers, in updated elements (see the header).
int64_t transientCopies(Optimizer o, double weightDecay)
{
    switch (o) {
    case Optimizer::Adam:
    case Optimizer::AdamW:
    case Optimizer::Adafactor: return 2;
    case Optimizer::Sgd:
    case Optimizer::SgdMomentum: return weightDecay > 0 ? 1 : 0;
    case Optimizer::None: break;
    }
    return 0;
}

} // namespace

Expected<TrainingGraph> applyTrainingOptions(const TrainingGraph &built,
                                             const TrainingOptions &options,
                                             const ir::Graph *forward)
{
    REMAT_RETURN_IF_ERROR(validateTrainingOptions(options));
    for (const Op &op : built.ops())
        if (op.phase == Phase::Optimizer)
            return makeError(StatusCode::InvalidArgument,
                             "training options: the graph already has an optimizer step");
    TrainingOptions asBuilt = options;
    asBuilt.attention = built.info().training.attention; // the builder's choice, already made
    if (asBuilt.isDefault())
        return built;

    const TrainingOptions &o = options;
    // Autocast first: its casts are forward and backward ops like any other, which sharding and
    // accumulation below then treat alike.
    Expected<TrainingGraph> autocasted =
        isAutocast(o.precision)
            ? applyAutocast(built,
                            {.lowerPrecision = halfTypeOf(o.precision), .device = o.autocastDevice},
                            forward)
            : Expected<TrainingGraph>(built);
    if (!autocasted)
        return autocasted.status();
    const TrainingGraph &graph = *autocasted;
    const int64_t N = o.shard == Sharding::None ? 1 : o.ranks;
    const bool mixed = hasMasterWeights(o.precision);
    std::vector<Op> ops = graph.ops();
    std::vector<Tensor> tensors = graph.tensors();

    // The final gradient of each parameter, by the parameter's tensor id: the parameter-gradient
    // tensor of the same forward value that lives to the end of the step (not found by name:
    // the file may name its own values "grad:...").
    std::vector<TensorId> gradOf(tensors.size());
    std::unordered_map<size_t, TensorId> paramOfValue;
    for (const Tensor &t : graph.tensors())
        if (t.role == TensorRole::Parameter && t.source.valid())
            paramOfValue.emplace(t.source.index(), t.id);
    for (const Tensor &g : graph.tensors()) {
        if (g.role != TensorRole::ParameterGrad || !g.requiredAtEnd || !g.source.valid())
            continue;
        if (auto it = paramOfValue.find(g.source.index()); it != paramOfValue.end())
            gradOf[it->second.index()] = g.id;
    }
    // Graphs built by hand (benchmarks) may have no forward values: there the name says it.
    for (const Tensor &t : graph.tensors())
        if (t.role == TensorRole::Parameter && !t.source.valid())
            if (const TensorId *g = graph.findTensor("grad:" + t.name);
                g && graph.tensor(*g).role == TensorRole::ParameterGrad)
                gradOf[t.id.index()] = *g;
    // The names the step adds (master copies, optimizer state, updates) stay clear of the file's.
    TensorNames names;
    for (const Tensor &t : tensors)
        names.reserve(t.name);

    // Full (unsharded) float32-or-half sizes, taken before sharding divides them.
    std::vector<int64_t> fullBytes(tensors.size());
    // Precision.
    for (Tensor &t : tensors) {
        if (!isHalf(o.precision))
            break;
        switch (t.role) {
        case TensorRole::Parameter:
        case TensorRole::Frozen: // no master copy: a frozen weight is held in the half type
        case TensorRole::Activation:
        case TensorRole::SavedState:
        case TensorRole::ActivationGrad:
        case TensorRole::Loss: toHalf(t, o.precision); break;
        case TensorRole::Buffer:
            if (!mixed)
                toHalf(t, o.precision);
            break;
        case TensorRole::ParameterGrad:
            if (!mixed)
                toHalf(t, o.precision);
            break;
        default: break;
        }
    }
    // Tensor / sequence parallelism: the per-rank share of one tensor-parallel rank, which ZeRO
    // then shards over the data-parallel ranks.
    REMAT_RETURN_IF_ERROR(
        shardTensorParallel(graph, ops, tensors, o.tensorParallel, o.sequenceParallel));
    for (const Tensor &t : tensors)
        fullBytes[t.id.index()] = t.bytes;

    // Gradient accumulation and ZeRO-2/3 gradient sharding: the final parameter gradient's
    // producer holds the full fresh gradient as workspace.
    const bool accumulate = o.microBatches > 1;
    const bool shardGrads = N > 1 && (o.shard == Sharding::Zero2 || o.shard == Sharding::Zero3);
    for (size_t p = 0; p < tensors.size(); ++p) {
        const TensorId g = gradOf[p];
        if (!g.valid())
            continue;
        Tensor &grad = tensors[g.index()];
        if (!grad.requiredAtEnd)
            continue;
        if (accumulate || shardGrads) {
            Op &producer = ops[grad.producer.index()];
            producer.workspaceBytes += fullBytes[g.index()];
        }
        if (shardGrads)
            grad.bytes = shareOf(grad.bytes, N);
        if (accumulate) {
            Op &producer = ops[grad.producer.index()];
            for (size_t k = 0; k < producer.outputs.size(); ++k)
                if (producer.outputs[k] == g) {
                    producer.outputs.erase(producer.outputs.begin() + std::ptrdiff_t(k));
                    producer.outputRoles.erase(producer.outputRoles.begin() + std::ptrdiff_t(k));
                    break;
                }
            grad.preloaded = true;
        }
    }

    // ZeRO-3 / FSDP: parameters sharded; an op reading one gathers it for the op's duration.
    if (N > 1 && o.shard == Sharding::Zero3) {
        for (Op &op : ops) {
            std::vector<TensorId> seen;
            for (TensorId in : op.inputs) {
                const Tensor &t = tensors[in.index()];
                if (t.role != TensorRole::Parameter ||
                    std::find(seen.begin(), seen.end(), in) != seen.end())
                    continue;
                seen.push_back(in);
                op.workspaceBytes += fullBytes[in.index()] - shareOf(fullBytes[in.index()], N);
            }
        }
        for (Tensor &t : tensors)
            if (t.role == TensorRole::Parameter)
                t.bytes = shareOf(t.bytes, N);
    }

    // Master weights, optimizer state and the update ops.
    const bool allHalf = o.precision == Precision::Bf16True || o.precision == Precision::Fp16True;
    const int64_t stateElem = allHalf ? 2 : 4;
    const ir::DataType stateType = allHalf ? halfTypeOf(o.precision) : ir::DataType::Float;
    const double wd = o.hyper.effectiveWeightDecay(o.optimizer);
    const size_t paramTensorCount = tensors.size();
    for (size_t p = 0; p < paramTensorCount; ++p) {
        if (tensors[p].role != TensorRole::Parameter || !gradOf[p].valid())
            continue;
        const Tensor param = tensors[p];
        Tensor paramForShapes = param;
        paramForShapes.bytes = fullBytes[p];
        const int64_t n = elements(paramForShapes);
        auto addTensor = [&](std::string name, TensorRole role, int64_t count, ir::DataType type,
                             int64_t elemSize) {
            Tensor t;
            t.id = TensorId(int32_t(tensors.size()));
            t.name = names.claim(std::move(name));
            t.role = role;
            t.dtype = type;
            t.bytes = shareOf(count * elemSize, N);
            if (count == n)
                t.shape = param.shape;
            t.source = param.source;
            t.preloaded = true;
            tensors.push_back(std::move(t));
            return tensors.back().id;
        };
        Op up;
        up.name = "optimizer/" + param.name;
        up.type = updateType(o.optimizer);
        up.phase = Phase::Optimizer;
        up.source = NodeId();
        up.inputs = {param.id, gradOf[p]};
        if (mixed)
            up.inputs.push_back(addTensor("master:" + param.name, TensorRole::MasterWeight, n,
                                          ir::DataType::Float, 4));
        for (const auto &[suffix, count] : stateShapes(o.optimizer, paramForShapes))
            up.inputs.push_back(addTensor(suffix + ":" + param.name, TensorRole::OptimizerState,
                                          count, stateType, stateElem));
        if (o.optimizer == Optimizer::None)
            continue; // master weights alone (mixed precision without an optimizer step)
        const int64_t updated = shareOf(n, N);
        const int64_t mathElem = mixed ? 4 : stateElem;
        up.flops = updateFlopsPerElement(o.optimizer) * double(updated);
        for (TensorId t : up.inputs)
            up.bytesAccessed += 2 * tensors[t.index()].bytes;
        up.workspaceBytes = transientCopies(o.optimizer, wd) * updated * mathElem;
        up.inputRoles.assign(up.inputs.size(), Operand{});
        up.id = OpId(int32_t(ops.size()));
        ops.push_back(std::move(up));
    }

    TrainingGraphInfo info = graph.info();
    info.training = options;
    info.training.attention = graph.info().training.attention;
    auto out = TrainingGraph::assemble(std::move(info), std::move(ops), std::move(tensors));
    if (!out)
        return out.status().withContext("training options");
    return out;
}

ModelStateBytes modelStateBytes(const TrainingGraph &graph)
{
    ModelStateBytes m;
    for (const Tensor &t : graph.tensors()) {
        switch (t.role) {
        case TensorRole::Parameter:
            m.parameterBytes += t.bytes;
            if (Expected<int64_t> n = t.shape.numElements();
                n && !t.shape.dims.empty() && t.shape.isStatic())
                m.parameterCount += *n;
            else
                m.parameterCount += elements(t);
            break;
        case TensorRole::ParameterGrad:
            if (t.requiredAtEnd)
                m.paramGradBytes += t.bytes;
            break;
        case TensorRole::MasterWeight: m.masterWeightBytes += t.bytes; break;
        case TensorRole::OptimizerState: m.optimizerStateBytes += t.bytes; break;
        default: break;
        }
    }
    return m;
}

} // namespace remat::core::training
