#pragma once
// Builds the TrainingGraph of a forward ir::Graph: forward ops, the loss, backward ops from the
// gradient rules, gradient accumulation.
//   Expected<ir::Graph> g = onnx::importModel(path, {.batch = 32});
//   Expected<TrainingGraph> tg = training::buildTrainingGraph(*g, {});
//   TrainingSummary s = training::summarize(*tg);  s.savedForBackwardBytes;
//
// What the builder does to the forward graph, and why:
// - Shape-only subgraphs (Shape, Constant, and every node whose inputs are all constant) are
//   constant-folded: they are not ops; their outputs that a kept op reads become preloaded
//   Constant tensors (Tensor::source names the ir::Value; kernels take its initializer, or
//   evaluate the folded subgraph, which depends on static shapes only).
// - Identity, and Dropout that drops nothing (ratio 0 or inference mode), are removed and their
//   consumers read the input, as PyTorch returns the input itself (no copy is saved).
// - The erf form of GELU that torch exports (Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5)
//   becomes one op of type "Gelu" (input x, output y, source: the final Mul node), as PyTorch
//   runs and saves it: one saved input instead of three intermediates.
// - SiLU / Swish as torch exports it before opset 24 (Sigmoid(x) -> Mul(x, .)) becomes one op of
//   type "Silu", and Mish before opset 18 (Softplus(x) -> Tanh -> Mul(x, .)) one "Mish", the
//   intermediate read once: PyTorch's silu and mish save only their input, where the pieces
//   would keep the input and the gate (EfficientNet's, Conformer's and LLaMA's SiLU).
// - With BuildOptions::attention = Attention::Sdpa, every attention pattern (MatMul(Q, K^T) ->
//   scale / bias / mask -> Softmax -> Dropout -> MatMul(., V)) becomes one
//   "ScaledDotProductAttention" op, as F.scaled_dot_product_attention runs it
//   (core/training/fusions/attention.h). TrainingGraphInfo::fusedPatterns lists what was fused,
//   notFused the patterns that almost matched, with the reason.
// - GroupNorm as torch.onnx exports it (Reshape to [N, G, -1] -> InstanceNormalization with
//   constant ones and zeros -> Reshape back -> Mul by the weight -> Add the bias) becomes one
//   "GroupNormalization" op with per-channel scale and bias (opset 21's form), as PyTorch's
//   group_norm runs and saves it: input, weight, mean and rstd, where the pieces would also keep
//   the normalised tensor for the weight's gradient.
// - Loss: one op "loss" of type "Loss" (Phase::Loss) computing L = sum(output * R) over every
//   floating-point graph output, R a preloaded Constant tensor "R:<output>"; it produces the
//   scalar "loss" and the seed gradient "grad:<output>" (role Loss).
// - Backward ops in reverse forward order, "<fwd name>/grad" of type "<Type>Grad", inputs: the
//   saved forward inputs (Operand FwdInput), saved forward outputs (FwdOutput), then the output
//   gradients (OutputGrad); outputs: input gradients (InputGrad). Forward ops' operands are Plain
//   with `index` = the ONNX position (extras: the rule's position).
// - A value with k > 1 gradient contributions gets partials "grad:<v>#0".."#k-1"; each partial
//   after the first is summed at once by an "Accumulate" op (running sums "grad:<v>#sum<j>", the
//   last one is "grad:<v>"), so at most the running sum and one partial are alive, like
//   PyTorch's autograd input buffer.
// - An op with no gradient rule (an integer or boolean result: OneHot, ArgMax's index, NonZero,
//   a comparison; a table row that says no input is differentiable: Floor, Sign, IsNaN; or any
//   op no gradient reaches) is a forward op that ends the gradient path, as PyTorch's
//   non-differentiable ops do; only a floating-point result a gradient would flow through needs
//   a rule, and the build fails naming the op and the value whose gradient would reach it.
// - Names: forward tensors keep the file's names; the tensors the builder adds ("loss",
//   "R:<output>", "grad:<v>", "<v>::<suffix>") are made unique against them (TensorNames), so a
//   file whose output is called "loss" keeps it and the builder's scalar becomes "loss~1".
// - Parameters and buffers no op reads (the branch of an If not taken) are resident tensors all
//   the same, as the PyTorch module holds them; they get no gradient.
// - Parameter gradients: role ParameterGrad, requiredAtEnd. The input gets a gradient only with
//   BuildOptions::inputGradients.

