#include "core/io/import_settings_json.h"

#include "core/onnx/input_spec.h"
#include "core/util/reader_guard.h"

namespace remat::core::io {

using nlohmann::json;

namespace {

const char *kindName(ir::ValueKind k)
{
    switch (k) {
    case ir::ValueKind::Parameter: return "parameter";
    case ir::ValueKind::Buffer: return "buffer";
    case ir::ValueKind::Frozen: return "frozen";
    case ir::ValueKind::Input: return "input";
    case ir::ValueKind::Constant: return "constant";
    case ir::ValueKind::Intermediate: break;
    }
    return "intermediate";
}

/// `key` of `j` when it is an object; an empty object otherwise (as QJsonValue::toObject reads it,
/// which the sessions written so far were read with).
const json &member(const json &j, const char *key)
{
    static const json empty = json::object();
    if (!j.is_object())
        return empty;
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : empty;
}

/// A string member's text; empty for any other type (the parsers then name the entry).
std::string text(const json &v) { return v.is_string() ? v.get<std::string>() : std::string(); }

Expected<onnx::ImportOptions> parseImportSettings(const json &j, const std::string &what)
{
    onnx::ImportOptions s;
    auto bad = [&](const std::string &problem) {
        return makeError(StatusCode::InvalidArgument, what + ": " + problem);
    };
    for (const auto &[name, v] : member(j, "dims").items()) {
        if (!v.is_number())
            return bad("dim '" + name + "' is not a number");
        const double d = v.get<double>();
        if (!(d >= 1 && d <= 9.0e15) || double(int64_t(d)) != d)
            return bad("dim '" + name + "' is not a whole number >= 1");
        if (Status st = onnx::addDimValue(s, name + "=" + std::to_string(int64_t(d))); !st.isOk())
            return bad(st.message());
    }
    for (const auto &[name, v] : member(j, "input_shapes").items())
        if (Status st = onnx::addInputShape(s, name + "=" + text(v)); !st.isOk())
            return bad(st.message());
    for (const auto &[name, v] : member(j, "input_values").items()) {
        if (!v.is_number())
            return bad("input value '" + name + "' is not a number");
        s.inputValues[name] = v.get<double>();
    }
    for (const auto &[name, v] : member(j, "branches").items())
        if (Status st = onnx::addBranch(s, name + "=" + text(v)); !st.isOk())
            return bad(st.message());
    for (const auto &[name, v] : member(j, "classify").items())
        if (Status st = onnx::addClassification(s, name + "=" + text(v)); !st.isOk())
            return bad(st.message());
    // "freeze" / "trainable": arrays of regular expressions (--freeze / --trainable)
    const auto patterns = [&](const char *key, auto add) -> Status {
        if (!j.is_object() || !j.contains(key))
            return Status::ok();
        const json &list = j.at(key);
        if (!list.is_array())
            return bad(std::string(key) + " is not an array of regular expressions");
        for (const json &p : list) {
            if (!p.is_string())
                return bad(std::string(key) + " holds an entry that is not a string");
            if (Status st = add(s, p.get<std::string>()); !st.isOk())
                return bad(st.message());
        }
        return Status::ok();
    };
    REMAT_RETURN_IF_ERROR(patterns("freeze", [](onnx::ImportOptions &o, const std::string &p) {
        return onnx::addFreezePattern(o, p);
    }));
    REMAT_RETURN_IF_ERROR(patterns("trainable", [](onnx::ImportOptions &o, const std::string &p) {
        return onnx::addTrainablePattern(o, p);
    }));
    if (j.is_object() && j.contains("semantics")) {
        auto sem = onnx::parseSemantics(text(j.at("semantics")));
        if (!sem)
            return bad(sem.status().message());
        s.semantics = *sem;
    }
    return s;
}

} // namespace

json importSettingsJson(const onnx::ImportOptions &s)
{
    json out = json::object();
    json dims = json::object(), shapes = json::object(), values = json::object(),
         branches = json::object(), classify = json::object();
    for (const auto &[name, v] : s.dimValues)
        dims[name] = v;
    for (const auto &[name, d] : s.inputShapes)
        shapes[name] = onnx::formatDims(d);
    for (const auto &[name, v] : s.inputValues)
        values[name] = v;
    for (const auto &[name, then] : s.branches)
        branches[name] = then ? "then" : "else";
    for (const auto &[name, k] : s.kindOverrides)
        classify[name] = kindName(k);
    if (!dims.empty())
        out["dims"] = dims;
    if (!shapes.empty())
        out["input_shapes"] = shapes;
    if (!values.empty())
        out["input_values"] = values;
    if (!branches.empty())
        out["branches"] = branches;
    if (!classify.empty())
        out["classify"] = classify;
    if (!s.freezePatterns.empty())
        out["freeze"] = s.freezePatterns;
    if (!s.trainablePatterns.empty())
        out["trainable"] = s.trainablePatterns;
    out["semantics"] = onnx::semanticsName(s.semantics);
    return out;
}

Expected<onnx::ImportOptions> importSettingsFromJson(const json &json, const std::string &what)
{
    return guardReader(what, [&] { return parseImportSettings(json, what); });
}

} // namespace remat::core::io
