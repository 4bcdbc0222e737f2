#include "control_flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

namespace remat::core::onnx {

const ::onnx::GraphProto *subgraphOf(const ::onnx::NodeProto &node, const char *name)
{
    for (const auto &a : node.attribute())
        if (a.name() == name && a.has_g())
            return &a.g();
    return nullptr;
}

void renameScopeReads(::onnx::GraphProto &g,
                      const std::unordered_map<std::string, std::string> &rename)
{
    for (auto &n : *g.mutable_node())
        renameInputs(n, rename);
    for (auto &o : *g.mutable_output()) {
        auto it = rename.find(o.name());
        if (it != rename.end())
            o.set_name(it->second);
    }
}

void renameInputs(::onnx::NodeProto &node,
                  const std::unordered_map<std::string, std::string> &rename)
{
    for (std::string &in : *node.mutable_input()) {
        auto it = rename.find(in);
        if (it != rename.end())
            in = it->second;
    }
    for (auto &a : *node.mutable_attribute()) {
        if (a.has_g())
            renameScopeReads(*a.mutable_g(), rename);
        for (auto &g : *a.mutable_graphs())
            renameScopeReads(g, rename);
    }
}

void copySubgraphNodes(const ::onnx::GraphProto &sub,
                       const std::unordered_map<std::string, std::string> &rename,
                       const std::string &prefix, ::onnx::GraphProto &g,
                       google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes)
{
    std::unordered_set<std::string> produced;
    for (const auto &n : sub.node())
        for (const std::string &out : n.output())
            if (!out.empty())
                produced.insert(out);
    for (const auto &vi : sub.value_info()) {
        auto found = rename.find(vi.name());
        if (found == rename.end() || !produced.count(vi.name()))
            continue;
        auto *copy = g.add_value_info();
        *copy = vi;
        copy->set_name(found->second);
    }
    for (const auto &n : sub.node()) {
        ::onnx::NodeProto *copy = nodes.Add();
        *copy = n;
        renameInputs(*copy, rename);
        for (std::string &out : *copy->mutable_output())
            if (auto found = rename.find(out); !out.empty() && found != rename.end())
                out = found->second;
        copy->set_name(prefix + (n.name().empty() ? n.op_type() : n.name()));
    }
}

namespace {

std::string labelOf(const ::onnx::NodeProto &n)
{
    return "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ")";
}

bool isDefaultDomain(const ::onnx::NodeProto &n)
{
    return n.domain().empty() || n.domain() == "ai.onnx";
}

/// The single value of a small integer tensor (a Constant node's `value`), if it is one.
std::optional<int64_t> scalarOf(const ::onnx::TensorProto &t)
{
    int64_t count = 1;
    for (int64_t d : t.dims())
        count *= d;
    if (count != 1)
        return std::nullopt;
    if (t.int64_data_size() == 1)
        return t.int64_data(0);
    if (t.int32_data_size() == 1)
        return t.int32_data(0);
    // raw_data: little-endian, as ONNX stores it (and this machine reads it)
    const std::string &raw = t.raw_data();
    const size_t width =
        t.data_type() == ::onnx::TensorProto::INT64   ? 8
        : t.data_type() == ::onnx::TensorProto::INT32 ? 4
        : t.data_type() == ::onnx::TensorProto::BOOL || t.data_type() == ::onnx::TensorProto::UINT8
            ? 1
            : 0;
    if (width == 0 || raw.size() != width)
        return std::nullopt;
    if (width == 8) {
        int64_t v;
        std::memcpy(&v, raw.data(), 8);
        return v;
    }
    if (width == 4) {
        int32_t v;
        std::memcpy(&v, raw.data(), 4);
        return v;
    }
    return int64_t(static_cast<unsigned char>(raw[0]));
}

/// The value of a one-element integer tensor the importer inferred, by name.
std::optional<int64_t> knownScalar(const InferredLookup &known, const std::string &name)
{
    const ops::InferredValue *v = known(name);
    if (!v || !v->constant || v->constant->size() != 1)
        return std::nullopt;
    return v->constant->intAt(0);
}

/// The values of a 1-D (or scalar) integer tensor the importer inferred, by name.
std::optional<std::vector<int64_t>> knownInts(const InferredLookup &known, const std::string &name)
{
    const ops::InferredValue *v = known(name);
    if (!v || !v->constant || !v->constant->isInteger())
        return std::nullopt;
    return v->constant->ints;
}

::onnx::NodeProto constantNode(const std::string &name, const std::string &output,
                               ::onnx::TensorProto::DataType type, std::vector<int64_t> values,
                               std::vector<int64_t> dims)
{
    ::onnx::NodeProto n;
    n.set_op_type("Constant");
    n.set_name(name);
    n.add_output(output);
    auto *a = n.add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    auto *t = a->mutable_t();
    t->set_data_type(type);
    for (int64_t d : dims)
        t->add_dims(d);
    for (int64_t v : values) {
        if (type == ::onnx::TensorProto::INT64)
            t->add_int64_data(v);
        else
            t->add_int32_data(int32_t(v));
    }
    return n;
}

::onnx::NodeProto plainNode(const std::string &type, const std::string &name,
                            const std::vector<std::string> &inputs,
                            const std::vector<std::string> &outputs)
{
    ::onnx::NodeProto n;
    n.set_op_type(type);
    n.set_name(name);
    for (const std::string &i : inputs)
        n.add_input(i);
    for (const std::string &o : outputs)
        n.add_output(o);
    return n;
}

void addIntsAttribute(::onnx::NodeProto &n, const char *name, const std::vector<int64_t> &v)
{
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v)
        a->add_ints(x);
}

