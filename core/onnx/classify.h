#pragma once
// Parameter / buffer / input classification of graph inputs and initializers.
//   ClassifyRole r = slotRole(graph, valueId);          // how consumers use the value
//   ir::ValueKind k = classifyValue(graph, valueId, hasInitializer);
//   // Rule (in order): user override; buffer name or BN running-stat slot -> Buffer; float read
//   // only by comparisons -> Buffer (initializer) or Input; float and a
//   // weight slot or a parameter-like name -> Parameter; integer initializer -> Constant if it
//   // only feeds shape / index slots, else Buffer; otherwise Constant (initializer) or Input.

#include "core/ir/graph.h"

#include <string>

namespace remat::core::onnx {

/// What the consumers of a value make of it, following pass-through ops (Unsqueeze, Reshape,
/// Transpose, Expand, Cast, Identity, ...).
struct SlotUse
{
    bool weightSlot = false;  ///< Conv W/B, Gemm B/C, norm scale/bias, PRelu slope, embedding table
    bool operandSlot = false; ///< MatMul / Add / Mul / Concat operand beside a computed value
    bool statSlot = false;    ///< BatchNormalization running mean / var
    bool onlyShapeSlots =
        true; ///< every use is shape or index data (Reshape shape, Slice starts, ...)
    bool onlyComparisons = true; ///< every use is a comparison or a Where condition (no gradient)
    bool used = false;           ///< read by any node
};

SlotUse slotUse(const ir::Graph &graph, ValueId value);

/// PyTorch / Caffe2 naming: ".weight", ".bias", "cls_token", "pos_embedding", "_w_0" ...
bool nameLooksLikeParameter(const std::string &name);
/// A dotted module path with an identifier last ("blocks.0.attn.rel_pos_h"), as torch names
/// the graph inputs of parameters exported with export_params=False.
bool looksLikeStateDictKey(const std::string &name);
/// A Python attribute name ("latents", "A_log", "w2"): what torch calls a tensor registered on the
/// model itself, with no module path before it.
bool isIdentifier(const std::string &name);
/// Names people give their data: "input*", "*mask*", "*ids*", "label*", "target*", "onnx::*".
bool nameLooksLikeData(const std::string &name);
/// "running_mean", "running_var", "num_batches_tracked", fixed tables ("pe", "*freq*", "*dft*",
/// "*filterbank*", "window") and a submodule's "*mask*".
bool nameLooksLikeBuffer(const std::string &name);
/// Why nameLooksLikeBuffer says so, for people; null when it does not.
const char *bufferNameReason(const std::string &name);
/// Read only by Mul with a leaf named like a weight, itself not so named: a mask on a weight.
bool onlyMultipliedOntoWeight(const ir::Graph &graph, ValueId value);

/// The kind of a graph input (hasInitializer false) or initializer (true) without overrides;
/// `reason` (when given) gets why a guess is not the plain default (a buffer by name or use).
ir::ValueKind classifyValue(const ir::Graph &graph, ValueId value, bool hasInitializer,
                            std::string *reason = nullptr);

} // namespace remat::core::onnx
