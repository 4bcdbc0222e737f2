#pragma once
// The training step derived from a forward graph: forward ops, a loss, backward ops, and every
// tensor with its bytes. Immutable once built; the input to cost models, solvers, the simulator
// and the executors. Also built directly from benchmark graphs (no ONNX behind it).
//   Expected<TrainingGraph> tg = training::buildTrainingGraph(graph, options);
//   for (const training::Op &op : tg->ops()) if (op.phase == Phase::Backward) ...
//   tg->tensor(op.inputs[0]).bytes;

#include "core/ir/dtype.h"
#include "core/ir/shape.h"
#include "core/training/training_options.h"
#include "core/util/ids.h"
#include "core/util/status.h"

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace remat::core::ir {
class Graph;
struct Node;
} // namespace remat::core::ir

namespace remat::core::training {

/// Ops are stored in this order. Optimizer: the update ops an optimizer adds after the backward
/// (training_options.h); solvers plan the graph without them (Solver::solve appends them).
enum class Phase : unsigned char { Forward, Loss, Backward, Optimizer };

/// What a tensor is to the memory model; the simulator's categories derive from this.
enum class TensorRole : unsigned char {
    Parameter,      ///< trainable weight: preloaded, resident for the whole step
    Buffer,         ///< non-trainable state (BN running stats): preloaded, resident
    Frozen,         ///< a weight that does not train (ir::ValueKind::Frozen): preloaded,
                    ///< resident, no gradient, no optimizer state, no master copy, no shard
    Input,          ///< the batch: preloaded
    Constant,       ///< folded constants an op reads (shape tensors, tables): preloaded
    Activation,     ///< a forward output
    SavedState,     ///< an extra forward output only backward reads (Dropout mask, MaxPool
                    ///< indices, BN mean / inverse std)
    Loss,           ///< the scalar loss and its seed gradient
    ActivationGrad, ///< gradient of an activation or of the input
    ParameterGrad,  ///< gradient of a parameter: kept until the end of the step (preloaded
                    ///< when it accumulates over micro-batches)
    OptimizerState, ///< optimizer state (momentum, exp_avg, ...): preloaded, resident
    MasterWeight,   ///< float32 master copy of a parameter (bf16-master / 16-master): preloaded
    WeightCast,     ///< autocast's lower-precision copy of a weight (a forward Cast's output,
                    ///< kept while a backward that saved it needs it; autocast.h)
};
const char *tensorRoleName(TensorRole role);

struct Tensor
{
    TensorId id;
    /// forward value name, or "grad:<name>", "grad:<name>#k" partials (made unique: TensorNames)
    std::string name;
    TensorRole role = TensorRole::Activation;
    int64_t bytes = 0;
    ir::DataType dtype = ir::DataType::Float;
    ir::Shape shape;             ///< static; empty for benchmark graphs
    OpId producer;               ///< invalid for preloaded tensors
    std::vector<OpId> consumers; ///< in op order
    ValueId source;         ///< the forward value it is, or is the gradient of (may be invalid)
    bool preloaded = false; ///< resident before the first step (parameters, buffers, input)
    bool requiredAtEnd =
        false; ///< must be resident after the last step (parameter grads, input grad)
};

/// How a backward op's operand relates to the forward op it differentiates. Kernels use this to
/// find X, W, Y, dY in a backward op's inputs without guessing from positions.
struct Operand
{
    enum class Kind : unsigned char {
        Plain,      ///< an ordinary operand (forward ops, accumulation ops)
        FwdInput,   ///< forward op's input number `index`
        FwdOutput,  ///< forward op's output number `index` (SavedState extras included)
        OutputGrad, ///< gradient of the forward op's output number `index`
        InputGrad,  ///< (backward outputs) gradient of the forward op's input number `index`
    };
    Kind kind = Kind::Plain;
    int index = 0;
};

struct Op
{
    OpId id;
    std::string name; ///< forward: ONNX node name; backward: "<fwd name>/grad"
    std::string type; ///< forward: ONNX op type; backward: "<Type>Grad"; "Accumulate", "Loss"
    Phase phase = Phase::Forward;
    std::vector<TensorId> inputs;
    std::vector<TensorId> outputs;
    std::vector<Operand> inputRoles;  ///< same length as inputs
    std::vector<Operand> outputRoles; ///< same length as outputs
    OpId forwardOf;                   ///< backward ops: the forward op they differentiate
    NodeId source; ///< the ONNX node (forward op, or the one a backward op derives from)
    /// A fused pattern's synthetic node (GroupNormalization from torch's exported group_norm),
    /// whose attributes the kernels read instead of `source`'s; null for ONNX nodes.
    std::shared_ptr<const ir::Node> fusedNode;
    double flops = 0;           ///< floating-point operations of one run
    int64_t bytesAccessed = 0;  ///< bytes read plus written (for the roofline)
    int64_t workspaceBytes = 0; ///< transient scratch while the op runs
};

/// Where a fusion happened (or almost did) in the forward graph.
struct FusionSite
{
    /// The fused op's node (the pattern's last, whose id the op keeps); for a near miss, its
    /// Softmax.
    NodeId node;
    /// The pattern's other nodes, absorbed into the fused op (empty for a near miss and for an
    /// ONNX Attention node, already one node).
    std::vector<NodeId> absorbed;
};

/// Where a training graph came from and at what batch.
struct TrainingGraphInfo
{
    std::string modelPath;
    std::string modelSha256;
    int64_t batch = 0;
    std::string lossDescription; ///< "sum(output * R)"
    /// Optimizer, precision, sharding, micro-batches (apply_training_options.h); default: none.
    TrainingOptions training;
    /// What the builder's optional fusions (--attention sdpa) replaced, one line per pattern, and
    /// the patterns that almost matched, each with why it was not fused.
    std::vector<std::string> fusedPatterns, notFused;
    /// The same per line, by node, for views (the explorer draws a fused pattern as a group):
    /// fusedSites[i] is fusedPatterns[i], notFusedSites[i] is notFused[i].
    std::vector<FusionSite> fusedSites, notFusedSites;
};

class TrainingGraph
{
public:
    TrainingGraph() = default;
    /// Assembles and checks (ids, producers, consumers, forward ops first, then loss, then
    /// backward). Used by the ONNX-derived builder and the benchmark-graph importer.
    static Expected<TrainingGraph> assemble(TrainingGraphInfo info, std::vector<Op> ops,
                                            std::vector<Tensor> tensors);

