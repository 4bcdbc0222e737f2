#pragma once
// Records each op's measured time while the Executor runs a schedule, and turns the timed
// iterations into a cost::Profile (per op: the median of its first computes and of its
// recomputes). The executor synchronises after every Compute step, so a step's time is its op's.
//   ProfileRecorder rec(tg);
//   ex.run(s, {.observer = &rec});  rec.discardIteration();                  // warm-up
//   auto r = ex.run(s, {.observer = &rec});  rec.commitIteration(r->stepSeconds);
//   cost::Profile p = rec.profile({.backend = "cpu", ...});

#include "core/cost/profile.h"
#include "core/schedule/observer.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <string>
#include <vector>

namespace remat::core::exec {

/// What a profile was measured on, beside its times.
struct ProfileContext
{
    std::string backend;  ///< Backend::id()
    std::string device;   ///< Backend::description()
    std::string schedule; ///< "store-all" or the plan's solver
};

class ProfileRecorder : public schedule::ScheduleObserver
{
public:
    /// `graph` must outlive the recorder.
    explicit ProfileRecorder(const training::TrainingGraph &graph);

    void onStepEnd(const schedule::StepEvent &event) override;

    /// The run that just ended counts: its op times join the samples; `stepSeconds` is its wall time
    /// (ExecResult::stepSeconds).
    void commitIteration(double stepSeconds);
    /// The run that just ended (a warm-up, or a failed one) does not count.
    void discardIteration();

    int timedIterations() const { return int(m_stepSeconds.size()); }
    int warmupIterations() const { return m_discarded; }
    /// Median of the committed step times (0 before any).
    double medianStepSeconds() const;

    /// Every op of the graph with at least one sample, in graph order, with the model identity
    /// and batch from the graph's info.
    cost::Profile profile(const ProfileContext &context) const;

private:
    struct Pending
    {
        OpId op;
        double seconds;
        bool recompute;
    };
    const training::TrainingGraph &m_graph;
    std::vector<Pending> m_current;
    std::vector<std::vector<double>> m_first;     ///< per op: first-compute times
    std::vector<std::vector<double>> m_recompute; ///< per op: recompute times
    std::vector<double> m_stepSeconds;
    std::vector<double> m_overheadSeconds; ///< per iteration: step time not in Compute steps
    std::vector<double> m_computeSeconds;  ///< per iteration: time in Compute steps
    int m_discarded = 0;
};

class Backend;
struct ExecInputs;

/// Times `graph`'s store-all step on `backend` as `remat run --profile-out` does: one warm-up run,
/// then `iterations` timed ones, into a profile. Inputs from `inputs` (random where it lacks
/// them). Cancelled (an error) when `stop` fires.
Expected<cost::Profile> profileStoreAll(Backend &backend, const training::TrainingGraph &graph,
                                        const ir::Graph &forward, const ExecInputs &inputs,
                                        int iterations, const ProfileContext &context,
                                        const StopToken &stop = {});

/// The batch a profile's second point is taken at: half the batch, or 2 for batch 1.
int64_t secondProfileBatch(int64_t batch);

/// Gives `profile`'s ops their second point from `other` (the same model's store-all profile at
/// another batch), matched by op name, and sets Profile::secondBatch. Returns how many ops got one.
int addSecondPoint(cost::Profile &profile, const cost::Profile &other);

/// The median of `v` (mean of the middle two for an even count); 0 for an empty vector.
double median(std::vector<double> v);

} // namespace remat::core::exec
