#include "core/onnx/export_metadata.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace remat::core::onnx {

namespace {

bool isName(const nlohmann::json &e)
{
    return e.is_string() && !e.get_ref<const std::string &>().empty();
}

/// An array of names, or nullopt.
std::optional<std::vector<std::string>> names(const nlohmann::json &j)
{
    if (!j.is_array())
        return std::nullopt;
    std::vector<std::string> out;
    for (const auto &e : j) {
        if (!isName(e))
            return std::nullopt;
        out.push_back(e.get<std::string>());
    }
    return out;
}

/// remat.unread's dtype names (torch's) as ONNX element types; 0 when unknown.
int32_t elemTypeOf(const std::string &dtype)
{
    static const std::map<std::string, int32_t> types = {
        {"float32", 1}, {"uint8", 2}, {"int8", 3},     {"int16", 5},    {"int32", 6},
        {"int64", 7},   {"bool", 9},  {"float16", 10}, {"float64", 11}, {"bfloat16", 16}};
    auto it = types.find(dtype);
    return it == types.end() ? 0 : it->second;
}

/// remat.merged / remat.contiguous / remat.unread: an array of objects; false (and a warning)
/// when malformed.
bool parseRewrites(const std::string &key, const nlohmann::json &j, ExportMetadata &m)
{
    size_t total = 0;
    const auto bad = [&](const std::string &why) {
        m.warnings.push_back("metadata " + key + " " + why + ": ignored");
        if (key == "remat.merged")
            m.merged.clear();
        else if (key == "remat.unread")
            m.unread.clear();
        else
            m.contiguous.clear();
        return false;
    };
    for (const auto &e : j) {
        if (!e.is_object())
            return bad("holds an entry that is not an object");
        if (key == "remat.unread") {
            auto name = e.find("name"), kind = e.find("kind"), dtype = e.find("dtype"),
                 shape = e.find("shape");
            if (name == e.end() || !isName(*name) || kind == e.end() || !kind->is_string() ||
                dtype == e.end() || !dtype->is_string() || shape == e.end() || !shape->is_array())
                return bad("holds an entry without a name, kind, dtype and shape");
            UnreadTensor u{name->get<std::string>(), ir::ValueKind::Parameter, 0, {}};
            const std::string k = kind->get<std::string>();
            if (k == "parameters")
                u.kind = ir::ValueKind::Parameter;
            else if (k == "frozen")
                u.kind = ir::ValueKind::Frozen;
            else if (k == "buffers")
                u.kind = ir::ValueKind::Buffer;
            else
                return bad("gives '" + u.name.substr(0, 80) + "' the kind '" + k.substr(0, 40) +
                           "' (parameters, frozen or buffers)");
            u.elemType = elemTypeOf(dtype->get<std::string>());
            if (u.elemType == 0)
                return bad("gives '" + u.name.substr(0, 80) + "' an unknown dtype");
            if (shape->size() > 16)
                return bad("gives '" + u.name.substr(0, 80) + "' more than 16 dims");
            for (const auto &d : *shape) {
                if (!d.is_number_integer() || d.get<int64_t>() < 0 ||
                    d.get<int64_t>() > (int64_t(1) << 40))
                    return bad("gives '" + u.name.substr(0, 80) + "' a dim that is not a size");
                u.shape.push_back(d.get<int64_t>());
            }
            if (++total > kMaxExportMetadataNames)
                return bad(fmt::format("lists more than {} tensors", kMaxExportMetadataNames));
            m.unread.push_back(std::move(u));
            continue;
        }
        if (key == "remat.merged") {
            auto node = e.find("node");
            auto readers = e.find("readers");
            if (node == e.end() || !isName(*node) || readers == e.end() || !readers->is_array())
                return bad("holds an entry without a node name and an array of reader groups");
            MergedNode mn{node->get<std::string>(), {}};
            for (const auto &group : *readers) {
                auto list = names(group);
                if (!list)
                    return bad("holds a reader group that is not an array of node names");
                total += list->size();
                mn.readers.push_back(std::move(*list));
            }
            m.merged.push_back(std::move(mn));
        } else {
            auto value = e.find("value");
            auto readers = e.find("readers");
            auto list = readers == e.end() ? std::nullopt : names(*readers);
            if (value == e.end() || !isName(*value) || !list)
                return bad("holds an entry without a value name and an array of reader names");
            total += list->size();
            m.contiguous.push_back({value->get<std::string>(), std::move(*list)});
        }
        if (total > kMaxExportMetadataNames)
            return bad(fmt::format("names more than {} readers", kMaxExportMetadataNames));
    }
    return true;
}

} // namespace

