#pragma once
// The forward computation graph, as imported from ONNX. Immutable once built.
//   Expected<Graph> g = onnx::importModel(path, options);
//   for (NodeId n : g->topologicalOrder()) { const Node &node = g->node(n); ... }
//   const Value &v = g->value(node.inputs[0]);  v.shape.toString(); v.bytes();

#include "core/ir/attribute.h"
#include "core/ir/dtype.h"
#include "core/ir/shape.h"
#include "core/ir/tensor_data.h"
#include "core/util/ids.h"
#include "core/util/status.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace remat::core::ir {

/// What a value is to training. Parameters get gradients; frozen weights, buffers and constants
/// do not. `Parameter` means a TRAINABLE weight (requires_grad): everything that gives a weight a
/// gradient, optimizer state, a master copy or a ZeRO shard, or treats it as a trainable leaf
/// (autocast's weight-cast cache), tests `kind == Parameter` and nothing else. A weight the user
/// froze (`--freeze` / `--trainable`, or the export's metadata saying requires_grad False) is
/// `Frozen`: resident like a buffer and treated as one by the training graph (one rule: "not a
/// Parameter, so no gradient"), but counted as frozen parameter bytes in summaries.
enum class ValueKind : unsigned char {
    Input,        ///< a data input of the graph (the batch)
    Parameter,    ///< a trainable weight (initializer, or a graph input named like one)
    Buffer,       ///< non-trainable state: BN running statistics, integer tables, masks
    Constant,     ///< a constant tensor (initializer used as data, Constant node output)
    Intermediate, ///< produced by a node
    Frozen,       ///< a weight that does not train (requires_grad False): no gradient, no state
};
const char *valueKindName(ValueKind kind);
/// Parameter, Frozen or Buffer: a tensor of the model's state_dict, resident for the whole step.
inline bool isModelState(ValueKind kind)
{
    return kind == ValueKind::Parameter || kind == ValueKind::Frozen || kind == ValueKind::Buffer;
}

struct Value
{
    ValueId id;
    std::string name;
    DataType dtype = DataType::Undefined;
    Shape shape;
    ValueKind kind = ValueKind::Intermediate;
    NodeId producer;               ///< invalid for graph inputs and initializers
    std::vector<NodeId> consumers; ///< in topological order of the consumers
    bool isGraphOutput = false;
    /// Initializer / constant data (metadata always, bytes lazily). Null for activations.
    std::shared_ptr<const TensorConstant> initializer;
    /// Why a graph input or initializer has its kind, for people ("named like a BN statistic",
    /// "frozen by --trainable 'lora_'", "the export's metadata: a buffer"); empty when the
    /// classification is the plain default (a weight slot, the data argument).
    std::string kindReason;

    /// Bytes of this value; an error when the shape is not static or overflows.
    Expected<int64_t> bytes() const;
};

struct Node
{
    NodeId id;
    std::string name;   ///< ONNX node name, e.g. "/layer1/layer1.0/conv1/Conv" (may be empty)
    std::string opType; ///< "Conv"
    std::string domain; ///< "" for the default ONNX domain
    std::vector<ValueId> inputs;  ///< an invalid id marks an omitted optional input
    std::vector<ValueId> outputs; ///< an invalid id marks an omitted optional output
    std::vector<Attribute> attributes;
    NamespaceId ns; ///< innermost namespace; the root when the name has no path

    const Attribute *attribute(const std::string &attrName) const;
    int64_t attrInt(const std::string &attrName, int64_t fallback) const;
    double attrFloat(const std::string &attrName, double fallback) const;
    std::vector<int64_t> attrInts(const std::string &attrName,
                                  std::vector<int64_t> fallback = {}) const;
    std::string attrString(const std::string &attrName, std::string fallback = {}) const;
    /// Display label: the name's last path element when present, else op type plus id.
    std::string displayName() const;
};

/// One level of the module hierarchy: "/layer1/layer1.0/conv1/Conv" -> layer1 > layer1.0 > conv1.
struct Namespace
{
    NamespaceId id;
    std::string name;   ///< this level ("layer1.0"); empty for the root
    std::string path;   ///< full path ("layer1/layer1.0"); empty for the root
    NamespaceId parent; ///< invalid for the root
    int depth = 0;      ///< root 0
    std::vector<NamespaceId> children;
    std::vector<NodeId> nodes; ///< nodes directly in this namespace
};