void addIntAttribute(::onnx::NodeProto &n, const char *name, int64_t v)
{
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}

int64_t intAttribute(const ::onnx::NodeProto &n, const char *name, int64_t fallback)
{
    for (const auto &a : n.attribute())
        if (a.name() == name && a.type() == ::onnx::AttributeProto::INT)
            return a.i();
    return fallback;
}

/// Unsqueeze / Squeeze of `in` at `axis` as the model's opset writes it (axes an attribute
/// before opset 13, an input from 13 on, whose constant node is emitted too).
void addAxisOp(google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes, const char *type,
               const std::string &name, const std::string &in, const std::string &out, int64_t axis,
               int opset)
{
    if (opset >= 13) {
        const std::string axes = name + "/axes";
        *nodes.Add() =
            constantNode(name + "/axes_const", axes, ::onnx::TensorProto::INT64, {axis}, {1});
        *nodes.Add() = plainNode(type, name, {in, axes}, {out});
    } else {
        ::onnx::NodeProto n = plainNode(type, name, {in}, {out});
        addIntsAttribute(n, "axes", {axis});
        *nodes.Add() = std::move(n);
    }
}

/// Where a Loop body's condition output comes from, through Identity nodes: true when it is
/// the condition input passed on, a constant true, or an enclosing value known to be true.
bool conditionStaysTrue(const ::onnx::GraphProto &body, const InferredLookup &known)
{
    std::unordered_map<std::string, const ::onnx::NodeProto *> producer;
    for (const auto &n : body.node())
        for (const std::string &o : n.output())
            producer[o] = &n;
    std::string name = body.output(0).name();
    for (int hop = 0; hop < 64; ++hop) {
        if (body.input_size() > 1 && name == body.input(1).name())
            return true;
        auto it = producer.find(name);
        if (it == producer.end()) {
            const auto v = knownScalar(known, name);
            return v && *v != 0;
        }
        const ::onnx::NodeProto &n = *it->second;
        if (n.op_type() == "Identity" && n.input_size() == 1) {
            name = n.input(0);
            continue;
        }
        if (n.op_type() == "Constant")
            for (const auto &a : n.attribute())
                if (a.name() == "value" && a.has_t()) {
                    const auto v = scalarOf(a.t());
                    return v && *v != 0;
                }
        return false;
    }
    return false;
}

/// Adds `body`'s initializers to `g` once, renamed under `base`/body/, for every iteration to
/// share; returns the renames.
std::unordered_map<std::string, std::string>
shareInitializers(const ::onnx::GraphProto &body, const std::string &base, ::onnx::GraphProto &g)
{
    std::unordered_map<std::string, std::string> shared;
    for (const auto &t : body.initializer()) {
        auto *copy = g.add_initializer();
        *copy = t;
        copy->set_name(base + "/body/" + t.name());
        shared[t.name()] = copy->name();
    }
    return shared;
}

