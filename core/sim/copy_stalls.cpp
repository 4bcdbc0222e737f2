#include "core/sim/copy_stalls.h"

#include "core/schedule/observer.h"
#include "core/sim/simulator.h"

#include <algorithm>

namespace remat::core::sim {

namespace {

using schedule::StepKind;

/// The compute lane's clock before each step, from the events: a Compute starts when its lane is
/// free and its inputs are ready (a gap is a prefetch still copying), a Free starts once the
/// tensor's offload has finished (a gap is that copy). Offload, Prefetch run on the copy lane.
class StallObserver final : public schedule::ScheduleObserver
{
public:
    explicit StallObserver(size_t steps) { stalls.perStep.assign(steps, 0.0); }
    void onStepEnd(const schedule::StepEvent &ev) override
    {
        if (ev.step.kind != StepKind::Compute && ev.step.kind != StepKind::Free)
            return;
        const double wait = ev.startSeconds - m_clock;
        if (wait > 1e-15) {
            stalls.perStep[size_t(ev.index.value)] = wait;
            stalls.totalSeconds += wait;
            ++stalls.steps;
        }
        m_clock =
            std::max(m_clock, ev.step.kind == StepKind::Compute ? ev.endSeconds : ev.startSeconds);
    }
    CopyStalls stalls;

private:
    double m_clock = 0;
};

} // namespace

Expected<CopyStalls> copyStalls(const schedule::Schedule &schedule,
                                const training::TrainingGraph &graph, const cost::Costs &costs)
{
    const bool copies =
        std::any_of(schedule.steps.begin(), schedule.steps.end(), [](const auto &s) {
            return s.kind == StepKind::Offload || s.kind == StepKind::Prefetch;
        });
    if (!copies) {
        CopyStalls none;
        none.perStep.assign(schedule.steps.size(), 0.0);
        return none;
    }
    StallObserver observer(schedule.steps.size());
    SimOptions options;
    options.observer = &observer;
    options.recordPoints = false;
    REMAT_ASSIGN_OR_RETURN(Timeline t, simulate(schedule, graph, costs, options));
    (void)t;
    return std::move(observer.stalls);
}

} // namespace remat::core::sim