ExportMetadata parseExportMetadata(const std::vector<std::pair<std::string, std::string>> &props)
{
    ExportMetadata m;
    const std::pair<const char *, ir::ValueKind> lists[] = {
        {"remat.parameters", ir::ValueKind::Parameter},
        {"remat.frozen", ir::ValueKind::Frozen},
        {"remat.buffers", ir::ValueKind::Buffer},
        {"remat.buffer_constants", ir::ValueKind::Buffer},
        {"remat.forward_constants", ir::ValueKind::Constant},
    };
    std::set<std::string> twice;
    for (const auto &[key, value] : props) {
        if (key.rfind("remat.", 0) != 0)
            continue;
        m.present = true;
        if (key == "remat.format") {
            if (value != "1")
                m.warnings.push_back("metadata remat.format '" + value.substr(0, 40) +
                                     "' is not 1: the export's metadata is ignored");
            continue;
        }
        const ir::ValueKind *kind = nullptr;
        for (const auto &[name, k] : lists)
            if (key == name)
                kind = &k;
        const bool rewrites =
            key == "remat.merged" || key == "remat.contiguous" || key == "remat.unread";
        if (!kind && !rewrites)
            continue; // a key of a later format: nothing to read here
        if (value.size() > kMaxExportMetadataBytes) {
            m.warnings.push_back(fmt::format("metadata {} has {} bytes, more than {}: ignored", key,
                                             value.size(), kMaxExportMetadataBytes));
            continue;
        }
        nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
        if (!j.is_array()) {
            m.warnings.push_back("metadata " + key +
                                 (rewrites ? " is not a JSON array of objects: ignored"
                                           : " is not a JSON array of tensor names: ignored"));
            continue;
        }
        if (j.size() > kMaxExportMetadataNames) {
            m.warnings.push_back(fmt::format("metadata {} lists {} names, more than {}: ignored",
                                             key, j.size(), kMaxExportMetadataNames));
            continue;
        }
        if (rewrites) {
            parseRewrites(key, j, m);
            continue;
        }
        bool ok = true;
        for (const auto &e : j)
            ok = ok && e.is_string() && !e.get_ref<const std::string &>().empty();
        if (!ok) {
            m.warnings.push_back("metadata " + key +
                                 " holds an entry that is not a tensor name: ignored");
            continue;
        }
        for (const auto &e : j) {
            const std::string &name = e.get_ref<const std::string &>();
            if (*kind == ir::ValueKind::Constant) {
                m.forwardConstants.push_back(name); // stays what the importer makes of it
                continue;
            }
            auto [it, inserted] = m.kinds.emplace(name, *kind);
            if (!inserted && it->second != *kind)
                twice.insert(name);
        }
    }
    if (!twice.empty()) {
        m.warnings.push_back(fmt::format("metadata gives {} tensor(s) two kinds (first '{}'): "
                                         "those are classified as if it said nothing",
                                         twice.size(), *twice.begin()));
        for (const std::string &name : twice)
            m.kinds.erase(name);
    }
    for (const std::string &w : m.warnings)
        if (w.find("remat.format") != std::string::npos) {
            m.kinds.clear();
            m.merged.clear();
            m.contiguous.clear();
            m.unread.clear();
            m.forwardConstants.clear();
        }
    return m;
}

} // namespace remat::core::onnx
