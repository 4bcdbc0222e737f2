#include "core/cost/roofline.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

namespace remat::core::cost {

Costs rooflineCosts(const training::TrainingGraph &graph, const Roofline &hw)
{
    Costs c;
    c.opSeconds.reserve(graph.opCount());
    for (const training::Op &op : graph.ops()) {
        const double compute = hw.peakFlops > 0 ? op.flops / hw.peakFlops : 0.0;
        const double memory =
            hw.memoryBandwidth > 0 ? double(op.bytesAccessed) / hw.memoryBandwidth : 0.0;
        c.opSeconds.push_back(std::max(compute, memory) + hw.launchOverhead);
    }
    c.hostToDeviceBandwidth = hw.hostToDeviceBandwidth;
    c.deviceToHostBandwidth = hw.deviceToHostBandwidth;
    c.hostMemoryBytes = hw.hostMemoryBytes;
    c.source = "roofline";
    return c;
}

Expected<Costs> parseProfile(const std::string &text, const training::TrainingGraph &graph,
                             const Roofline *fallback)
{
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object())
        return makeError(StatusCode::ParseError, "profile: not a JSON object");
    Costs c = fallback ? rooflineCosts(graph, *fallback) : Costs{};
    const nlohmann::json *ops = &doc;
    if (doc.contains("ops")) {
        ops = &doc["ops"];
        if (!ops->is_object())
            return makeError(StatusCode::ParseError, "profile: \"ops\" is not an object");
        for (const char *key : {"host_to_device_bandwidth", "device_to_host_bandwidth"}) {
            if (!doc.contains(key))
                continue;
            if (!doc[key].is_number() || doc[key].get<double>() <= 0)
                return makeError(StatusCode::ParseError,
                                 fmt::format("profile: {} must be a positive number", key));
        }
        if (doc.contains("host_to_device_bandwidth"))
            c.hostToDeviceBandwidth = doc["host_to_device_bandwidth"].get<double>();
        if (doc.contains("device_to_host_bandwidth"))
            c.deviceToHostBandwidth = doc["device_to_host_bandwidth"].get<double>();
    }
    std::unordered_map<std::string, double> byName;
    for (auto it = ops->begin(); it != ops->end(); ++it) {
        if (!it.value().is_number() || it.value().get<double>() < 0)
            return makeError(
                StatusCode::ParseError,
                fmt::format("profile: time of op '{}' is not a non-negative number", it.key()));
        byName[it.key()] = it.value().get<double>();
    }
    c.opSeconds.resize(graph.opCount(), 0.0);
    size_t matched = 0;
    for (const training::Op &op : graph.ops()) {
        auto it = byName.find(op.name);
        if (it != byName.end()) {
            c.opSeconds[op.id.index()] = it->second;
            ++matched;
        } else if (!fallback) {
            return makeError(StatusCode::NotFound,
                             fmt::format("profile: no time for op '{}'", op.name));
        }
    }
    c.source = fallback && matched < graph.opCount() ? "profile+roofline" : "profile";
    c.timeSource = matched < graph.opCount() ? TimeSource::Estimate : TimeSource::Profile;
    return c;
}

Expected<Costs> loadProfile(const std::string &path, const training::TrainingGraph &graph,
                            const Roofline *fallback)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(StatusCode::NotFound, fmt::format("profile '{}' cannot be opened", path));
    std::stringstream ss;
    ss << in.rdbuf();
    auto c = parseProfile(ss.str(), graph, fallback);
    if (!c)
        return c.status().withContext(path);
    c->source = "profile:" + path;
    return c;
}

} // namespace remat::core::cost
