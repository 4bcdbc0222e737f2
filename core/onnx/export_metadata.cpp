#include "core/onnx/export_metadata.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <set>

namespace remat::core::onnx {

ExportMetadata parseExportMetadata(const std::vector<std::pair<std::string, std::string>> &props)
{
    ExportMetadata m;
    const std::pair<const char *, ir::ValueKind> lists[] = {
        {"remat.parameters", ir::ValueKind::Parameter},
        {"remat.frozen", ir::ValueKind::Frozen},
        {"remat.buffers", ir::ValueKind::Buffer},
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
        if (!kind)
            continue; // a key of a later format: nothing to read here
        if (value.size() > kMaxExportMetadataBytes) {
            m.warnings.push_back(fmt::format("metadata {} has {} bytes, more than {}: ignored", key,
                                             value.size(), kMaxExportMetadataBytes));
            continue;
        }
        nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
        if (!j.is_array()) {
            m.warnings.push_back("metadata " + key +
                                 " is not a JSON array of tensor names: ignored");
            continue;
        }
        if (j.size() > kMaxExportMetadataNames) {
            m.warnings.push_back(fmt::format("metadata {} lists {} names, more than {}: ignored",
                                             key, j.size(), kMaxExportMetadataNames));
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
        if (w.find("remat.format") != std::string::npos)
            m.kinds.clear();
    return m;
}

} // namespace remat::core::onnx
