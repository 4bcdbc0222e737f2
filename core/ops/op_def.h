#pragma once
// One description per ONNX op type: everything the stages know about it, side by side.
//   const ops::OpDef *def = ops::findOp("Conv", opset);     // null: an op type we do not know
//   def->inferShape(shapeCtx);                               // onnx: output dtypes and shapes
//   def->derive(ruleCtx);                                    // training: what the backward saves
//   ops::forwardFlops(graph, node);  def->family;  def->hostOnly;   // cost, explorer, CUDA backend
//
// The table is an explicit list (registry.cpp) of the family files elementwise.cpp, nn.cpp,
// tensor.cpp, reduction.cpp and control.cpp (ONNX's onnx/defs/<family> split); nothing registers
// itself. tests/ops/tst_op_table.cpp walks it: an op that is differentiable must have its gradient
// rule, CPU and CUDA kernels and test rows, or the test names what is missing.
//
// Gradient-rule conventions (kernels rely on them):
// - Positions are ONNX positions: savedInputs / gradInputs index the node's inputs, savedOutputs
//   its outputs. Extra SavedState outputs a rule appends to the forward op have fixed positions
//   after the ONNX ones that exist in the op's schema: MaxPool indices 1 (ONNX's own Indices
//   output), BatchNormalization training mean 3 and inverse std 4 (the opset-9 positions),
//   LayerNormalization Mean 1 and InvStdDev 2 (its own optional outputs), ReduceMax / ReduceMin
//   over one axis int64 indices 1 (torch.max(x, dim)'s), SoftmaxCrossEntropyLoss log_prob 1
//   (its own optional output), GroupNormalization and
//   InstanceNormalization mean 1 and inverse std 2 ([N, groups]), Dropout mask 1.
//   When the node already has an output at that position it is reused.
// - What is saved follows PyTorch's autograd (torch 1.13), so store-all memory agrees with it:
//   Gemm / MatMul save A when B needs a gradient and B when A does, Conv / ConvTranspose both
//   whenever any gradient is wanted (torch's convolution node keeps both); BatchNormalization in
//   training mode saves X, scale, mean and inverse std; Relu, Sigmoid, Tanh, Sqrt, Exp and Softmax
//   save their output; Clip saves its input (torchvision 0.14's ReLU6 is not in place: hardtanh
//   keeps its input, and the next conv keeps the result); MaxPool saves X and int64 indices;
//   AveragePool and GlobalAveragePool save X (PyTorch's pooling keeps `self`, though only its shape
//   is needed); Add / Sub / Neg / Concat / layout ops save nothing (Pad in reflect or edge mode
//   saves X, as ReflectionPad2d / ReplicationPad2d do); Dropout saves its bool mask (as
//   CUDA's fused dropout does); Mul saves the other operand of each input that needs a gradient;
//   Erf, Gelu, Silu, Mish, HardSigmoid, HardSwish, LeakyRelu and Log save X; Max / Min save both operands;
//   LogSoftmax saves its output; LayerNormalization, GroupNormalization and
//   InstanceNormalization X, scale, mean, inv std; ReduceMean over
//   given axes saves X (torch 1.13's mean.dim keeps self), the mean of everything nothing.

#include "core/ir/graph.h"
#include "core/util/status.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::core::ops {

struct ShapeContext;

/// What the explorer colours an op by (ui/colour_mode.cpp maps a family to its colour).
enum class OpFamily {
    Convolution,
    MatrixProduct,
    Normalisation,
    Activation,
    Pooling, ///< pools and reductions
    Arithmetic,
    DataMovement, ///< shape, layout, constants, comparisons on shape data
    Dropout,
    Other,
};
/// "Convolution", "Matrix product", ... (the legend's words).
const char *familyName(OpFamily family);

/// What a gradient rule sees of one forward node.
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
    bool needs(size_t inputPos) const
    {
        return inputPos < inputNeedsGrad.size() && inputNeedsGrad[inputPos];
    }
    /// Constant data of an input (a Constant node output or a constant initializer), if any.
    const ir::TensorConstant *constantInput(size_t pos) const;
};

/// A SavedState output the rule appends to the forward op.
struct ExtraOutput
{
    int position = 0;   ///< output position (see the conventions above)
    std::string suffix; ///< tensor name: "<first output name>::<suffix>"
    ir::DataType dtype = ir::DataType::Float;
    ir::Shape shape;
    /// A product computed on the way (an einsum's partial product) rather than fixed state: an
    /// activation, in the op's compute dtype under autocast.
    bool intermediate = false;
};

struct BackwardSpec
{
    std::vector<int> savedInputs;  ///< ONNX input positions the backward reads
    std::vector<int> savedOutputs; ///< output positions the backward reads (extras included)
    std::vector<ExtraOutput> extras;
    std::vector<int> gradInputs; ///< input positions the backward produces gradients for
    double forwardFlops = 0;
    double backwardFlops = 0;
    int64_t forwardWorkspace = 0;
    int64_t backwardWorkspace = 0;
};

