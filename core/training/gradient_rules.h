#pragma once
// Gradient rules: per ONNX op type, what its backward reads, what it produces and what it costs.
//   const GradientRule *rule = findGradientRule("Conv");
//   Expected<BackwardSpec> spec = rule->derive(ctx);   // ctx: the node and which grads exist
//   spec->savedInputs;  spec->extras;  spec->backwardFlops;
//
// Conventions (kernels rely on them):
// - Positions are ONNX positions: savedInputs / gradInputs index the node's inputs, savedOutputs
//   its outputs. Extra SavedState outputs a rule appends to the forward op have fixed positions
//   after the ONNX ones that exist in the op's schema: MaxPool indices 1 (ONNX's own Indices
//   output), BatchNormalization training mean 3 and inverse std 4 (the opset-9 positions),
//   LayerNormalization Mean 1 and InvStdDev 2 (its own optional outputs), Dropout mask 1.
//   When the node already has an output at that position it is reused.
// - What is saved follows PyTorch's autograd (torch 1.13), so store-all memory agrees with it:
//   Conv / Gemm / MatMul save A when B needs a gradient and B when A does; BatchNormalization in
//   training mode saves X, scale, mean and inverse std; Relu, Sigmoid, Tanh, Sqrt and Softmax save
//   their output; Clip saves its input (torchvision 0.14's ReLU6 is not in place: hardtanh keeps
//   its input, and the next conv keeps the result);
//   MaxPool saves X and int64 indices; AveragePool and GlobalAveragePool save X (PyTorch's pooling
//   keeps `self`, though only its shape is needed); Add / Sub / Concat / layout ops save nothing; Dropout saves its
//   bool mask (as CUDA's fused dropout does); Mul saves the other operand of each input that needs a
//   gradient; Erf, Gelu, HardSigmoid, HardSwish save X; LayerNormalization X, scale, mean, inv std.

#include "core/ir/graph.h"
#include "core/util/status.h"

#include <string>
#include <vector>

namespace remat::core::training {

/// What a rule sees of one forward node.
struct RuleContext
{
    const ir::Graph *graph = nullptr;
    const ir::Node *node = nullptr;
    std::vector<bool> inputNeedsGrad; ///< per ONNX input: differentiable and requires a gradient
    std::vector<bool> outputHasGrad;  ///< per ONNX output: a gradient arrives for it

    /// The input / output at an ONNX position, or null when omitted or out of range.
    const ir::Value *input(size_t pos) const;
    const ir::Value *output(size_t pos) const;
    /// Element count of an input / output (0 when absent).
    int64_t inputElements(size_t pos) const;
    int64_t outputElements(size_t pos) const;
    bool needs(size_t inputPos) const { return inputPos < inputNeedsGrad.size() && inputNeedsGrad[inputPos]; }
    /// Constant data of an input (a Constant node output or a constant initializer), if any.
    const ir::TensorConstant *constantInput(size_t pos) const;
};

/// A SavedState output the rule appends to the forward op.
struct ExtraOutput
{
    int position = 0;       ///< output position (see the conventions above)
    std::string suffix;     ///< tensor name: "<first output name>::<suffix>"
    ir::DataType dtype = ir::DataType::Float;
    ir::Shape shape;
};

struct BackwardSpec
{
    std::vector<int> savedInputs;   ///< ONNX input positions the backward reads
    std::vector<int> savedOutputs;  ///< output positions the backward reads (extras included)
    std::vector<ExtraOutput> extras;
    std::vector<int> gradInputs;    ///< input positions the backward produces gradients for
    double forwardFlops = 0;
    double backwardFlops = 0;
    int64_t forwardWorkspace = 0;
    int64_t backwardWorkspace = 0;
};

struct GradientRule
{
    const char *opType;
    /// Whether ONNX input `pos` can carry a gradient (only floating-point values ever do).
    bool (*differentiable)(const ir::Node &node, size_t pos);
    /// The backward of this node given which gradients exist; forward FLOPs always.
    Expected<BackwardSpec> (*derive)(const RuleContext &ctx);
};

/// Whether a Dropout node drops anything (training mode on, ratio > 0). When it does not, it is the
/// identity, as in PyTorch (which returns its input): the builder removes it.
bool dropoutDrops(const ir::Graph &graph, const ir::Node &node);

/// The explicit table, sorted by op type.
const std::vector<GradientRule> &gradientRules();
/// Null when the op type has no rule.
const GradientRule *findGradientRule(const std::string &opType);

} // namespace remat::core::training
