#include "core/io/timeline_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace remat::core::io {

namespace {

/// RFC 4180 quoting: ONNX names may hold commas.
std::string csvField(const std::string &s)
{
    if (s.find_first_of(",\"\r\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

} // namespace

std::string timelineStepName(const schedule::Step &step, const training::TrainingGraph &graph)
{
    switch (step.kind) {
    case schedule::StepKind::Compute: return graph.op(step.op()).name;
    case schedule::StepKind::Phase: return schedule::phaseMarkName(step.mark());
    default: return graph.tensor(step.tensor()).name;
    }
}

std::string timelineCsvHeader()
{
    std::string h = "step,kind,name,bytes_in_use,peak_during_step";
    for (size_t c = 0; c < schedule::kMemCategoryCount; ++c)
        h += std::string(",") + schedule::memCategoryName(static_cast<schedule::MemCategory>(c));
    return h + ",end_seconds";
}

std::string formatTimelineCsv(const schedule::Schedule &s, const training::TrainingGraph &graph,
                              const sim::Timeline &t)
{
    std::string out = timelineCsvHeader() + "\n";
    const size_t rows = std::min(s.steps.size(), t.points.size());
    for (size_t i = 0; i < rows; ++i) {
        const sim::TimelinePoint &p = t.points[i];
        out += fmt::format("{},{},{},{},{}", i, schedule::stepKindName(s.steps[i].kind),
                           csvField(timelineStepName(s.steps[i], graph)), p.bytesInUse,
                           p.peakDuringStep);
        for (int64_t b : p.byCategory)
            out += fmt::format(",{}", b);
        out += fmt::format(",{:.9g}\n", p.endSeconds);
    }
    return out;
}

Status saveTimelineCsv(const std::string &path, const schedule::Schedule &s,
                       const training::TrainingGraph &graph, const sim::Timeline &t)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(StatusCode::NotFound, path + ": cannot open for writing");
    out << formatTimelineCsv(s, graph, t);
    out.close();
    return out ? Status::ok() : makeError(StatusCode::Internal, path + ": write failed");
}

} // namespace remat::core::io
