#pragma once
// Wording shared by the validator and the simulator, so both name a broken step the same way.
//   std::string where = describeStep(s, 17, tg);   // "step 17 (compute layer1/conv1/Conv/grad)"
//   return makeError(StatusCode::InvalidArgument, where + ": " + notResidentReason(...));

#include "core/schedule/schedule.h"

#include <string>

namespace remat::core::schedule {

/// "step 17 (compute layer1/conv1/Conv/grad)", "step 3 (free #99)" for an out-of-range id.
std::string describeStep(const Schedule &schedule, size_t index,
                         const training::TrainingGraph &graph);

/// Why a tensor is not on the device, from what the walker recorded about it:
/// "never computed", "freed at step 9", "offloaded at step 4 and freed at step 9; prefetch it first".
std::string notResidentReason(int32_t freedAtStep, int32_t offloadedAtStep);

} // namespace remat::core::schedule