/// What torch.autocast does with an op's floating-point inputs: the policy of its row in PyTorch's
/// aten/src/ATen/autocast_mode.cpp (torch 1.13; CPU rows also measured with torch 1.13).
enum class AutocastPolicy : unsigned char {
    Fallthrough,    ///< on no list: runs in its inputs' types (type promotion between them)
    LowerPrecision, ///< lower_precision_fp: float32 inputs cast to the half type, half outputs
    Fp32,           ///< fp32 (and fp32_set_opt_dtype / fp32_append_dtype, which save the same):
                    ///< half inputs cast to float32, float32 outputs
    Promote,        ///< promote: inputs cast to the widest floating type among them
};
/// torch.autocast's device_type: each device has its own lists.
enum class AutocastDevice : unsigned char { Cuda, Cpu };
const char *autocastPolicyName(AutocastPolicy p); ///< "fallthrough", "lower", "fp32", "promote"

/// An op's autocast row: the policy on each device, and where the node's attributes or rank
/// decide (CPU lists reflection_pad but not constant_pad, max_pool3d but not max_pool2d) a
/// function that refines the listed one.
struct AutocastRow
{
    AutocastPolicy cuda = AutocastPolicy::Fallthrough;
    AutocastPolicy cpu = AutocastPolicy::Fallthrough;
    /// null: the columns above. `node` may be null (attributes unknown); `rank` is input 0's.
    AutocastPolicy (*refine)(const ir::Node *node, size_t rank, AutocastDevice device,
                             AutocastPolicy listed) = nullptr;
};

using ShapeFn = Status (*)(ShapeContext &ctx);
using DifferentiableFn = bool (*)(const ir::Node &node, size_t pos);
using GradientRuleFn = Expected<BackwardSpec> (*)(const RuleContext &ctx);
using FlopsFn = double (*)(const RuleContext &ctx);

/// Everything about one ONNX op type. One row of the table, written with designated initializers
/// in its family file.
struct OpDef
{
    const char *type = "";
    OpFamily family = OpFamily::Other;
    /// First opset the type exists in (findOp refuses an older one); the shape function handles
    /// every later form (attributes that became inputs: Squeeze axes 13, Reduce* axes 13 / 18 ...).
    int sinceOpset = 1;
    /// Output dtypes and shapes, and small constant values for shape arithmetic. Null: outputs are
    /// left unknown (ONNX's own inference may still fill them in).
    ShapeFn inferShape = nullptr;
    /// Whether ONNX input `pos` can carry a gradient (only floating-point values ever do).
    DifferentiableFn differentiable = nullptr;
    /// The gradient rule: what the backward reads, saves (extras), produces and costs, and the
    /// forward FLOPs. Non-differentiable ops the builder accepts have a rule with no gradients.
    /// Null: the training builder takes the op as forward-only where no gradient reaches a
    /// floating-point result through it (integer or bool outputs, `differentiable` false for
    /// every input, or inputs that need no gradient), and refuses it otherwise.
    GradientRuleFn derive = nullptr;
    /// Forward FLOPs of an op the builder refuses (the explorer still shows them); ops with a
    /// rule take the rule's figure.
    FlopsFn flops = nullptr;
    /// Host-only shape arithmetic: why a device backend may run it on the host through the CPU
    /// reference kernel (null: a device backend needs its own kernel).
    const char *hostOnly = nullptr;
    /// What torch.autocast does to it, per device (core/training/autocast.h applies it).
    AutocastRow autocast = {};

    /// Whether any input can carry a gradient (the op then needs backward kernels).
    bool hasGradient() const { return derive && differentiable && differentiable != noInputs; }
    static bool noInputs(const ir::Node &, size_t) { return false; }
};

/// The autocast policy of `def` on `device` for `node` (null: attributes unknown) whose input 0
/// has rank `rank`.
AutocastPolicy autocastPolicy(const OpDef &def, const ir::Node *node, size_t rank,
                              AutocastDevice device);

/// The table, sorted by type.
const std::vector<OpDef> &allOps();
/// The definition of `type` valid at `opset` (0: any opset); null when unknown or too old.
const OpDef *findOp(const std::string &type, int64_t opset = 0);

/// Forward FLOPs of one node from its op's gradient rule (or flops function): 2 x MACs for
/// Conv / Gemm / MatMul, a few per element for element-wise ops, 0 for data movement and for
/// unknown ops. The figure the training graph's cost model uses for the same node.
double forwardFlops(const ir::Graph &graph, const ir::Node &node);

/// The axes a Reduce* node names: its attribute (before opset 18) or its input 1 (from 18), given
/// as `axesInput` (null when absent or not a constant); nullopt when that input is there but its
/// values are not known. Empty: every axis.
std::optional<std::vector<int64_t>> reduceAxes(const ir::Node &node,
                                               const ir::TensorConstant *axesInput);

/// Whether a Dropout node drops anything (training mode on, ratio > 0). When it does not, it is the
/// identity, as in PyTorch (which returns its input): the builder removes it.
bool dropoutDrops(const ir::Graph &graph, const ir::Node &node);

} // namespace remat::core::ops
