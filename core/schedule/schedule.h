#pragma once
// The Schedule IR: an ordered list of steps over a TrainingGraph. Plain data that prints itself.
//   Schedule s;  s.compute(op);  s.free(t);  s.phase(PhaseMark::BackwardBegin);
//   Status ok = validate(s, tg);        // names the first broken step
//   std::string text = printSchedule(s, tg);

#include "core/training/training_graph.h"
#include "core/util/ids.h"
#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::schedule {

enum class StepKind : unsigned char {
    Compute,  ///< run op `target` (a first compute or a recompute); allocates its outputs
    Free,     ///< release tensor `target`'s device memory
    Offload,  ///< start copying tensor `target` device -> host on the copy lane (device copy kept
              ///< until a Free)
    Prefetch, ///< allocate tensor `target` on the device and copy it host -> device on the copy
              ///< lane; an op that reads it waits for the copy
    Phase,    ///< a marker; `target` is a PhaseMark
};

enum class PhaseMark : int32_t { ForwardBegin = 0, BackwardBegin = 1, End = 2 };

struct Step
{
    StepKind kind = StepKind::Compute;
    int32_t target =
        -1; ///< OpId for Compute, TensorId for Free/Offload/Prefetch, PhaseMark for Phase

    OpId op() const { return OpId(target); }
    TensorId tensor() const { return TensorId(target); }
    PhaseMark mark() const { return static_cast<PhaseMark>(target); }
    bool operator==(const Step &) const = default;
};

struct Schedule
{
    std::vector<Step> steps;

    void compute(OpId op) { steps.push_back({StepKind::Compute, op.value}); }
    void free(TensorId t) { steps.push_back({StepKind::Free, t.value}); }
    void offload(TensorId t) { steps.push_back({StepKind::Offload, t.value}); }
    void prefetch(TensorId t) { steps.push_back({StepKind::Prefetch, t.value}); }
    void phase(PhaseMark m) { steps.push_back({StepKind::Phase, static_cast<int32_t>(m)}); }
    size_t size() const { return steps.size(); }
    bool operator==(const Schedule &) const = default;
};

const char *stepKindName(StepKind kind);
const char *phaseMarkName(PhaseMark mark);

/// Proves the schedule is executable on `graph`: every op's inputs are resident when it runs,
/// nothing is used or freed after it is freed, offloaded values come back before use, every
/// requiredAtEnd tensor is resident at the end, every op's outputs fit (no double allocation
/// of a resident tensor unless the op is a recompute of that tensor). The error names the first
/// broken step: "step 17 (Compute conv1/grad): input 'relu1' is not resident (freed at step 9)".
Status validate(const Schedule &schedule, const training::TrainingGraph &graph);

/// Weight streaming: a preloaded tensor whose first Free/Offload/Prefetch step is a Prefetch
/// starts the step in host memory (not resident, with a host copy); a preloaded tensor with a host
/// copy may be freed and prefetched again. True per tensor id for those that start on the host.
std::vector<unsigned char> preloadedOnHost(const Schedule &schedule,
                                           const training::TrainingGraph &graph);

/// One line per step: "   17  compute   layer1.0/conv1/Conv/grad".
std::string printSchedule(const Schedule &schedule, const training::TrainingGraph &graph);

} // namespace remat::core::schedule
