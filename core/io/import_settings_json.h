#pragma once
// A model's import settings (free dims, whole input shapes, scalar input values, If branches,
// classification overrides, semantics) as JSON: the "import" object of a session file (docs/session-format.md),
// and what the GUI remembers per model file.
//   nlohmann::json j = io::importSettingsJson(options);   // {"dims": {"height": 224}, "semantics": "training"}
//   Expected<onnx::ImportOptions> back = io::importSettingsFromJson(j, "run.rematproj: \"import\"");

#include "core/onnx/importer.h"
#include "core/util/status.h"

#include <nlohmann/json.hpp>

#include <string>

namespace remat::core::io {

/// {"dims": {...}, "input_shapes": {"x": "1x3x224x224"}, "input_values": {...},
///  "branches": {"/If": "then"}, "classify": {...}, "freeze": ["^encoder\\."], "trainable": ["lora_"],
///  "semantics": "training"}: empty members are left out, "semantics" is always written. The
/// batch, stop token and progress callback are not settings of the file and are not written.
nlohmann::json importSettingsJson(const onnx::ImportOptions &settings);

/// The inverse. Every entry goes through the command line's parsers (onnx/input_spec.h), so a
/// file cannot hold what `remat --dim` would refuse; a malformed entry is an InvalidArgument
/// whose message starts with `what`. A member that is not an object is read as empty.
Expected<onnx::ImportOptions> importSettingsFromJson(const nlohmann::json &json,
                                                     const std::string &what);

} // namespace remat::core::io