/// One iteration's renames: the shared initializers, and every value the body computes under
/// `prefix` (the caller adds the iteration's inputs).
std::unordered_map<std::string, std::string>
iterationRenames(const ::onnx::GraphProto &body,
                 const std::unordered_map<std::string, std::string> &shared,
                 const std::string &prefix)
{
    std::unordered_map<std::string, std::string> rename = shared;
    for (const auto &n : body.node())
        for (const std::string &out : n.output())
            if (!out.empty())
                rename[out] = prefix + out;
    return rename;
}

/// Stacks one value per iteration into `out` along a new `axis` (Unsqueeze each, Concat), as a
/// Loop's or a Scan's scan output `index`.
void stackIterations(google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes,
                     const std::string &base, int index, const std::vector<std::string> &parts,
                     const std::string &out, int64_t axis, int opset)
{
    std::vector<std::string> stacked;
    for (size_t p = 0; p < parts.size(); ++p) {
        const std::string name = fmt::format("{}/scan{}/part{}", base, index, p);
        addAxisOp(nodes, "Unsqueeze", name, parts[p], name + "_out", axis, opset);
        stacked.push_back(name + "_out");
    }
    ::onnx::NodeProto concat =
        plainNode("Concat", fmt::format("{}/scan{}", base, index), stacked, {out});
    addIntAttribute(concat, "axis", axis);
    *nodes.Add() = std::move(concat);
}

std::vector<int64_t> intsAttribute(const ::onnx::NodeProto &n, const char *name)
{
    for (const auto &a : n.attribute())
        if (a.name() == name)
            return {a.ints().begin(), a.ints().end()};
    return {};
}

