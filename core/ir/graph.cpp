#include "graph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>

namespace remat::core::ir {

const char *valueKindName(ValueKind kind)
{
    switch (kind) {
    case ValueKind::Input: return "input";
    case ValueKind::Parameter: return "parameter";
    case ValueKind::Buffer: return "buffer";
    case ValueKind::Constant: return "constant";
    case ValueKind::Intermediate: return "activation";
    case ValueKind::Frozen: return "frozen";
    }
    return "?";
}

Expected<int64_t> Value::bytes() const
{
    auto n = shape.numElements();
    if (!n)
        return n.status().withContext("value '" + name + "'");
    int64_t out = 0;
    if (__builtin_mul_overflow(*n, elementSize(dtype), &out))
        return makeError(StatusCode::OutOfRange, "value '" + name + "' needs more than 2^63 bytes");
    return out;
}

const Attribute *Node::attribute(const std::string &attrName) const
{
    for (const Attribute &a : attributes)
        if (a.name == attrName)
            return &a;
    return nullptr;
}

int64_t Node::attrInt(const std::string &attrName, int64_t fallback) const
{
    const Attribute *a = attribute(attrName);
    return a && a->isInt() ? a->i() : fallback;
}

double Node::attrFloat(const std::string &attrName, double fallback) const
{
    const Attribute *a = attribute(attrName);
    if (a && a->isFloat())
        return a->f();
    if (a && a->isInt())
        return static_cast<double>(a->i());
    return fallback;
}

std::vector<int64_t> Node::attrInts(const std::string &attrName,
                                    std::vector<int64_t> fallback) const
{
    const Attribute *a = attribute(attrName);
    return a && a->isInts() ? a->ints() : fallback;
}

std::string Node::attrString(const std::string &attrName, std::string fallback) const
{
    const Attribute *a = attribute(attrName);
    return a && a->isString() ? a->s() : fallback;
}

std::string Node::displayName() const
{
    if (!name.empty()) {
        auto path = namespacePathOf(name);
        const size_t slash = name.find_last_of('/');
        std::string last = slash == std::string::npos ? name : name.substr(slash + 1);
        if (!path.empty() && !last.empty())
            return path.back() + "/" + last;
        if (!last.empty())
            return last;
    }
    return opType + " #" + std::to_string(id.value);
}

std::vector<std::string> namespacePathOf(const std::string &nodeName)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= nodeName.size()) {
        size_t end = nodeName.find('/', start);
        if (end == std::string::npos)
            end = nodeName.size();
        if (end > start)
            parts.push_back(nodeName.substr(start, end - start));
        start = end + 1;
    }
    if (!parts.empty())
        parts.pop_back(); // the op itself
    return parts;
}

std::string Attribute::toString() const
{
    auto joinInts = [](const std::vector<int64_t> &v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i)
            s += (i ? "," : "") + std::to_string(v[i]);
        return s + "]";
    };
    auto fmtDouble = [](double d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", d);
        return std::string(buf);
    };
    if (isInt())
        return std::to_string(i());
    if (isFloat())
        return fmtDouble(f());
    if (isString())
        return "'" + s() + "'";
    if (isInts())
        return joinInts(ints());
    if (isFloats()) {
        std::string s = "[";
        for (size_t k = 0; k < floats().size(); ++k)
            s += (k ? "," : "") + fmtDouble(floats()[k]);
        return s + "]";
    }
    if (isStrings()) {
        std::string s = "[";
        for (size_t k = 0; k < strings().size(); ++k)
            s += (k ? ",'" : "'") + strings()[k] + "'";
        return s + "]";
    }
    if (isTensor())
        return "tensor " + dataTypeName(tensor().dtype) + tensor().shape.toString();
    return "?";
}

