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
//   remat.buffer_constants   Constant node outputs that are non-persistent buffers (resident)
//   remat.forward_constants  Constant node outputs that are tensors created in forward()
//   remat.merged      [{"node": N, "readers": [[R, ...], ...]}]: node N ran 1 + len(readers)
//                     times in PyTorch and torch.onnx merged the copies; group i reads copy i + 2,
//                     named "N#<i + 2>" (outputs "OUT#<i + 2>"); applied in the listed order
//   remat.unread      [{"name": N, "kind": "parameters"|"frozen"|"buffers", "dtype": "float32",
//                     "shape": [..]}]: the module's tensors no node reads (torch.onnx leaves them
//                     out); the importer adds them as unread graph inputs, resident all step
//   remat.contiguous  [{"value": V, "readers": [R, ...]}]: PyTorch made a contiguous copy of V
//                     (.contiguous(), which ONNX drops) and the nodes R read the copy
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

/// A node torch.onnx's common-subexpression pass merged: PyTorch ran it once per reader group
/// more, each copy read by its group.
struct MergedNode
{
    std::string node;
    std::vector<std::vector<std::string>> readers;
};

/// A tensor of the module that no node reads, with its ONNX element type.
struct UnreadTensor
{
    std::string name;
    ir::ValueKind kind = ir::ValueKind::Parameter;
    int32_t elemType = 1;
    std::vector<int64_t> shape;
};

/// A value PyTorch copied with .contiguous(), and the nodes that read the copy.
struct ContiguousCopy
{
    std::string value;
    std::vector<std::string> readers;
};

struct ExportMetadata
{
    bool present = false; ///< any remat.* key
    /// Kind by name: Parameter, Frozen or Buffer.
    std::map<std::string, ir::ValueKind> kinds;
    /// remat.merged, remat.contiguous: what the importer rewrites before reading the graph.
    std::vector<MergedNode> merged;
    std::vector<ContiguousCopy> contiguous;
    std::vector<UnreadTensor> unread;
    /// remat.forward_constants: Constant outputs PyTorch makes in forward() each step.
    std::vector<std::string> forwardConstants;
    /// Problems found, in words; each made the importer ignore a key or a name.
    std::vector<std::string> warnings;
};

ExportMetadata parseExportMetadata(const std::vector<std::pair<std::string, std::string>> &props);

} // namespace remat::core::onnx
