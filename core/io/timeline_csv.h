#pragma once
// The memory timeline as CSV: one row per schedule step, written the same way by
// `remat simulate --csv` and the planner's File > Export timeline CSV. Columns (docs/timeline-csv.md):
//   step,kind,name,bytes_in_use,peak_during_step,<one column per memory category>,end_seconds
//   REMAT_RETURN_IF_ERROR(io::saveTimelineCsv("t.csv", plan.schedule, tg, plan.timeline));

#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <string>

namespace remat::core::io {

/// What a step acts on, by name: the op of a compute, the tensor of a free / offload / prefetch,
/// the mark of a phase step ("backward-begin").
std::string timelineStepName(const schedule::Step &step, const training::TrainingGraph &graph);

/// The header line, without its newline.
std::string timelineCsvHeader();

/// The header and one row per step that has a timeline point (the simulator's recordPoints),
/// each line ending in '\n'. Names are quoted as RFC 4180 says where they hold a comma, a quote
/// or a line break; byte counts are integers, end_seconds has nine significant digits.
std::string formatTimelineCsv(const schedule::Schedule &schedule,
                              const training::TrainingGraph &graph, const sim::Timeline &timeline);

/// Writes formatTimelineCsv()'s text to `path`. Errors name the file.
Status saveTimelineCsv(const std::string &path, const schedule::Schedule &schedule,
                       const training::TrainingGraph &graph, const sim::Timeline &timeline);

} // namespace remat::core::io
