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