/// A Scan (opset 9 on) whose scanned inputs have a static length along their axes, written out:
/// each step slices every scanned input at its position (a Gather by a constant index, the
/// other end first for a reversed direction), runs the body on the states, and the scan
/// outputs are stacked along their axes. Appends the Scan itself to `nodes` when it stays.
Expected<bool> unrollScan(const ::onnx::NodeProto &scan, int index, int opset,
                          const InferredLookup &known, const ControlFlowLimits &limits,
                          int64_t &total, ::onnx::GraphProto &g,
                          google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes,
                          std::vector<std::string> &notes)
{
    auto keep = [&](const std::string &why) {
        notes.push_back(labelOf(scan) + " is not unrolled: " + why);
        *nodes.Add() = scan;
        return false;
    };
    const ::onnx::GraphProto *body = subgraphOf(scan, "body");
    if (!body)
        return makeError(StatusCode::ParseError, labelOf(scan) + " has no body graph");
    const int scanned = int(intAttribute(scan, "num_scan_inputs", -1));
    const int states = scan.input_size() - scanned;
    const int scanOutputs = body->output_size() - states;
    if (scanned < 1 || states < 0 || body->input_size() != scan.input_size() || scanOutputs < 0 ||
        scan.output_size() > body->output_size())
        return makeError(StatusCode::ParseError,
                         fmt::format("{} has {} inputs ({} scanned) and {} outputs but its body {} "
                                     "inputs and {} outputs (ONNX: the body takes every state and "
                                     "one slice of every scanned input)",
                                     labelOf(scan), scan.input_size(), scanned, scan.output_size(),
                                     body->input_size(), body->output_size()));
    std::vector<int64_t> inAxes = intsAttribute(scan, "scan_input_axes"),
                         inDirs = intsAttribute(scan, "scan_input_directions"),
                         outAxes = intsAttribute(scan, "scan_output_axes"),
                         outDirs = intsAttribute(scan, "scan_output_directions");
    inAxes.resize(size_t(scanned), 0);
    inDirs.resize(size_t(scanned), 0);
    outAxes.resize(size_t(scanOutputs), 0);
    outDirs.resize(size_t(scanOutputs), 0);
    int64_t length = -1;
    for (int j = 0; j < scanned; ++j) {
        const ops::InferredValue *x = known(scan.input(states + j));
        if (!x || !x->shape.rankKnown)
            return keep("the shape of its scanned input '" + scan.input(states + j) +
                        "' is not known at import");
        const int64_t rank = int64_t(x->shape.dims.size());
        int64_t &axis = inAxes[size_t(j)];
        if (axis < 0)
            axis += rank;
        if (axis < 0 || axis >= rank || !x->shape.dims[size_t(axis)].isStatic())
            return keep("the length of its scanned input '" + scan.input(states + j) +
                        "' is not known at import");
        const int64_t n = x->shape.dims[size_t(axis)].value;
        if (length >= 0 && n != length)
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format("{} scans inputs of lengths {} and {}", labelOf(scan), length, n));
        length = n;
    }
    if (length == 0 && scanOutputs > 0)
        return keep("it scans nothing and has scan outputs (empty tensors)");
    if (total + length * body->node_size() > limits.maxNodes)
        return keep(fmt::format("{} iterations of {} nodes would pass {} nodes", length,
                                body->node_size(), limits.maxNodes));
    total += length * body->node_size();

    std::string base = scan.name();
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    if (base.empty())
        base = "Scan_" + std::to_string(index);
    const std::unordered_map<std::string, std::string> shared = shareInitializers(*body, base, g);
    std::vector<std::string> current(scan.input().begin(), scan.input().begin() + states);
    std::vector<std::vector<std::string>> parts(static_cast<size_t>(scanOutputs));
    for (int64_t it = 0; it < length; ++it) {
        const std::string prefix = base + "/iter" + std::to_string(it) + "/";
        std::unordered_map<std::string, std::string> rename =
            iterationRenames(*body, shared, prefix);
        for (int k = 0; k < states; ++k)
            rename[body->input(k).name()] = current[size_t(k)];
        for (int j = 0; j < scanned; ++j) {
            const int64_t at = inDirs[size_t(j)] != 0 ? length - 1 - it : it;
            const std::string slice = fmt::format("{}slice{}", prefix, j);
            *nodes.Add() = constantNode(slice + "_index", slice + "_index",
                                        ::onnx::TensorProto::INT64, {at}, {});
            ::onnx::NodeProto gather =
                plainNode("Gather", slice, {scan.input(states + j), slice + "_index"}, {slice});
            addIntAttribute(gather, "axis", inAxes[size_t(j)]);
            *nodes.Add() = std::move(gather);
            rename[body->input(states + j).name()] = slice;
        }
        copySubgraphNodes(*body, rename, prefix, g, nodes);
        auto resolve = [&](const std::string &name) {
            auto found = rename.find(name);
            return found == rename.end() ? name : found->second;
        };
        for (int k = 0; k < states; ++k)
            current[size_t(k)] = resolve(body->output(k).name());
        for (int o = 0; o < scanOutputs; ++o)
            parts[size_t(o)].push_back(resolve(body->output(states + o).name()));
    }
    for (int k = 0; k < states && k < scan.output_size(); ++k)
        if (!scan.output(k).empty())
            *nodes.Add() = plainNode("Identity", base + "/final_" + std::to_string(k),
                                     {current[size_t(k)]}, {scan.output(k)});
    for (int o = 0; o < scanOutputs && states + o < scan.output_size(); ++o) {
        const std::string &out = scan.output(states + o);
        if (out.empty())
            continue;
        std::vector<std::string> order = parts[size_t(o)];
        if (outDirs[size_t(o)] != 0)
            std::reverse(order.begin(), order.end());
        stackIterations(nodes, base, o, order, out, outAxes[size_t(o)], opset);
    }
    return true;
}

} // namespace

