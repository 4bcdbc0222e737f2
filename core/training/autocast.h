#pragma once
// PyTorch autocast (`--precision bf16-mixed` / `16-mixed`) as a pass over a built training graph:
// each forward op runs in the dtype its device's autocast list gives (the op's AutocastRow in
// core/ops), the casts autocast makes are ops of the graph, and every tensor's dtype and bytes
// follow.
//   Expected<TrainingGraph> tg = applyAutocast(*built, {.lowerPrecision = ir::DataType::BFloat16,
//                                                       .device = AutocastDevice::Cpu}, &forward);
//
// The rules, as aten/src/ATen/autocast_mode.cpp (torch 1.13) states them:
// - lower_precision_fp ops (conv, matmul, linear, ...): every float32 input is cast to the half
//   type; fp32 ops (CUDA: softmax, layer_norm, exp, sum, losses ...; CPU: losses, 3-D pools,
//   reflection pads, ...): every half input is cast to float32; promote ops: every input is cast
//   to the widest floating type among them; ops on no list run in their inputs' types, and their
//   result is PyTorch's type promotion of the inputs (a float32 residual plus a bfloat16 branch is
//   float32; a zero-dim operand does not promote a tensor of the same category). A bias Add that
//   torch's exporter splits off a linear (MatMul, then Add of a weight) runs with the product.
// - A cast is an op "Cast" (ONNX's, attribute `to`) producing the copy, whose backward "CastGrad"
//   casts the gradient back and saves nothing. The consumer reads the copy, and its backward
//   keeps the copy where it keeps that input, as autograd does.
// - cached_cast: a float32 trainable weight (TensorRole::Parameter, or a layout view of one that
//   the exporter wrote out) cast to the half type is cast once per forward, and the copy
//   (TensorRole::WeightCast, named "<weight>::<dtype>") is shared by every op that reads it; it
//   lives while any backward that saved it needs it. Everything else (activations, the input,
//   frozen weights, casts to float32) is cast at every use; a frozen weight's copy is a
//   WeightCast too ("<weight>::<dtype>@<op>"), new memory a backward may keep.
// - Ops on no list that PyTorch runs as a composite of listed ops or through a wrapper of their
//   own (ops::autocastComposite, core/ops/autocast_composite.h: nn.LSTM / GRU / RNN) take their
//   casts and the dtype of each output and saved extra from that rule. Where PyTorch casts one
//   activation several times for one op (a bidirectional layer's input, once per direction; a
//   frozen recurrent weight, once per step), the pass makes one Cast whose copy counts them all
//   (its bytes; the backends write the first).
// - Extra saved state (BatchNorm's mean and inverse std, masks, indices) keeps its dtype; the
//   gradient of a tensor has the tensor's dtype; parameters, their gradients and the optimizer
//   side stay float32 (applyTrainingOptions adds no master weights for autocast).
// Not modelled: the cache holds every cast weight until the forward ends, also those no backward
// saves (a bias's copy); here such a copy is freed after its last reader.

#include "core/ops/op_def.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

namespace remat::core::ir {
class Graph;
}

namespace remat::core::training {

struct AutocastOptions
{
    ir::DataType lowerPrecision = ir::DataType::BFloat16; ///< BFloat16 or Float16
    ops::AutocastDevice device = ops::AutocastDevice::Cuda;
};

/// `graph` (float32, as built, no optimizer step) with autocast applied (see above). `forward`:
/// the graph it was built from (attributes some rules read, a Pad's mode); may be null.
Expected<TrainingGraph> applyAutocast(const TrainingGraph &graph, const AutocastOptions &options,
                                      const ir::Graph *forward);

/// The attribute the pass adds to an op PyTorch runs inside its lower-precision product's kernel
/// (a linear's bias Add, baddbmm's alpha Mul and mask Add, as torch's exporter splits them; the
/// op's Op::fusedNode is then a copy of its node with this attribute set to 1). A backend
/// computes such an op from the product's unrounded float32 result, so product and epilogue
/// round once, as PyTorch's kernel does.
inline constexpr const char *kProductEpilogueAttribute = "remat.autocast_product_epilogue";

/// Whether `op` is such an epilogue (see kProductEpilogueAttribute).
inline bool isProductEpilogue(const Op &op)
{
    return op.fusedNode && op.fusedNode->attrInt(kProductEpilogueAttribute, 0) != 0;
}

} // namespace remat::core::training
