#pragma once
// Reasons the importer gives a value's kind (ir::Value::kindReason) that later stages read, not
// only people: one spelling, shared.
//   if (v.kindReason == ir::kMadeInForwardReason) ...   // training/builder.cpp's summarize

namespace remat::core::ir {

/// A Constant node's output that remat_export.py's metadata (remat.forward_constants) names as a
/// tensor PyTorch creates in forward() every step (torch.arange(...) in forward), not a module's
/// non-persistent buffer, which torch.onnx folds into a Constant node exactly alike.
inline constexpr const char *kMadeInForwardReason =
    "the export's metadata: created in forward() each step (remat.forward_constants)";

} // namespace remat::core::ir
