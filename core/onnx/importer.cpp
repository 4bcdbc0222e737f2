#include "importer.h"

#include "classify.h"
#include "shape_inference.h"
#include "tensor_sources.h"

#include "core/util/bytes.h"
#include "core/util/reader_guard.h"
#include "core/util/sha256.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <charconv>
#include <filesystem>
#include <fstream>
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
    Expected<FileValueInfo> readType(const ::onnx::ValueInfoProto &vi, const std::string &what) const;
    Expected<std::shared_ptr<const ir::TensorConstant>> makeTensor(const ::onnx::TensorProto &t,
                                                                   const std::string &what) const;
    Expected<std::shared_ptr<const ir::TensorDataSource>> externalSource(const ::onnx::TensorProto &t,
                                                                         int64_t byteCount,
                                                                         const std::string &what) const;
    Expected<ir::Attribute> convertAttribute(const ::onnx::AttributeProto &a, const std::string &what) const;
    Status collect();
    Status classify(const ir::Graph &first);
    Status inferAll(const ir::Graph &first);
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
    std::unordered_map<std::string, FileValueInfo> m_fileInfo; // value_info and graph outputs
    std::vector<bool> m_isInitializer;
    std::vector<InferredValue> m_inferred;
    int64_t m_fileBatch = 0;
    bool m_batchChanged = false;
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

Expected<FileValueInfo> Importer::readType(const ::onnx::ValueInfoProto &vi, const std::string &what) const
{
    FileValueInfo out;
    if (!vi.has_type() || !vi.type().has_tensor_type())
        return out; // sequences, maps, or untyped: left to inference
    const auto &tt = vi.type().tensor_type();
    if (tt.elem_type() != 0) {
        if (!ir::isKnownDataType(tt.elem_type()))
            return fail(StatusCode::Unsupported, what + " '" + vi.name() + "' has unknown data type " +
                                                     std::to_string(tt.elem_type()));
        out.dtype = DataType(tt.elem_type());
    }
    if (!tt.has_shape())
        return out;
    out.shape = Shape();
    for (const auto &d : tt.shape().dim()) {
        if (d.has_dim_value()) {
            if (d.dim_value() < 0)
                return fail(StatusCode::ParseError, what + " '" + vi.name() + "' has a negative dimension " +
                                                        std::to_string(d.dim_value()));
            out.shape.dims.emplace_back(d.dim_value());
        } else if (d.has_dim_param()) {
            out.shape.dims.push_back(Dim::symbolic(d.dim_param()));
        } else {
            out.shape.dims.emplace_back();
        }
    }
    if (auto n = out.shape.numElements(); !n && n.status().code() == StatusCode::OutOfRange)
        return fail(StatusCode::OutOfRange, what + " '" + vi.name() + "' has shape " + out.shape.toString() +
                                                ", whose element count overflows 64 bits");
    return out;
}

