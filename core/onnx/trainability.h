#pragma once
// Which weights train: the one rule, decided at import, that every later stage reads through
// ir::ValueKind (Parameter = trainable, Frozen = a weight that does not train, Buffer = state).
//   onnx::ImportOptions opt;  opt.trainablePatterns = {"lora_"};
//   REMAT_RETURN_IF_ERROR(onnx::checkTrainabilityPatterns(opt));   // invalid regex -> error
//   Status s = onnx::applyTrainability(values, opt, notes);        // after classification
//
// The rule, in order: a name the user classified (--classify NAME=KIND, the inspector) keeps that
// kind; the export's metadata (remat_export.py) comes next; then --freeze and --trainable decide
// among what is still a parameter: a parameter whose name contains a match of a --freeze pattern
// is frozen, and with any --trainable pattern a parameter matching none of them is frozen too.
// A buffer a weightless export presents as a parameter is, for memory, the same thing as a frozen
// weight (no gradient, no optimizer state), so `--classify NAME=buffer` and `--freeze NAME` give
// the same training step and differ only in how the summaries report the bytes.

#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/util/status.h"

#include <string>
#include <vector>

namespace remat::core::onnx {

/// Every --freeze / --trainable pattern compiles as an ECMAScript regular expression; the error
/// names the option, the pattern and what is wrong with it.
Status checkTrainabilityPatterns(const ImportOptions &options);

/// Applies --freeze / --trainable to `values` (graph inputs and initializers of kind Parameter
/// or Frozen; names in options.kindOverrides are left alone). Errors: a pattern that matches no
/// weight (the message lists a few real names), a set that freezes every parameter. On success a
/// line for ModelInfo::importNotes is appended to `notes` when anything was frozen.
Status applyTrainability(std::vector<ir::Value> &values, const ImportOptions &options,
                         std::vector<std::string> &notes);

} // namespace remat::core::onnx
