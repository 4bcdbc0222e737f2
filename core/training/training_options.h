#pragma once
// How the model trains, beyond its graph: the optimizer, the precision, gradient accumulation and
// data-parallel sharding of the model states. Applied to a built training graph, they add the
// optimizer's state, float32 master weights and one update op per parameter after the backward,
// and resize what precision and sharding change, so the simulator's timeline holds them all.
//   TrainingOptions o;  o.optimizer = Optimizer::Adam;  o.precision = Precision::Bf16Mixed;
//   Expected<TrainingGraph> tg = applyTrainingOptions(*built, o);   // apply_training_options.h
//   (o.attention is read by the builder instead: buildTrainingGraph(g, {.attention = o.attention}))
//   ModelStateBytes m = modelStateBytes(*tg);   // 18 bytes per parameter for bf16-mixed Adam
//
// The memory model, per parameter of n elements (P = 4n bytes in float32), on one of N ranks:
// - Precision, named as Lightning names it (`--precision`):
//   `32-true` (default; `fp32` is an alias): everything float32.
//   `bf16-mixed` / `16-mixed`: PyTorch autocast (torch.autocast(device, bfloat16 / float16)), as
//   Lightning's and Hugging Face's mixed precision run it: weights, gradients and optimizer state
//   stay float32 (the optimizer side is the fp32 one); each forward op runs in the dtype its
//   device's autocast list gives, with the casts as ops of the training graph (autocast.h).
//   `bf16-true` / `16-true`: every floating tensor half, optimizer state too (torch's state is
//   zeros_like(param)), no master weights. The data input keeps its dtype.
//   `bf16-master` / `16-master` (DeepSpeed's and Megatron's layout): half-precision weights (the
//   compute copies, 2n) and activations, float32 master weights (4n) and optimizer state, float32
//   parameter gradients (4n: gradients are accumulated in float32, said explicitly).
//   Retired spellings are refused with the new name: `fp16-mixed` (the former half-with-master
//   mode, now `16-master`), `bf16` / `fp16` / `16` (ambiguous between -true and -mixed).
// - Optimizer state (torch.optim, state in the master dtype): sgd none; sgd-momentum one buffer;
//   adam / adamw exp_avg and exp_avg_sq; adafactor the factored second moment (a row and a column
//   vector per matrix, a full one for vectors). `none`: no state and no update ops (the default,
//   today's figures).
// - Update ops "<Type>Update" (Phase::Optimizer), one per parameter in parameter order, as
//   torch.optim's single-tensor path runs them: inputs {parameter, gradient, master weight (mixed),
//   state...}, updated in place (no outputs). Their transient buffers are the op's workspace:
//   adam / adamw 2 x the updated elements (exp_avg_sq.sqrt() and its division, alive at once),
//   adafactor 2 x, sgd / sgd-momentum 1 x with weight decay (grad.add(param, alpha=wd)), else 0.
// - Sharding over N ranks (per-rank bytes, each tensor's share rounded up): zero1 divides the
//   optimizer state and master weights by N; zero2 also the parameter gradients (the full
//   gradient is the producing backward op's workspace until it is reduce-scattered); zero3 /
//   fsdp also the parameters, and every op that reads a parameter holds its all-gathered copy as
//   workspace while it runs (forward, recompute and backward: one FSDP unit per op, a lower bound
//   of per-layer wrapping). The update ops work on the shard.
// - Gradient accumulation over k micro-batches: the simulated step is the last micro-batch at the
//   given batch; the parameter gradients are accumulators resident from the start (they hold the
//   earlier micro-batches' sums), and each backward op's fresh gradient is its workspace until it
//   is added in (PyTorch's AccumulateGrad). The effective batch is k x batch.
// - Attention: `eager` reads attention as the file writes it (MatMul, Softmax, MatMul: the S x S
//   scores and probabilities are kept, as PyTorch's eager attention keeps them); `sdpa` trains it
//   as F.scaled_dot_product_attention's flash / memory-efficient kernels do: the builder fuses
//   each attention pattern into one op that keeps Q, K, V, the output, a float32 log-sum-exp per
//   query row and the dropout RNG state (core/training/fusions/attention.h).
// - Tensor parallelism over t ranks (`tensorParallel`, Megatron-LM, Shoeybi et al. 2019) and
//   sequence parallelism (`sequenceParallel`, Korthikanti et al. 2022): per-rank bytes of one of
//   the t ranks of a tensor-parallel group. Which linears are column- and row-parallel is read
//   from the graph by one structural rule (core/training/tensor_parallel.h, where the rule and
//   its limits are written out): a linear (MatMul / Gemm with a weight) whose activation input is
//   replicated is column-parallel (its weight, bias and output split over t), one whose input is
//   split is row-parallel (weight split, output replicated after the all-reduce); everything
//   computed from a split tensor is split (attention heads, the FFN activation, dropout inside
//   attention). Replicated activations (layer norms, residual adds, dropout after the block) stay
//   whole without sequence parallelism and are split along the sequence with it. Communication
//   buffers: the all-reduces are in place (no bytes); with sequence parallelism the all-gathered
//   input of a column-parallel linear and the full output of a row-parallel linear before its
//   reduce-scatter are the op's workspace (forward and backward).

