#pragma once
// Random small training graphs for checking solvers against exhaustive search. Built directly
// with TrainingGraph::assemble: forward ops, a loss, backward ops whose needs follow the usual
// gradient rules (conv-like ops read their input, ReLU-like their output, add-like nothing,
// BN-like their input and saved statistics), and gradient accumulation for shared values.
//   RandomGraph rg = randomTrainingGraph(seed, {.forwardOps = 8, .dag = true});
//   rg.graph; rg.costs;

#include "core/cost/costs.h"
#include "core/training/training_graph.h"

#include <cassert>
#include <random>
#include <string>
#include <vector>

namespace remat::tests {

/// A forward op of a fixed graph (RandomGraphOptions::fixed).
struct ForwardSpec
{
    enum Rule { ConvLike, ReluLike, AddLike, BnLike } rule = ConvLike;
    int skipFrom = -1; ///< a second input: value index (0 the input, i + 1 op i's output)
    int64_t bytes = 100;
    int seconds = 1;
};

struct RandomGraphOptions
{
    int forwardOps = 8;
    /// When not empty: these forward ops (forwardOps, dag and savedState are not read; BN-like
    /// ops save 2 bytes of statistics); backward times stay random.
    std::vector<ForwardSpec> fixed{};
    bool dag = true;        ///< skip connections and multi-input ops; false: a plain chain
    bool savedState = true; ///< some ops also output saved state (BN statistics, pool indices)
    core::training::TrainingGraphInfo info{}; ///< recorded in the graph (plan-file identity tests)
};

struct RandomGraph
{
    core::training::TrainingGraph graph;
    core::cost::Costs costs;
};

/// Options for a random DAG (skip connections, multi-input ops) of `forwardOps` forward ops.
inline RandomGraphOptions dagOptions(int forwardOps)
{
    RandomGraphOptions o;
    o.forwardOps = forwardOps;
    o.dag = true;
    return o;
}

inline RandomGraph randomTrainingGraph(uint32_t seed, const RandomGraphOptions &o)
{
    using namespace remat::core;
    using training::Op;
    using training::Phase;
    using training::Tensor;
    using training::TensorRole;
    std::mt19937 rng(seed);
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<Tensor> tensors;
    std::vector<Op> ops;
    std::vector<double> seconds;
    auto addTensor = [&](std::string name, TensorRole role, int64_t bytes, bool pre = false) {
        Tensor t;
        t.id = TensorId(tensors.size());
        t.name = std::move(name);
        t.role = role;
        t.bytes = bytes;
        t.preloaded = pre;
        tensors.push_back(t);
        return t.id;
    };
    auto addOp = [&](std::string name, Phase phase, std::vector<TensorId> in,
                     std::vector<TensorId> out, double sec, OpId fwd = OpId()) {
        Op op;
        op.id = OpId(ops.size());
        op.name = name;
        op.type = name;
        op.phase = phase;
        op.inputs = std::move(in);
        op.outputs = std::move(out);
        op.inputRoles.resize(op.inputs.size());
        op.outputRoles.resize(op.outputs.size());
        op.forwardOf = fwd;
        ops.push_back(op);
        seconds.push_back(sec);
        return op.id;
    };
    const TensorId x = addTensor("x", TensorRole::Input, uni(10, 200), true);
    enum Rule { ConvLike, ReluLike, AddLike, BnLike };
    struct Fwd
    {
        OpId op;
        std::vector<TensorId> inputs; // activations and the input
        TensorId param, out, saved;
        Rule rule;
    };
    std::vector<Fwd> fwd;
    std::vector<TensorId> values{x};
    const int forwardOps = o.fixed.empty() ? o.forwardOps : int(o.fixed.size());
    for (int i = 0; i < forwardOps; ++i) {
        const ForwardSpec *spec = o.fixed.empty() ? nullptr : &o.fixed[size_t(i)];
        Fwd f;
        f.rule = spec ? static_cast<Rule>(spec->rule) : static_cast<Rule>(uni(0, 3));
        if (!spec && !o.savedState && f.rule == BnLike)
            f.rule = ConvLike;
        f.inputs.push_back(values.back());
        if (spec && spec->skipFrom >= 0 && values[size_t(spec->skipFrom)] != f.inputs[0])
            f.inputs.push_back(values[size_t(spec->skipFrom)]);
        if (!spec && o.dag && values.size() > 2 && uni(0, 2) == 0) {
            const TensorId extra = values[uni(0, int(values.size()) - 2)];
            if (extra != f.inputs[0])
                f.inputs.push_back(extra);
        }
        if (f.rule == ConvLike || f.rule == BnLike)
            f.param = addTensor("w" + std::to_string(i), TensorRole::Parameter, uni(1, 20), true);
        f.out = addTensor("a" + std::to_string(i), TensorRole::Activation,
                          spec ? spec->bytes : uni(10, 500));
        if (f.rule == BnLike)
            f.saved =
                addTensor("s" + std::to_string(i), TensorRole::SavedState, spec ? 2 : uni(1, 60));
        std::vector<TensorId> in = f.inputs;
        if (f.param.valid())
            in.push_back(f.param);
        std::vector<TensorId> out{f.out};
        if (f.saved.valid())
            out.push_back(f.saved);
        f.op = addOp("f" + std::to_string(i), Phase::Forward, in, out,
                     spec ? spec->seconds : uni(1, 10));
        values.push_back(f.out);
        fwd.push_back(f);
    }
    const TensorId loss = addTensor("L", TensorRole::Loss, 4);
    const TensorId seedGrad =
        addTensor("grad:" + tensors[values.back().index()].name, TensorRole::ActivationGrad,
                  tensors[values.back().index()].bytes);
    addOp("loss", Phase::Loss, {values.back()}, {loss, seedGrad}, 1);
    // Consumers of every activation among forward ops (for gradient accumulation).
    std::vector<int> consumers(tensors.size(), 0);
    for (const Fwd &f : fwd)
        for (TensorId t : f.inputs)
            consumers[t.index()] += 1;
    std::vector<std::vector<TensorId>> partials(tensors.size());
    std::vector<TensorId> gradOf(tensors.size());
    gradOf[values.back().index()] = seedGrad;
    for (int i = forwardOps - 1; i >= 0; --i) {
        const Fwd &f = fwd[i];
        const TensorId gOut = gradOf[f.out.index()];
        if (!gOut.valid())
            continue; // the output does not reach the loss
        std::vector<TensorId> in;
        switch (f.rule) {
        case ConvLike: in = f.inputs; break;
        case ReluLike: in = {f.out}; break;
        case AddLike: break;
        case BnLike: in = {f.inputs[0], f.saved}; break;
        }
        if (f.param.valid())
            in.push_back(f.param);
        in.push_back(gOut);
        std::vector<TensorId> out;
        std::vector<TensorId> pendingAccumulate;
        for (TensorId t : f.inputs) {
            if (t == x)
                continue;
            const std::string base = "grad:" + tensors[t.index()].name;
            TensorId g;
            if (consumers[t.index()] == 1) {
                g = addTensor(base, TensorRole::ActivationGrad, tensors[t.index()].bytes);
                gradOf[t.index()] = g;
            } else {
                g = addTensor(base + "#" + std::to_string(partials[t.index()].size()),
                              TensorRole::ActivationGrad, tensors[t.index()].bytes);
                partials[t.index()].push_back(g);
                if (static_cast<int>(partials[t.index()].size()) == consumers[t.index()])
                    pendingAccumulate.push_back(t);
            }
            out.push_back(g);
        }
        if (f.param.valid()) {
            const TensorId gw =
                addTensor("grad:" + tensors[f.param.index()].name, TensorRole::ParameterGrad,
                          tensors[f.param.index()].bytes);
            tensors[gw.index()].requiredAtEnd = true;
            out.push_back(gw);
        }
        addOp("f" + std::to_string(i) + "/grad", Phase::Backward, in, out, uni(1, 12), f.op);
        for (TensorId t : pendingAccumulate) {
            const TensorId g = addTensor("grad:" + tensors[t.index()].name,
                                         TensorRole::ActivationGrad, tensors[t.index()].bytes);
            addOp("acc:" + tensors[t.index()].name, Phase::Backward, partials[t.index()], {g}, 1);
            gradOf[t.index()] = g;
        }
    }
    RandomGraph rg;
    auto g = core::training::TrainingGraph::assemble(o.info, std::move(ops), std::move(tensors));
    assert(g.hasValue());
    rg.graph = std::move(*g);
    rg.costs.opSeconds = seconds;
    rg.costs.source = "random";
    return rg;
}

/// `blocks` residual blocks: conv, bn, relu, conv, bn, add (the block input), relu; 100 bytes
/// per activation, a conv 10 time units and the other ops 1.
inline RandomGraph residualBlocks(int blocks, uint32_t seed = 1)
{
    RandomGraphOptions o;
    using R = ForwardSpec;
    for (int b = 0; b < blocks; ++b) {
        const int input = int(o.fixed.size()); // value index of the block's input
        o.fixed.push_back({R::ConvLike, -1, 100, 10});
        o.fixed.push_back({R::BnLike, -1, 100, 1});
        o.fixed.push_back({R::ReluLike, -1, 100, 1});
        o.fixed.push_back({R::ConvLike, -1, 100, 10});
        o.fixed.push_back({R::BnLike, -1, 100, 1});
        o.fixed.push_back({R::AddLike, input, 100, 1});
        o.fixed.push_back({R::ReluLike, -1, 100, 1});
    }
    return randomTrainingGraph(seed, o);
}

/// The solvers these tests cover (the MILP and offload solvers have their own tests).
inline bool isCheckpointSolver(const std::string &id)
{
    for (const char *s : {"store-all", "chen-sqrtn", "chen-greedy", "revolve", "feng-huang",
                          "hong-dp", "hong-linear", "rotor"})
        if (id == s)
            return true;
    return false;
}

} // namespace remat::tests
