#include "core/exec/static_eval.h"

#include "core/exec/cpu/kernel.h"
#include "core/ir/graph.h"

#include <fmt/format.h>

#include <cstring>

namespace remat::core::exec {

namespace {

bool dependsOnDataOnly(const ir::Graph &g, ValueId id, int depth)
{
    if (depth > 256)
        return false;
    const ir::Value &v = g.value(id);
    if (v.initializer)
        return v.initializer->hasData();
    if (!v.producer.valid())
        return false;
    const ir::Node &n = g.node(v.producer);
    if (n.opType == "Shape")
        return g.value(n.inputs[0]).shape.isStatic();
    for (ValueId in : n.inputs)
        if (in.valid() && !dependsOnDataOnly(g, in, depth + 1))
            return false;
    return true;
}

} // namespace

bool StaticEvaluator::isStatic(ValueId value) const
{
    if (!value.valid())
        return false;
    if (auto it = m_static.find(value.value); it != m_static.end())
        return it->second;
    const bool s = dependsOnDataOnly(*m_graph, value, 0);
    m_static[value.value] = s;
    return s;
}

Expected<const HostTensor *> StaticEvaluator::evaluate(ValueId value)
{
    if (!value.valid())
        return makeError(StatusCode::InvalidArgument, "invalid value id");
    if (auto it = m_cache.find(value.value); it != m_cache.end())
        return static_cast<const HostTensor *>(it->second.get());
    const ir::Value &v = m_graph->value(value);
    auto result = std::make_unique<HostTensor>();
    if (!v.shape.isStatic())
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("value '{}' has no static shape", v.name));
    if (v.initializer) {
        if (!v.initializer->hasData())
            return makeError(StatusCode::NotFound,
                             fmt::format("value '{}' has no data in the file", v.name));
        auto bytes = v.initializer->bytes();
        if (!bytes)
            return bytes.status();
        result->dtype = v.initializer->dtype;
        result->shape = v.initializer->shape.sizes();
        result->data.assign(bytes->begin(), bytes->end());
    } else {
        if (!v.producer.valid())
            return makeError(StatusCode::NotFound,
                             fmt::format("value '{}' is a graph input, not a constant", v.name));
        const ir::Node &node = m_graph->node(v.producer);
        const cpu::KernelFn *fn = cpu::findCpuKernel(node.opType);
        if (!fn)
            return makeError(
                StatusCode::Unsupported,
                fmt::format("cannot evaluate '{}': no kernel for {}", v.name, node.opType));
        // Evaluate the node's inputs (Shape needs only the static shape of its input).
        std::vector<HostTensor> outs(node.outputs.size());
        std::vector<cpu::KView> inViews(node.inputs.size()), outViews(node.outputs.size());
        cpu::KernelContext ctx;
        ctx.node = &node;
        ctx.opName = node.name.empty() ? node.opType : node.name;
        ctx.in.assign(node.inputs.size(), nullptr);
        ctx.out.assign(node.outputs.size(), nullptr);
        for (size_t k = 0; k < node.inputs.size(); ++k) {
            const ValueId in = node.inputs[k];
            ctx.inShapes.push_back(in.valid() ? m_graph->value(in).shape.sizes()
                                              : std::vector<int64_t>{});
            if (!in.valid() || node.opType == "Shape")
                continue;
            REMAT_ASSIGN_OR_RETURN(const HostTensor *t, evaluate(in));
            inViews[k] = cpu::KView{const_cast<std::byte *>(t->data.data()), t->dtype, t->shape};
            ctx.in[k] = &inViews[k];
        }
        for (size_t k = 0; k < node.outputs.size(); ++k) {
            const ValueId out = node.outputs[k];
            if (!out.valid())
                continue;
            const ir::Value &ov = m_graph->value(out);
            ctx.outShapes.push_back(ov.shape.sizes());
            outs[k] = HostTensor::zeros(ov.dtype, ov.shape.sizes());
            outViews[k] = cpu::KView{outs[k].data.data(), ov.dtype, outs[k].shape};
            ctx.out[k] = &outViews[k];
        }
        REMAT_RETURN_IF_ERROR((*fn)(ctx));
        for (size_t k = 0; k < node.outputs.size(); ++k)
            if (node.outputs[k].valid() && node.outputs[k] != value)
                m_cache[node.outputs[k].value] = std::make_unique<HostTensor>(std::move(outs[k]));
        for (size_t k = 0; k < node.outputs.size(); ++k)
            if (node.outputs[k] == value)
                *result = std::move(outs[k]);
    }
    const HostTensor *raw = result.get();
    m_cache[value.value] = std::move(result);
    return raw;
}

} // namespace remat::core::exec
