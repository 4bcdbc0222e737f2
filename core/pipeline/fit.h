#pragma once
// "Will it fit?": per solver, the largest batch whose training step, as the solver plans it,
// fits a device's memory. The model is imported again at every batch tried (loadProblem: shapes
// re-inferred, the training options applied), each batch once for all solvers; the batch is
// found from 1 and 2 by following the line the simulated peaks draw through the batches tried
// (store-all's and min-peak plans' peaks grow about linearly with the batch), then false
// position (Illinois) between the largest fit and the smallest miss, with bisection where that
// stalls; min-time plans fill the memory they are given, so their searches double and bisect.
// Assumes the peak grows with the batch. The CLI
// (`remat fit`) and the planner's "Largest batch for this GPU" dialog both run this.
//   pipeline::Fitter fitter("mlp.onnx", loadOptions, {.memoryBytes = 24_GiB});
//   pipeline::FitResult r = fitter.fit("chen-sqrtn", registry.find("chen-sqrtn"));
//   r.batch;  r.plan->timeline.peakBytes;  r.trials;   // every batch tried and its peak

#include "core/pipeline/problem.h"
#include "core/solvers/solver.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace remat::core::pipeline {

/// The usual training GPUs by their memory: `remat fit --device NAME` and the dialog's presets.
struct DevicePreset
{
    const char *name;    ///< "24gb"
    int64_t gib;         ///< 24
    const char *example; ///< "RTX 3090 / 4090, A10, L4"
};
std::span<const DevicePreset> devicePresets();

struct FitSettings
{
    int64_t memoryBytes = 0;      ///< the device memory a plan's simulated peak must stay within
    int64_t maxBatch = 65536;     ///< the largest batch tried
    double timeLimitSeconds = 10; ///< per solve
    /// The whole search of one solver (every batch it tries): each solve gets at most a third
    /// of what is left of it, and the search stops, answering the largest batch found to fit, once it is
    /// spent. <= 0: no limit (each solve still has timeLimitSeconds).
    double searchSeconds = 0;
    /// A plan fits only if its simulated step is at most this many percent over store-all's at
    /// the same batch (`--max-overhead P`); negative: no limit.
    double maxOverheadPercent = -1;
};

/// One batch tried for one solver: its plan's simulated peak and whether it fit.
struct FitTrial
{
    int64_t batch = 0;
    int64_t peakBytes = 0;
    bool fits = false;
};

/// One solver's answer: the largest batch that fits and its plan (batch 0: none fits).
struct FitResult
{
    std::string solver;
    int64_t batch = 0;
    std::optional<solvers::Plan> plan;
    std::shared_ptr<const Problem> problem; ///< the problem at `batch`
    int64_t smallestPeak = 0;               ///< the peak at batch 1 (how far from fitting)
    double seconds = 0;
    int tries = 0;
    std::vector<FitTrial> trials; ///< in the order tried
    std::string error;            ///< the search failed (import at a batch, a solver error, stop)
    bool cancelled = false;       ///< stopped by the caller's token
    bool outOfTime = false; ///< a solve reached its time limit before any plan (`error` says so)
    /// The search stopped at settings().searchSeconds before the batch was pinned down: `batch`
    /// fits, `firstMiss` (0: none tried) does not, the batches between were not tried.
    bool searchStopped = false;
    int64_t firstMiss = 0;  ///< the smallest batch tried that did not fit (0: none)
    int solvesTimedOut = 0; ///< solves that stopped at their time limit (their best plan counted)
};

/// Searches per solver; keeps every batch's problem for the solvers after the first.
/// Not thread-safe: one Fitter per worker. Nothing here aborts.
class Fitter
{
public:
    /// `options.import.batch` is unused (the batch is searched); its stop and progress are
    /// replaced. `progress` (may be empty) is called before each batch is tried.
    using Progress = std::function<void(const std::string &solver, int64_t batch, int tries)>;
    Fitter(std::string modelPath, LoadOptions options, FitSettings settings, StopToken stop = {},
           Progress progress = {});

    /// The problem at `batch`, imported once per batch; an import or a training step that
    /// cannot be built is an error ("at batch N").
    Expected<std::shared_ptr<const Problem>> problemAt(int64_t batch);
    /// The solver's plan at `batch` within the memory (min-time under the memory as the
    /// budget: the fastest plan that fits; min-peak for solvers without that objective, within
    /// the settings' max overhead when one is set); null `solver`: store-all.
    Expected<solvers::Plan> planAt(const solvers::Solver *solver, int64_t batch,
                                   double timeLimitSeconds = -1);
    /// Whether the plan answered (a solve stopped at its time limit answers with its best plan),
    /// its simulated peak is within the memory and its step within
    /// the max overhead.
    bool fits(const solvers::Plan &plan) const;
    /// The search for one solver (null: store-all, named `id`).
    FitResult fit(const std::string &id, const solvers::Solver *solver);
    /// Batches imported so far.
    size_t imports() const { return m_cache.size(); }
    const FitSettings &settings() const { return m_settings; }

private:
    std::string m_modelPath;
    LoadOptions m_options;
    FitSettings m_settings;
    StopToken m_stop;
    Progress m_progress;
    std::map<int64_t, std::shared_ptr<const Problem>> m_cache;
};

} // namespace remat::core::pipeline
