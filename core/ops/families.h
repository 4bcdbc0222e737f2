#pragma once
// Internal to core/ops: the family files, each adding its op definitions to the table (the
// explicit list in registry.cpp), and what they share.

#include "core/ops/gradient_helpers.h"

#include <vector>

namespace remat::core::ops {

void addElementwiseOps(std::vector<OpDef> &table);
void addNnOps(std::vector<OpDef> &table);
void addTensorOps(std::vector<OpDef> &table);
void addReductionOps(std::vector<OpDef> &table);
void addControlOps(std::vector<OpDef> &table);
void addRecurrentOps(std::vector<OpDef> &table);
void addAttentionOps(std::vector<OpDef> &table);

/// The output has the input's dtype and shape (constant-folded for Identity, Neg, Abs, Floor,
/// Ceil, Sqrt on shape data): unary math, activations, and ops such as Softmax or Trilu.
Status unaryShape(ShapeContext &c);

// Forward FLOPs of ops without a gradient rule (ops with one take the rule's figure).
inline double perOutput(const RuleContext &c) { return rules::numel(c.output(0)); }
inline double perInput(const RuleContext &c) { return rules::numel(c.input(0)); }
inline double fivePerOutput(const RuleContext &c) { return 5 * rules::numel(c.output(0)); }

} // namespace remat::core::ops
