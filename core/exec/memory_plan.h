#pragma once
// Static memory planning: given every buffer of a training step with its size and lifetime, one
// offset per buffer inside a single arena such that buffers alive at the same time never overlap.
// A device backend that has seen a schedule's allocations once can serve the next steps from one
// arena, so the device holds about the plan's peak instead of a caching pool's fragmented high
// water mark.
//   std::vector<BlockLifetime> blocks = {{1024, 0, 3}, {512, 1, 2}};
//   MemoryPlan plan = planOffsets(blocks);   // plan.offsets[i], plan.arenaBytes

#include <cstdint>
#include <vector>

namespace remat::core::exec {

/// One buffer: `bytes`, alive over the event interval [begin, end) (events: allocations and
/// releases numbered in call order; a buffer never released has end = the last event + 1).
struct BlockLifetime
{
    int64_t bytes = 0;
    int64_t begin = 0;
    int64_t end = 0;
};

struct MemoryPlan
{
    std::vector<int64_t> offsets; ///< per block, multiples of the alignment
    int64_t arenaBytes = 0;       ///< the end of the highest block
    int64_t liveBytesPeak = 0;    ///< the most aligned bytes alive at once: no plan does better
};

/// Greedy by size: the largest blocks are placed first, each in the smallest gap between the
/// blocks already placed that overlap it in time (else above them). Typically within a few
/// percent of liveBytesPeak on training schedules (tests/exec/tst_memory_plan).
MemoryPlan planOffsets(const std::vector<BlockLifetime> &blocks, int64_t alignment = 256);

} // namespace remat::core::exec