struct ModelInfo
{
    std::string path;         ///< file the graph came from
    std::string producerName; ///< "pytorch"
    std::string producerVersion;
    int64_t irVersion = 0;
    int64_t opsetVersion = 0; ///< default-domain opset
    std::string graphName;
    std::string sha256; ///< of the model file; identifies it in plans and sessions
    int64_t batch = 0;  ///< the batch the shapes were inferred at (0: as in the file)
    /// What the importer changed from the file's own meaning, in words for the user ("3
    /// BatchNormalization nodes exported for inference are modelled in training mode ...").
    std::vector<std::string> importNotes;
    /// Why no training step can be derived (a value whose shape could not be inferred, with the
    /// setting that fixes it); empty when the graph is complete. Only an import that allows
    /// unknown shapes (browsing) returns such a graph.
    std::vector<std::string> trainingBlockers;
};

/// Who wrote the file, for people: "pytorch 1.13.0", "spox" (no version), "not named" (neither:
/// paddle2onnx leaves both empty).
std::string producerLabel(const ModelInfo &info);

/// Nodes a view shows as one group of their own (a fused attention pattern).
struct NodeGroup
{
    std::string name; ///< the group's namespace name ("attention (fused)")
    std::vector<NodeId> nodes;
};

class Graph
{
public:
    /// Builds a graph from parts; checks references, computes consumers, topological order and
    /// namespaces. Errors: a value used but never produced, an out-of-range id, a cycle.
    static Expected<Graph> build(ModelInfo info, std::vector<Node> nodes, std::vector<Value> values,
                                 std::vector<ValueId> inputs, std::vector<ValueId> outputs);

    const ModelInfo &info() const { return m_info; }
    size_t nodeCount() const { return m_nodes.size(); }
    size_t valueCount() const { return m_values.size(); }
    const Node &node(NodeId id) const { return m_nodes[id.index()]; }
    const Value &value(ValueId id) const { return m_values[id.index()]; }
    const std::vector<Node> &nodes() const { return m_nodes; }
    const std::vector<Value> &values() const { return m_values; }
    /// Graph inputs (data inputs and, for weight-less exports, parameters and buffers).
    const std::vector<ValueId> &inputs() const { return m_inputs; }
    const std::vector<ValueId> &outputs() const { return m_outputs; }
    /// Every node, producers before consumers; ties keep file order.
    const std::vector<NodeId> &topologicalOrder() const { return m_topo; }
    /// Position of each node in topologicalOrder().
    size_t topoPosition(NodeId id) const { return m_topoPos[id.index()]; }

    std::optional<ValueId> findValue(const std::string &name) const;
    std::optional<NodeId> findNode(const std::string &name) const;

    const Namespace &ns(NamespaceId id) const { return m_namespaces[id.index()]; }
    const std::vector<Namespace> &namespaces() const { return m_namespaces; }
    NamespaceId rootNamespace() const { return NamespaceId(int32_t(0)); }
    int namespaceDepth() const; ///< deepest level below the root

    /// A copy in which each group's nodes move into a new namespace, a child of their innermost
    /// common namespace. Node, value and existing namespace ids stay as they are (the new
    /// namespaces come after them, in the order of `groups`), and so do node names. A group of
    /// fewer than two nodes, or with a node an earlier group took, is left out.
    Graph withNodeGroups(const std::vector<NodeGroup> &groups) const;

    /// Replaces value kinds (Parameter / Buffer / Input) by name, for user overrides.
    Status reclassify(const std::string &valueName, ValueKind kind);

private:
    ModelInfo m_info;
    std::vector<Node> m_nodes;
    std::vector<Value> m_values;
    std::vector<ValueId> m_inputs, m_outputs;
    std::vector<NodeId> m_topo;
    std::vector<size_t> m_topoPos;
    std::vector<Namespace> m_namespaces;
    std::unordered_map<std::string, ValueId> m_valueByName;
    std::unordered_map<std::string, NodeId> m_nodeByName;
};

/// Splits an ONNX node name into its namespace path: "/layer1/layer1.0/conv1/Conv" ->
/// {"layer1", "layer1.0", "conv1"}. The last element (the op) is dropped.
std::vector<std::string> namespacePathOf(const std::string &nodeName);

} // namespace remat::core::ir
