#include "importer.h"

#include "classify.h"
#include "control_flow.h"
#include "export_metadata.h"
#include "input_spec.h"
#include "shape_inference.h"
#include "tensor_sources.h"
#include "trainability.h"

#include "core/ir/kind_reasons.h"
#include "core/util/bytes.h"
#include "core/util/reader_guard.h"
#include "core/util/sha256.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace remat::core::onnx {

namespace fs = std::filesystem;
using ir::DataType;
using ir::Dim;
using ir::Shape;
using ir::ValueKind;

namespace {

struct FileValueInfo
{
    DataType dtype = DataType::Undefined;
    Shape shape = Shape::unknownRank();
};

class Importer
{
public:
    Importer(const std::string &path, const ImportOptions &options)
        : m_path(path), m_options(options), m_where(path.empty() ? std::string("<memory>") : path)
    {
    }

    Expected<ir::Graph> run(const std::string &bytes);
    Expected<ModelSignature> signature(const std::string &bytes);

private:
    Status parse(const std::string &bytes);

private:
    Status fail(StatusCode code, const std::string &problem) const
    {
        return makeError(code, m_where + ": " + problem);
    }
    static std::string nodeLabel(const ::onnx::NodeProto &n)
    {
        return "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ")";
    }
    void progress(double f, const char *phase) const
    {
        if (m_options.progress)
            m_options.progress(f, phase);
    }
    Status checkStop() const
    {
        if (m_options.stop.stopRequested())
            return fail(StatusCode::Cancelled, "import cancelled");
        return Status::ok();
    }

    ValueId valueFor(const std::string &name);
    Expected<FileValueInfo> readType(const ::onnx::ValueInfoProto &vi,
                                     const std::string &what) const;
    Expected<std::shared_ptr<const ir::TensorConstant>> makeTensor(const ::onnx::TensorProto &t,
                                                                   const std::string &what) const;
    Expected<std::shared_ptr<const ir::TensorDataSource>>
    externalSource(const ::onnx::TensorProto &t, int64_t byteCount, const std::string &what) const;
    Expected<ir::Attribute> convertAttribute(const ::onnx::AttributeProto &a,
                                             const std::string &what) const;
    Status collect();
    Status fixInputValue(ir::Value &v, double value) const;
    Status classify(const ir::Graph &first);
    Expected<int> inlineDecidedIfs(const ir::Graph &first);
    Expected<int> writeOutControlFlow();
    int expandControlFlow(std::set<std::string> &done);
    void resetState();
    void applySemantics();
    std::string undecidedIfAdvice(const ir::Graph &first, const ir::Node &ifNode) const;
    /// Every --branch names an If that was met (ImportOptions::branches).
    Status checkBranchesUsed() const;
    std::string loopAdvice(const ir::Node &n) const;
    static bool isConstantNode(const ir::Node &n);
    Status promoteConstantWeights(const ir::Graph &first);
    void classifyTorchStateDict(const ir::Graph &first);
    Status applyInputSettings();
    Status inferAll(const ir::Graph &first);
    std::string freeDimAdvice() const;
    Status unknownValue(const Status &problem);
    void onnxFallback(const ir::Graph &first);
    Status foldConstantOfShape(const ir::Graph &first);
    Status finalizeShapes(const ir::Graph &first);

    std::string m_path;
    const ImportOptions &m_options;
    std::string m_where;
    std::shared_ptr<::onnx::ModelProto> m_model;
    ir::ModelInfo m_info;

    std::vector<ir::Node> m_nodes;
    std::vector<ir::Value> m_values;
    std::vector<ValueId> m_inputs, m_outputs;
    std::unordered_map<std::string, ValueId> m_byName;
    std::set<std::string> m_ifNames;       ///< every If node met, by ifKey() (all rounds)
    std::set<std::string> m_branchesTaken; ///< ImportOptions::branches entries used
    std::unordered_map<std::string, FileValueInfo> m_fileInfo; // value_info and graph outputs
    std::vector<bool> m_isInitializer;
    std::vector<bool> m_dropNode; ///< by node: folded into a weight (Constant, ConstantOfShape)
    std::vector<InferredValue> m_inferred;
    int64_t m_fileBatch = 0;
    int64_t m_batch = 0; ///< the leading dim of the data inputs after the user's settings
    std::vector<bool> m_takesBatch; ///< by value: a data input whose leading dim is the batch
    bool m_batchChanged = false;
    bool m_shapesChanged = false; ///< a declared static input dim was changed
    int64_t m_unknownValues = 0;  ///< browsing: values left without a shape or type
    /// Kept across rounds (the ModelProto they rewrote is too): what writeOutControlFlow did, and
    /// why it left the last Loop or sequence it could not write out.
    std::vector<std::string> m_controlFlowNotes, m_controlFlowRefusals;
    int m_loopsUnrolled = 0;
    /// remat_export.py's metadata_props, when the file has them (export_metadata.h).
    ExportMetadata m_meta;
    /// The kind the user or the export's metadata gives `name` (the user's first), or null.
    const ValueKind *givenKind(const std::string &name) const
    {
        if (auto it = m_options.kindOverrides.find(name); it != m_options.kindOverrides.end())
            return &it->second;
        if (auto it = m_meta.kinds.find(name); it != m_meta.kinds.end())
            return &it->second;
        return nullptr;
    }
    void noteExportMetadata();
    /// remat.merged and remat.contiguous applied to the file's graph before it is read: each
    /// merged node cloned for its readers, an Identity marked remat_contiguous before the
    /// readers of a contiguous copy. Problems are notes; the entry is skipped.
    void applyExportRewrites();
    std::vector<std::string> m_rewriteNotes;
};

ValueId Importer::valueFor(const std::string &name)
{
    auto it = m_byName.find(name);
    if (it != m_byName.end())
        return it->second;
    ir::Value v;
    v.name = name;
    const ValueId id(m_values.size());
    m_values.push_back(std::move(v));
    m_isInitializer.push_back(false);
    m_byName.emplace(name, id);
    return id;
}

Expected<FileValueInfo> Importer::readType(const ::onnx::ValueInfoProto &vi,
                                           const std::string &what) const
{
    FileValueInfo out;
    if (!vi.has_type() || !vi.type().has_tensor_type())
        return out; // sequences, maps, or untyped: left to inference
    const auto &tt = vi.type().tensor_type();
    if (tt.elem_type() != 0) {
        if (!ir::isKnownDataType(tt.elem_type()))
            return fail(StatusCode::Unsupported, what + " '" + vi.name() +
                                                     "' has unknown data type " +
                                                     std::to_string(tt.elem_type()));
        out.dtype = DataType(tt.elem_type());
    }
    if (!tt.has_shape())
        return out;
    out.shape = Shape();
    for (const auto &d : tt.shape().dim()) {
        if (d.has_dim_value()) {
            if (d.dim_value() < 0)
                return fail(StatusCode::ParseError, what + " '" + vi.name() +
                                                        "' has a negative dimension " +
                                                        std::to_string(d.dim_value()));
            out.shape.dims.emplace_back(d.dim_value());
        } else if (d.has_dim_param()) {
            out.shape.dims.push_back(Dim::symbolic(d.dim_param()));
        } else {
            out.shape.dims.emplace_back();
        }
    }
    if (auto n = out.shape.numElements(); !n && n.status().code() == StatusCode::OutOfRange)
        return fail(StatusCode::OutOfRange, what + " '" + vi.name() + "' has shape " +
                                                out.shape.toString() +
                                                ", whose element count overflows 64 bits");
    return out;
}

Expected<std::shared_ptr<const ir::TensorDataSource>>
Importer::externalSource(const ::onnx::TensorProto &t, int64_t byteCount,
                         const std::string &what) const
{
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
        auto parseInt = [&](int64_t &out) -> Status {
            const std::string &s = kv.value();
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
            if (ec != std::errc() || p != s.data() + s.size() || out < 0)
                return fail(StatusCode::ParseError,
                            what + " has an invalid external data " + kv.key() + " '" + s + "'");
            return Status::ok();
        };
        if (kv.key() == "location")
            location = kv.value();
        else if (kv.key() == "offset")
            REMAT_RETURN_IF_ERROR(parseInt(offset));
        else if (kv.key() == "length")
            REMAT_RETURN_IF_ERROR(parseInt(length));
    }
    if (location.empty())
        return fail(StatusCode::ParseError, what + " has external data without a location");
    if (length < 0)
        length = byteCount;
    if (length != byteCount)
        return fail(StatusCode::ParseError,
                    what + " declares " + std::to_string(length) +
                        " bytes of external data but its shape and dtype need " +
                        std::to_string(byteCount));
    if (m_path.empty())
        return fail(StatusCode::InvalidArgument,
                    what + " refers to external data '" + location +
                        "', but the model has no folder to read it from");
    // The location must stay inside the model's folder: refuse absolute paths, '..' and
    // symbolic links that lead out, before anything is opened.
    const fs::path rel(location);
    if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        return fail(StatusCode::InvalidArgument, what + ": external data location '" + location +
                                                     "' is an absolute path; refused");
    std::error_code ec;
    const fs::path folder = fs::weakly_canonical(fs::absolute(fs::path(m_path)).parent_path(), ec);
    if (ec)
        return fail(StatusCode::NotFound, "cannot resolve the model's folder: " + ec.message());
    const fs::path target = fs::weakly_canonical(folder / rel, ec);
    if (ec)
        return fail(StatusCode::NotFound,
                    what + ": cannot resolve external data '" + location + "'");
    auto [fEnd, tEnd] = std::mismatch(folder.begin(), folder.end(), target.begin(), target.end());
    if (fEnd != folder.end() || tEnd == target.end())
        return fail(StatusCode::InvalidArgument, what + ": external data location '" + location +
                                                     "' leads outside the model's folder; refused");
    if (!fs::is_regular_file(target, ec))
        return fail(StatusCode::NotFound,
                    what + ": external data file '" + location + "' does not exist");
    const auto size = int64_t(fs::file_size(target, ec));
    if (ec)
        return fail(StatusCode::NotFound, what + ": cannot read the size of '" + location + "'");
    int64_t end = 0;
    if (addOverflows(offset, length, &end) || end > size)
        return fail(StatusCode::ParseError,
                    what + ": external data file '" + location + "' has " + std::to_string(size) +
                        " bytes, shorter than the declared " + std::to_string(offset) + "+" +
                        std::to_string(length));
    return std::shared_ptr<const ir::TensorDataSource>(
        std::make_shared<ExternalTensorData>(target.string(), location, offset, length));
}

