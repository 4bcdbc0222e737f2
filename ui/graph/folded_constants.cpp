#include "ui/graph/folded_constants.h"

#include <cmath>
#include <map>
#include <sstream>

namespace remat::ui {

using namespace core;

FoldedConstants::FoldedConstants(const ir::Graph &g) : m_graph(g)
{
    // Seed as the importer does (graph inputs and constants; small data as values) and let the
    // propagation recompute every node output. The graph's shapes are static, so Shape nodes give
    // the dims the view shows.
    m_values.assign(g.valueCount(), {});
    for (const ir::Value &v : g.values()) {
        if (v.kind == ir::ValueKind::Intermediate || v.dtype == ir::DataType::Undefined)
            continue;
        onnx::InferredValue &iv = m_values[v.id.index()];
        iv.dtype = v.dtype;
        iv.shape = v.shape;
        if (v.initializer)
            iv.constant = onnx::constTensorFrom(*v.initializer);
    }
    // A file traced at another batch may hold constants the re-run contradicts; what was found
    // before that node stays usable.
    const Status s = onnx::inferShapes(g, g.info().opsetVersion, m_values);
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
