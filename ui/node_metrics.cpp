#include "ui/node_metrics.h"

#include "core/ops/op_def.h"

#include <cstdio>

namespace remat::ui {

using namespace core;

double forwardFlops(const ir::Graph &g, const ir::Node &node) { return ops::forwardFlops(g, node); }

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
        if (!ir::isModelState(v.kind))
            continue;
        auto b = v.bytes();
        auto e = v.shape.numElements();
        if (v.kind == ir::ValueKind::Parameter) {
            m.summary.parameterBytes += b ? *b : 0;
            m.summary.parameters += e ? *e : 0;
        } else if (v.kind == ir::ValueKind::Frozen) {
            m.summary.frozenBytes += b ? *b : 0;
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