Expected<std::shared_ptr<const ir::TensorConstant>>
Importer::makeTensor(const ::onnx::TensorProto &t, const std::string &what) const
{
    auto c = std::make_shared<ir::TensorConstant>();
    c->name = t.name();
    if (!ir::isKnownDataType(t.data_type()))
        return fail(StatusCode::Unsupported,
                    what + " has unknown data type " + std::to_string(t.data_type()));
    c->dtype = DataType(t.data_type());
    for (int64_t d : t.dims()) {
        if (d < 0)
            return fail(StatusCode::ParseError,
                        what + " has a negative dimension " + std::to_string(d));
        c->shape.dims.emplace_back(d);
    }
    auto n = c->shape.numElements();
    if (!n)
        return fail(StatusCode::OutOfRange, what + " has dims " + c->shape.toString() +
                                                ", whose element count overflows 64 bits");
    if (mulOverflows(*n, ir::elementSize(c->dtype), &c->byteCount))
        return fail(StatusCode::OutOfRange, what + " has dims " + c->shape.toString() +
                                                ", whose byte count overflows 64 bits");
    if (c->dtype == DataType::String)
        return std::shared_ptr<const ir::TensorConstant>(c); // no fixed-size bytes; metadata only
    if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
        REMAT_ASSIGN_OR_RETURN(c->data, externalSource(t, c->byteCount, what));
        return std::shared_ptr<const ir::TensorConstant>(c);
    }
    if (t.has_raw_data()) {
        if (int64_t(t.raw_data().size()) != c->byteCount)
            return fail(StatusCode::ParseError,
                        what + " holds " + std::to_string(t.raw_data().size()) +
                            " bytes of raw_data, but dims " + c->shape.toString() + " of " +
                            ir::dataTypeName(c->dtype) + " need " + std::to_string(c->byteCount));
    } else {
        int64_t count = typedElementCount(t);
        if (c->dtype == DataType::Complex64 || c->dtype == DataType::Complex128)
            count = count >= 0 ? count : -1;
        if (count == 0 && *n > 0)
            // Dims without data would become a weight of any size the file claims (a 4096 PiB
            // "model"); a file saved without its weights must give them as graph inputs instead.
            return fail(StatusCode::ParseError,
                        what + " declares dims " + c->shape.toString() + " (" +
                            formatBytes(c->byteCount) +
                            ") but holds no data (no raw_data, no typed values, no external data); "
                            "the file "
                            "was saved without its weights: re-export it with them, or export the "
                            "weights as "
                            "graph inputs (torch.onnx.export(..., export_params=False))");
        if (count != *n)
            return fail(StatusCode::ParseError, what + " holds " + std::to_string(count) +
                                                    " elements but dims " + c->shape.toString() +
                                                    " need " + std::to_string(*n));
    }
    c->data = std::make_shared<ProtoTensorData>(m_model, &t, c->byteCount);
    return std::shared_ptr<const ir::TensorConstant>(c);
}

Expected<ir::Attribute> Importer::convertAttribute(const ::onnx::AttributeProto &a,
                                                   const std::string &what) const
{
    ir::Attribute out;
    out.name = a.name();
    auto type = a.type();
    if (type == ::onnx::AttributeProto::UNDEFINED) { // very old files: guess from the set field
        if (a.has_f())
            type = ::onnx::AttributeProto::FLOAT;
        else if (a.has_i())
            type = ::onnx::AttributeProto::INT;
        else if (a.has_s())
            type = ::onnx::AttributeProto::STRING;
        else if (a.has_t())
            type = ::onnx::AttributeProto::TENSOR;
        else if (a.floats_size())
            type = ::onnx::AttributeProto::FLOATS;
        else if (a.ints_size())
            type = ::onnx::AttributeProto::INTS;
        else if (a.strings_size())
            type = ::onnx::AttributeProto::STRINGS;
    }
    switch (type) {
    case ::onnx::AttributeProto::FLOAT: out.payload = double(a.f()); break;
    case ::onnx::AttributeProto::INT: out.payload = int64_t(a.i()); break;
    case ::onnx::AttributeProto::STRING: out.payload = a.s(); break;
    case ::onnx::AttributeProto::FLOATS:
        out.payload = std::vector<double>(a.floats().begin(), a.floats().end());
        break;
    case ::onnx::AttributeProto::INTS:
        out.payload = std::vector<int64_t>(a.ints().begin(), a.ints().end());
        break;
    case ::onnx::AttributeProto::STRINGS:
        out.payload = std::vector<std::string>(a.strings().begin(), a.strings().end());
        break;
    case ::onnx::AttributeProto::TENSOR: {
        REMAT_ASSIGN_OR_RETURN(auto t, makeTensor(a.t(), what + " attribute '" + a.name() + "'"));
        out.payload = t;
        break;
    }
    default:
        out.payload = std::string("<") + ::onnx::AttributeProto::AttributeType_Name(type) + ">";
        break;
    }
    return out;
}

Status Importer::collect()
{
    const ::onnx::GraphProto &g = m_model->graph();
    std::unordered_map<std::string, const ::onnx::TensorProto *> initializers;
    for (const auto &t : g.initializer()) {
        if (t.name().empty())
            return fail(StatusCode::ParseError, "an initializer has no name");
        if (!initializers.emplace(t.name(), &t).second)
            return fail(StatusCode::ParseError, "initializer '" + t.name() + "' is defined twice");
    }
    // Graph inputs; IR < 4 lists initializers among them too: those are initializers.
    for (const auto &in : g.input()) {
        REMAT_ASSIGN_OR_RETURN(FileValueInfo info, readType(in, "graph input"));
        if (initializers.count(in.name()))
            continue;
        if (m_byName.count(in.name()))
            return fail(StatusCode::ParseError, "graph input '" + in.name() + "' is listed twice");
        const ValueId id = valueFor(in.name());
        ir::Value &v = m_values[id.index()];
        if (info.dtype == DataType::Undefined || !info.shape.rankKnown)
            return fail(StatusCode::ParseError,
                        "graph input '" + in.name() + "' has no tensor type or shape");
        v.dtype = info.dtype;
        v.shape = info.shape;
        v.kind = ValueKind::Input;
        auto given = m_options.inputValues.find(in.name());
        if (given != m_options.inputValues.end()) {
            REMAT_RETURN_IF_ERROR(fixInputValue(v, given->second));
            m_isInitializer[id.index()] = true;
            continue;
        }
        m_inputs.push_back(id);
    }
    for (const auto &[name, value] : m_options.inputValues) {
        auto it = m_byName.find(name);
        if (it == m_byName.end() || m_values[it->second.index()].kind != ValueKind::Constant ||
            !m_isInitializer[it->second.index()])
            return fail(StatusCode::NotFound,
                        "--input-value names '" + name + "', which is not a graph input");
    }
    for (const auto &t : g.initializer()) {
        REMAT_ASSIGN_OR_RETURN(auto tc, makeTensor(t, "initializer '" + t.name() + "'"));
        const ValueId id = valueFor(t.name());
        ir::Value &v = m_values[id.index()];
        v.dtype = tc->dtype;
        v.shape = tc->shape;
        v.kind = ValueKind::Constant;
        v.initializer = std::move(tc);
        m_isInitializer[id.index()] = true;
    }
    if (!m_options.ignoreFileValueInfo) {
        for (const auto &vi : g.value_info()) {
            REMAT_ASSIGN_OR_RETURN(FileValueInfo info, readType(vi, "value_info"));
            m_fileInfo[vi.name()] = info;
        }
    }
    for (const auto &out : g.output()) {
        REMAT_ASSIGN_OR_RETURN(FileValueInfo info, readType(out, "graph output"));
        m_fileInfo[out.name()] = info;
    }
    m_nodes.reserve(size_t(g.node_size()));
    for (const auto &np : g.node()) {
        ir::Node n;
        n.name = np.name();
        n.opType = np.op_type();
        n.domain = np.domain();
        if (n.opType.empty())
            return fail(StatusCode::ParseError, nodeLabel(np) + " has no op type");
        for (const std::string &in : np.input())
            n.inputs.push_back(in.empty() ? ValueId() : valueFor(in));
        for (const std::string &out : np.output())
            n.outputs.push_back(out.empty() ? ValueId() : valueFor(out));
        for (const auto &a : np.attribute()) {
            REMAT_ASSIGN_OR_RETURN(ir::Attribute attr, convertAttribute(a, nodeLabel(np)));
            n.attributes.push_back(std::move(attr));
        }
        if (n.opType == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") &&
            n.outputs.size() == 1 && n.outputs[0].valid()) {
            const ir::Attribute *value = n.attribute("value");
            ir::Value &v = m_values[n.outputs[0].index()];
            if (value && value->isTensor() && !v.producer.valid() &&
                v.kind == ValueKind::Intermediate && !v.initializer) {
                v.initializer = std::get<std::shared_ptr<const ir::TensorConstant>>(value->payload);
                v.kind = ValueKind::Constant;
                v.dtype = v.initializer->dtype;
                v.shape = v.initializer->shape;
            }
        }
        m_nodes.push_back(std::move(n));
    }
    for (const auto &out : g.output()) {
        if (out.name().empty())
            return fail(StatusCode::ParseError, "a graph output has no name");
        m_outputs.push_back(valueFor(out.name()));
    }
    return Status::ok();
}

void Importer::applySemantics()
{
    // A network exported for inference still trains with batch statistics: its training step
    // is what the user came to study. BatchNormalization without training_mode (inference) is
    // given training_mode = 1, which the gradient rules and kernels read.
    if (m_options.semantics != Semantics::Training)
        return;
    int64_t changed = 0;
    for (ir::Node &n : m_nodes) {
        if (n.opType != "BatchNormalization" || !(n.domain.empty() || n.domain == "ai.onnx") ||
            n.attrInt("training_mode", 0) != 0)
            continue;
        bool set = false;
        for (ir::Attribute &a : n.attributes)
            if (a.name == "training_mode") {
                a.payload = int64_t(1);
                set = true;
            }
        if (!set) {
            ir::Attribute a;
            a.name = "training_mode";
            a.payload = int64_t(1);
            n.attributes.push_back(std::move(a));
        }
        ++changed;
    }
    if (changed > 0)
        m_info.importNotes.push_back(
            std::to_string(changed) + " BatchNormalization node" +
            (changed == 1 ? " was" : "s were") +
            " exported for inference; modelled in training mode (batch statistics, saving what "
            "training "
            "saves). --semantics as-exported keeps the file's running statistics");
}

void Importer::resetState()
{
    m_nodes.clear();
    m_values.clear();
    m_inputs.clear();
    m_outputs.clear();
    m_byName.clear();
    m_fileInfo.clear();
    m_isInitializer.clear();
    m_dropNode.clear();
    m_inferred.clear();
    m_takesBatch.clear();
    m_fileBatch = 0;
    m_batch = 0;
    m_batchChanged = false;
    m_shapesChanged = false;
}

namespace {

const ::onnx::GraphProto *branchOf(const ::onnx::NodeProto &ifNode, bool thenBranch)
{
    return subgraphOf(ifNode, thenBranch ? "then_branch" : "else_branch");
}

} // namespace

