#pragma once
// Profile files: each op's measured time on a backend as versioned JSON ("format":
// "remat-profile", "version": 1), with the model (sha256), batch, backend and device it was
// measured on. Schema: docs/profile-format.md. `remat run --profile-out` writes them; `simulate`,
// `solve`, `train-graph --profile` and the planner read them.
//   Status s = io::saveProfile("p.json", recorder.profile());
//   Expected<cost::Profile> p = io::readProfile("p.json");   // then cost::profileCosts(*p, tg, ...)
// The older form, a JSON object of op name -> seconds (optionally under "ops", with
// "host_to_device_bandwidth" / "device_to_host_bandwidth"), reads as a profile without sizes or
// model identity: its ops are matched by name only.

#include "core/cost/profile.h"
#include "core/util/status.h"

#include <string>

namespace remat::core::io {

inline constexpr int kProfileFormatVersion = 1;

/// The profile as JSON text (pretty-printed, ends with a newline).
std::string writeProfile(const cost::Profile &profile);
/// Writes writeProfile()'s text to `path`.
Status saveProfile(const std::string &path, const cost::Profile &profile);

/// Reads and checks a profile: format and version, every field's type and range (times finite
/// and not negative, op names unique). `origin` names the input in messages.
Expected<cost::Profile> parseProfile(const std::string &text,
                                     const std::string &origin = "profile");
Expected<cost::Profile> readProfile(const std::string &path);

} // namespace remat::core::io
