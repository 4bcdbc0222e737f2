#include "shape_inference.h"

#include "core/ops/op_def.h"

namespace remat::core::onnx {

Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const StopToken &stop)
{
    return inferShapes(graph, opset, values, BatchRewrite{}, stop);
}

Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const BatchRewrite &rewrite, const StopToken &stop)
{
    values.resize(graph.valueCount());
    size_t k = 0;
    for (NodeId id : graph.topologicalOrder()) {
        if ((++k & 255) == 0 && stop.stopRequested())
            return makeError(StatusCode::Cancelled, "shape inference cancelled");
        const ir::Node &node = graph.node(id);
        // Other domains: the few contrib ops the table knows by their qualified name
        // (com.microsoft.MultiHeadAttention), at any opset of theirs.
        const bool onnxDomain = node.domain.empty() || node.domain == "ai.onnx";
        // An op we have no definition for (or one too new for the file's opset) keeps its outputs
        // unknown; the importer falls back to ONNX's own inference for them.
        const ops::OpDef *def = onnxDomain ? ops::findOp(node.opType, opset)
                                           : ops::findOp(node.domain + "." + node.opType);
        if (!def || !def->inferShape)
            continue;
        ops::ShapeContext c{graph, node, values, opset, rewrite};
        REMAT_RETURN_IF_ERROR(def->inferShape(c));
    }
    return Status::ok();
}

} // namespace remat::core::onnx
