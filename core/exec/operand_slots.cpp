#include "core/exec/operand_slots.h"

#include "core/exec/operand_context.h"

#include "core/ir/graph.h"

#include <algorithm>

namespace remat::core::exec {

using training::Operand;

namespace {

int matchSource(const training::TrainingGraph &graph, TensorId t,
                const std::vector<ValueId> &values)
{
    const ValueId src = graph.tensor(t).source;
    if (!src.valid())
        return -1;
    for (size_t k = 0; k < values.size(); ++k)
        if (values[k] == src)
            return int(k);
    return -1;
}

} // namespace

OperandSlots bindOperands(const training::TrainingGraph &graph, const training::Op &op,
                          const ir::Node *node)
{
    OperandSlots s;
    s.inputs.resize(op.inputs.size());
    s.outputs.resize(op.outputs.size());
    const bool plainOp = op.phase == training::Phase::Loss ||
                         op.phase == training::Phase::Optimizer || op.type == "Accumulate" ||
                         op.type == "Loss";
    for (size_t i = 0; i < op.inputs.size(); ++i) {
        const Operand role = i < op.inputRoles.size() ? op.inputRoles[i] : Operand{};
        Slot &slot = s.inputs[i];
        switch (role.kind) {
        case Operand::Kind::FwdInput: slot = {Slot::In, role.index}; break;
        case Operand::Kind::FwdOutput: slot = {Slot::Out, role.index}; break;
        case Operand::Kind::OutputGrad: slot = {Slot::DOut, role.index}; break;
        case Operand::Kind::InputGrad: slot = {Slot::DIn, role.index}; break;
        case Operand::Kind::Plain:
            if (plainOp || !node) {
                slot = {Slot::Plain, int(i)};
            } else {
                // The builder numbers a forward operand by its ONNX slot; a role left at its
                // default is matched by the value it is.
                const int k = role.index != 0 || i == 0
                                  ? role.index
                                  : matchSource(graph, op.inputs[i], node->inputs);
                slot = {Slot::In, k >= 0 ? k : int(i)};
            }
            break;
        }
    }
    for (size_t j = 0; j < op.outputs.size(); ++j) {
        const Operand role = j < op.outputRoles.size() ? op.outputRoles[j] : Operand{};
        Slot &slot = s.outputs[j];
        switch (role.kind) {
        case Operand::Kind::InputGrad: slot = {Slot::DIn, role.index}; break;
        case Operand::Kind::FwdOutput: slot = {Slot::Out, role.index}; break;
        case Operand::Kind::OutputGrad: slot = {Slot::DOut, role.index}; break;
        case Operand::Kind::FwdInput: slot = {Slot::In, role.index}; break;
        case Operand::Kind::Plain:
            if (plainOp || !node) {
                slot = {Slot::Plain, int(j)};
            } else {
                const int k = role.index != 0 || j == 0
                                  ? role.index
                                  : matchSource(graph, op.outputs[j], node->outputs);
                slot = {Slot::Out, k >= 0 ? k : int(j)};
            }
            break;
        }
    }
    auto grow = [&](const Slot &sl) {
        switch (sl.where) {
        case Slot::In: s.inSlots = std::max(s.inSlots, sl.index + 1); break;
        case Slot::Out: s.outSlots = std::max(s.outSlots, sl.index + 1); break;
        case Slot::DOut: s.dOutSlots = std::max(s.dOutSlots, sl.index + 1); break;
        case Slot::DIn: s.dInSlots = std::max(s.dInSlots, sl.index + 1); break;
        case Slot::Plain: break;
        }
    };
    for (const Slot &sl : s.inputs)
        grow(sl);
    for (const Slot &sl : s.outputs)
        grow(sl);
    if (node) {
        s.inSlots = std::max(s.inSlots, int(node->inputs.size()));
        s.outSlots = std::max(s.outSlots, int(node->outputs.size()));
    }
    return s;
}

std::vector<std::vector<int64_t>> staticShapesOf(const ir::Graph *forward,
                                                 const std::vector<ValueId> &values)
{
    std::vector<std::vector<int64_t>> out;
    out.reserve(values.size());
    for (ValueId v : values) {
        if (forward && v.valid() && v.index() < forward->valueCount() &&
            forward->value(v).shape.isStatic())
            out.push_back(forward->value(v).shape.sizes());
        else
            out.emplace_back();
    }
    return out;
}

} // namespace remat::core::exec
