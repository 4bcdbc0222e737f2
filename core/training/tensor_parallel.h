#pragma once
// Megatron-LM tensor parallelism (Shoeybi et al. 2019) and sequence parallelism (Korthikanti et
// al. 2022) on a training graph: the bytes one of the t ranks of a tensor-parallel group holds.
// Called by applyTrainingOptions (training_options.h) after precision, before ZeRO sharding.
//   shardTensorParallel(graph, ops, tensors, 4, true);   // errors: heads not divisible, ...
//
// The rule that finds the linears, read over the forward ops in order:
// - A linear is a MatMul or Gemm one of whose inputs is a weight (a Parameter, or computed from
//   parameters and constants only: Transpose(W), a tied embedding's transpose).
// - A linear whose activation input is replicated is column-parallel: its weight is split over t
//   and its output is split (QKV, FFN up / gate, the LM head: vocabulary-parallel logits). A
//   linear whose activation input is split is row-parallel: weight split, output replicated (the
//   all-reduce; attention out, FFN down). A Gather from a weight (an embedding) is
//   vocabulary-parallel: table split, output replicated.
// - Any other op's outputs are split when one of its activation inputs is split (the attention
//   scores, softmax, dropout inside attention, the fused attention op, GELU / SwiGLU, rotary),
//   and the parameters it reads are then split too (a column-parallel linear's bias Add).
// - Gradients follow their forward tensor; parameter gradients their parameter.
// - Sequence parallelism: every replicated activation, saved state and activation gradient is
//   split along the sequence as well (layer norms, residual adds, dropout after attention and
//   FFN, the embedding output).
// - Communication: the all-reduces of tensor parallelism run in place on the op's output
//   (torch.distributed.all_reduce in Megatron's mappings): no bytes. With sequence parallelism a
//   column-parallel linear all-gathers its input (workspace: the full input, forward, and in the
//   backward the re-gathered input plus the full input gradient before its reduce-scatter); a
//   row-parallel linear holds its full output before the reduce-scatter (forward) and the
//   all-gathered output gradient (backward).
// - Heads: every tensor reshaped into heads inside a split region ([.., S, heads, d] from
//   [.., S, heads * d]), every Softmax over 4-D scores in one and every fused attention op's Q, K
//   and V must have a head count t divides (Megatron splits whole heads; K/V heads too): else an
//   error names the node, the heads and the divisors.
// Limits: the alternation is Megatron's for transformer blocks (attention, MLP, SwiGLU, LoRA
// adapters read as column then row); it is not Megatron's for convolutions (replicated),
// mixture-of-experts routing or a linear chain without a block structure. Split tensors keep their
// logical shape (bytes are per rank; a parameter's shape is split along its split axis when
// divisible); tensors without a sequence dimension split under sequence parallelism (a pooled
// vector) are counted at 1/t as well. Layer-norm weights are replicated (their gradients
// all-reduced), as in Megatron.

#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::training {

/// One rank's share of `bytes` split over `ranks`, rounded up (tensor parallelism and ZeRO
/// sharding, applyTrainingOptions).
inline int64_t shareOf(int64_t bytes, int64_t ranks) { return (bytes + ranks - 1) / ranks; }

/// Divides the per-rank bytes of `tensors` and adds the communication workspace to `ops` (see
/// above). `graph` is the graph `ops` and `tensors` were copied from (for names and structure).
Status shardTensorParallel(const TrainingGraph &graph, std::vector<Op> &ops,
                           std::vector<Tensor> &tensors, int64_t t, bool sequenceParallel);

} // namespace remat::core::training