Expected<int> Importer::inlineDecidedIfs(const ir::Graph &first)
{
    std::unordered_map<int, bool> decided; // node index -> then branch taken
    for (const ir::Node &n : first.nodes()) {
        if (n.opType != "If" || !(n.domain.empty() || n.domain == "ai.onnx") || n.inputs.empty() ||
            !n.inputs[0].valid())
            continue;
        // the name --branch uses: the node's own, or "If_<position>" for an unnamed one
        const std::string key = n.name.empty() ? "If_" + std::to_string(n.id.index()) : n.name;
        m_ifNames.insert(key);
        const InferredValue &cond = m_inferred[n.inputs[0].index()];
        const bool known = cond.constant && cond.constant->size() == 1;
        auto chosen = m_options.branches.find(key);
        if (chosen != m_options.branches.end()) {
            m_branchesTaken.insert(key);
            if (known && (cond.constant->at(0) != 0) != chosen->second)
                return fail(StatusCode::InvalidArgument,
                            "--branch " + key + "=" + (chosen->second ? "then" : "else") +
                                " contradicts the If's condition, which is known at import (" +
                                (chosen->second ? "false" : "true") +
                                "): drop the --branch or change what decides the condition");
            decided.emplace(int(n.id.index()), chosen->second);
            continue;
        }
        if (known)
            decided.emplace(int(n.id.index()), cond.constant->at(0) != 0);
    }
    if (decided.empty())
        return 0;
    ::onnx::GraphProto *g = m_model->mutable_graph();
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
    for (int i = 0; i < g->node_size(); ++i) {
        auto it = decided.find(i);
        if (it == decided.end()) {
            *nodes.Add() = g->node(i);
            continue;
        }
        const ::onnx::NodeProto &ifNode = g->node(i);
        const ::onnx::GraphProto *branch = branchOf(ifNode, it->second);
        if (!branch)
            return fail(StatusCode::ParseError, nodeLabel(ifNode) + " has no " +
                                                    (it->second ? "then_branch" : "else_branch") +
                                                    " graph");
        if (branch->output_size() != ifNode.output_size())
            return fail(StatusCode::ParseError, nodeLabel(ifNode) + " has " +
                                                    std::to_string(ifNode.output_size()) +
                                                    " outputs but its taken branch has " +
                                                    std::to_string(branch->output_size()));
        // Branch-local names get the If's name as a prefix, so two inlined branches (or a
        // branch and the main graph) never collide; names from the enclosing scope stay.
        const std::string prefix =
            (ifNode.name().empty() ? "If_" + std::to_string(i) : ifNode.name()) +
            (it->second ? "/then/" : "/else/");
        std::unordered_map<std::string, std::string> rename;
        for (const auto &t : branch->initializer())
            rename[t.name()] = prefix + t.name();
        for (const auto &n : branch->node())
            for (const std::string &out : n.output())
                if (!out.empty())
                    rename[out] = prefix + out;
        for (const auto &t : branch->initializer()) {
            auto *copy = g->add_initializer();
            *copy = t;
            copy->set_name(rename[t.name()]);
        }
        copySubgraphNodes(*branch, rename, prefix, *g, nodes);
        // The If's outputs keep their names (the rest of the graph reads them): an Identity
        // from each branch output, which the training builder removes like any Identity.
        for (int k = 0; k < ifNode.output_size(); ++k) {
            if (ifNode.output(k).empty())
                continue;
            const std::string &src = branch->output(k).name();
            auto found = rename.find(src);
            ::onnx::NodeProto *id = nodes.Add();
            id->set_op_type("Identity");
            id->set_name(prefix + "output_" + std::to_string(k));
            id->add_input(found == rename.end() ? src : found->second);
            id->add_output(ifNode.output(k));
        }
    }
    g->mutable_node()->Swap(&nodes);
    return int(decided.size());
}

Expected<int> Importer::writeOutControlFlow()
{
    const InferredLookup known = [this](const std::string &name) -> const ops::InferredValue * {
        auto it = m_byName.find(name);
        if (it == m_byName.end() || it->second.index() >= m_inferred.size())
            return nullptr;
        return &m_inferred[it->second.index()];
    };
    std::vector<std::string> notes;
    REMAT_ASSIGN_OR_RETURN(int loops, unrollCountedLoops(*m_model, int(m_info.opsetVersion), known,
                                                         ControlFlowLimits{}, notes));
    if (loops > 0) {
        m_controlFlowNotes.push_back(
            fmt::format("{} Loop / Scan node{} unrolled (trip count known at import)", loops,
                        loops == 1 ? "" : "s"));
        m_loopsUnrolled += loops;
        return loops;
    }
    REMAT_ASSIGN_OR_RETURN(
        int seqs, resolveTensorSequences(*m_model, int(m_info.opsetVersion), known, notes));
    if (seqs > 0) {
        m_controlFlowNotes.push_back(fmt::format(
            "{} tensor-sequence op{} written out as lists of tensors", seqs, seqs == 1 ? "" : "s"));
        return seqs;
    }
    m_controlFlowRefusals = std::move(notes);
    return 0;
}

