#pragma once
// Tiny forward graphs built in code, for tests that run one op or a few (CUDA-free: the gpu tests
// and the op-table test share it).
//   MiniGraph g;  ValueId x = g.input("x", {2, 3});  ValueId y = g.op("Relu", {x}, {2, 3});
//   Expected<ir::Graph> graph = g.build({y});

#include "core/ir/graph.h"
#include "core/ir/tensor_data.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace remat::tests {

/// A forward graph assembled value by value.
class MiniGraph
{
public:
    using ValueId = core::ValueId;

    ValueId value(const std::string &name, std::vector<int64_t> shape, core::ir::ValueKind kind,
                  core::ir::DataType dtype = core::ir::DataType::Float)
    {
        core::ir::Value v;
        v.name = name;
        v.dtype = dtype;
        v.shape = core::ir::Shape::fromStatic(shape);
        v.kind = kind;
        m_values.push_back(std::move(v));
        const ValueId id(m_values.size() - 1);
        if (kind == core::ir::ValueKind::Input || kind == core::ir::ValueKind::Parameter ||
            kind == core::ir::ValueKind::Buffer)
            m_inputs.push_back(id);
        return id;
    }
    ValueId input(const std::string &name, std::vector<int64_t> shape)
    {
        return value(name, std::move(shape), core::ir::ValueKind::Input);
    }
    ValueId param(const std::string &name, std::vector<int64_t> shape)
    {
        return value(name, std::move(shape), core::ir::ValueKind::Parameter);
    }
    /// A constant tensor with data (int64 or float).
    ValueId constInts(const std::string &name, const std::vector<int64_t> &values,
                      std::vector<int64_t> shape = {})
    {
        if (shape.empty())
            shape = {int64_t(values.size())};
        return constant(name, core::ir::DataType::Int64, shape, values.data(), values.size() * 8);
    }
    ValueId constFloats(const std::string &name, const std::vector<float> &values,
                        std::vector<int64_t> shape = {})
    {
        return constant(name, core::ir::DataType::Float, shape, values.data(), values.size() * 4);
    }
    ValueId constant(const std::string &name, core::ir::DataType dtype, std::vector<int64_t> shape,
                     const void *data, size_t bytes)
    {
        const ValueId id = value(name, shape, core::ir::ValueKind::Constant, dtype);
        std::vector<std::byte> raw(bytes);
        std::memcpy(raw.data(), data, bytes);
        auto tc = std::make_shared<core::ir::TensorConstant>();
        tc->name = name;
        tc->dtype = dtype;
        tc->shape = core::ir::Shape::fromStatic(shape);
        tc->byteCount = int64_t(bytes);
        tc->data = std::make_shared<core::ir::OwnedTensorData>(std::move(raw));
        m_values[id.index()].initializer = tc;
        return id;
    }

    /// A node with one int64 output of `shape` (ArgMax, ArgMin).
    ValueId opInt64(const std::string &type, std::vector<ValueId> inputs,
                    std::vector<int64_t> shape, std::vector<core::ir::Attribute> attrs = {})
    {
        const ValueId y = op(type, std::move(inputs), shape, std::move(attrs));
        m_values[y.index()].dtype = core::ir::DataType::Int64;
        return y;
    }

    /// A node with one output of `dtype` (a Cast to it).
    ValueId opOfType(const std::string &type, std::vector<ValueId> inputs,
                     std::vector<int64_t> shape, core::ir::DataType dtype,
                     std::vector<core::ir::Attribute> attrs = {})
    {
        const ValueId y = op(type, std::move(inputs), shape, std::move(attrs));
        m_values[y.index()].dtype = dtype;
        return y;
    }

    /// A node with one bool output of `shape` (comparisons).
    ValueId opBool(const std::string &type, std::vector<ValueId> inputs, std::vector<int64_t> shape)
    {
        const ValueId y = op(type, std::move(inputs), shape);
        m_values[y.index()].dtype = core::ir::DataType::Bool;
        return y;
    }

    /// A node with one float output of `shape` (more outputs through `extraOutputs`).
    ValueId op(const std::string &type, std::vector<ValueId> inputs, std::vector<int64_t> shape,
               std::vector<core::ir::Attribute> attrs = {},
               std::vector<std::pair<std::vector<int64_t>, core::ir::DataType>> extraOutputs = {})
    {
        core::ir::Node n;
        n.name = "/" + type + std::to_string(m_nodes.size());
        n.opType = type;
        n.inputs = std::move(inputs);
        n.attributes = std::move(attrs);
        const ValueId y = value(n.name + "_y", shape, core::ir::ValueKind::Intermediate);
        n.outputs.push_back(y);
        int k = 0;
        for (auto &[s, t] : extraOutputs)
            n.outputs.push_back(value(n.name + "_o" + std::to_string(++k), s,
                                      core::ir::ValueKind::Intermediate, t));
        m_nodes.push_back(std::move(n));
        return y;
    }

    /// Puts the last node added in `domain` ("com.microsoft").
    void domain(const std::string &d) { m_nodes.back().domain = d; }

    core::Expected<core::ir::Graph> build(const std::vector<ValueId> &outputs)
    {
        core::ir::ModelInfo info;
        info.path = "mini";
        return core::ir::Graph::build(info, m_nodes, m_values, m_inputs, outputs);
    }

private:
    std::vector<core::ir::Node> m_nodes;
    std::vector<core::ir::Value> m_values;
    std::vector<ValueId> m_inputs;
};

inline core::ir::Attribute attrInt(const std::string &name, int64_t v) { return {name, v}; }
inline core::ir::Attribute attrFloat(const std::string &name, double v) { return {name, v}; }
inline core::ir::Attribute attrInts(const std::string &name, std::vector<int64_t> v)
{
    return {name, std::move(v)};
}
inline core::ir::Attribute attrString(const std::string &name, std::string v)
{
    return {name, std::move(v)};
}

} // namespace remat::tests
