#include "core/training/training_graph.h"

#include "core/ir/graph.h"

#include <algorithm>
#include <fmt/format.h>

namespace remat::core::training {

const char *tensorRoleName(TensorRole role)
{
    switch (role) {
    case TensorRole::Parameter: return "parameter";
    case TensorRole::Buffer: return "buffer";
    case TensorRole::Frozen: return "frozen";
    case TensorRole::Input: return "input";
    case TensorRole::Constant: return "constant";
    case TensorRole::Activation: return "activation";
    case TensorRole::SavedState: return "saved-state";
    case TensorRole::Loss: return "loss";
    case TensorRole::ActivationGrad: return "activation-grad";
    case TensorRole::ParameterGrad: return "parameter-grad";
    case TensorRole::OptimizerState: return "optimizer-state";
    case TensorRole::MasterWeight: return "master-weight";
    case TensorRole::WeightCast: return "weight-cast";
    }
    return "?";
}

namespace {

int phaseRank(Phase p)
{
    switch (p) {
    case Phase::Forward: return 0;
    case Phase::Loss: return 1;
    case Phase::Backward: return 2;
    case Phase::Optimizer: return 3;
    }
    return 3;
}

const char *phaseName(Phase p)
{
    switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Loss: return "loss";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
    }
    return "?";
}

} // namespace

Expected<TrainingGraph> TrainingGraph::assemble(TrainingGraphInfo info, std::vector<Op> ops,
                                                std::vector<Tensor> tensors)
{
    const auto bad = [](std::string msg) {
        return makeError(StatusCode::InvalidArgument, std::move(msg));
    };
    const size_t tensorCount = tensors.size();
    for (size_t i = 0; i < tensorCount; ++i) {
        Tensor &t = tensors[i];
        if (t.id.value != static_cast<int32_t>(i))
            return bad(fmt::format("tensor '{}' at position {} has id {}", t.name, i, t.id.value));
        if (t.bytes < 0)
            return bad(fmt::format("tensor '{}' has negative size {}", t.name, t.bytes));
        // Producer and consumers are derived from the ops below; whatever the caller wrote is
        // replaced so the two views cannot disagree.
        t.producer = OpId();
        t.consumers.clear();
    }

    int lastRank = 0;
    size_t forwardCount = 0, lossCount = 0, optimizerCount = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
        Op &op = ops[i];
        if (op.id.value != static_cast<int32_t>(i))
            return bad(fmt::format("op '{}' at position {} has id {}", op.name, i, op.id.value));
        const int rank = phaseRank(op.phase);
        if (rank < lastRank)
            return bad(fmt::format("op '{}' ({}) comes after a later phase: ops must be forward, "
                                   "then loss, then backward, then optimizer",
                                   op.name, phaseName(op.phase)));
        lastRank = rank;
        if (op.phase == Phase::Forward)
            ++forwardCount;
        else if (op.phase == Phase::Loss)
            ++lossCount;
        else if (op.phase == Phase::Optimizer)
            ++optimizerCount;
        if (op.inputRoles.empty())
            op.inputRoles.resize(op.inputs.size());
        if (op.outputRoles.empty())
            op.outputRoles.resize(op.outputs.size());
        if (op.inputRoles.size() != op.inputs.size() || op.outputRoles.size() != op.outputs.size())
            return bad(
                fmt::format("op '{}': operand roles do not match its inputs / outputs", op.name));
        if (op.flops < 0 || op.bytesAccessed < 0 || op.workspaceBytes < 0)
            return bad(fmt::format("op '{}': negative cost figures", op.name));
        for (TensorId out : op.outputs) {
            if (!out.valid() || out.index() >= tensorCount)
                return bad(fmt::format("op '{}': output id {} out of range", op.name, out.value));
            Tensor &t = tensors[out.index()];
            if (t.preloaded)
                return bad(fmt::format("op '{}' writes preloaded tensor '{}'", op.name, t.name));
            if (t.producer.valid())
                return bad(fmt::format("tensor '{}' is produced by both '{}' and '{}'", t.name,
                                       ops[t.producer.index()].name, op.name));
            t.producer = op.id;
        }
        for (TensorId in : op.inputs) {
            if (!in.valid() || in.index() >= tensorCount)
                return bad(fmt::format("op '{}': input id {} out of range", op.name, in.value));
            Tensor &t = tensors[in.index()];
            // Ops are stored in an executable order: everything an op reads exists before it.
            if (!t.preloaded && (!t.producer.valid() || t.producer.value >= op.id.value))
                return bad(
                    fmt::format("op '{}' reads '{}' before it is produced", op.name, t.name));
            if (t.consumers.empty() || t.consumers.back() != op.id)
                t.consumers.push_back(op.id);
        }
    }
    for (const Tensor &t : tensors) {
        if (!t.preloaded && !t.producer.valid())
            return bad(
                fmt::format("tensor '{}' is neither preloaded nor produced by an op", t.name));
    }

    TrainingGraph g;
    g.m_backwardOf.assign(forwardCount, OpId());
    for (const Op &op : ops) {
        if (op.phase != Phase::Backward || !op.forwardOf.valid())
            continue;
        if (op.forwardOf.index() >= forwardCount)
            return bad(
                fmt::format("backward op '{}' differentiates op {} which is not a forward op",
                            op.name, op.forwardOf.value));
        if (!g.m_backwardOf[op.forwardOf.index()].valid())
            g.m_backwardOf[op.forwardOf.index()] = op.id;
    }

    g.m_byName.reserve(tensorCount);
    for (const Tensor &t : tensors)
        g.m_byName.emplace_back(t.name, t.id);
    std::sort(g.m_byName.begin(), g.m_byName.end());
    for (size_t i = 1; i < g.m_byName.size(); ++i) {
        if (g.m_byName[i].first == g.m_byName[i - 1].first)
            return bad(fmt::format("two tensors are named '{}'", g.m_byName[i].first));
    }

    g.m_info = std::move(info);
    g.m_ops = std::move(ops);
    g.m_tensors = std::move(tensors);
    g.m_forwardCount = forwardCount;
    g.m_lossCount = lossCount;
    g.m_optimizerCount = optimizerCount;
    return g;
}

Expected<TrainingGraph> TrainingGraph::withoutOptimizerStep() const
{
    std::vector<Op> ops(m_ops.begin(), m_ops.end() - std::ptrdiff_t(m_optimizerCount));
    return assemble(m_info, std::move(ops), m_tensors);
}

const TensorId *TrainingGraph::findTensor(const std::string &name) const
{
    auto it = std::lower_bound(
        m_byName.begin(), m_byName.end(), name,
        [](const auto &entry, const std::string &key) { return entry.first < key; });
    if (it == m_byName.end() || it->first != name)
        return nullptr;
    return &it->second;
}

const std::string &TensorNames::reserve(const std::string &name)
{
    m_taken.insert(name);
    return name;
}

std::string TensorNames::claim(std::string base)
{
    if (m_taken.insert(base).second)
        return base;
    for (int k = 1;; ++k) {
        std::string candidate = fmt::format("{}~{}", base, k);
        if (m_taken.insert(candidate).second)
            return candidate;
    }
}

const ir::Node *attributeNode(const Op &op, const ir::Graph *forward)
{
    if (op.fusedNode)
        return op.fusedNode.get();
    if (!forward || !op.source.valid() || op.source.index() >= forward->nodeCount())
        return nullptr;
    return &forward->node(op.source);
}

} // namespace remat::core::training
