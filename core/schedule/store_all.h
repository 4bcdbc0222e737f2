#pragma once
// The schedule PyTorch runs without checkpointing: every forward op once, the loss, every backward
// op once in stored order, and each tensor freed right after its last use.
//   schedule::Schedule s = schedule::storeAllSchedule(tg);
//   Expected<sim::Timeline> t = sim::simulate(s, tg, costs);   // the "no remat" baseline

#include "core/schedule/schedule.h"

namespace remat::core::schedule {

/// ForwardBegin, forward ops in order, the loss op(s), BackwardBegin, backward ops in stored
/// (reverse forward) order, End. After each compute, frees the op's inputs whose last consumer it
/// is and its outputs nobody reads, except preloaded and requiredAtEnd tensors.
Schedule storeAllSchedule(const training::TrainingGraph &graph);

} // namespace remat::core::schedule