namespace {

bool isControlFlow(const ::onnx::NodeProto &n)
{
    return (n.domain().empty() || n.domain() == "ai.onnx") &&
           (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan");
}

/// The group path of a control-flow node: its name without the leading '/', else op and index.
std::string groupPathOf(const ::onnx::NodeProto &n, int index)
{
    std::string path = n.name();
    while (!path.empty() && path.front() == '/')
        path.erase(path.begin());
    while (!path.empty() && path.back() == '/')
        path.pop_back();
    return path.empty() ? n.op_type() + "_" + std::to_string(index) : path;
}

/// Appends `node` to `out`; a control-flow node not yet in `done` is preceded by the nodes of
/// its subgraphs, renamed under its group, and then reads their outputs (display edges). A
/// control-flow node inside a subgraph is copied as it is: the next import round inlines it
/// when it is decided (a shape check), else expands it in turn.
void appendExpanded(const ::onnx::NodeProto &node, int index, ::onnx::GraphProto &g,
                    google::protobuf::RepeatedPtrField<::onnx::NodeProto> &out,
                    std::set<std::string> &done)
{
    if (!isControlFlow(node) || done.count(node.name())) {
        *out.Add() = node;
        return;
    }
    const std::string group = groupPathOf(node, index);
    ::onnx::NodeProto self = node;
    const std::string last = group.substr(group.rfind('/') + 1);
    self.set_name(group + "/" + last); // inside its own group, beside its branches
    done.insert(self.name());
    for (const auto &a : node.attribute()) {
        if (!a.has_g())
            continue;
        const ::onnx::GraphProto &body = a.g();
        const std::string prefix = group + "/" + a.name() + "/";
        std::unordered_map<std::string, std::string> rename;
        // A Loop / Scan body's formal inputs stand for the node's inputs in the same order
        // (Loop: iteration count, condition, carried values; Scan: states, scanned inputs).
        // A scanned input's body input is one slice of it (another rank): left out.
        int mapped = body.input_size();
        if (node.op_type() == "Scan")
            for (const auto &sa : node.attribute())
                if (sa.name() == "num_scan_inputs")
                    mapped -= int(sa.i());
        for (int k = 0; k < body.input_size(); ++k)
            rename[body.input(k).name()] =
                k < mapped && k < node.input_size() ? node.input(k) : std::string();
        for (const auto &t : body.initializer())
            rename[t.name()] = prefix + t.name();
        for (const auto &n : body.node())
            for (const std::string &o : n.output())
                if (!o.empty())
                    rename[o] = prefix + o;
        for (const auto &t : body.initializer()) {
            auto *copy = g.add_initializer();
            *copy = t;
            copy->set_name(rename[t.name()]);
        }
        for (const auto &vi : body.value_info()) {
            auto found = rename.find(vi.name());
            if (found == rename.end() || found->second.empty())
                continue;
            auto *copy = g.add_value_info();
            *copy = vi;
            copy->set_name(found->second);
        }
        int k = 0;
        for (const auto &n : body.node()) {
            ::onnx::NodeProto copy = n;
            renameInputs(copy, rename);
            for (std::string &o : *copy.mutable_output())
                if (!o.empty())
                    o = rename[o];
            std::string local = n.name();
            while (!local.empty() && local.front() == '/')
                local.erase(local.begin());
            copy.set_name(prefix + (local.empty() ? n.op_type() + "_" + std::to_string(k) : local));
            *out.Add() = std::move(copy);
            ++k;
        }
        for (const auto &o : body.output()) {
            auto found = rename.find(o.name());
            self.add_input(found == rename.end() ? o.name() : found->second);
        }
    }
    *out.Add() = std::move(self);
}

} // namespace

int Importer::expandControlFlow(std::set<std::string> &done)
{
    ::onnx::GraphProto *g = m_model->mutable_graph();
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
    const size_t before = done.size();
    for (int i = 0; i < g->node_size(); ++i)
        appendExpanded(g->node(i), i, *g, nodes, done);
    if (done.size() > before)
        g->mutable_node()->Swap(&nodes);
    return int(done.size() - before);
}

/// Why a value out of a loop or a tensor sequence has no shape, and the way out.
std::string Importer::loopAdvice(const ir::Node &n) const
{
    const bool loop = n.opType == "Loop" || n.opType == "Scan";
    const bool sequence = n.opType.rfind("Sequence", 0) == 0 || n.opType == "ConcatFromSequence" ||
                          n.opType == "SplitToSequence";
    if (!loop && !sequence)
        return {};
    std::string why;
    for (const std::string &r : m_controlFlowRefusals)
        if (r.find("'" + n.name + "'") != std::string::npos)
            why = r;
    if (why.empty() && !m_controlFlowRefusals.empty())
        why = m_controlFlowRefusals.front();
    return std::string("; ") + (loop ? "a " + n.opType : std::string("a tensor sequence")) +
           " is not unrolled" + (why.empty() ? std::string() : " (" + why + ")") +
           ", so the model opens for browsing (remat info, the explorer) but its training step "
           "cannot be built; a Loop is written out when its trip count is known at import (give "
           "the scalar input it depends on with --input-value NAME=V), or export with the loop "
           "written out (in PyTorch: split or chunk by Python ints rather than by tensors)";
}

std::string Importer::undecidedIfAdvice(const ir::Graph &first, const ir::Node &ifNode) const
{
    // Walk the condition back to the graph inputs it depends on: a scalar one can be given a
    // value; free dims of the others can be set.
    std::vector<bool> seen(first.valueCount(), false);
    std::vector<ValueId> stack{ifNode.inputs.empty() ? ValueId() : ifNode.inputs[0]};
    std::vector<std::string> scalars, tensors;
    while (!stack.empty()) {
        const ValueId id = stack.back();
        stack.pop_back();
        if (!id.valid() || seen[id.index()])
            continue;
        seen[id.index()] = true;
        const ir::Value &v = first.value(id);
        if (v.kind == ValueKind::Input) {
            auto n = v.shape.numElements();
            (n && *n == 1 ? scalars : tensors).push_back(v.name);
            continue;
        }
        if (v.producer.valid())
            for (ValueId in : first.node(v.producer).inputs)
                stack.push_back(in);
    }
    const std::string cond = ifNode.inputs.empty() || !ifNode.inputs[0].valid()
                                 ? std::string("its condition")
                                 : "'" + first.value(ifNode.inputs[0]).name + "'";
    std::string out = "; the If chooses its branch from " + cond + ", which is not known at import";
    if (!scalars.empty()) {
        out += ": give ";
        for (size_t i = 0; i < scalars.size(); ++i)
            out += (i ? ", " : "") + std::string("--input-value ") + scalars[i] + "=V";
    } else if (!tensors.empty()) {
        const std::string key =
            ifNode.name.empty() ? "If_" + std::to_string(ifNode.id.index()) : ifNode.name;
        out += " (it depends on the data of input '" + tensors.front() +
               "'): pick the branch to train with --branch " + key + "=then or " + key + "=else";
    }
    return out;
}

Status Importer::checkBranchesUsed() const
{
    for (const auto &[name, then] : m_options.branches) {
        if (m_branchesTaken.count(name))
            continue;
        std::string known;
        for (const std::string &n : m_ifNames) {
            if (known.size() > 400) {
                known += ", ...";
                break;
            }
            known += (known.empty() ? "" : ", ") + ("'" + n + "'");
        }
        return fail(StatusCode::NotFound,
                    "--branch names '" + name + "', which is not an If node of the model" +
                        (known.empty() ? std::string(" (it has none)")
                                       : " (If nodes: " + known +
                                             "; an If inside a taken branch is named "
                                             "'<if>/then/<name>' or '<if>/else/<name>')"));
    }
    return Status::ok();
}

Status Importer::fixInputValue(ir::Value &v, double value) const
{
    const std::string what = "--input-value " + v.name;
    for (const Dim &d : v.shape.dims)
        if (!d.isStatic() || d.value != 1)
            return fail(StatusCode::InvalidArgument,
                        what + ": the input has shape " + v.shape.toString() +
                            "; only a scalar (single-element) input can be given a value, use "
                            "--input-shape for "
                            "the shape of a tensor input");
    std::vector<std::byte> element(size_t(ir::elementSize(v.dtype)));
    auto put = [&](auto x) {
        static_assert(std::is_trivially_copyable_v<decltype(x)>);
        std::memcpy(element.data(), &x, sizeof x);
    };
    switch (v.dtype) {
    case DataType::Float: put(float(value)); break;
    case DataType::Double: put(value); break;
    case DataType::Int64: put(int64_t(value)); break;
    case DataType::Int32: put(int32_t(value)); break;
    case DataType::Int16: put(int16_t(value)); break;
    case DataType::Int8: put(int8_t(value)); break;
    case DataType::UInt8: put(uint8_t(value)); break;
    case DataType::Bool: put(uint8_t(value != 0)); break;
    default:
        return fail(StatusCode::Unsupported, what + ": inputs of type " +
                                                 ir::dataTypeName(v.dtype) +
                                                 " cannot be given a value");
    }
    if ((ir::isFloatingPoint(v.dtype) || v.dtype == DataType::Bool)
            ? false
            : double(int64_t(value)) != value)
        return fail(StatusCode::InvalidArgument,
                    what + ": the input holds " + ir::dataTypeName(v.dtype) + " and " +
                        std::to_string(value) + " is not a whole number");
    auto tc = std::make_shared<ir::TensorConstant>();
    tc->name = v.name;
    tc->dtype = v.dtype;
    tc->shape = v.shape;
    tc->byteCount = int64_t(element.size());
    tc->data = std::make_shared<FillTensorData>(std::move(element), tc->byteCount);
    v.initializer = std::move(tc);
    v.kind = ValueKind::Constant;
    return Status::ok();
}

Status Importer::classify(const ir::Graph &first)
{
    for (size_t i = 0; i < m_values.size(); ++i) {
        ir::Value &v = m_values[i];
        const bool isGraphInput = v.kind == ValueKind::Input;
        if (!isGraphInput && !m_isInitializer[i])
            continue;
        auto over = m_options.kindOverrides.find(v.name);
        if (over != m_options.kindOverrides.end()) {
            if (over->second == ValueKind::Intermediate)
                return fail(StatusCode::InvalidArgument,
                            "'" + v.name + "' cannot be classified as an activation");
            if (over->second == ValueKind::Constant && !m_isInitializer[i])
                return fail(StatusCode::InvalidArgument,
                            "'" + v.name +
                                "' is a graph input with no data in the file, so it cannot be a "
                                "constant; classify it as parameter, buffer or input");
            v.kind = over->second;
            v.kindReason = "classified by the user (--classify)";
            continue;
        }
        if (m_options.inputValues.count(v.name))
            continue; // a value the user fixed: a constant, whatever it feeds
        if (auto meta = m_meta.kinds.find(v.name); meta != m_meta.kinds.end()) {
            v.kind = meta->second;
            v.kindReason = "the export's metadata (remat_export.py)";
            continue;
        }
        v.kind = classifyValue(first, ValueId(i), m_isInitializer[i], &v.kindReason);
    }
    classifyTorchStateDict(first);
    m_dropNode.assign(m_nodes.size(), false);
    REMAT_RETURN_IF_ERROR(promoteConstantWeights(first));
    for (const auto &[name, kind] : m_options.kindOverrides) {
        auto it = m_byName.find(name);
        if (it == m_byName.end())
            return fail(StatusCode::NotFound, "classification override names '" + name +
                                                  "', which the model does not have");
        const ir::Value &v = m_values[it->second.index()];
        const bool fromConstantNode = v.producer.valid() && isConstantNode(first.node(v.producer));
        if (!m_isInitializer[it->second.index()] && !fromConstantNode &&
            !(v.kind == ValueKind::Input || ir::isModelState(v.kind)))
            return fail(StatusCode::InvalidArgument,
                        "classification override names '" + name +
                            "', which is computed by a node (only graph inputs, "
                            "initializers and Constant nodes can be classified)");
    }
    return Status::ok();
}

void Importer::applyExportRewrites()
{
    ::onnx::GraphProto *g = m_model->mutable_graph();
    if (!m_meta.unread.empty()) {
        // The module's tensors no node reads: graph inputs of their own, resident all step.
        std::unordered_set<std::string> names;
        for (const auto &in : g->input())
            names.insert(in.name());
        for (const auto &t : g->initializer())
            names.insert(t.name());
        size_t added = 0;
        for (const UnreadTensor &u : m_meta.unread) {
            if (!names.insert(u.name).second)
                continue; // the graph has it: what the graph says stands
            ::onnx::ValueInfoProto *in = g->add_input();
            in->set_name(u.name);
            auto *tt = in->mutable_type()->mutable_tensor_type();
            tt->set_elem_type(u.elemType);
            auto *shape = tt->mutable_shape();
            for (int64_t d : u.shape)
                shape->add_dim()->set_dim_value(d);
            m_meta.kinds.emplace(u.name, u.kind);
            ++added;
        }
        if (added > 0)
            m_rewriteNotes.push_back(
                fmt::format("export metadata: {} tensor(s) of the module no node reads are "
                            "resident graph inputs (remat.unread)",
                            added));
    }
    if (m_meta.merged.empty() && m_meta.contiguous.empty())
        return;
    const int n = g->node_size();
    // New nodes go after the node they follow (-1: before every node), kept aside until the end
    // so that names stay found: a later entry may name an earlier entry's clone as a reader.
    std::deque<::onnx::NodeProto> added;
    std::vector<int> addedAfter;
    std::unordered_map<std::string, ::onnx::NodeProto *> byName;
    std::unordered_map<std::string, int> producer; // value -> index of the file's node
    for (int i = 0; i < n; ++i) {
        ::onnx::NodeProto *node = g->mutable_node(i);
        if (!node->name().empty())
            byName.emplace(node->name(), node);
        for (const std::string &o : node->output())
            producer.emplace(o, i);
    }
    std::unordered_map<const ::onnx::NodeProto *, int> indexOf;
    for (int i = 0; i < n; ++i)
        indexOf.emplace(g->mutable_node(i), i);
    size_t skipped = 0, clones = 0, copies = 0;
    std::string firstProblem;
    const auto problem = [&](const std::string &what) {
        if (skipped++ == 0)
            firstProblem = what.substr(0, 200);
    };
    // Rewires `reader`'s inputs named in `from` to the same position in `to`; whether any was.
    const auto rewire = [](::onnx::NodeProto *reader, const std::vector<std::string> &from,
                           const std::vector<std::string> &to) {
        bool any = false;
        for (int k = 0; k < reader->input_size(); ++k)
            for (size_t o = 0; o < from.size(); ++o)
                if (!from[o].empty() && reader->input(k) == from[o]) {
                    reader->set_input(k, to[o]);
                    any = true;
                }
        return any;
    };
    const size_t limit = size_t(n) * 4 + 16; // a clone per node and reader group is plenty
    for (const MergedNode &m : m_meta.merged) {
        auto it = byName.find(m.node);
        if (it == byName.end() || !indexOf.count(it->second)) {
            problem("remat.merged names node '" + m.node + "', which the file does not have");
            continue;
        }
        const ::onnx::NodeProto original = *it->second;
        const int at = indexOf.at(it->second);
        bool subgraph = false;
        for (const auto &a : original.attribute())
            subgraph = subgraph || a.has_g() || a.graphs_size() > 0;
        if (subgraph || original.output_size() == 0) {
            problem("remat.merged names node '" + m.node + "', which cannot be copied");
            continue;
        }
        const std::vector<std::string> outs(original.output().begin(), original.output().end());
        for (size_t k = 0; k < m.readers.size() && clones < limit; ++k) {
            const std::string suffix = "#" + std::to_string(k + 2);
            if (byName.count(m.node + suffix)) {
                problem("remat.merged copies '" + m.node + "' twice");
                continue;
            }
            std::vector<std::string> copyOuts;
            for (const std::string &o : outs)
                copyOuts.push_back(o.empty() ? o : o + suffix);
            bool read = false;
            for (const std::string &r : m.readers[k]) {
                auto reader = byName.find(r);
                if (reader == byName.end() || !rewire(reader->second, outs, copyOuts))
                    problem("remat.merged: '" + r + "' does not read '" + m.node + "'");
                else
                    read = true;
            }
            if (!read)
                continue;
            ::onnx::NodeProto &clone = added.emplace_back(original);
            addedAfter.push_back(at);
            clone.set_name(m.node + suffix);
            for (int o = 0; o < clone.output_size(); ++o)
                clone.set_output(o, copyOuts[size_t(o)]);
            byName.emplace(clone.name(), &clone);
            ++clones;
        }
    }
    for (const ContiguousCopy &c : m_meta.contiguous) {
        if (copies >= limit)
            break;
        const std::string copyName = c.value + "#contiguous";
        if (producer.count(copyName) || byName.count("remat.contiguous/" + c.value)) {
            problem("remat.contiguous lists '" + c.value + "' twice");
            continue;
        }
        bool read = false;
        for (const std::string &r : c.readers) {
            auto reader = byName.find(r);
            if (reader == byName.end() || !rewire(reader->second, {c.value}, {copyName}))
                problem("remat.contiguous: '" + r + "' does not read '" + c.value + "'");
            else
                read = true;
        }
        if (!read)
            continue;
        ::onnx::NodeProto &copy = added.emplace_back();
        auto p = producer.find(c.value);
        addedAfter.push_back(p == producer.end() ? -1 : p->second);
        copy.set_name("remat.contiguous/" + c.value);
        copy.set_op_type("Identity");
        copy.add_input(c.value);
        copy.add_output(copyName);
        ::onnx::AttributeProto *mark = copy.add_attribute();
        mark->set_name("remat_contiguous");
        mark->set_type(::onnx::AttributeProto::INT);
        mark->set_i(1);
        byName.emplace(copy.name(), &copy);
        producer.emplace(copyName, -2);
        ++copies;
    }
    if (!added.empty()) {
        // Rebuilt in order: each new node right after the one it follows (a clone after its
        // original, a copy after the value's producer), so the graph stays topologically sorted.
        std::vector<std::vector<size_t>> after(size_t(n) + 1);
        for (size_t a = 0; a < added.size(); ++a)
            after[size_t(addedAfter[a] + 1)].push_back(a);
        google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
        for (size_t a : after[0])
            *nodes.Add() = added[a];
        for (int i = 0; i < n; ++i) {
            *nodes.Add() = g->node(i);
            for (size_t a : after[size_t(i) + 1])
                *nodes.Add() = added[a];
        }
        g->mutable_node()->Swap(&nodes);
    }
    if (clones > 0)
        m_rewriteNotes.push_back(fmt::format(
            "export metadata: {} node(s) torch.onnx had merged are computed again for their "
            "readers, as PyTorch computes them (remat.merged)",
            clones));
    if (copies > 0)
        m_rewriteNotes.push_back(fmt::format("export metadata: {} contiguous copies PyTorch "
                                             "makes are in the graph (remat.contiguous)",
                                             copies));
    if (skipped > 0)
        m_rewriteNotes.push_back(fmt::format(
            "export metadata: {} merge / contiguous entries do not fit this file and were "
            "ignored (first: {})",
            skipped, firstProblem));
}

void Importer::noteExportMetadata()
{
    std::vector<std::string> &notes = m_info.importNotes;
    for (const std::string &note : m_rewriteNotes)
        notes.push_back(note);
    if (m_meta.present) {
        for (const std::string &w : m_meta.warnings)
            notes.push_back("export metadata: " + w);
        size_t unknown = 0, used = 0;
        std::string example;
        for (const auto &[name, kind] : m_meta.kinds) {
            auto it = m_byName.find(name);
            const bool known =
                it != m_byName.end() && (ir::isModelState(m_values[it->second.index()].kind) ||
                                         m_isInitializer[it->second.index()] ||
                                         m_values[it->second.index()].kind == ValueKind::Input);
            if (known) {
                ++used;
                continue;
            }
            if (unknown++ == 0)
                example = name;
        }
        if (unknown > 0)
            notes.push_back(fmt::format(
                "export metadata: {} name(s) are not graph inputs or initializers of this file "
                "(first '{}'): ignored",
                unknown, example.substr(0, 80)));
        notes.push_back(
            fmt::format("export metadata (remat_export.py) classified {} tensors", used));
        return;
    }
    if (m_info.producerName != "pytorch")
        return;
    // No metadata: say which tensors were guessed to be buffers, and why.
    std::vector<std::string> guesses;
    size_t count = 0;
    for (const ir::Value &v : m_values) {
        // (a BatchNormalization's running statistics are no guess)
        if (v.kind != ValueKind::Buffer || v.kindReason.empty() || givenKind(v.name) ||
            v.kindReason.find("running statistic") != std::string::npos)
            continue;
        if (count++ < 6)
            guesses.push_back("'" + v.name + "' (" + v.kindReason + ")");
    }
    std::string text = "this PyTorch file carries no remat_export metadata: which tensors are "
                       "buffers or frozen weights is guessed from names and uses (export with "
                       "resources/python/remat_export.py for exact figures)";
    if (count > 0) {
        text += fmt::format("; {} guessed buffer(s): ", count);
        for (size_t i = 0; i < guesses.size(); ++i)
            text += (i ? ", " : "") + guesses[i];
        if (count > guesses.size())
            text += ", ...";
    }
    notes.push_back(text);
}

bool Importer::isConstantNode(const ir::Node &n)
{
    return n.opType == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") &&
           n.outputs.size() == 1 && n.outputs[0].valid();
}

void Importer::classifyTorchStateDict(const ir::Graph &first)
{
    // torch.onnx.export lists the graph inputs as the forward()'s arguments, then the state_dict
    // entries the graph reads (export_params=False), or stores those entries as initializers.
    // The state_dict's first entries are the tensors registered on the model itself, named by a
    // bare attribute ("latents", "pos", "A_log", "gamma"), which neither a weight slot nor a
    // dotted module path gives away, and which may reach the graph only through arithmetic
    // (relu(w) / w.sum(), -exp(A_log)). In a PyTorch file such a float tensor on a path that can
    // carry a gradient is a parameter; the arguments before it are data. A name people give data
    // ("mask", "input_ids", "labels"), or a tensor shaped like the batch, stays data.
    if (m_model->producer_name() != "pytorch")
        return;
    const auto overridden = [&](const ir::Value &v) {
        return givenKind(v.name) || m_options.inputValues.count(v.name);
    };
    const auto learned = [&](ValueId id) {
        const SlotUse use = slotUse(first, id);
        return use.used && !use.onlyComparisons && !use.onlyShapeSlots && !use.statSlot;
    };
    // Initializers: every float one named by the state_dict is a parameter when it can learn.
    for (size_t i = 0; i < m_values.size(); ++i) {
        ir::Value &v = m_values[i];
        if (m_isInitializer[i] && v.kind == ValueKind::Constant && ir::isFloatingPoint(v.dtype) &&
            !overridden(v) && (isIdentifier(v.name) || looksLikeStateDictKey(v.name)) &&
            !nameLooksLikeBuffer(v.name) && learned(ValueId(i)))
            v.kind = ValueKind::Parameter;
    }
    // With remat_export's metadata the state_dict's graph inputs are named: every other graph
    // input is a forward() argument, whatever it looks like.
    if (!m_meta.kinds.empty()) {
        for (ValueId id : first.inputs()) {
            ir::Value &v = m_values[id.index()];
            if (!m_isInitializer[id.index()] && !overridden(v) && ir::isModelState(v.kind)) {
                v.kind = ValueKind::Input;
                v.kindReason = "not in the export's metadata: a forward() argument";
            }
        }
        return;
    }
    // Graph inputs: the data arguments come first; the first top-level tensor ends them.
    const std::vector<ValueId> &inputs = first.inputs();
    if (inputs.size() < 2)
        return;
    const ir::Shape &data0 = m_values[inputs[0].index()].shape;
    const int64_t batch =
        data0.rank() > 0 && data0.dims[0].isStatic() ? data0.dims[0].value : int64_t(-1);
    // The forward()'s arguments as torch names them ("input", "input0", "onnx::Gather_0") or as
    // people do ("input_ids", "attention_mask") are data, however they are read: x.index_select
    // reads its input as an embedding table would.
    for (ValueId id : inputs) {
        ir::Value &v = m_values[id.index()];
        if (v.kind == ValueKind::Parameter && !m_isInitializer[id.index()] && !overridden(v) &&
            nameLooksLikeData(v.name) && !looksLikeStateDictKey(v.name) &&
            !nameLooksLikeParameter(v.name))
            v.kind = ValueKind::Input;
    }
    const auto topLevel = [&](size_t k) {
        const ir::Value &v = m_values[inputs[k].index()];
        return !m_isInitializer[inputs[k].index()] && !overridden(v) &&
               v.kind == ValueKind::Input && ir::isFloatingPoint(v.dtype) && isIdentifier(v.name) &&
               !nameLooksLikeData(v.name) && learned(inputs[k]);
    };
    // A dotted state_dict key ("norms.0.loc") read only beside the data or through arithmetic
    // (Glow's first ActNorm: (x + loc) * exp(logs)) is a submodule's tensor, never data.
    const auto moduleKey = [&](size_t k) {
        const ir::Value &v = m_values[inputs[k].index()];
        return !m_isInitializer[inputs[k].index()] && !overridden(v) &&
               v.kind == ValueKind::Input && ir::isFloatingPoint(v.dtype) &&
               looksLikeStateDictKey(v.name) && !nameLooksLikeData(v.name) && learned(inputs[k]);
    };
    // Where the state_dict begins, the bare names just before it are the model's own tensors
    // too, even when shaped like the batch (two fusion weights at batch 2): walk back to the
    // first that is not.
    const auto begin = [&](size_t k) {
        for (size_t j = k; j-- > 1 && (topLevel(j) || moduleKey(j));)
            m_values[inputs[j].index()].kind = ValueKind::Parameter;
    };
    bool stateDict = false;
    for (size_t k = 1; k < inputs.size(); ++k) {
        ir::Value &v = m_values[inputs[k].index()];
        if (m_isInitializer[inputs[k].index()] || overridden(v))
            continue;
        if (ir::isModelState(v.kind)) {
            if (!stateDict) // a dotted key or a weight slot: the state_dict has begun
                begin(k);
            stateDict = true;
            continue;
        }
        if (v.kind != ValueKind::Input || !ir::isFloatingPoint(v.dtype))
            continue;
        if (stateDict) {
            if (learned(inputs[k]))
                v.kind = ValueKind::Parameter;
            continue;
        }
        const bool batchShaped = batch > 0 && v.shape.rank() > 0 && v.shape.dims[0].isStatic() &&
                                 v.shape.dims[0].value == batch;
        if ((topLevel(k) && !batchShaped) || moduleKey(k)) {
            v.kind = ValueKind::Parameter;
            begin(k);
            stateDict = true;
        }
    }
}

Status Importer::promoteConstantWeights(const ir::Graph &first)
{
    // Some exporters (paddle2onnx, older tf2onnx) store every weight as a Constant node instead
    // of an initializer. A float tensor from a Constant node that feeds a weight slot (or is
    // named like a weight, or is a learned-looking tensor beside a computed operand) is a
    // parameter, like the same tensor stored as an initializer; single numbers beside a computed
    // value (a GELU's 0.5, an attention scale) stay constants. The node goes away, so the value
    // is a weight the optimizer owns, and the user's --classify wins either way.
    // torch.onnx.export writes every nn.Parameter as an initializer or (export_params=False) a
    // graph input: its Constant nodes are tensor constants and non-persistent buffers (rotary
    // tables, causal masks), never weights.
    // `remat make-decoder` (core/onnx/decoder_model.h) writes its files by the same convention.
    const bool fromPyTorch =
        m_model->producer_name() == "pytorch" || m_model->producer_name() == "remat make-decoder";
    for (const ir::Node &n : first.nodes()) {
        if (!isConstantNode(n))
            continue;
        const ValueId out = n.outputs[0];
        ir::Value &v = m_values[out.index()];
        if (!v.initializer || v.isGraphOutput)
            continue;
        ValueKind kind = ValueKind::Constant;
        if (const ValueKind *given = givenKind(v.name)) {
            kind = *given;
            if (kind == ValueKind::Input || kind == ValueKind::Intermediate)
                return fail(StatusCode::InvalidArgument,
                            "'" + v.name +
                                "' is a Constant node's tensor stored in the file; classify it as "
                                "parameter, buffer or constant");
        } else if (ir::isFloatingPoint(v.dtype)) {
            const SlotUse use = slotUse(first, out);
            auto count = v.initializer->shape.numElements();
            const int64_t elements = count ? *count : 0;
            if (use.statSlot || nameLooksLikeBuffer(v.name))
                kind = ValueKind::Buffer;
            else if (!fromPyTorch && (use.weightSlot || nameLooksLikeParameter(v.name) ||
                                      (use.operandSlot && elements > 1)))
                kind = ValueKind::Parameter;
        }
        if (kind == ValueKind::Constant)
            continue;
        v.kind = kind;
        m_isInitializer[out.index()] = true;
        m_dropNode[n.id.index()] = true;
    }
    return Status::ok();
}

void Importer::onnxFallback(const ir::Graph &first)
{
    // ONNX's own inference, for ops we do not cover: a copy of the graph without weight bytes,
    // with every shape we know (at the user's batch) as value_info.
    ::onnx::ModelProto copy;
    copy.set_ir_version(m_model->ir_version());
    *copy.mutable_opset_import() = m_model->opset_import();
    ::onnx::GraphProto *g = copy.mutable_graph();
    *g->mutable_node() = m_model->graph().node();
    auto setType = [&](::onnx::ValueInfoProto *vi, const ir::Value &v, const InferredValue &iv) {
        vi->set_name(v.name);
        auto *tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(int32_t(iv.dtype));
        auto *sh = tt->mutable_shape();
        for (const Dim &d : iv.shape.dims) {
            auto *dp = sh->add_dim();
            if (d.isStatic())
                dp->set_dim_value(d.value);
            else if (!d.symbol.empty())
                dp->set_dim_param(d.symbol);
        }
    };
    std::unordered_map<std::string, const ::onnx::TensorProto *> initializers;
    for (const auto &t : m_model->graph().initializer())
        initializers.emplace(t.name(), &t);
    for (const ir::Value &v : first.values()) {
        const InferredValue &iv = m_inferred[v.id.index()];
        if (m_isInitializer[v.id.index()]) {
            auto found = initializers.find(v.name);
            if (found == initializers.end())
                continue;
            const ::onnx::TensorProto *src = found->second;
            auto *t = g->add_initializer();
            if (iv.constant && !ir::isFloatingPoint(v.dtype)) {
                *t = *src; // small integer tables: shape data ONNX may need
            } else {
                t->set_name(src->name());
                t->set_data_type(src->data_type());
                *t->mutable_dims() = src->dims();
            }
            continue;
        }
        if (!iv.known())
            continue;
        if (v.kind == ValueKind::Input || ir::isModelState(v.kind))
            setType(g->add_input(), v, iv);
        else if (v.producer.valid() && iv.shape.isStatic())
            setType(g->add_value_info(), v, iv);
    }
    for (ValueId id : first.outputs())
        g->add_output()->set_name(first.value(id).name);
    try {
        ::onnx::shape_inference::InferShapes(copy);
    } catch (const std::exception &) {
        return; // ONNX's inference is best effort here; unknown shapes are reported below
    }
    auto take = [&](const ::onnx::ValueInfoProto &vi) {
        auto it = m_byName.find(vi.name());
        if (it == m_byName.end())
            return;
        InferredValue &iv = m_inferred[it->second.index()];
        if (iv.known() && iv.shape.isStatic())
            return;
        auto info = readType(vi, "value");
        if (info && info->dtype != DataType::Undefined && info->shape.rankKnown) {
            iv.dtype = info->dtype;
            iv.shape = info->shape;
        }
    };
    for (const auto &vi : g->value_info())
        take(vi);
    for (const auto &vi : g->output())
        take(vi);
}

Status Importer::applyInputSettings()
{
    // Validate every setting against the file before anything is changed.
    std::vector<std::string> inputNames;
    std::vector<std::string> freeDims; // symbolic names, in order of first appearance
    for (ValueId id : m_inputs) {
        const ir::Value &v = m_values[id.index()];
        inputNames.push_back(v.name);
        for (const Dim &d : v.shape.dims)
            if (!d.isStatic() && !d.symbol.empty() &&
                std::find(freeDims.begin(), freeDims.end(), d.symbol) == freeDims.end())
                freeDims.push_back(d.symbol);
    }
    auto joined = [](const std::vector<std::string> &names) {
        std::string out;
        for (const std::string &n : names)
            out += (out.empty() ? "" : ", ") + n;
        return out;
    };
    for (const auto &[name, dims] : m_options.inputShapes) {
        auto it = m_byName.find(name);
        const bool isInput = it != m_byName.end() && std::find(m_inputs.begin(), m_inputs.end(),
                                                               it->second) != m_inputs.end();
        if (!isInput) {
            const bool isWeight = it != m_byName.end() && m_isInitializer[it->second.index()];
            return fail(
                StatusCode::NotFound,
                "--input-shape names '" + name + "', which " +
                    (isWeight ? std::string("is an initializer (stored data), not a graph input")
                              : std::string("is not a graph input")) +
                    "; the inputs are: " + (inputNames.empty() ? "(none)" : joined(inputNames)));
        }
        const ir::Value &v = m_values[it->second.index()];
        if (v.shape.dims.size() != dims.size())
            return fail(StatusCode::InvalidArgument,
                        "--input-shape " + name + "=" + formatDims(dims) + " gives " +
                            std::to_string(dims.size()) + " dims, but input '" + name + "' has " +
                            std::to_string(v.shape.rank()) + " (" + v.shape.toString() + ")");
        for (int64_t d : dims)
            if (d < 1)
                return fail(StatusCode::InvalidArgument,
                            "--input-shape " + name + ": dims must be at least 1");
    }
    for (const auto &[name, value] : m_options.dimValues) {
        if (value < 1)
            return fail(StatusCode::InvalidArgument,
                        "--dim " + name + "=" + std::to_string(value) + ": a dim is at least 1");
        if (std::find(freeDims.begin(), freeDims.end(), name) == freeDims.end())
            return fail(StatusCode::NotFound,
                        "--dim names '" + name + "', which no graph input has as a free dim; " +
                            (freeDims.empty() ? std::string("the inputs have no named free dims")
                                              : "the named free dims are: " + joined(freeDims)));
    }

    // Batch: the first dim of the first data input, as the file has it (0 when symbolic: then
    // a static leading dim of another input, such as a recurrent state's 2, is not the batch).
    for (ValueId id : m_inputs) {
        const ir::Value &v = m_values[id.index()];
        if (v.kind == ValueKind::Input && v.shape.rank() > 0) {
            m_fileBatch = v.shape.dims[0].isStatic() ? v.shape.dims[0].value : 0;
            break;
        }
    }
    // Data inputs whose first dim is the batch (symbolic, or the first data input's size); a
    // second input such as a fixed mask keeps its shape.
    m_takesBatch.assign(m_values.size(), false);
    for (ValueId id : m_inputs) {
        const ir::Value &v = m_values[id.index()];
        m_takesBatch[id.index()] =
            v.kind == ValueKind::Input && v.shape.rank() > 0 &&
            (!v.shape.dims[0].isStatic() || v.shape.dims[0].value == m_fileBatch);
    }
    // The batch names its symbol: a leading dim called "batch" in the data input is the same
    // "batch" wherever it appears (Silero's state[2,batch,128]), unless --dim sets it.
    std::map<std::string, int64_t> dimValues = m_options.dimValues;
    if (m_options.batch > 0)
        for (ValueId id : m_inputs) {
            const ir::Value &v = m_values[id.index()];
            if (m_takesBatch[id.index()] && !v.shape.dims[0].isStatic() &&
                !v.shape.dims[0].symbol.empty())
                dimValues.emplace(v.shape.dims[0].symbol, m_options.batch);
        }
    // Apply: named dims first, then the batch where no name set the leading dim, then whole
    // shapes, so the most specific setting wins.
    int64_t effectiveBatch = 0;
    for (ValueId id : m_inputs) {
        ir::Value &v = m_values[id.index()];
        const Shape declared = v.shape;
        bool leadingNamed = false;
        for (size_t i = 0; i < v.shape.dims.size(); ++i) {
            Dim &d = v.shape.dims[i];
            if (d.isStatic() || d.symbol.empty())
                continue;
            auto found = dimValues.find(d.symbol);
            if (found != dimValues.end()) {
                // A leading dim the user named explicitly is not overridden by --batch.
                leadingNamed = leadingNamed || (i == 0 && m_options.dimValues.count(d.symbol) > 0);
                d = Dim(found->second);
            }
        }
        if (m_takesBatch[id.index()] && m_options.batch > 0 && !leadingNamed)
            v.shape.dims[0] = Dim(m_options.batch);
        auto whole = m_options.inputShapes.find(v.name);
        if (whole != m_options.inputShapes.end()) {
            v.shape = Shape();
            for (int64_t d : whole->second)
                v.shape.dims.emplace_back(d);
        }
        for (size_t i = 0; i < declared.dims.size(); ++i)
            if (declared.dims[i].isStatic() && declared.dims[i].value != v.shape.dims[i].value)
                m_shapesChanged = true;
        if (m_takesBatch[id.index()] && effectiveBatch == 0 && v.shape.dims[0].isStatic())
            effectiveBatch = v.shape.dims[0].value;
    }
    m_batch = effectiveBatch;
    m_batchChanged = m_batch > 0 && m_fileBatch > 0 && m_batch != m_fileBatch;
    return Status::ok();
}

Status Importer::inferAll(const ir::Graph &first)
{
    m_inferred.assign(m_values.size(), {});
    if (m_options.batch < 0)
        return fail(StatusCode::InvalidArgument,
                    "batch " + std::to_string(m_options.batch) + " is negative");
    REMAT_RETURN_IF_ERROR(applyInputSettings());
    // The graph inputs now hold the user's shapes; `batch` > 0 puts another leading dim on the
    // inputs that take the batch (the first pass, at the file's batch).
    auto seed = [&](std::vector<InferredValue> &vals, int64_t batch) {
        vals.assign(m_values.size(), {});
        for (size_t i = 0; i < m_values.size(); ++i) {
            const ir::Value &v = m_values[i];
            InferredValue &iv = vals[i];
            if (v.kind == ValueKind::Intermediate || v.dtype == DataType::Undefined)
                continue;
            iv.dtype = v.dtype;
            iv.shape = v.shape;
            if (m_takesBatch[i] && batch > 0)
                iv.shape.dims[0] = Dim(batch);
            const bool small = v.initializer && (!ir::isFloatingPoint(v.dtype) ||
                                                 v.initializer->shape.numElements().value() <= 64);
            if (small)
                iv.constant = constTensorFrom(*v.initializer);
        }
    };
    progress(0.5, "shape inference");
    // A file traced at a fixed batch keeps that batch in shape constants: infer once at the
    // file's batch, then at the user's, letting the second pass see what the first found.
    std::vector<InferredValue> atFileBatch;
    BatchRewrite rewrite;
    if (m_batchChanged) {
        seed(atFileBatch, m_fileBatch);
        Status s = inferShapes(first, m_info.opsetVersion, atFileBatch, m_options.stop);
        if (!s.isOk())
            return fail(s.code(), s.message());
        rewrite = BatchRewrite{&atFileBatch, m_fileBatch, m_batch};
    }
    seed(m_inferred, 0);
    Status s = inferShapes(first, m_info.opsetVersion, m_inferred, rewrite, m_options.stop);
    if (!s.isOk())
        return fail(s.code(), s.message());
    bool missing = false;
    for (const ir::Node &n : first.nodes())
        for (ValueId out : n.outputs)
            if (out.valid() && !m_inferred[out.index()].shape.isStatic())
                missing = true;
    if (missing) {
        REMAT_RETURN_IF_ERROR(checkStop());
        onnxFallback(first);
        s = inferShapes(first, m_info.opsetVersion, m_inferred, rewrite, m_options.stop);
        if (!s.isOk())
            return fail(s.code(), s.message());
    }
    return Status::ok();
}

/// NonZero's count is set by the values (torch.nonzero, torch.where(mask): a mixture of
/// experts that routes a varying number of tokens to each expert); no input setting decides it.
static std::string dataDependentAdvice()
{
    return " (NonZero's size depends on the values, as torch.where(mask) routing tokens to "
           "experts does; no setting fixes it: export with static shapes, the routing written "
           "as a dense dispatch by one_hot and einsum or with a fixed capacity per expert)";
}

Status Importer::finalizeShapes(const ir::Graph &first)
{
    const bool fileShapesValid =
        !m_options.ignoreFileValueInfo && !m_batchChanged && !m_shapesChanged;
    for (const ir::Node &n : first.nodes()) {
        for (ValueId out : n.outputs) {
            if (!out.valid())
                continue;
            ir::Value &v = m_values[out.index()];
            const InferredValue &iv = m_inferred[out.index()];
            if (iv.dtype != DataType::Undefined)
                v.dtype = iv.dtype;
            v.shape = iv.shape; // unknown rank when nothing could infer it
            if (fileShapesValid && !v.shape.isStatic()) {
                auto it = m_fileInfo.find(v.name);
                if (it != m_fileInfo.end() && it->second.shape.isStatic()) {
                    v.shape = it->second.shape;
                    if (v.dtype == DataType::Undefined)
                        v.dtype = it->second.dtype;
                }
            }
            if (v.dtype == DataType::Undefined) {
                auto it = m_fileInfo.find(v.name);
                if (it != m_fileInfo.end())
                    v.dtype = it->second.dtype;
            }
            const std::string label = "value '" + v.name + "' (output of node '" +
                                      (n.name.empty() ? n.opType : n.name) + "' (" + n.opType +
                                      "))";
            if (!v.shape.isStatic()) {
                REMAT_RETURN_IF_ERROR(unknownValue(
                    fail(StatusCode::InvalidArgument,
                         "cannot determine the shape of " + label + ": got " + v.shape.toString() +
                             (n.opType == "If" ? undecidedIfAdvice(first, n) : std::string()) +
                             (n.opType == "NonZero" ? dataDependentAdvice() : std::string()) +
                             loopAdvice(n) + freeDimAdvice())));
                continue;
            }
            if (v.dtype == DataType::Undefined)
                REMAT_RETURN_IF_ERROR(unknownValue(
                    fail(StatusCode::Unsupported, "cannot determine the data type of " + label)));
        }
    }
    for (ValueId id : m_inputs) {
        ir::Value &v = m_values[id.index()];
        if (!v.shape.isStatic() && !v.consumers.empty())
            REMAT_RETURN_IF_ERROR(
                unknownValue(fail(StatusCode::InvalidArgument,
                                  "graph input '" + v.name + "' has shape " + v.shape.toString() +
                                      " with free dims" + freeDimAdvice())));
    }
    if (m_unknownValues > 1)
        m_info.trainingBlockers.push_back(std::to_string(m_unknownValues) +
                                          " values have no inferred shape or type");
    for (const ir::Value &v : m_values) {
        if (!v.shape.isStatic())
            continue;
        auto b = v.bytes();
        if (!b)
            return fail(StatusCode::OutOfRange, "value '" + v.name + "' has shape " +
                                                    v.shape.toString() +
                                                    ", whose size overflows 64 bits");
    }
    return Status::ok();
}

Status Importer::unknownValue(const Status &problem)
{
    // Strict imports stop at the first problem; browsing keeps the value unknown and remembers
    // the first problem, which is what stops the training step.
    if (!m_options.allowUnknownShapes)
        return problem;
    if (m_info.trainingBlockers.empty())
        m_info.trainingBlockers.push_back(problem.message());
    ++m_unknownValues;
    return Status::ok();
}

std::string Importer::freeDimAdvice() const
{
    // Name what is still free and the settings that fix it, in the CLI's words (the GUI asks
    // for the same values in its dimensions dialog).
    std::vector<std::string> named;
    std::string unnamed;
    for (ValueId id : m_inputs) {
        const ir::Value &v = m_values[id.index()];
        for (size_t i = 0; i < v.shape.dims.size(); ++i) {
            const Dim &d = v.shape.dims[i];
            if (d.isStatic())
                continue;
            if (!d.symbol.empty()) {
                if (std::find(named.begin(), named.end(), d.symbol) == named.end())
                    named.push_back(d.symbol);
            } else if (unnamed.empty()) {
                unnamed = v.name;
            }
        }
    }
    if (named.empty() && unnamed.empty())
        return {};
    std::string out = "; give the free dims: ";
    for (size_t i = 0; i < named.size(); ++i)
        out += (i ? " " : "") + std::string("--dim ") + named[i] + "=N";
    if (!unnamed.empty())
        out += std::string(named.empty() ? "" : " and ") + "--input-shape " + unnamed +
               "=D0xD1x... (its unnamed dims)";
    if (m_options.batch <= 0 && !named.empty())
        out += " (or --batch N for a leading batch dim)";
    return out;
}

Status Importer::foldConstantOfShape(const ir::Graph &first)
{
    // "light" model-zoo files replaced each weight by ConstantOfShape(shape initializer). Such an
    // output that feeds a weight slot is the weight: it becomes a Parameter (or a Buffer for BN
    // statistics) with a lazily filled initializer, and the node goes away.
    std::vector<bool> &drop = m_dropNode;
    bool any = std::find(drop.begin(), drop.end(), true) != drop.end();
    for (const ir::Node &n : first.nodes()) {
        if (n.opType != "ConstantOfShape" || !(n.domain.empty() || n.domain == "ai.onnx") ||
            n.outputs.size() != 1 || !n.outputs[0].valid() || n.inputs.empty() ||
            !n.inputs[0].valid())
            continue;
        const ir::Value &shapeIn = first.value(n.inputs[0]);
        if (!shapeIn.initializer)
            continue;
        ir::Value &out = m_values[n.outputs[0].index()];
        const InferredValue &iv = m_inferred[n.outputs[0].index()];
        if (!ir::isFloatingPoint(iv.dtype) || !iv.shape.isStatic() || out.isGraphOutput)
            continue;
        const SlotUse use = slotUse(first, out.id);
        ValueKind kind;
        if (use.statSlot)
            kind = ValueKind::Buffer;
        else if (use.weightSlot || use.operandSlot)
            kind = ValueKind::Parameter;
        else
            continue;
        if (const ValueKind *given = givenKind(out.name))
            kind = *given;
        auto tc = std::make_shared<ir::TensorConstant>();
        tc->name = out.name;
        tc->dtype = iv.dtype;
        tc->shape = iv.shape;
        auto count = tc->shape.numElements();
        if (!count || mulOverflows(*count, ir::elementSize(tc->dtype), &tc->byteCount))
            return fail(StatusCode::OutOfRange,
                        "ConstantOfShape output '" + out.name + "' overflows 64 bits");
        std::vector<std::byte> element(size_t(ir::elementSize(tc->dtype)), std::byte{0});
        const ir::Attribute *value = n.attribute("value");
        if (value && value->isTensor() && value->tensor().hasData()) {
            auto bytes = value->tensor().bytes();
            if (bytes && bytes->size() == element.size())
                std::copy(bytes->begin(), bytes->end(), element.begin());
        }
        tc->data = std::make_shared<FillTensorData>(std::move(element), tc->byteCount);
        out.initializer = std::move(tc);
        out.kind = kind;
        out.dtype = iv.dtype;
        out.shape = iv.shape;
        drop[n.id.index()] = true;
        any = true;
    }
    if (!any)
        return Status::ok();
    std::vector<ir::Node> kept;
    kept.reserve(m_nodes.size());
    for (size_t i = 0; i < m_nodes.size(); ++i)
        if (!drop[i])
            kept.push_back(std::move(m_nodes[i]));
    m_nodes = std::move(kept);
    return Status::ok();
}

Status Importer::parse(const std::string &bytes)
{
    if (int64_t(bytes.size()) > m_options.maxFileBytes)
        return fail(StatusCode::ResourceExhausted, "the file has " + std::to_string(bytes.size()) +
                                                       " bytes, more than the limit of " +
                                                       std::to_string(m_options.maxFileBytes));
    progress(0.0, "parsing");
    m_model = std::make_shared<::onnx::ModelProto>();
    if (bytes.size() > size_t(INT32_MAX))
        return fail(StatusCode::Unsupported,
                    "protobuf files over 2 GiB cannot be parsed; store the weights "
                    "as external data");
    if (!m_model->ParseFromString(bytes))
        return fail(StatusCode::ParseError,
                    "not an ONNX model: the protobuf cannot be parsed (the file is "
                    "truncated, corrupt, or not ONNX)");
    if (!m_model->has_graph())
        return fail(StatusCode::ParseError, "the model has no graph");
    return checkStop();
}

Expected<ModelSignature> Importer::signature(const std::string &bytes)
{
    REMAT_RETURN_IF_ERROR(parse(bytes));
    const ::onnx::GraphProto &g = m_model->graph();
    std::unordered_set<std::string> initializers;
    for (const auto &t : g.initializer())
        initializers.insert(t.name());
    ModelSignature sig;
    for (const auto &in : g.input()) {
        if (initializers.count(in.name()))
            continue;
        REMAT_ASSIGN_OR_RETURN(FileValueInfo info, readType(in, "graph input"));
        DeclaredInput d{in.name(), info.dtype, info.shape};
        for (const Dim &dim : d.shape.dims) {
            if (dim.isStatic())
                continue;
            if (dim.symbol.empty())
                ++sig.unnamedFreeDims;
            else if (std::find(sig.freeDimNames.begin(), sig.freeDimNames.end(), dim.symbol) ==
                     sig.freeDimNames.end())
                sig.freeDimNames.push_back(dim.symbol);
        }
        sig.inputs.push_back(std::move(d));
    }
    for (int i = 0; i < g.node_size(); ++i) {
        const ::onnx::NodeProto &n = g.node(i);
        if (n.op_type() == "If" && (n.domain().empty() || n.domain() == "ai.onnx"))
            sig.ifNodes.push_back(n.name().empty() ? "If_" + std::to_string(i) : n.name());
    }
    return sig;
}

Expected<ir::Graph> Importer::run(const std::string &bytes)
{
    REMAT_RETURN_IF_ERROR(parse(bytes));
    if (m_options.readExportMetadata) {
        std::vector<std::pair<std::string, std::string>> props;
        for (const auto &p : m_model->metadata_props())
            props.emplace_back(p.key(), p.value());
        m_meta = parseExportMetadata(props);
        applyExportRewrites();
    }

    m_info.path = m_path;
    m_info.producerName = m_model->producer_name();
    m_info.producerVersion = m_model->producer_version();
    m_info.irVersion = m_model->ir_version();
    m_info.graphName = m_model->graph().name();
    m_info.sha256 = sha256Hex(bytes);
    for (const auto &op : m_model->opset_import())
        if (op.domain().empty() || op.domain() == "ai.onnx")
            m_info.opsetVersion = op.version();
    if (m_info.opsetVersion == 0 && m_model->opset_import_size() == 0)
        m_info.opsetVersion = 1; // IR 1-2 files carry no opset: ONNX says opset 1

    // An If decided at import (its condition a constant, a static shape or a value the user
    // gave) is replaced by its taken branch and the graph read again, until none is left that
    // can be decided; the bound only guards against a file that keeps producing Ifs.
    constexpr int kMaxIfRounds = 64;
    bool expanded = false;
    int controlFlow = 0;
    std::vector<std::string> blockers, controlFlowNames;
    std::set<std::string> expandedNodes; // control-flow nodes shown with their subgraphs
    for (int round = 0;; ++round) {
        resetState();
        progress(0.2, "building");
        REMAT_RETURN_IF_ERROR(collect());
        auto first = ir::Graph::build(m_info, m_nodes, m_values, m_inputs, m_outputs);
        if (!first)
            return fail(first.status().code(), first.status().message());
        m_values = first->values(); // consumers, producers filled in
        REMAT_RETURN_IF_ERROR(classify(*first));
        REMAT_RETURN_IF_ERROR(checkStop());
        REMAT_RETURN_IF_ERROR(inferAll(*first));
        REMAT_RETURN_IF_ERROR(checkStop());
        if (round < kMaxIfRounds) {
            REMAT_ASSIGN_OR_RETURN(int inlined, inlineDecidedIfs(*first));
            if (inlined > 0)
                continue;
            // (not once the display nodes are in: a displayed Loop reads its body's outputs)
            if (!expanded) {
                REMAT_ASSIGN_OR_RETURN(int written, writeOutControlFlow());
                if (written > 0)
                    continue;
            }
        }
        REMAT_RETURN_IF_ERROR(checkBranchesUsed());
        REMAT_RETURN_IF_ERROR(foldConstantOfShape(*first));
        REMAT_RETURN_IF_ERROR(finalizeShapes(*first));
        if (m_options.expandSubgraphs && round < kMaxIfRounds) {
            if (!expanded) {
                // What blocks training is decided on the graph without the display nodes.
                blockers = m_info.trainingBlockers;
                for (const ir::Node &n : first->nodes())
                    if (n.opType == "If" || n.opType == "Loop" || n.opType == "Scan")
                        controlFlowNames.push_back(n.opType + " '" + n.name + "'");
            }
            expanded = true;
            if (expandControlFlow(expandedNodes) > 0) {
                controlFlow = int(controlFlowNames.size());
                m_info.trainingBlockers.clear();
                m_unknownValues = 0;
                continue;
            }
        }
        applySemantics();
        break;
    }
    if (controlFlow > 0) {
        m_info.trainingBlockers = blockers;
        if (m_info.trainingBlockers.empty())
            m_info.trainingBlockers.push_back(
                controlFlowNames.front() +
                " is not decided at import and cannot be trained through (an If trains when "
                "its condition is known: give the scalar input it depends on with "
                "--input-value NAME=V, or pick its branch with --branch NODE=then|else)");
    }
    m_info.batch = m_batch > 0 ? m_batch : m_fileBatch;
    for (const std::string &note : m_controlFlowNotes)
        m_info.importNotes.push_back(note);
    // remat.forward_constants: Constant outputs PyTorch makes each step; the training summary
    // counts them where an op keeps them, as it does a batch-sized one (kind_reasons.h)
    for (const std::string &name : m_meta.forwardConstants)
        if (auto it = m_byName.find(name); it != m_byName.end()) {
            ir::Value &v = m_values[it->second.index()];
            if (v.kind == ValueKind::Constant && v.kindReason.empty())
                v.kindReason = ir::kMadeInForwardReason;
        }
    noteExportMetadata();
    if (Status s = applyTrainability(m_values, m_options, m_info.importNotes); !s.isOk()) {
        if (!m_options.allowUnknownShapes)
            return fail(s.code(), s.message());
        m_info.trainingBlockers.push_back(s.message()); // browsing: the graph still opens
    }

    progress(0.9, "building");
    for (ir::Value &v : m_values) {
        v.consumers.clear();
        v.producer = NodeId();
        v.isGraphOutput = false;
    }
    auto g = ir::Graph::build(m_info, std::move(m_nodes), std::move(m_values), std::move(m_inputs),
                              std::move(m_outputs));
    if (!g)
        return fail(g.status().code(), g.status().message());
    progress(1.0, "done");
    return g;
}

} // namespace