Expected<int> unrollCountedLoops(::onnx::ModelProto &model, int opset, const InferredLookup &known,
                                 const ControlFlowLimits &limits, std::vector<std::string> &notes)
{
    ::onnx::GraphProto *g = model.mutable_graph();
    int64_t total = g->node_size();
    int unrolled = 0;
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
    for (int i = 0; i < g->node_size(); ++i) {
        const ::onnx::NodeProto &loop = g->node(i);
        if (loop.op_type() == "Scan" && isDefaultDomain(loop) && opset >= 9) {
            REMAT_ASSIGN_OR_RETURN(const bool done, unrollScan(loop, i, opset, known, limits, total,
                                                               *g, nodes, notes));
            if (done)
                ++unrolled;
            continue;
        }
        if (loop.op_type() != "Loop" || !isDefaultDomain(loop)) {
            *nodes.Add() = loop;
            continue;
        }
        auto keep = [&](const std::string &why) {
            notes.push_back(labelOf(loop) + " is not unrolled: " + why);
            *nodes.Add() = loop;
        };
        const ::onnx::GraphProto *body = subgraphOf(loop, "body");
        if (!body)
            return makeError(StatusCode::ParseError, labelOf(loop) + " has no body graph");
        const int carried = loop.input_size() - 2;
        if (carried < 0 || body->input_size() != 2 + carried || body->output_size() < 1 + carried ||
            loop.output_size() > body->output_size() - 1)
            return makeError(StatusCode::ParseError,
                             fmt::format("{} has {} inputs and {} outputs but its body {} inputs "
                                         "and {} outputs (ONNX: the body takes the iteration, "
                                         "the condition and every carried value)",
                                         labelOf(loop), loop.input_size(), loop.output_size(),
                                         body->input_size(), body->output_size()));
        const int scans = body->output_size() - 1 - carried;
        if (loop.input(0).empty()) {
            keep("it has no trip count (it runs while its condition holds)");
            continue;
        }
        const std::optional<int64_t> trips = knownScalar(known, loop.input(0));
        if (!trips) {
            keep("its trip count '" + loop.input(0) + "' is not known at import");
            continue;
        }
        if (!loop.input(1).empty()) {
            const auto go = knownScalar(known, loop.input(1));
            if (!go) {
                keep("its condition '" + loop.input(1) + "' is not known at import");
                continue;
            }
            if (*go == 0) { // runs no iteration: the carried values pass through
                if (scans > 0) {
                    keep("it runs no iteration and has scan outputs (empty tensors)");
                    continue;
                }
            }
        }
        if (!conditionStaysTrue(*body, known)) {
            keep("its body computes whether to go on");
            continue;
        }
        int64_t runs = std::max<int64_t>(0, *trips);
        if (!loop.input(1).empty() && knownScalar(known, loop.input(1)).value_or(1) == 0)
            runs = 0;
        if (runs == 0 && scans > 0) {
            keep("it runs no iteration and has scan outputs (empty tensors)");
            continue;
        }
        if (total + runs * body->node_size() > limits.maxNodes) {
            keep(fmt::format("{} iterations of {} nodes would pass {} nodes", runs,
                             body->node_size(), limits.maxNodes));
            continue;
        }
        total += runs * body->node_size();

        const std::string base = loop.name().empty() ? "Loop_" + std::to_string(i) : loop.name();
        const std::unordered_map<std::string, std::string> shared =
            shareInitializers(*body, base, *g);
        const std::string truth = base + "/condition";
        *nodes.Add() = constantNode(truth, truth, ::onnx::TensorProto::BOOL, {1}, {});
        std::vector<std::string> current;
        for (int k = 0; k < carried; ++k)
            current.push_back(loop.input(2 + k));
        std::vector<std::vector<std::string>> scanParts(static_cast<size_t>(scans));
        for (int64_t it = 0; it < runs; ++it) {
            const std::string prefix = base + "/iter" + std::to_string(it) + "/";
            std::unordered_map<std::string, std::string> rename =
                iterationRenames(*body, shared, prefix);
            if (!body->input(0).name().empty()) {
                const std::string iteration = prefix + "iteration";
                *nodes.Add() =
                    constantNode(iteration, iteration, ::onnx::TensorProto::INT64, {it}, {});
                rename[body->input(0).name()] = iteration;
            }
            if (!body->input(1).name().empty())
                rename[body->input(1).name()] = truth;
            for (int k = 0; k < carried; ++k)
                rename[body->input(2 + k).name()] = current[size_t(k)];
            copySubgraphNodes(*body, rename, prefix, *g, nodes);
            auto resolve = [&](const std::string &name) {
                auto found = rename.find(name);
                return found == rename.end() ? name : found->second;
            };
            for (int k = 0; k < carried; ++k)
                current[size_t(k)] = resolve(body->output(1 + k).name());
            for (int s = 0; s < scans; ++s)
                scanParts[size_t(s)].push_back(resolve(body->output(1 + carried + s).name()));
        }
        // The Loop's outputs keep their names: the last carried values, the stacked scans.
        for (int k = 0; k < carried && k < loop.output_size(); ++k)
            if (!loop.output(k).empty())
                *nodes.Add() = plainNode("Identity", base + "/final_" + std::to_string(k),
                                         {current[size_t(k)]}, {loop.output(k)});
        for (int s = 0; s < scans && carried + s < loop.output_size(); ++s) {
            const std::string &out = loop.output(carried + s);
            if (out.empty())
                continue;
            stackIterations(nodes, base, s, scanParts[size_t(s)], out, 0, opset);
        }
        ++unrolled;
    }
    if (unrolled > 0)
        g->mutable_node()->Swap(&nodes);
    return unrolled;
}

