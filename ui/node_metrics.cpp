#include "ui/node_metrics.h"

#include <cstdio>
#include <set>

namespace remat::ui {

using namespace core;

namespace {

double elements(const ir::Graph &g, ValueId v)
{
    if (!v.valid())
        return 0;
    auto n = g.value(v).shape.numElements();
    return n ? double(*n) : 0;
}

const std::set<std::string> &zeroFlopOps()
{
    static const std::set<std::string> ops = {
        "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Shape", "Gather", "Concat",
        "Slice", "Split", "Constant", "ConstantOfShape", "Identity", "Expand", "Cast", "Dropout",
        "Range", "Tile", "Pad", "GatherElements", "ScatterND", "Size", "NonZero", "Where"};
    return ops;
}

} // namespace

double forwardFlops(const ir::Graph &g, const ir::Node &node)
{
    const std::string &op = node.opType;
    const double out = node.outputs.empty() ? 0 : elements(g, node.outputs[0]);
    if (op == "Conv" || op == "ConvTranspose") {
        if (node.inputs.size() < 2 || !node.inputs[1].valid())
            return 0;
        const ir::Shape &w = g.value(node.inputs[1]).shape;
        if (!w.isStatic() || w.rank() < 2)
            return 0;
        // W: [M, C/group, k...]; every output element takes C/group * prod(k) MACs.
        double perOut = 1;
        for (size_t i = 1; i < w.rank(); ++i)
            perOut *= double(w.dims[i].value);
        if (op == "ConvTranspose") // W: [C, M/group, k...]; every input element feeds perOut MACs
            return 2 * elements(g, node.inputs[0]) * perOut;
        return 2 * out * perOut;
    }
    if (op == "Gemm" || op == "MatMul") {
        if (node.inputs.empty() || !node.inputs[0].valid())
            return 0;
        const ir::Shape &a = g.value(node.inputs[0]).shape;
        if (!a.isStatic() || a.rank() < 1)
            return 0;
        double k = double(a.dims.back().value);
        if (op == "Gemm" && node.attrInt("transA", 0) && a.rank() == 2)
            k = double(a.dims[0].value);
        return 2 * out * k;
    }
    if (zeroFlopOps().count(op))
        return 0;
    if (op == "BatchNormalization" || op == "LayerNormalization" ||
        op == "InstanceNormalization" || op == "GroupNormalization")
        return 5 * out;
    if (op == "Softmax" || op == "LogSoftmax")
        return 5 * out;
    if (op == "MaxPool" || op == "AveragePool") {
        const auto k = node.attrInts("kernel_shape");
        double window = 1;
        for (int64_t d : k)
            window *= double(d);
        return out * window;
    }
    if (op == "GlobalAveragePool" || op == "ReduceMean" || op == "ReduceSum")
        return node.inputs.empty() ? 0 : elements(g, node.inputs[0]);
    if (op == "Erf" || op == "Gelu" || op == "Tanh" || op == "Sigmoid" || op == "Exp")
        return 4 * out;
    return out; // element-wise
}

ModelMetrics computeMetrics(const ir::Graph &g)
{
    ModelMetrics m;
    m.nodeOutputBytes.assign(g.nodeCount(), 0);
    m.nodeFlops.assign(g.nodeCount(), 0);
    m.summary.nodes = int64_t(g.nodeCount());
    m.summary.batch = g.info().batch;
    for (const ir::Node &n : g.nodes()) {
        int64_t bytes = 0;
        for (ValueId v : n.outputs) {
            if (!v.valid())
                continue;
            auto b = g.value(v).bytes();
            if (!b) {
                bytes = -1;
                ++m.summary.unknownShapes;
                break;
            }
            bytes += *b;
        }
        m.nodeOutputBytes[n.id.index()] = bytes;
        if (bytes > 0)
            m.summary.activationBytes += bytes;
        m.nodeFlops[n.id.index()] = forwardFlops(g, n);
        m.summary.forwardFlops += m.nodeFlops[n.id.index()];
    }
    for (const ir::Value &v : g.values()) {
        if (v.kind != ir::ValueKind::Parameter && v.kind != ir::ValueKind::Buffer)
            continue;
        auto b = v.bytes();
        auto e = v.shape.numElements();
        if (v.kind == ir::ValueKind::Parameter) {
            m.summary.parameterBytes += b ? *b : 0;
            m.summary.parameters += e ? *e : 0;
        } else {
            m.summary.bufferBytes += b ? *b : 0;
        }
    }
    return m;
}

std::string shapeLabel(const ir::Shape &shape)
{
    if (!shape.rankKnown)
        return "?";
    std::string s;
    for (size_t i = 0; i < shape.dims.size(); ++i) {
        if (i)
            s += "\u00d7";
        const ir::Dim &d = shape.dims[i];
        s += d.isStatic() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol);
    }
    return s.empty() ? "scalar" : s;
}

std::string formatFlops(double flops)
{
    const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
    int u = 0;
    while (flops >= 1000 && u < 5) {
        flops /= 1000;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", flops, units[u]);
    return buf;
}

} // namespace remat::ui