Expected<Graph> Graph::build(ModelInfo info, std::vector<Node> nodes, std::vector<Value> values,
                             std::vector<ValueId> inputs, std::vector<ValueId> outputs)
{
    Graph g;
    g.m_info = std::move(info);
    g.m_nodes = std::move(nodes);
    g.m_values = std::move(values);
    g.m_inputs = std::move(inputs);
    g.m_outputs = std::move(outputs);
    const size_t nNodes = g.m_nodes.size();
    const size_t nValues = g.m_values.size();

    for (size_t i = 0; i < nValues; ++i) {
        Value &v = g.m_values[i];
        v.id = ValueId(i);
        v.consumers.clear();
        v.producer = NodeId();
        if (!g.m_valueByName.emplace(v.name, v.id).second)
            return makeError(StatusCode::ParseError,
                             "value name '" + v.name + "' is defined twice");
    }
    for (size_t i = 0; i < nNodes; ++i) {
        Node &n = g.m_nodes[i];
        n.id = NodeId(i);
        if (!n.name.empty())
            g.m_nodeByName.emplace(n.name, n.id);
        for (ValueId out : n.outputs) {
            if (!out.valid())
                continue;
            if (out.index() >= nValues)
                return makeError(StatusCode::Internal,
                                 "node '" + n.name + "' has an out-of-range output");
            Value &v = g.m_values[out.index()];
            if (v.producer.valid())
                return makeError(StatusCode::ParseError, "value '" + v.name +
                                                             "' is produced by two nodes ('" +
                                                             g.m_nodes[v.producer.index()].name +
                                                             "' and '" + n.name + "')");
            // A Constant node's output carries its tensor (kind Constant) so shape arithmetic
            // can read it; anything else may not be both produced and an input/initializer.
            const bool constantNodeOutput = v.kind == ValueKind::Constant && n.opType == "Constant";
            if ((v.initializer || v.kind != ValueKind::Intermediate) && !constantNodeOutput)
                return makeError(StatusCode::ParseError,
                                 "node '" + n.name + "' (" + n.opType + ") writes '" + v.name +
                                     "', which is already a graph input or initializer");
            v.producer = n.id;
        }
    }
    for (ValueId id : g.m_outputs) {
        if (!id.valid() || id.index() >= nValues)
            return makeError(StatusCode::Internal, "graph output id out of range");
        g.m_values[id.index()].isGraphOutput = true;
    }
    // Every input must be produced, an input or an initializer.
    for (const Node &n : g.m_nodes) {
        for (ValueId in : n.inputs) {
            if (!in.valid())
                continue;
            if (in.index() >= nValues)
                return makeError(StatusCode::Internal,
                                 "node '" + n.name + "' has an out-of-range input");
            const Value &v = g.m_values[in.index()];
            if (!v.producer.valid() && v.kind == ValueKind::Intermediate && !v.initializer)
                return makeError(StatusCode::ParseError,
                                 "node '" + (n.name.empty() ? n.opType : n.name) +
                                     "' uses value '" + v.name +
                                     "', which no node produces and which is neither a "
                                     "graph input nor an initializer");
        }
    }
    for (ValueId id : g.m_outputs) {
        const Value &v = g.m_values[id.index()];
        if (!v.producer.valid() && v.kind == ValueKind::Intermediate && !v.initializer)
            return makeError(StatusCode::ParseError,
                             "graph output '" + v.name + "' is never produced");
    }

    // Kahn's algorithm; ties by file order so the order is stable and readable.
    std::vector<int> indegree(nNodes, 0);
    std::vector<std::vector<NodeId>> succ(nNodes);
    for (const Node &n : g.m_nodes) {
        for (ValueId in : n.inputs) {
            if (!in.valid())
                continue;
            NodeId p = g.m_values[in.index()].producer;
            if (p.valid()) {
                succ[p.index()].push_back(n.id);
                ++indegree[n.id.index()];
            }
        }
    }
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
    for (size_t i = 0; i < nNodes; ++i)
        if (indegree[i] == 0)
            ready.push(static_cast<int32_t>(i));
    g.m_topo.reserve(nNodes);
    while (!ready.empty()) {
        const int32_t i = ready.top();
        ready.pop();
        g.m_topo.push_back(NodeId(i));
        for (NodeId s : succ[static_cast<size_t>(i)])
            if (--indegree[s.index()] == 0)
                ready.push(s.value);
    }
    if (g.m_topo.size() != nNodes) {
        for (size_t i = 0; i < nNodes; ++i)
            if (indegree[i] > 0)
                return makeError(
                    StatusCode::ParseError,
                    "the graph has a cycle through node '" +
                        (g.m_nodes[i].name.empty() ? g.m_nodes[i].opType : g.m_nodes[i].name) +
                        "'");
    }
    g.m_topoPos.assign(nNodes, 0);
    for (size_t k = 0; k < g.m_topo.size(); ++k)
        g.m_topoPos[g.m_topo[k].index()] = k;
    for (NodeId n : g.m_topo)
        for (ValueId in : g.m_nodes[n.index()].inputs)
            if (in.valid())
                g.m_values[in.index()].consumers.push_back(n);
    for (Value &v : g.m_values) { // a node reading one value twice is one consumer
        v.consumers.erase(std::unique(v.consumers.begin(), v.consumers.end()), v.consumers.end());
    }

    // Namespace tree.
    Namespace root;
    root.id = NamespaceId(int32_t(0));
    g.m_namespaces.push_back(root);
    std::map<std::pair<int32_t, std::string>, NamespaceId> childIndex;
    for (NodeId nid : g.m_topo) {
        Node &n = g.m_nodes[nid.index()];
        NamespaceId cur = g.rootNamespace();
        for (const std::string &part : namespacePathOf(n.name)) {
            auto key = std::make_pair(cur.value, part);
            auto it = childIndex.find(key);
            if (it == childIndex.end()) {
                Namespace child;
                child.id = NamespaceId(g.m_namespaces.size());
                child.name = part;
                const Namespace &parent = g.m_namespaces[cur.index()];
                child.path = parent.path.empty() ? part : parent.path + "/" + part;
                child.parent = cur;
                child.depth = parent.depth + 1;
                g.m_namespaces.push_back(child);
                g.m_namespaces[cur.index()].children.push_back(child.id);
                it = childIndex.emplace(key, child.id).first;
            }
            cur = it->second;
        }
        n.ns = cur;
        g.m_namespaces[cur.index()].nodes.push_back(nid);
    }
    return g;
}

