#pragma once
// Building small ONNX models in the importer's tests with the protobuf API, and writing them
// to a temporary folder.
//   auto m = baseModel();  auto *g = m.mutable_graph();
//   addNode(g, "/r/Relu", "Relu", {"x"}, {"y"});
//   Files f;  const std::string path = f.write("relu.onnx", m);

#include "common/test_support.h"

#include <onnx/onnx_pb.h>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace remat::tests {

/// An empty IR 8 / opset 17 model named "g", producer "test".
inline ::onnx::ModelProto baseModel()
{
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.set_producer_name("test");
    auto *op = m.add_opset_import();
    op->set_domain("");
    op->set_version(17);
    m.mutable_graph()->set_name("g");
    return m;
}

inline ::onnx::NodeProto *addNode(::onnx::GraphProto *g, const std::string &name,
                                  const std::string &op, std::vector<std::string> in,
                                  std::vector<std::string> out)
{
    auto *n = g->add_node();
    n->set_name(name);
    n->set_op_type(op);
    for (auto &i : in)
        n->add_input(i);
    for (auto &o : out)
        n->add_output(o);
    return n;
}

/// One input dim: a number, a named free dim ("H") or an unnamed free dim ("").
struct D
{
    D(int64_t v) : value(v) {}
    D(const char *s) : symbol(s) {}
    int64_t value = -1;
    std::string symbol;
};

inline void addFloatInput(::onnx::GraphProto *g, const std::string &name, std::vector<D> dims)
{
    auto *vi = g->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    auto *sh = tt->mutable_shape();
    for (const D &d : dims) {
        auto *p = sh->add_dim();
        if (d.value >= 0)
            p->set_dim_value(d.value);
        else if (!d.symbol.empty())
            p->set_dim_param(d.symbol);
    }
}

/// An int64 scalar graph input (a sample rate, a trip count).
inline void addScalarInput(::onnx::GraphProto *g, const std::string &name)
{
    auto *vi = g->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::INT64);
    tt->mutable_shape();
}

/// A Constant node `name` writing `out`: its value, an empty tensor of `dtype`, for the caller to
/// fill (dims, data).
inline ::onnx::TensorProto *addConstantNode(::onnx::GraphProto *g, const std::string &name,
                                            const std::string &out,
                                            ::onnx::TensorProto::DataType dtype)
{
    auto *a = addNode(g, name, "Constant", {}, {out})->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(dtype);
    return a->mutable_t();
}

inline void addInt64Constant(::onnx::GraphProto *g, const std::string &out, int64_t value)
{
    addConstantNode(g, out + "_node", out, ::onnx::TensorProto::INT64)->add_int64_data(value);
}

inline ::onnx::GraphProto *addBranch(::onnx::NodeProto *ifNode, const char *name)
{
    auto *a = ifNode->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name(name);
    return a->mutable_g();
}

/// Files in a temporary folder that lives as long as this object.
class Files
{
public:
    std::string write(const std::string &name, const std::string &bytes)
    {
        const std::string path = toStd(m_dir.path()) + "/" + name;
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
        return path;
    }
    std::string write(const std::string &name, const ::onnx::ModelProto &m)
    {
        return write(name, m.SerializeAsString());
    }
    std::string dir() const { return toStd(m_dir.path()); }

private:
    QTemporaryDir m_dir;
};

inline bool has(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

} // namespace remat::tests