Expected<int> resolveTensorSequences(::onnx::ModelProto &model, int opset,
                                     const InferredLookup &known, std::vector<std::string> &notes)
{
    static const std::unordered_set<std::string> kSequenceOps = {
        "SequenceEmpty", "SequenceConstruct", "SequenceInsert",     "SequenceErase",
        "SequenceAt",    "SequenceLength",    "ConcatFromSequence", "SplitToSequence"};
    ::onnx::GraphProto *g = model.mutable_graph();
    bool any = false;
    for (const auto &n : g->node())
        if (isDefaultDomain(n) && kSequenceOps.count(n.op_type()))
            any = true;
    if (!any)
        return 0;

    std::unordered_map<std::string, std::vector<std::string>> lists;
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
    int replaced = 0;
    auto refuse = [&](const ::onnx::NodeProto &n, const std::string &why) -> Expected<int> {
        notes.push_back("tensor sequences are not written out: " + labelOf(n) + " " + why);
        return 0;
    };
    auto position = [&](const ::onnx::NodeProto &n, int input, int64_t size,
                        bool insert) -> std::optional<int64_t> {
        if (n.input_size() <= input || n.input(input).empty())
            return insert ? size : size - 1;
        const auto p = knownScalar(known, n.input(input));
        if (!p)
            return std::nullopt;
        const int64_t at = *p < 0 ? *p + size : *p;
        if (at < 0 || at > (insert ? size : size - 1))
            return std::nullopt;
        return at;
    };
    for (const auto &n : g->node()) {
        const std::string &type = n.op_type();
        const bool sequenceOp = isDefaultDomain(n) && kSequenceOps.count(type);
        const bool identityOfList =
            type == "Identity" && n.input_size() == 1 && lists.count(n.input(0));
        if (!sequenceOp && !identityOfList) {
            for (const std::string &in : n.input())
                if (lists.count(in))
                    return refuse(n, "takes the sequence '" + in + "'");
            *nodes.Add() = n;
            continue;
        }
        if (n.output_size() < 1 || n.output(0).empty())
            return refuse(n, "has no output");
        ++replaced;
        const std::string name = n.name().empty() ? type + "_" + n.output(0) : n.name();
        auto listOf = [&](int input) -> const std::vector<std::string> * {
            if (n.input_size() <= input)
                return nullptr;
            auto it = lists.find(n.input(input));
            return it == lists.end() ? nullptr : &it->second;
        };
        if (identityOfList) {
            lists[n.output(0)] = lists[n.input(0)];
        } else if (type == "SequenceEmpty") {
            lists[n.output(0)] = {};
        } else if (type == "SequenceConstruct") {
            lists[n.output(0)] = {n.input().begin(), n.input().end()};
        } else if (type == "SequenceInsert" || type == "SequenceErase") {
            const std::vector<std::string> *in = listOf(0);
            if (!in)
                return refuse(n, "reads a sequence the importer cannot follow");
            const bool insert = type == "SequenceInsert";
            const auto at = position(n, insert ? 2 : 1, int64_t(in->size()), insert);
            if (!at || (!insert && in->empty()))
                return refuse(n, "has a position not known at import");
            std::vector<std::string> out = *in;
            if (insert)
                out.insert(out.begin() + *at, n.input(1));
            else
                out.erase(out.begin() + *at);
            lists[n.output(0)] = std::move(out);
        } else if (type == "SequenceAt") {
            const std::vector<std::string> *in = listOf(0);
            if (!in)
                return refuse(n, "reads a sequence the importer cannot follow");
            const auto at = position(n, 1, int64_t(in->size()), false);
            if (n.input_size() < 2 || !at || in->empty())
                return refuse(n, "has a position not known at import");
            *nodes.Add() = plainNode("Identity", name, {(*in)[size_t(*at)]}, {n.output(0)});
        } else if (type == "SequenceLength") {
            const std::vector<std::string> *in = listOf(0);
            if (!in)
                return refuse(n, "reads a sequence the importer cannot follow");
            *nodes.Add() = constantNode(name, n.output(0), ::onnx::TensorProto::INT64,
                                        {int64_t(in->size())}, {});
        } else if (type == "ConcatFromSequence") {
            const std::vector<std::string> *in = listOf(0);
            if (!in || in->empty())
                return refuse(n, "concatenates a sequence the importer cannot follow");
            const int64_t axis = intAttribute(n, "axis", 0);
            std::vector<std::string> parts = *in;
            if (intAttribute(n, "new_axis", 0) != 0)
                for (size_t p = 0; p < parts.size(); ++p) {
                    const std::string u = fmt::format("{}/unsqueeze{}", name, p);
                    addAxisOp(nodes, "Unsqueeze", u, parts[p], u + "_out", axis, opset);
                    parts[p] = u + "_out";
                }
            ::onnx::NodeProto concat = plainNode("Concat", name, parts, {n.output(0)});
            addIntAttribute(concat, "axis", axis);
            *nodes.Add() = std::move(concat);
        } else if (type == "SplitToSequence") {
            const ops::InferredValue *x = known(n.input(0));
            int64_t axis = intAttribute(n, "axis", 0);
            const bool keepdims = intAttribute(n, "keepdims", 1) != 0;
            if (!x || !x->shape.rankKnown)
                return refuse(n, "splits a tensor of unknown rank");
            const int64_t rank = int64_t(x->shape.dims.size());
            if (axis < 0)
                axis += rank;
            if (axis < 0 || axis >= rank)
                return refuse(n, "has an axis out of range");
            const ir::Dim &dim = x->shape.dims[size_t(axis)];
            std::vector<int64_t> sizes;
            bool squeeze = false;
            if (n.input_size() > 1 && !n.input(1).empty()) {
                const auto split = knownInts(known, n.input(1));
                const ops::InferredValue *sv = known(n.input(1));
                if (!split || !sv)
                    return refuse(n, "has split sizes not known at import");
                if (sv->constant->dims.empty()) { // one chunk size
                    if (!dim.isStatic() || (*split)[0] <= 0)
                        return refuse(n, "splits a dim not known at import");
                    for (int64_t left = dim.value; left > 0; left -= (*split)[0])
                        sizes.push_back(std::min(left, (*split)[0]));
                } else {
                    sizes = *split;
                }
            } else {
                if (!dim.isStatic())
                    return refuse(n, "splits a dim not known at import");
                sizes.assign(size_t(dim.value), 1);
                squeeze = !keepdims;
            }
            if (sizes.empty())
                return refuse(n, "splits into nothing");
            std::vector<std::string> pieces;
            for (size_t p = 0; p < sizes.size(); ++p)
                pieces.push_back(fmt::format("{}/piece{}", name, p));
            ::onnx::NodeProto split = plainNode("Split", name, {n.input(0)}, pieces);
            addIntAttribute(split, "axis", axis);
            if (opset >= 13) {
                const std::string s = name + "/sizes";
                *nodes.Add() = constantNode(s + "_const", s, ::onnx::TensorProto::INT64, sizes,
                                            {int64_t(sizes.size())});
                split.add_input(s);
            } else {
                addIntsAttribute(split, "split", sizes);
            }
            *nodes.Add() = std::move(split);
            if (squeeze)
                for (size_t p = 0; p < pieces.size(); ++p) {
                    const std::string q = fmt::format("{}/squeeze{}", name, p);
                    addAxisOp(nodes, "Squeeze", q, pieces[p], q + "_out", axis, opset);
                    pieces[p] = q + "_out";
                }
            lists[n.output(0)] = std::move(pieces);
        }
    }
    for (const auto &o : g->output())
        if (lists.count(o.name())) {
            notes.push_back("tensor sequences are not written out: the graph returns the "
                            "sequence '" +
                            o.name() + "'");
            return 0;
        }
    g->mutable_node()->Swap(&nodes);
    return replaced;
}

} // namespace remat::core::onnx