#include "core/ir/dtype.h"
#include "core/ops/op_def.h"
#include "core/util/status.h"

#include <cstdint>
#include <string>

namespace remat::core::training {

enum class Optimizer : unsigned char { None, Sgd, SgdMomentum, Adam, AdamW, Adafactor };
/// Fp32: 32-true. Bf16Mixed / Fp16Mixed: autocast. Bf16True / Fp16True: everything half.
/// Bf16Master / Fp16Master: half weights and activations, float32 master weights.
enum class Precision : unsigned char {
    Fp32,
    Bf16Mixed,
    Fp16Mixed,
    Bf16True,
    Fp16True,
    Bf16Master,
    Fp16Master
};
/// Which device's autocast lists a mixed precision follows (torch.autocast's device_type).
using ops::AutocastDevice;
enum class Sharding : unsigned char { None, Zero1, Zero2, Zero3 };
enum class Attention : unsigned char { Eager, Sdpa };

const char *optimizerName(Optimizer o); ///< "none", "sgd", "sgd-momentum", "adam", ...
/// "32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "bf16-master", "16-master"
const char *precisionName(Precision p);
const char *autocastDeviceName(AutocastDevice d); ///< "cuda", "cpu"
const char *shardingName(Sharding s);             ///< "none", "zero1", "zero2", "zero3"
const char *attentionName(Attention a);           ///< "eager", "sdpa"
/// Errors name the option and list the accepted values.
Expected<Optimizer> parseOptimizer(const std::string &text);
/// Also "fp32" (32-true); a retired spelling ("fp16-mixed", "bf16", ...) is an error that names
/// the new one.
Expected<Precision> parsePrecision(const std::string &text);
/// The names of session files before version 3: "fp32", "bf16-mixed" and "fp16-mixed" (then the
/// half-with-master mode), "bf16" (then everything bfloat16).
Expected<Precision> parseLegacyPrecision(const std::string &text);
Expected<AutocastDevice> parseAutocastDevice(const std::string &text);
/// bf16-mixed / 16-mixed: autocast.
inline bool isAutocast(Precision p)
{
    return p == Precision::Bf16Mixed || p == Precision::Fp16Mixed;
}
/// bf16-master / 16-master: half compute copies of float32 master weights.
inline bool hasMasterWeights(Precision p)
{
    return p == Precision::Bf16Master || p == Precision::Fp16Master;
}
/// The lower-precision dtype of a precision: bfloat16 or float16 (float32 for 32-true).
ir::DataType halfTypeOf(Precision p);
/// "fsdp" is read as zero3.
Expected<Sharding> parseSharding(const std::string &text);
Expected<Attention> parseAttention(const std::string &text);

/// torch.optim's hyperparameters for the update (the executed kernels read them).
struct OptimizerHyper
{
    double lr = 1e-3;
    double momentum = 0.9; ///< sgd-momentum (dampening 0, no Nesterov)
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    /// < 0: the optimizer's torch default (adamw 1e-2, the others 0).
    double weightDecay = -1;
    double effectiveWeightDecay(Optimizer o) const
    {
        return weightDecay >= 0 ? weightDecay : (o == Optimizer::AdamW ? 1e-2 : 0.0);
    }
    bool operator==(const OptimizerHyper &) const = default;
};

struct TrainingOptions
{
    Optimizer optimizer = Optimizer::None;
    Precision precision = Precision::Fp32;
    /// Whose autocast lists bf16-mixed / 16-mixed follow; read only for those precisions.
    AutocastDevice autocastDevice = AutocastDevice::Cuda;
    Sharding shard = Sharding::None;
    int64_t ranks = 1;        ///< data-parallel ranks the model states are sharded over
    int64_t microBatches = 1; ///< gradient accumulation steps per optimizer step
    /// How attention runs (see above); applied by the builder, not by applyTrainingOptions.
    Attention attention = Attention::Eager;
    /// Megatron-LM tensor parallelism over this many ranks (1: none); see the note above.
    int64_t tensorParallel = 1;
    /// Megatron-LM sequence parallelism (needs tensorParallel > 1).
    bool sequenceParallel = false;
    OptimizerHyper hyper;

    /// No optimizer, float32, no sharding, one micro-batch, eager attention: the graph is left as
    /// built.
    bool isDefault() const { return *this == TrainingOptions{}; }
    /// What the CPU backend executes: float32, no sharding, one micro-batch (any optimizer but
    /// adafactor, which is simulated only).
    bool executable() const;
    /// Why not executable(), with the way out; empty when it is.
    std::string notExecutableReason() const;
    bool operator==(const TrainingOptions &) const = default;
};

/// Checks ranks >= 1, micro-batches >= 1, tensor-parallel >= 1, sequence-parallel only with
/// tensor-parallel > 1 and the hyperparameters; errors name the option.
Status validateTrainingOptions(const TrainingOptions &options);

} // namespace remat::core::training