#include "core/ir/graph.h"
#include "core/training/training_graph.h"
#include "core/training/training_options.h"
#include "core/util/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat::core::training {

struct BuildOptions
{
    /// Also compute dL/d(input) for the graph's data inputs (requiredAtEnd).
    bool inputGradients = false;
    /// Fuse torch's erf GELU pattern into one Gelu op (see above).
    bool fuseGelu = true;
    /// Fuse x * Sigmoid(x) into one Silu op and x * Tanh(Softplus(x)) into one Mish op, and
    /// torch's exported GroupNorm into one GroupNormalization op (see above).
    bool fuseActivations = true;
    /// Eager: attention as the file writes it; Sdpa: fused (see above). Recorded in the graph's
    /// TrainingGraphInfo::training.attention.
    Attention attention = Attention::Eager;
};

Expected<TrainingGraph> buildTrainingGraph(const ir::Graph &graph,
                                           const BuildOptions &options = {});

/// Figures of a training graph that do not need a schedule.
struct TrainingSummary
{
    size_t forwardOps = 0, lossOps = 0, backwardOps = 0, accumulateOps = 0, optimizerOps = 0;
    int64_t paramBytes = 0;       ///< Parameter tensors: the trainable weights
    int64_t frozenParamBytes = 0; ///< frozen weights (resident, no gradient, no state)
    int64_t paramGradBytes = 0;   ///< final parameter gradients
    int64_t bufferBytes = 0, inputBytes = 0, constantBytes = 0;
    /// Forward tensors a backward op reads (each once), excluding parameters, buffers, constants,
    /// the input and weight-derived tensors, counted as PyTorch keeps them: a tensor PyTorch makes
    /// as a view (Reshape, Flatten, Squeeze, Unsqueeze, Split, Slice, Expand, a Gather of one
    /// index) keeps its base's whole storage, once, and a view of a parameter, buffer or the
    /// input is none; an AveragePool's zero Pad (torch's export of a padded avg_pool2d) keeps the
    /// unpadded input, as PyTorch's pool saves that; an exported GLU (Split, Sigmoid, Mul) keeps its
    /// input once, as PyTorch's glu saves that; a constant made by a node per sample (leading
    /// dim the batch, above 1, like the result of the op reading it: torch.zeros(B, ...) created
    /// in forward, a ConvLSTM's first cell state) is kept as PyTorch keeps the tensor it
    /// allocates in forward; torch.onnx's cosine_similarity (sums of x1 x2, x1^2, x2^2, a Max and
    /// a Div) keeps, as ATen's does, per operand that needs a gradient the operand, its norm and
    /// the other operand normalised, instead of the export's products and sums. Comparable with
    /// PyTorch's saved_activation_bytes.
    int64_t savedForBackwardBytes = 0;
    /// The same tensors as this training graph holds them (views materialised): what store-all
    /// keeps at the start of backward in the simulator and the executors.
    int64_t storedActivationBytes = 0;
    size_t savedForBackwardTensors = 0;
    std::map<std::string, int64_t> savedForBackwardBytesByDtype;
    /// Saved tensors computed from parameters alone (Transpose(W), Expand(class token)): views of
    /// parameters in PyTorch, so not activations there.
    int64_t savedWeightDerivedBytes = 0;
    double forwardFlops = 0, backwardFlops = 0;
    /// Forward FLOPs of Conv, Gemm and MatMul only (2 x MACs), PyTorch's fwd_flops.
    double forwardMatmulConvFlops = 0;
    /// savedForBackwardBytes per forward op, in forward order: each saved tensor is counted at the
    /// first forward op whose backward reads it (PyTorch's autograd node that first saves a
    /// storage), so the entries sum to savedForBackwardBytes. Ops that save nothing are omitted.
    struct OpSaved
    {
        OpId op;
        int64_t bytes = 0;
        std::vector<TensorId> tensors;
    };
    std::vector<OpSaved> savedByForwardOp;
};

/// With `forward` (the graph the training graph was built from) views follow torch's stride rules
/// (a reshape of a transposed view is a view only where the strides allow, a matrix product
/// keeps a copy of an operand it had to reshape by copying); without it, the shape-only rule: a
/// reshape is a view, a transpose starts a storage of its own.
TrainingSummary summarize(const TrainingGraph &graph, const ir::Graph *forward = nullptr);

} // namespace remat::core::training
