#include "ui/graph/folded_constants.h"

#include "core/layout/shape_folding.h"

#include <cmath>
#include <map>
#include <sstream>

namespace remat::ui {

using namespace core;

FoldedConstants::FoldedConstants(const ir::Graph &g) : m_graph(g)
{
    // Propagate through the folded nodes only: they read constants and the (static) shapes of
    // other values, so nothing else is needed, and a file traced at another batch cannot stop
    // the run at a Reshape whose baked target contradicts the new batch (vit_b_16 at batch 4).
    // Every value keeps its id; values the folded nodes read from drawn nodes become inputs.
    const std::vector<char> folded = layout::foldableNodes(g);
    std::vector<ir::Node> nodes;
    std::vector<ir::Value> values = g.values();
    std::vector<ValueId> inputs;
    for (NodeId id : g.topologicalOrder())
        if (folded[id.index()])
            nodes.push_back(g.node(id));
    for (const ir::Node &n : nodes)
        for (ValueId in : n.inputs) {
            if (!in.valid())
                continue;
            ir::Value &v = values[in.index()];
            if (v.producer.valid() && !folded[v.producer.index()] &&
                v.kind == ir::ValueKind::Intermediate) {
                v.kind = ir::ValueKind::Input;
                inputs.push_back(in);
            }
        }
    Expected<ir::Graph> sub =
        ir::Graph::build(g.info(), std::move(nodes), std::move(values), std::move(inputs), {});
    const ir::Graph &run = sub ? *sub : g;
    if (!sub)
        m_problem = sub.status().message();
    // Seeded as the importer does: inputs and constants, small data as values.
    m_values.assign(run.valueCount(), {});
    for (const ir::Value &v : run.values()) {
        if (v.kind == ir::ValueKind::Intermediate || v.dtype == ir::DataType::Undefined)
            continue;
        onnx::InferredValue &iv = m_values[v.id.index()];
        iv.dtype = v.dtype;
        iv.shape = v.shape;
        if (v.initializer)
            iv.constant = onnx::constTensorFrom(*v.initializer);
    }
    // What was found before a node that fails stays usable.
    const Status s = onnx::inferShapes(run, run.info().opsetVersion, m_values);
    if (!s.isOk())
        m_problem = s.message();
    for (const onnx::InferredValue &iv : m_values)
        m_evaluated += iv.constant ? 1 : 0;
}

const onnx::ConstTensor *FoldedConstants::value(ValueId v) const
{
    return v.valid() && v.index() < m_values.size() ? m_values[v.index()].constant.get() : nullptr;
}

std::string FoldedConstants::text(ValueId v, size_t maxElements) const
{
    std::ostringstream out;
    if (const onnx::ConstTensor *c = value(v)) {
        const size_t n = c->size();
        auto element = [&](size_t i) {
            if (c->isInteger()) {
                out << c->ints[i];
                return;
            }
            const double x = c->floats[i];
            if (std::isfinite(x) && x == std::floor(x) && std::abs(x) < 1e15)
                out << int64_t(x);
            else
                out << x;
        };
        if (c->dims.empty() && n == 1) {
            element(0);
            return out.str();
        }
        out << '[';
        for (size_t i = 0; i < n && i < maxElements; ++i) {
            if (i)
                out << ", ";
            element(i);
        }
        if (n > maxElements)
            out << ", ... (" << n << " values)";
        out << ']';
        return out.str();
    }
    if (!v.valid())
        return {};
    const ir::Value &val = m_graph.value(v);
    out << ir::dataTypeName(val.dtype) << val.shape.toString();
    return out.str();
}

std::string inputName(const std::string &opType, size_t index)
{
    // The inputs that folded shape arithmetic usually feeds, named as in the ONNX operator specs.
    static const std::map<std::string, std::vector<const char *>> names = {
        {"Reshape", {"data", "shape"}},
        {"Expand", {"input", "shape"}},
        {"Tile", {"input", "repeats"}},
        {"Slice", {"data", "starts", "ends", "axes", "steps"}},
        {"Unsqueeze", {"data", "axes"}},
        {"Squeeze", {"data", "axes"}},
        {"ConstantOfShape", {"input"}},
        {"Range", {"start", "limit", "delta"}},
        {"Pad", {"data", "pads", "constant_value", "axes"}},
        {"Resize", {"X", "roi", "scales", "sizes"}},
        {"Gather", {"data", "indices"}},
        {"Split", {"input", "split"}},
        {"ReduceSum", {"data", "axes"}},
        {"ReduceMean", {"data", "axes"}},
        {"ReduceMax", {"data", "axes"}},
        {"TopK", {"X", "K"}},
        {"Where", {"condition", "X", "Y"}},
        {"Clip", {"input", "min", "max"}},
        {"Pow", {"X", "Y"}},
        {"Add", {"A", "B"}},
        {"Sub", {"A", "B"}},
        {"Mul", {"A", "B"}},
        {"Div", {"A", "B"}},
        {"MatMul", {"A", "B"}},
        {"Equal", {"A", "B"}},
        {"Gemm", {"A", "B", "C"}},
        {"Conv", {"X", "W", "B"}},
        {"LayerNormalization", {"X", "Scale", "B"}},
        {"Transpose", {"data"}},
        {"Cast", {"input"}},
    };
    auto it = names.find(opType);
    if (it != names.end() && index < it->second.size())
        return it->second[index];
    return "input " + std::to_string(index);
}

} // namespace remat::ui
