#include "core/io/node_link.h"

#include "core/util/reader_guard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

namespace remat::core::io {

namespace {

using nlohmann::json;
using training::Op;
using training::Phase;
using training::Tensor;
using training::TensorRole;

struct RawNode
{
    int64_t id = 0;
    std::string name;
    bool backward = false;
    double cost = 0;
    int64_t bytes = 0;
    int64_t stickyBytes = 0; // our own export: outputs kept to the end
    int64_t paramBytes = 0;  // random layered graphs: param_cost
    std::string phase;       // our own export: "forward" / "loss" / "backward"
    std::string type;
};

Status parseError(const std::string &origin, const std::string &what)
{
    return makeError(StatusCode::ParseError, origin + ": " + what);
}

bool isLossName(const std::string &name)
{
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower == "loss";
}

int64_t asInt64(const json &v)
{
    if (v.is_number_integer())
        return v.get<int64_t>();
    if (v.is_number())
        return static_cast<int64_t>(std::llround(v.get<double>()));
    if (v.is_string())
        return std::stoll(v.get<std::string>());
    throw std::runtime_error("not a number");
}

/// Orders nodes topologically, keeping `preferred` where it already is one (the published
/// budgets are defined on that order).
Expected<std::vector<size_t>> topologicalOrder(const std::vector<RawNode> &nodes,
                                               const std::vector<std::pair<size_t, size_t>> &edges,
                                               const std::vector<size_t> &preferred,
                                               const std::string &origin)
{
    const size_t n = nodes.size();
    std::vector<size_t> rank(n);
    for (size_t i = 0; i < preferred.size(); ++i)
        rank[preferred[i]] = i;
    bool ok = true;
    for (auto [s, t] : edges)
        ok = ok && rank[s] < rank[t];
    if (ok)
        return preferred;
    // Kahn's algorithm, smallest preferred rank first.
    std::vector<std::vector<size_t>> succ(n);
    std::vector<size_t> indeg(n, 0);
    for (auto [s, t] : edges) {
        succ[s].push_back(t);
        ++indeg[t];
    }
    std::priority_queue<std::pair<size_t, size_t>, std::vector<std::pair<size_t, size_t>>,
                        std::greater<>>
        ready;
    for (size_t i = 0; i < n; ++i)
        if (indeg[i] == 0)
            ready.push({rank[i], i});
    std::vector<size_t> order;
    while (!ready.empty()) {
        size_t v = ready.top().second;
        ready.pop();
        order.push_back(v);
        for (size_t w : succ[v])
            if (--indeg[w] == 0)
                ready.push({rank[w], w});
    }
    if (order.size() != n)
        return parseError(origin, "the graph has a cycle");
    return order;
}

} // namespace

int64_t referencePeakBytes(const training::TrainingGraph &graph)
{
    const auto &tensors = graph.tensors();
    std::vector<size_t> lastUse(tensors.size(), 0);
    std::vector<char> hasUse(tensors.size(), 0);
    int64_t live = 0;
    for (const Tensor &t : tensors)
        if (t.preloaded)
            live += t.bytes;
    for (const Op &op : graph.ops())
        for (TensorId in : op.inputs) {
            lastUse[in.index()] = std::max(lastUse[in.index()], op.id.index());
            hasUse[in.index()] = 1;
        }
    auto freeable = [&](const Tensor &t) { return !t.preloaded && !t.requiredAtEnd; };
    int64_t peak = live;
    for (const Op &op : graph.ops()) {
        for (TensorId out : op.outputs)
            live += graph.tensor(out).bytes;
        peak = std::max(peak, live + op.workspaceBytes);
        std::set<size_t> done;
        for (TensorId in : op.inputs) {
            const Tensor &t = graph.tensor(in);
            if (freeable(t) && lastUse[in.index()] == op.id.index() &&
                done.insert(in.index()).second)
                live -= t.bytes;
        }
        for (TensorId out : op.outputs) {
            const Tensor &t = graph.tensor(out);
            if (freeable(t) && !hasUse[out.index()])
                live -= t.bytes;
        }
    }
    return peak;
}

static Expected<NodeLinkGraph> parseNodeLinkGraphUnguarded(const std::string &text,
                                                           const std::string &origin)
{
    std::vector<RawNode> nodes;
    std::vector<std::pair<size_t, size_t>> edges;
    std::vector<size_t> preferred;
    std::string graphName;
    double costUnit = 0; // 0: the file's own unit
    int64_t fixedBytes = 0;
    try {
        json doc = json::parse(text);
        if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
            return parseError(origin, "not a node-link graph (no \"nodes\" array)");
        const json &graphAttrs = doc.contains("graph") ? doc["graph"] : json::object();
        if (graphAttrs.is_object()) {
            if (graphAttrs.contains("name") && graphAttrs["name"].is_string())
                graphName = graphAttrs["name"].get<std::string>();
            if (graphAttrs.contains("cost_cpu_unit_seconds"))
                costUnit = graphAttrs["cost_cpu_unit_seconds"].get<double>();
            if (graphAttrs.contains("cost_ram_fixed"))
                fixedBytes = asInt64(graphAttrs["cost_ram_fixed"]);
        }
        const json &jsonNodes = doc["nodes"];
        if (jsonNodes.empty())
            return parseError(origin, "the graph has no nodes");
        const bool randomLayered = jsonNodes[0].contains("out_cost");
        std::unordered_map<int64_t, size_t> byId;
        for (const json &jn : jsonNodes) {
            RawNode node;
            if (randomLayered) {
                node.id = asInt64(jn.at("name"));
                node.name = std::to_string(node.id);
                node.bytes = asInt64(jn.at("out_cost"));
                node.cost = jn.at("duration").get<double>();
                node.paramBytes = jn.contains("param_cost") ? asInt64(jn["param_cost"]) : 0;
            } else {
                node.id = asInt64(jn.at("id"));
                node.name = jn.contains("name") && jn["name"].is_string()
                                ? jn["name"].get<std::string>()
                                : std::to_string(node.id);
                node.backward = jn.contains("backward") && jn["backward"].get<bool>();
                node.bytes = asInt64(jn.at("cost_ram"));
                node.cost = jn.at("cost_cpu").get<double>();
                node.stickyBytes = jn.contains("sticky_ram") ? asInt64(jn["sticky_ram"]) : 0;
                if (jn.contains("phase") && jn["phase"].is_string())
                    node.phase = jn["phase"].get<std::string>();
                if (jn.contains("type") && jn["type"].is_string())
                    node.type = jn["type"].get<std::string>();
            }
            if (node.bytes < 0 || node.cost < 0 || node.stickyBytes < 0 || node.paramBytes < 0)
                return parseError(origin,
                                  "node " + std::to_string(node.id) + " has a negative cost");
            if (!byId.emplace(node.id, nodes.size()).second)
                return parseError(origin, "duplicate node id " + std::to_string(node.id));
            nodes.push_back(std::move(node));
        }
        if (doc.contains("links")) {
            std::set<std::pair<size_t, size_t>> seen;
            for (const json &jl : doc["links"]) {
                int64_t s = randomLayered ? asInt64(jl.at("0")) : asInt64(jl.at("source"));
                int64_t t = randomLayered ? asInt64(jl.at("1")) : asInt64(jl.at("target"));
                auto si = byId.find(s), ti = byId.find(t);
                if (si == byId.end() || ti == byId.end())
                    return parseError(origin, "link " + std::to_string(s) + " -> " +
                                                  std::to_string(t) + " names an unknown node");
                if (si->second == ti->second)
                    return parseError(origin, "self loop on node " + std::to_string(s));
                if (seen.insert({si->second, ti->second}).second)
                    edges.push_back({si->second, ti->second});
            }
        }
        if (randomLayered && graphAttrs.is_object() && graphAttrs.contains("order") &&
            graphAttrs["order"].is_array()) {
            std::vector<char> used(nodes.size(), 0);
            for (const json &v : graphAttrs["order"]) {
                auto it = byId.find(asInt64(v));
                if (it == byId.end() || used[it->second])
                    return parseError(origin, "graph.order is not a permutation of the nodes");
                used[it->second] = 1;
                preferred.push_back(it->second);
            }
            if (preferred.size() != nodes.size())
                return parseError(origin, "graph.order does not list every node");
        } else {
            preferred.resize(nodes.size());
            for (size_t i = 0; i < nodes.size(); ++i)
                preferred[i] = i;
            std::stable_sort(preferred.begin(), preferred.end(),
                             [&](size_t a, size_t b) { return nodes[a].id < nodes[b].id; });
        }
    } catch (const std::exception &e) {
        return parseError(origin, e.what());
    }

    REMAT_ASSIGN_OR_RETURN(std::vector<size_t> order,
                           topologicalOrder(nodes, edges, preferred, origin));
    const size_t n = nodes.size();
    std::vector<size_t> position(n);
    for (size_t i = 0; i < n; ++i)
        position[order[i]] = i;

    // Phases: forward nodes, then the loss (the first backward node when it is called "Loss"),
    // then backward nodes. Checkmate's graphs are ordered like this already.
    std::vector<Phase> phase(n, Phase::Forward);
    bool seenNonForward = false;
    for (size_t p = 0; p < n; ++p) {
        const RawNode &node = nodes[order[p]];
        Phase ph = Phase::Forward;
        if (!node.phase.empty())
            ph = node.phase == "loss"       ? Phase::Loss
                 : node.phase == "backward" ? Phase::Backward
                                            : Phase::Forward;
        else if (node.backward)
            ph = (!seenNonForward && isLossName(node.name)) ? Phase::Loss : Phase::Backward;
        if (ph == Phase::Forward && seenNonForward)
            return makeError(StatusCode::Unsupported,
                             origin + ": forward node '" + node.name +
                                 "' comes after a backward node in topological order");
        seenNonForward = seenNonForward || ph != Phase::Forward;
        phase[p] = ph;
    }

    std::vector<std::vector<size_t>> preds(n);
    for (auto [s, t] : edges)
        preds[position[t]].push_back(position[s]);
    for (auto &p : preds)
        std::sort(p.begin(), p.end());

    std::vector<Op> ops(n);
    std::vector<Tensor> tensors;
    std::set<std::string> names;
    auto uniqueName = [&](std::string name, int64_t id) {
        if (!names.insert(name).second) {
            name += "#" + std::to_string(id);
            names.insert(name);
        }
        return name;
    };
    std::vector<TensorId> mainTensor(n);
    std::unordered_map<std::string, size_t> forwardByName;
    // The network input: the files have no node for it, so forward nodes without predecessors
    // would read nothing and look like constants to the solvers (Feng & Huang saw VGG16 as "2
    // vertices, 1 edge"). One preloaded input of 0 bytes (the files do not give its size, and
    // the published budgets exclude it) feeds every such node.
    TensorId input;
    for (size_t p = 0; p < n; ++p)
        if (phase[p] == Phase::Forward && preds[p].empty()) {
            Tensor in;
            in.id = TensorId(tensors.size());
            in.name = uniqueName("input", -1);
            in.role = TensorRole::Input;
            in.bytes = 0;
            in.preloaded = true;
            input = in.id;
            tensors.push_back(std::move(in));
            break;
        }
    for (size_t p = 0; p < n; ++p) {
        const RawNode &node = nodes[order[p]];
        Op &op = ops[p];
        op.id = OpId(p);
        op.name = uniqueName(node.name, node.id);
        op.phase = phase[p];
        op.type = !node.type.empty()            ? node.type
                  : phase[p] == Phase::Loss     ? "Loss"
                  : phase[p] == Phase::Backward ? "NodeGrad"
                                                : "Node";
        if (phase[p] == Phase::Forward)
            forwardByName[node.name] = p;
        if (phase[p] == Phase::Backward) {
            const std::string suffix = "_backward";
            if (node.name.size() > suffix.size() &&
                node.name.compare(node.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
                auto it = forwardByName.find(node.name.substr(0, node.name.size() - suffix.size()));
                if (it != forwardByName.end())
                    op.forwardOf = OpId(it->second);
            }
        }
        for (size_t pred : preds[p]) {
            op.inputs.push_back(mainTensor[pred]);
            op.inputRoles.push_back({});
        }
        if (phase[p] == Phase::Forward && preds[p].empty() && input.valid()) {
            op.inputs.push_back(input);
            op.inputRoles.push_back({});
        }
        if (node.paramBytes > 0) {
            Tensor param;
            param.id = TensorId(tensors.size());
            param.name = uniqueName("param:" + node.name, node.id);
            param.role = TensorRole::Parameter;
            param.bytes = node.paramBytes;
            param.preloaded = true;
            param.consumers.push_back(op.id);
            op.inputs.push_back(param.id);
            op.inputRoles.push_back({});
            tensors.push_back(std::move(param));
        }
        Tensor out;
        out.id = TensorId(tensors.size());
        out.name = op.name;
        out.role = phase[p] == Phase::Forward ? TensorRole::Activation
                   : phase[p] == Phase::Loss  ? TensorRole::Loss
                                              : TensorRole::ActivationGrad;
        out.bytes = node.bytes;
        out.producer = op.id;
        mainTensor[p] = out.id;
        op.outputs.push_back(out.id);
        op.outputRoles.push_back({});
        tensors.push_back(std::move(out));
        if (node.stickyBytes > 0) {
            Tensor sticky;
            sticky.id = TensorId(tensors.size());
            sticky.name = uniqueName("sticky:" + node.name, node.id);
            sticky.role = TensorRole::ParameterGrad;
            sticky.bytes = node.stickyBytes;
            sticky.producer = op.id;
            sticky.requiredAtEnd = true;
            op.outputs.push_back(sticky.id);
            op.outputRoles.push_back({});
            tensors.push_back(std::move(sticky));
        }
        int64_t accessed = 0;
        for (TensorId t : op.inputs)
            accessed += tensors[t.index()].bytes;
        for (TensorId t : op.outputs)
            accessed += tensors[t.index()].bytes;
        op.bytesAccessed = accessed;
    }
    if (fixedBytes > 0) {
        Tensor fixed;
        fixed.id = TensorId(tensors.size());
        fixed.name = uniqueName("parameters", -1);
        fixed.role = TensorRole::Parameter;
        fixed.bytes = fixedBytes;
        fixed.preloaded = true;
        tensors.push_back(std::move(fixed));
    }
    for (const Op &op : ops)
        for (TensorId in : op.inputs) {
            auto &consumers = tensors[in.index()].consumers;
            if (consumers.empty() || consumers.back() != op.id)
                consumers.push_back(op.id);
        }

    training::TrainingGraphInfo info;
    info.modelPath = origin;
    info.lossDescription = "benchmark graph";
    // The assembler's checks (phase order, ids) do not know the file: the error names it here.
    Expected<training::TrainingGraph> assembled =
        training::TrainingGraph::assemble(info, std::move(ops), std::move(tensors));
    if (!assembled)
        return makeError(assembled.status().code(), origin + ": " + assembled.status().message());
    training::TrainingGraph tg = std::move(*assembled);

    NodeLinkGraph result;
    result.name = graphName.empty() ? origin : graphName;
    result.costs.opSeconds.resize(n);
    for (size_t p = 0; p < n; ++p) {
        double c = nodes[order[p]].cost;
        result.costs.opSeconds[p] = costUnit > 0 ? c * costUnit : c;
        result.nodeIds.push_back(nodes[order[p]].id);
    }
    result.costs.source = costUnit > 0 ? "node-link file" : "benchmark file (its own time unit)";
    result.referencePeakBytes = referencePeakBytes(tg);
    result.graph = std::move(tg);
    return result;
}

Expected<NodeLinkGraph> parseNodeLinkGraph(const std::string &text, const std::string &origin)
{
    return guardReader(origin, [&] { return parseNodeLinkGraphUnguarded(text, origin); });
}

Expected<NodeLinkGraph> readNodeLinkGraph(const std::string &path)
{
    return guardReader(path, [&]() -> Expected<NodeLinkGraph> {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return makeError(StatusCode::NotFound, path + ": cannot open");
        std::ostringstream text;
        text << in.rdbuf();
        return parseNodeLinkGraph(text.str(), path);
    });
}

std::string formatNodeLinkGraph(const training::TrainingGraph &graph, const cost::Costs &costs,
                                const std::string &name)
{
    bool integral = true;
    for (double s : costs.opSeconds)
        integral = integral && std::abs(s - std::round(s)) < 1e-9 && s < 9e15;
    // Checkmate and Moccasin divide integer costs by their gcd, so times must be integers:
    // nanoseconds for measured or modelled seconds, the file's own unit otherwise.
    const double unit = integral ? 1.0 : 1e-9;
    int64_t fixed = 0;
    for (const Tensor &t : graph.tensors())
        if (t.preloaded)
            fixed += t.bytes;
    json doc;
    doc["directed"] = true;
    doc["multigraph"] = false;
    doc["graph"] = {{"name", name.empty() ? graph.info().modelPath : name},
                    {"cost_ram_fixed", fixed}};
    if (!integral)
        doc["graph"]["cost_cpu_unit_seconds"] = unit;
    json jsonNodes = json::array();
    json links = json::array();
    for (const Op &op : graph.ops()) {
        int64_t bytes = 0, sticky = 0;
        for (TensorId out : op.outputs) {
            const Tensor &t = graph.tensor(out);
            (t.requiredAtEnd ? sticky : bytes) += t.bytes;
        }
        double seconds =
            op.id.index() < costs.opSeconds.size() ? costs.opSeconds[op.id.index()] : 0;
        json jn = {{"id", op.id.value},
                   {"name", op.name},
                   {"backward", op.phase != Phase::Forward},
                   {"cost_cpu", static_cast<int64_t>(std::llround(seconds / unit))},
                   {"cost_ram", bytes},
                   {"phase", op.phase == Phase::Forward ? "forward"
                             : op.phase == Phase::Loss  ? "loss"
                                                        : "backward"},
                   {"type", op.type}};
        if (sticky > 0)
            jn["sticky_ram"] = sticky;
        jsonNodes.push_back(std::move(jn));
        std::set<int32_t> preds;
        for (TensorId in : op.inputs) {
            const Tensor &t = graph.tensor(in);
            if (t.producer.valid())
                preds.insert(t.producer.value);
        }
        for (int32_t p : preds)
            links.push_back({{"source", p}, {"target", op.id.value}});
    }
    doc["nodes"] = std::move(jsonNodes);
    doc["links"] = std::move(links);
    return doc.dump(1);
}

Status writeNodeLinkGraph(const training::TrainingGraph &graph, const cost::Costs &costs,
                          const std::string &path, const std::string &name)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(StatusCode::NotFound, path + ": cannot write");
    out << formatNodeLinkGraph(graph, costs, name) << '\n';
    if (!out)
        return makeError(StatusCode::Internal, path + ": write failed");
    return Status::ok();
}

} // namespace remat::core::io
