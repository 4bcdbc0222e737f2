#pragma once
// Where each operand of a training-graph op goes in a kernel's view of the forward node: a
// forward input slot (X, W), a forward output slot (Y, saved state), the gradient of an output
// (dY), or the gradient of an input (dX). Shared by the CPU and CUDA backends.
//   OperandSlots s = bindOperands(tg, op, node);
//   for (size_t i = 0; i < op.inputs.size(); ++i) if (s.inputs[i].where == Slot::In) x[s.inputs[i].index] = ...;

#include "core/training/training_graph.h"

#include <vector>

namespace remat::core::ir {
struct Node;
}

namespace remat::core::exec {

struct Slot
{
    enum Where : unsigned char {
        Plain, ///< Loss / Accumulate operand, by position
        In,    ///< forward input `index` of the node
        Out,   ///< forward output `index` of the node (saved statistics: BN 3, 4; LN 1, 2)
        DOut,  ///< gradient of forward output `index`
        DIn,   ///< gradient of forward input `index` (backward outputs)
    };
    Where where = Plain;
    int index = 0;
};

struct OperandSlots
{
    std::vector<Slot> inputs;                                   ///< parallel to op.inputs
    std::vector<Slot> outputs;                                  ///< parallel to op.outputs
    int inSlots = 0, outSlots = 0, dOutSlots = 0, dInSlots = 0; ///< sizes to allocate
};

/// Uses the op's Operand roles. A forward op's Plain operand carries its ONNX slot in
/// Operand::index (the builder's convention; extras such as BN's saved mean at 3); an operand past
/// the first whose index was left 0 is matched by the forward value it is (Tensor::source).
OperandSlots bindOperands(const training::TrainingGraph &graph, const training::Op &op,
                          const ir::Node *node);

} // namespace remat::core::exec
