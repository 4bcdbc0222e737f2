#include "core/exec/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace remat::core::exec {

MemoryPlan planOffsets(const std::vector<BlockLifetime> &blocks, int64_t alignment)
{
    const size_t n = blocks.size();
    alignment = std::max<int64_t>(1, alignment);
    auto aligned = [&](int64_t b) {
        return (std::max<int64_t>(b, 1) + alignment - 1) / alignment * alignment;
    };

    MemoryPlan plan;
    plan.offsets.assign(n, 0);

    // The lower bound: aligned bytes alive at once, swept over the events.
    {
        std::vector<std::pair<int64_t, int64_t>> deltas; // (event, +/- bytes); releases first
        deltas.reserve(2 * n);
        for (const BlockLifetime &b : blocks) {
            deltas.emplace_back(b.begin, aligned(b.bytes));
            deltas.emplace_back(b.end, -aligned(b.bytes));
        }
        std::sort(deltas.begin(), deltas.end());
        int64_t live = 0;
        for (const auto &[event, d] : deltas) {
            live += d;
            plan.liveBytesPeak = std::max(plan.liveBytesPeak, live);
        }
    }

    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (blocks[a].bytes != blocks[b].bytes)
            return blocks[a].bytes > blocks[b].bytes;
        return blocks[a].begin < blocks[b].begin;
    });

    struct Placed
    {
        int64_t offset, size, begin, end;
    };
    std::vector<Placed> placed;
    placed.reserve(n);
    std::vector<std::pair<int64_t, int64_t>>
        busy; // (offset, end offset) of time-overlapping blocks
    for (size_t i : order) {
        const BlockLifetime &b = blocks[i];
        const int64_t size = aligned(b.bytes);
        busy.clear();
        for (const Placed &p : placed)
            if (p.begin < b.end && b.begin < p.end)
                busy.emplace_back(p.offset, p.offset + p.size);
        std::sort(busy.begin(), busy.end());
        // smallest gap that fits; else above everything that overlaps in time
        int64_t bestOffset = -1, bestGap = 0, cursor = 0;
        for (const auto &[lo, hi] : busy) {
            if (lo - cursor >= size && (bestOffset < 0 || lo - cursor < bestGap)) {
                bestOffset = cursor;
                bestGap = lo - cursor;
            }
            cursor = std::max(cursor, hi);
        }
        if (bestOffset < 0)
            bestOffset = cursor;
        plan.offsets[i] = bestOffset;
        placed.push_back({bestOffset, size, b.begin, b.end});
        plan.arenaBytes = std::max(plan.arenaBytes, bestOffset + size);
    }
    return plan;
}

} // namespace remat::core::exec
