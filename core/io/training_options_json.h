#pragma once
// Training options (optimizer, precision, sharding, micro-batches, hyperparameters) as JSON: the
// "training" object of a session file (docs/session-format.md, version 2).
//   nlohmann::json j = io::trainingOptionsJson(options);  // {"optimizer": "adam", ...}
//   Expected<training::TrainingOptions> back = io::trainingOptionsFromJson(j, "s.rematproj");

#include "core/training/training_options.h"
#include "core/util/status.h"

#include <nlohmann/json.hpp>

#include <string>

namespace remat::core::io {

/// {"optimizer", "precision", "shard", "ranks", "micro_batches", "lr", "weight_decay"}: every
/// member written; "autocast_device" too for bf16-mixed / 16-mixed.
nlohmann::json trainingOptionsJson(const training::TrainingOptions &options);

/// The inverse; an absent member keeps its default. A malformed member is an InvalidArgument whose
/// message starts with `what` and names the member; the values are checked as `remat --optimizer`
/// and its siblings check them. `legacyPrecisionNames`: the precision is named as session files
/// before version 3 named it (training::parseLegacyPrecision: "bf16-mixed" was bf16-master).
Expected<training::TrainingOptions> trainingOptionsFromJson(const nlohmann::json &json,
                                                            const std::string &what,
                                                            bool legacyPrecisionNames = false);

} // namespace remat::core::io
