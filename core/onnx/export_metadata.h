#pragma once
// What remat_export.py (resources/python) writes beside the graph, in ONNX metadata_props, and
// the importer reads when present: what torch.onnx drops about the model's tensors.
//   ExportMetadata m = parseExportMetadata({{"remat.buffers", "[\"bn.running_mean\"]"}});
//   m.kinds.at("bn.running_mean") == ir::ValueKind::Buffer;
//
// Keys (each value a JSON array of tensor names as the graph names them):
//   remat.format      "1"
//   remat.parameters  the module's parameters with requires_grad True
//   remat.frozen      its parameters with requires_grad False
//   remat.buffers     its buffers (registered with register_buffer, persistent or not)
// Anything wrong (an unknown format, a value that is not a JSON array of strings, a name listed
// twice, more than kMaxNames names) is a warning and that key is ignored; names the graph does
// not have are reported by the importer and ignored. Nothing here throws.

#include "core/ir/graph.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace remat::core::onnx {

inline constexpr size_t kMaxExportMetadataNames = 1'000'000;
inline constexpr size_t kMaxExportMetadataBytes = size_t(64) << 20;

struct ExportMetadata
{
    bool present = false; ///< any remat.* key
    /// Kind by name: Parameter, Frozen or Buffer.
    std::map<std::string, ir::ValueKind> kinds;
    /// Problems found, in words; each made the importer ignore a key or a name.
    std::vector<std::string> warnings;
};

ExportMetadata parseExportMetadata(const std::vector<std::pair<std::string, std::string>> &props);

} // namespace remat::core::onnx