std::optional<ValueId> Graph::findValue(const std::string &name) const
{
    auto it = m_valueByName.find(name);
    if (it == m_valueByName.end())
        return std::nullopt;
    return it->second;
}

std::optional<NodeId> Graph::findNode(const std::string &name) const
{
    auto it = m_nodeByName.find(name);
    if (it == m_nodeByName.end())
        return std::nullopt;
    return it->second;
}

Graph Graph::withNodeGroups(const std::vector<NodeGroup> &groups) const
{
    Graph g = *this;
    std::vector<char> taken(m_nodes.size(), 0);
    for (const NodeGroup &group : groups) {
        if (group.nodes.size() < 2)
            continue;
        bool usable = true;
        for (NodeId n : group.nodes)
            usable = usable && n.valid() && n.index() < m_nodes.size() && !taken[n.index()];
        if (!usable)
            continue;
        // The innermost namespace holding every node: walk each node's path up to the depth of
        // the shallowest, then up together until they meet.
        NamespaceId common = g.m_nodes[group.nodes[0].index()].ns;
        for (NodeId n : group.nodes) {
            NamespaceId other = g.m_nodes[n.index()].ns;
            while (g.ns(other).depth > g.ns(common).depth)
                other = g.ns(other).parent;
            while (g.ns(common).depth > g.ns(other).depth)
                common = g.ns(common).parent;
            while (common != other) {
                common = g.ns(common).parent;
                other = g.ns(other).parent;
            }
        }
        Namespace added;
        added.id = NamespaceId(g.m_namespaces.size());
        added.name = group.name;
        const Namespace &parent = g.ns(common);
        added.path = parent.path.empty() ? group.name : parent.path + "/" + group.name;
        added.parent = common;
        added.depth = parent.depth + 1;
        std::vector<NodeId> members = group.nodes;
        std::sort(members.begin(), members.end(),
                  [&](NodeId a, NodeId b) { return topoPosition(a) < topoPosition(b); });
        members.erase(std::unique(members.begin(), members.end()), members.end());
        for (NodeId n : members) {
            taken[n.index()] = 1;
            std::vector<NodeId> &from = g.m_namespaces[g.m_nodes[n.index()].ns.index()].nodes;
            from.erase(std::remove(from.begin(), from.end(), n), from.end());
            g.m_nodes[n.index()].ns = added.id;
        }
        added.nodes = std::move(members);
        g.m_namespaces[common.index()].children.push_back(added.id);
        g.m_namespaces.push_back(std::move(added));
    }
    return g;
}

int Graph::namespaceDepth() const
{
    int d = 0;
    for (const Namespace &n : m_namespaces)
        d = std::max(d, n.depth);
    return d;
}

Status Graph::reclassify(const std::string &valueName, ValueKind kind)
{
    auto id = findValue(valueName);
    if (!id)
        return makeError(StatusCode::NotFound, "no value named '" + valueName + "'");
    Value &v = m_values[id->index()];
    if (v.producer.valid())
        return makeError(StatusCode::InvalidArgument,
                         "'" + valueName +
                             "' is computed by a node; only graph inputs and "
                             "initializers can be reclassified");
    v.kind = kind;
    return Status::ok();
}

std::string producerLabel(const ModelInfo &info)
{
    const auto blank = [](const std::string &t) {
        return t.find_first_not_of(" \t\r\n") == std::string::npos;
    };
    if (blank(info.producerName) && blank(info.producerVersion))
        return "not named";
    if (blank(info.producerVersion))
        return info.producerName;
    if (blank(info.producerName))
        return info.producerVersion;
    return info.producerName + " " + info.producerVersion;
}

} // namespace remat::core::ir