    const TrainingGraphInfo &info() const { return m_info; }
    const std::vector<Op> &ops() const { return m_ops; }
    const std::vector<Tensor> &tensors() const { return m_tensors; }
    const Op &op(OpId id) const { return m_ops[id.index()]; }
    const Tensor &tensor(TensorId id) const { return m_tensors[id.index()]; }
    size_t opCount() const { return m_ops.size(); }
    size_t tensorCount() const { return m_tensors.size(); }
    /// Ops are stored forward first; [0, forwardOpCount) are forward ops.
    size_t forwardOpCount() const { return m_forwardCount; }
    size_t backwardOpCount() const
    {
        return m_ops.size() - m_forwardCount - m_lossCount - m_optimizerCount;
    }
    /// Update ops of the optimizer step (Phase::Optimizer), stored last; 0 without an optimizer.
    size_t optimizerOpCount() const { return m_optimizerCount; }
    /// The same graph without its optimizer step: every op and tensor keeps its id (the update
    /// ops are the last ops; the state tensors stay, preloaded and unread). What solvers plan on.
    Expected<TrainingGraph> withoutOptimizerStep() const;
    /// The backward op that differentiates forward op `fwd`, if any.
    OpId backwardOf(OpId fwd) const { return m_backwardOf[fwd.index()]; }
    const TensorId *findTensor(const std::string &name) const;

private:
    TrainingGraphInfo m_info;
    std::vector<Op> m_ops;
    std::vector<Tensor> m_tensors;
    std::vector<OpId> m_backwardOf;
    size_t m_forwardCount = 0;
    size_t m_lossCount = 0;
    size_t m_optimizerCount = 0;
    std::vector<std::pair<std::string, TensorId>> m_byName; // sorted
};

/// Names of the tensors the tool adds ("loss", "R:<output>", "grad:<v>", "<v>::mean",
/// "exp_avg:<w>" ...) made unique against the file's own names: a model may name a value anything,
/// including "loss" or "grad:x" (an MAE returning its loss). A taken name gets "~1", "~2" ...;
/// tensors are found by role and source, never by pasting a prefix onto a name.
///   TensorNames names;  names.reserve("loss");  names.claim("loss");  // "loss~1"
class TensorNames
{
public:
    /// Marks a name as taken (the file's value names) and returns it unchanged.
    const std::string &reserve(const std::string &name);
    /// `base`, or `base~k` with the smallest k not taken; the result is taken from then on.
    std::string claim(std::string base);

private:
    std::unordered_set<std::string> m_taken;
};

/// The node whose attributes `op`'s kernels read: its fused node, else its ONNX node in
/// `forward`; null for Loss / Accumulate and when `forward` lacks the node.
const ir::Node *attributeNode(const Op &op, const ir::Graph *forward);

} // namespace remat::core::training
