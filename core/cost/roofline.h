#pragma once
// Op times from FLOPs and bytes (the roofline), or from a measured profile.
//   cost::Costs c = cost::rooflineCosts(tg, cost::Roofline{});
//   Expected<cost::Costs> m = cost::loadProfile("profile.json", tg);   // {"op name": seconds}
//   c.opSeconds[op.id.index()];

#include "core/cost/costs.h"
#include "core/util/status.h"

#include <string>

namespace remat::core::cost {

/// time = max(flops / peakFlops, bytesAccessed / memoryBandwidth) + launchOverhead, per op.
Costs rooflineCosts(const training::TrainingGraph &graph, const Roofline &hw = {});

/// A measured profile: a JSON object mapping op names to seconds, optionally wrapped as
/// {"ops": {...}, "host_to_device_bandwidth": B/s, "device_to_host_bandwidth": B/s}. Ops the
/// profile does not name take their roofline time from `fallback` (when given) or are an error.
Expected<Costs> parseProfile(const std::string &json, const training::TrainingGraph &graph,
                             const Roofline *fallback = nullptr);
Expected<Costs> loadProfile(const std::string &path, const training::TrainingGraph &graph,
                            const Roofline *fallback = nullptr);

} // namespace remat::core::cost