Expected<std::shared_ptr<const ir::TensorDataSource>>
Importer::externalSource(const ::onnx::TensorProto &t, int64_t byteCount, const std::string &what) const
{
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
        auto parseInt = [&](int64_t &out) -> Status {
            const std::string &s = kv.value();
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
            if (ec != std::errc() || p != s.data() + s.size() || out < 0)
                return fail(StatusCode::ParseError, what + " has an invalid external data " + kv.key() +
                                                        " '" + s + "'");
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
        return fail(StatusCode::ParseError, what + " declares " + std::to_string(length) +
                                                " bytes of external data but its shape and dtype need " +
                                                std::to_string(byteCount));
    if (m_path.empty())
        return fail(StatusCode::InvalidArgument, what + " refers to external data '" + location +
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
        return fail(StatusCode::NotFound, what + ": cannot resolve external data '" + location + "'");
    auto [fEnd, tEnd] = std::mismatch(folder.begin(), folder.end(), target.begin(), target.end());
    if (fEnd != folder.end() || tEnd == target.end())
        return fail(StatusCode::InvalidArgument, what + ": external data location '" + location +
                                                     "' leads outside the model's folder; refused");
    if (!fs::is_regular_file(target, ec))
        return fail(StatusCode::NotFound, what + ": external data file '" + location + "' does not exist");
    const auto size = int64_t(fs::file_size(target, ec));
    if (ec)
        return fail(StatusCode::NotFound, what + ": cannot read the size of '" + location + "'");
    int64_t end = 0;
    if (addOverflows(offset, length, &end) || end > size)
        return fail(StatusCode::ParseError, what + ": external data file '" + location + "' has " +
                                                std::to_string(size) + " bytes, shorter than the declared " +
                                                std::to_string(offset) + "+" + std::to_string(length));
    return std::shared_ptr<const ir::TensorDataSource>(
        std::make_shared<ExternalTensorData>(target.string(), location, offset, length));
}

Expected<std::shared_ptr<const ir::TensorConstant>> Importer::makeTensor(const ::onnx::TensorProto &t,
                                                                         const std::string &what) const
{
    auto c = std::make_shared<ir::TensorConstant>();
    c->name = t.name();
    if (!ir::isKnownDataType(t.data_type()))
        return fail(StatusCode::Unsupported, what + " has unknown data type " + std::to_string(t.data_type()));
    c->dtype = DataType(t.data_type());
    for (int64_t d : t.dims()) {
        if (d < 0)
            return fail(StatusCode::ParseError, what + " has a negative dimension " + std::to_string(d));
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
            return fail(StatusCode::ParseError, what + " holds " + std::to_string(t.raw_data().size()) +
                                                    " bytes of raw_data, but dims " + c->shape.toString() +
                                                    " of " + ir::dataTypeName(c->dtype) + " need " +
                                                    std::to_string(c->byteCount));
    } else {
        int64_t count = typedElementCount(t);
        if (c->dtype == DataType::Complex64 || c->dtype == DataType::Complex128)
            count = count >= 0 ? count : -1;
        if (count == 0 && *n > 0)
            return std::shared_ptr<const ir::TensorConstant>(c); // dims only: weights stripped
        if (count != *n)
            return fail(StatusCode::ParseError, what + " holds " + std::to_string(count) + " elements but dims " +
                                                    c->shape.toString() + " need " + std::to_string(*n));
    }
    c->data = std::make_shared<ProtoTensorData>(m_model, &t, c->byteCount);
    return std::shared_ptr<const ir::TensorConstant>(c);
}

Expected<ir::Attribute> Importer::convertAttribute(const ::onnx::AttributeProto &a, const std::string &what) const
{
    ir::Attribute out;
    out.name = a.name();
    auto type = a.type();
    if (type == ::onnx::AttributeProto::UNDEFINED) { // very old files: guess from the set field
        if (a.has_f()) type = ::onnx::AttributeProto::FLOAT;
        else if (a.has_i()) type = ::onnx::AttributeProto::INT;
        else if (a.has_s()) type = ::onnx::AttributeProto::STRING;
        else if (a.has_t()) type = ::onnx::AttributeProto::TENSOR;
        else if (a.floats_size()) type = ::onnx::AttributeProto::FLOATS;
        else if (a.ints_size()) type = ::onnx::AttributeProto::INTS;
        else if (a.strings_size()) type = ::onnx::AttributeProto::STRINGS;
    }
    switch (type) {
    case ::onnx::AttributeProto::FLOAT: out.payload = double(a.f()); break;
    case ::onnx::AttributeProto::INT: out.payload = int64_t(a.i()); break;
    case ::onnx::AttributeProto::STRING: out.payload = a.s(); break;
    case ::onnx::AttributeProto::FLOATS: out.payload = std::vector<double>(a.floats().begin(), a.floats().end()); break;
    case ::onnx::AttributeProto::INTS: out.payload = std::vector<int64_t>(a.ints().begin(), a.ints().end()); break;
    case ::onnx::AttributeProto::STRINGS:
        out.payload = std::vector<std::string>(a.strings().begin(), a.strings().end());
        break;
    case ::onnx::AttributeProto::TENSOR: {
        REMAT_ASSIGN_OR_RETURN(auto t, makeTensor(a.t(), what + " attribute '" + a.name() + "'"));
        out.payload = t;
        break;
    }
    default: out.payload = std::string("<") + ::onnx::AttributeProto::AttributeType_Name(type) + ">"; break;
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
            return fail(StatusCode::ParseError, "graph input '" + in.name() + "' has no tensor type or shape");
        v.dtype = info.dtype;
        v.shape = info.shape;
        v.kind = ValueKind::Input;
        m_inputs.push_back(id);
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
        if (n.opType == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") && n.outputs.size() == 1 &&
            n.outputs[0].valid()) {
            const ir::Attribute *value = n.attribute("value");
            ir::Value &v = m_values[n.outputs[0].index()];
            if (value && value->isTensor() && !v.producer.valid() && v.kind == ValueKind::Intermediate &&
                !v.initializer) {
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
                return fail(StatusCode::InvalidArgument, "'" + v.name + "' cannot be classified as an activation");
            v.kind = over->second;
            continue;
        }
        v.kind = classifyValue(first, ValueId(i), m_isInitializer[i]);
    }
    for (const auto &[name, kind] : m_options.kindOverrides) {
        auto it = m_byName.find(name);
        if (it == m_byName.end())
            return fail(StatusCode::NotFound, "classification override names '" + name + "', which the model does not have");
        const ir::Value &v = m_values[it->second.index()];
        if (!m_isInitializer[it->second.index()] && !(v.kind == ValueKind::Input || v.kind == ValueKind::Parameter ||
                                                       v.kind == ValueKind::Buffer))
            return fail(StatusCode::InvalidArgument, "classification override names '" + name +
                                                         "', which is computed by a node");
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
        if (v.kind == ValueKind::Input || v.kind == ValueKind::Parameter || v.kind == ValueKind::Buffer)
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

Status Importer::inferAll(const ir::Graph &first)
{
    m_inferred.assign(m_values.size(), {});
    // Batch: the first dim of the data inputs.
    for (ValueId id : m_inputs) {
        const ir::Value &v = m_values[id.index()];
        if (v.kind == ValueKind::Input && v.shape.rank() > 0 && v.shape.dims[0].isStatic()) {
            m_fileBatch = v.shape.dims[0].value;
            break;
        }
    }
    if (m_options.batch < 0)
        return fail(StatusCode::InvalidArgument, "batch " + std::to_string(m_options.batch) + " is negative");
    m_batchChanged = m_options.batch > 0 && m_options.batch != m_fileBatch;
    // Data inputs whose first dim is the batch (symbolic, or the first data input's size); a
    // second input such as a fixed mask keeps its shape.
    auto takesBatch = [&](const ir::Value &v) {
        return v.kind == ValueKind::Input && v.shape.rank() > 0 &&
               (!v.shape.dims[0].isStatic() || v.shape.dims[0].value == m_fileBatch);
    };
    auto seed = [&](std::vector<InferredValue> &vals, int64_t batch) {
        vals.assign(m_values.size(), {});
        for (size_t i = 0; i < m_values.size(); ++i) {
            const ir::Value &v = m_values[i];
            InferredValue &iv = vals[i];
            if (v.kind == ValueKind::Intermediate || v.dtype == DataType::Undefined)
                continue;
            iv.dtype = v.dtype;
            iv.shape = v.shape;
            if (takesBatch(v) && batch > 0)
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
    if (m_batchChanged && m_fileBatch > 0) {
        seed(atFileBatch, m_fileBatch);
        Status s = inferShapes(first, m_info.opsetVersion, atFileBatch, m_options.stop);
        if (!s.isOk())
            return fail(s.code(), s.message());
        rewrite = BatchRewrite{&atFileBatch, m_fileBatch, m_options.batch};
    }
    seed(m_inferred, m_options.batch);
    for (ValueId id : m_inputs) { // the graph's own input shapes, at the user's batch
        ir::Value &v = m_values[id.index()];
        if (takesBatch(v) && m_options.batch > 0)
            v.shape.dims[0] = Dim(m_options.batch);
    }
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

Status Importer::finalizeShapes(const ir::Graph &first)
{
    const bool fileShapesValid = !m_options.ignoreFileValueInfo && !m_batchChanged;
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
                                      (n.name.empty() ? n.opType : n.name) + "' (" + n.opType + "))";
            if (!v.shape.isStatic())
                return fail(StatusCode::InvalidArgument,
                            "cannot determine the shape of " + label + ": got " + v.shape.toString() +
                                (m_options.batch > 0 ? std::string()
                                                     : "; the batch may be symbolic, try --batch N"));
            if (v.dtype == DataType::Undefined)
                return fail(StatusCode::Unsupported, "cannot determine the data type of " + label);
        }
    }
    for (ValueId id : m_inputs) {
        ir::Value &v = m_values[id.index()];
        if (!v.shape.isStatic() && !v.consumers.empty())
            return fail(StatusCode::InvalidArgument,
                        "graph input '" + v.name + "' has shape " + v.shape.toString() +
                            " with unknown dims; set the batch (--batch N)");
    }
    for (const ir::Value &v : m_values) {
        if (!v.shape.isStatic())
            continue;
        auto b = v.bytes();
        if (!b)
            return fail(StatusCode::OutOfRange, "value '" + v.name + "' has shape " + v.shape.toString() +
                                                    ", whose size overflows 64 bits");
    }
    return Status::ok();
}

Status Importer::foldConstantOfShape(const ir::Graph &first)
{
    // "light" model-zoo files replaced each weight by ConstantOfShape(shape initializer). Such an
    // output that feeds a weight slot is the weight: it becomes a Parameter (or a Buffer for BN
    // statistics) with a lazily filled initializer, and the node goes away.
    std::vector<bool> drop(m_nodes.size(), false);
    bool any = false;
    for (const ir::Node &n : first.nodes()) {
        if (n.opType != "ConstantOfShape" || !(n.domain.empty() || n.domain == "ai.onnx") ||
            n.outputs.size() != 1 || !n.outputs[0].valid() || n.inputs.empty() || !n.inputs[0].valid())
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
        auto over = m_options.kindOverrides.find(out.name);
        if (over != m_options.kindOverrides.end())
            kind = over->second;
        auto tc = std::make_shared<ir::TensorConstant>();
        tc->name = out.name;
        tc->dtype = iv.dtype;
        tc->shape = iv.shape;
        auto count = tc->shape.numElements();
        if (!count || mulOverflows(*count, ir::elementSize(tc->dtype), &tc->byteCount))
            return fail(StatusCode::OutOfRange, "ConstantOfShape output '" + out.name + "' overflows 64 bits");
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

Expected<ir::Graph> Importer::run(const std::string &bytes)
{
    if (int64_t(bytes.size()) > m_options.maxFileBytes)
        return fail(StatusCode::ResourceExhausted, "the file has " + std::to_string(bytes.size()) +
                                                       " bytes, more than the limit of " +
                                                       std::to_string(m_options.maxFileBytes));
    progress(0.0, "parsing");
    m_model = std::make_shared<::onnx::ModelProto>();
    if (bytes.size() > size_t(INT32_MAX))
        return fail(StatusCode::Unsupported, "protobuf files over 2 GiB cannot be parsed; store the weights "
                                             "as external data");
    if (!m_model->ParseFromString(bytes))
        return fail(StatusCode::ParseError, "not an ONNX model: the protobuf cannot be parsed (the file is "
                                            "truncated, corrupt, or not ONNX)");
    if (!m_model->has_graph())
        return fail(StatusCode::ParseError, "the model has no graph");
    REMAT_RETURN_IF_ERROR(checkStop());

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
    REMAT_RETURN_IF_ERROR(foldConstantOfShape(*first));
    REMAT_RETURN_IF_ERROR(finalizeShapes(*first));
    m_info.batch = m_options.batch > 0 ? m_options.batch : m_fileBatch;

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

Expected<ir::Graph> importModelFromFile(const std::string &path, const ImportOptions &options)
{
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return makeError(StatusCode::NotFound, path + ": no such model file");
    const auto size = fs::file_size(path, ec);
    if (ec)
        return makeError(StatusCode::NotFound, path + ": cannot read the file size: " + ec.message());
    if (int64_t(size) > options.maxFileBytes)
        return makeError(StatusCode::ResourceExhausted,
                         path + ": the file has " + std::to_string(size) + " bytes, more than the limit of " +
                             std::to_string(options.maxFileBytes));
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(StatusCode::NotFound, path + ": cannot open the file");
    std::string bytes(size, '\0');
    in.read(bytes.data(), std::streamsize(size));
    if (in.gcount() != std::streamsize(size))
        return makeError(StatusCode::ParseError, path + ": short read");
    return importModelFromBytes(bytes, path, options);
}

} // namespace

Expected<ir::Graph> importModelFromBytes(const std::string &bytes, const std::string &path,
                                         const ImportOptions &options)
{
    // protobuf and ONNX's own checks throw (std::bad_alloc for a huge repeated field, ONNX's
    // ValidationError / InferenceError): the boundary rule in docs/readers.md.
    const std::string where = path.empty() ? std::string("model") : path;
    return guardReader(where, [&]() -> Expected<ir::Graph> {
        Importer importer(path, options);
        REMAT_ASSIGN_OR_RETURN(ir::Graph g, importer.run(bytes));
        REMAT_RETURN_IF_ERROR(checkNamesAreUtf8(g, where));
        return g;
    });
}

Expected<ir::Graph> importModel(const std::string &path, const ImportOptions &options)
{
    return guardReader(path, [&] { return importModelFromFile(path, options); });
}

} // namespace remat::core::onnx
