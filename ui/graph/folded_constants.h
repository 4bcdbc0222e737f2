#pragma once
// The values of folded shape arithmetic, for the inspector: the importer's constant propagation
// (onnx::inferShapes) run once more over the folded nodes (layout::foldableNodes), seeded with the
// constants and the static shapes they read.
//   FoldedConstants k(graph);
//   k.text(valueId);             // "[2, 16, 4, 16]", or "int64[3]" when it could not be evaluated
//   inputName("Reshape", 1);     // "shape"

#include "core/ir/graph.h"
#include "core/onnx/shape_inference.h"

#include <memory>
#include <string>
#include <vector>

namespace remat::ui {

class FoldedConstants
{
public:
    explicit FoldedConstants(const core::ir::Graph &graph);

    /// The propagated value; null when it is not small shape-like data or inference stopped early.
    const core::onnx::ConstTensor *value(core::ValueId v) const;
    /// The value as a short list ("[2, 16, 4, 16]", a scalar as "7"; at most `maxElements` shown),
    /// or dtype and shape ("f32[768, 768]") when no value is known.
    std::string text(core::ValueId v, size_t maxElements = 16) const;
    /// Values evaluated (for tests and the status line).
    int evaluatedCount() const { return m_evaluated; }
    /// Non-empty when propagation stopped early at some node (the values before it are kept).
    const std::string &problem() const { return m_problem; }

private:
    const core::ir::Graph &m_graph;
    std::vector<core::onnx::InferredValue> m_values;
    int m_evaluated = 0;
    std::string m_problem;
};

/// ONNX's name of input `index` of `opType` ("shape" for Reshape's second input); "input N"
/// for ops and positions not listed.
std::string inputName(const std::string &opType, size_t index);

} // namespace remat::ui
