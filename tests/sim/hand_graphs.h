#pragma once
// Small hand-built training graphs with their memory figures worked out by hand, shared by the
// schedule and sim tests.
//   training::TrainingGraph g = tests::twoLayerGraph();
//   cost::Costs c = tests::twoLayerCosts();

#include "core/cost/costs.h"
#include "core/training/training_graph.h"

#include <cassert>

namespace remat::tests {

using namespace remat::core;
using training::Op;
using training::Phase;
using training::Tensor;
using training::TensorRole;

/// Tensors (bytes): x 100 (input), w 10 (parameter), a 200, b 300 (activations), L 4 (loss),
/// gb 300, ga 200 (activation grads), gw 10 (parameter grad, required at the end).
/// Ops (seconds): 0 f1(x,w)->a [1 s, 40 B workspace]; 1 f2(a)->b [2 s]; 2 loss(b)->L,gb [0.5 s];
/// 3 f2/grad(a,gb)->ga [4 s, 50 B workspace]; 4 f1/grad(x,w,ga)->gw [3 s].
inline training::TrainingGraph twoLayerGraph()
{
    std::vector<Tensor> t(8);
    const auto def = [&](int i, const char *name, TensorRole role, int64_t bytes,
                         bool pre = false) {
        t[i].id = TensorId(int32_t(i));
        t[i].name = name;
        t[i].role = role;
        t[i].bytes = bytes;
        t[i].preloaded = pre;
    };
    def(0, "x", TensorRole::Input, 100, true);
    def(1, "w", TensorRole::Parameter, 10, true);
    def(2, "a", TensorRole::Activation, 200);
    def(3, "b", TensorRole::Activation, 300);
    def(4, "L", TensorRole::Loss, 4);
    def(5, "gb", TensorRole::ActivationGrad, 300);
    def(6, "ga", TensorRole::ActivationGrad, 200);
    def(7, "gw", TensorRole::ParameterGrad, 10);
    t[7].requiredAtEnd = true;
    std::vector<Op> ops(5);
    const auto op = [&](int i, const char *name, Phase phase, std::vector<int> in,
                        std::vector<int> out, int64_t ws = 0, int fwd = -1) {
        ops[i].id = OpId(int32_t(i));
        ops[i].name = name;
        ops[i].type = name;
        ops[i].phase = phase;
        for (int k : in)
            ops[i].inputs.push_back(TensorId(int32_t(k)));
        for (int k : out)
            ops[i].outputs.push_back(TensorId(int32_t(k)));
        ops[i].workspaceBytes = ws;
        ops[i].forwardOf = OpId(int32_t(fwd));
    };
    op(0, "f1", Phase::Forward, {0, 1}, {2}, 40);
    op(1, "f2", Phase::Forward, {2}, {3});
    op(2, "loss", Phase::Loss, {3}, {4, 5});
    op(3, "f2/grad", Phase::Backward, {2, 5}, {6}, 50, 1);
    op(4, "f1/grad", Phase::Backward, {0, 1, 6}, {7}, 0, 0);
    auto g = training::TrainingGraph::assemble({}, std::move(ops), std::move(t));
    assert(g.hasValue());
    return std::move(*g);
}

/// 1, 2, 0.5, 4, 3 seconds; copies at 100 B/s device->host and 300 B/s host->device.
inline cost::Costs twoLayerCosts()
{
    cost::Costs c;
    c.opSeconds = {1.0, 2.0, 0.5, 4.0, 3.0};
    c.deviceToHostBandwidth = 100;
    c.hostToDeviceBandwidth = 300;
    c.source = "hand";
    return c;
}

} // namespace remat::tests