namespace {

bool isUtf8(const std::string &s)
{
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t n = 0;
        uint32_t cp = 0;
        if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (s.size() - i <= n)
            return false;
        for (size_t k = 1; k <= n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (d & 0x3f);
        }
        // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 either.
        const uint32_t minimum[] = {0, 0x80, 0x800, 0x10000};
        if (cp < minimum[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

/// Names end up in JSON (plans, sessions, `remat info --json`, node-link exports), whose writer
/// throws on bytes that are not UTF-8; protobuf (proto2) does not check them. ONNX names are text.
Status checkNamesAreUtf8(const ir::Graph &g, const std::string &where)
{
    auto bad = [&](const std::string &what) {
        return makeError(StatusCode::ParseError, where + ": " + what + " is not valid UTF-8 text");
    };
    const ir::ModelInfo &info = g.info();
    if (!isUtf8(info.producerName) || !isUtf8(info.producerVersion))
        return bad("the producer name or version");
    if (!isUtf8(info.graphName))
        return bad("the graph name");
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const ir::Node &n = g.nodes()[i];
        if (!isUtf8(n.name) || !isUtf8(n.opType) || !isUtf8(n.domain))
            return bad("the name, op type or domain of node " + std::to_string(i));
    }
    for (size_t i = 0; i < g.values().size(); ++i)
        if (!isUtf8(g.values()[i].name))
            return bad("the name of value " + std::to_string(i));
    return Status::ok();
}

Expected<std::string> readModelFile(const std::string &path, int64_t maxFileBytes)
{
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return makeError(StatusCode::NotFound, path + ": no such model file");
    const auto size = fs::file_size(path, ec);
    if (ec)
        return makeError(StatusCode::NotFound,
                         path + ": cannot read the file size: " + ec.message());
    if (int64_t(size) > maxFileBytes)
        return makeError(StatusCode::ResourceExhausted,
                         path + ": the file has " + std::to_string(size) +
                             " bytes, more than the limit of " + std::to_string(maxFileBytes));
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(StatusCode::NotFound, path + ": cannot open the file");
    std::string bytes(size, '\0');
    in.read(bytes.data(), std::streamsize(size));
    if (in.gcount() != std::streamsize(size))
        return makeError(StatusCode::ParseError, path + ": short read");
    return bytes;
}

} // namespace

Expected<ir::Graph> importModelFromBytes(const std::string &bytes, const std::string &path,
                                         const ImportOptions &options)
{
    // protobuf and ONNX's own checks throw (std::bad_alloc for a huge repeated field, ONNX's
    // ValidationError / InferenceError): the boundary rule in docs/readers.md.
    const std::string where = path.empty() ? std::string("model") : path;
    return guardReader(where, [&]() -> Expected<ir::Graph> {
        Expected<ir::Graph> g = Importer(path, options).run(bytes);
        if (!g && options.expandSubgraphs && g.status().code() != StatusCode::Cancelled) {
            // The display nodes are a convenience: a body whose shapes do not work out at the
            // given settings must not cost the user the file. Open it without them.
            ImportOptions plain = options;
            plain.expandSubgraphs = false;
            g = Importer(path, plain).run(bytes);
        }
        if (!g)
            return g.status();
        REMAT_RETURN_IF_ERROR(checkNamesAreUtf8(*g, where));
        return g;
    });
}

Expected<ir::Graph> importModel(const std::string &path, const ImportOptions &options)
{
    return guardReader(path, [&]() -> Expected<ir::Graph> {
        REMAT_ASSIGN_OR_RETURN(std::string bytes, readModelFile(path, options.maxFileBytes));
        return importModelFromBytes(bytes, path, options);
    });
}

Expected<ModelSignature> readModelSignature(const std::string &path, int64_t maxFileBytes)
{
    return guardReader(path, [&]() -> Expected<ModelSignature> {
        REMAT_ASSIGN_OR_RETURN(std::string bytes, readModelFile(path, maxFileBytes));
        ImportOptions options;
        options.maxFileBytes = maxFileBytes;
        Importer importer(path, options);
        return importer.signature(bytes);
    });
}

} // namespace remat::core::onnx
