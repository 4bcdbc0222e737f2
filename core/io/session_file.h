#pragma once
// Session files (.rematproj): the model (path and SHA-256), batch, import settings, budget,
// objective, pins and every plan, each in the plan format (plan_file.h). Versioned JSON
// ("format": "remat-studio-session", "version": 2; 1 is read too); schema: docs/session-format.md. The planner
// saves and reopens sessions (ui/planner/session_file.h adapts this to its types) and
// `remat simulate --session` re-simulates one's current plan.
//   REMAT_RETURN_IF_ERROR(io::saveSession("run.rematproj", session, &tg));
//   Expected<io::Session> s = io::readSession("run.rematproj");   // the model path resolved
//   // ... import s->modelPath at s->batch with s->importSettings, build, cost, then:
//   Expected<std::vector<solvers::Plan>> plans = io::restoreSessionPlans(*s, tg, costs, "run.rematproj");

#include "core/cost/costs.h"
#include "core/onnx/importer.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::io {

/// One point of the planner's Pareto sweep (version 2).
struct SessionParetoPoint
{
    std::string solver;
    int64_t budgetBytes = 0;
    int64_t peakBytes = 0;
    double overheadPercent = 0;
    bool feasible = false;
};

/// What the planner's views showed (version 2, optional: absent or empty fields restore nothing).
struct SessionView
{
    std::string colourMode;   ///< "op-type", "activation-bytes", "flops", "plan"; empty: unsaved
    std::string selectedNode; ///< the graph's selected node, by name
    std::vector<int>
        overlaidPlans; ///< plans selected beside the current one (their curves overlaid)
    bool empty() const
    {
        return colourMode.empty() && selectedNode.empty() && overlaidPlans.empty();
    }
};

/// The last run of a plan on a backend (version 2, optional): its outcome and the measured curves
/// of its last iteration, so a reopened session shows measured beside predicted again.
struct SessionRun
{
    int plan = -1;       ///< index into the plans of the plan that ran; -1: unknown
    std::string backend; ///< "cpu", "cuda:0"
    bool ok = false;
    bool cancelled = false;
    std::string error;
    int failedStep = -1;
    int iterations = 0;
    int64_t measuredPeakBytes = 0;
    double stepSeconds = 0;
    bool gradientsChecked = false;
    bool gradientsMatch = false;
    double maxRelativeError = 0;
    std::string worstEntry;
    std::vector<std::pair<int, int64_t>> bytesInUse; ///< (step, bytes) of the last iteration
    std::vector<std::pair<int, double>> stepTimes;   ///< (step, seconds) of the last iteration
};
/// At most this many points of each measured curve are kept in a session (the highest of each
/// bucket, as the charts draw them).
inline constexpr size_t kMaxSessionRunPoints = 4000;

struct Session
{
    std::string
        modelPath; ///< absolute when written; on read, resolved against the session's folder
    std::string modelSha256;
    int64_t batch = 1;
    /// Free dims, input shapes and values, classification, semantics ("import" in the file;
    /// absent in sessions written before it: the defaults).
    onnx::ImportOptions importSettings;
    /// Optimizer, precision, sharding, micro-batches ("training", version 2; absent: none).
    training::TrainingOptions training;
    int64_t budgetBytes = 0;
    solvers::Objective objective = solvers::Objective::MinTime;
    /// min-peak within this many percent of store-all's step ("max_overhead_percent"; absent
    /// or negative: no limit).
    double maxOverheadPercent = -1;
    std::map<std::string, solvers::PinKind> pins; ///< by tensor name
    std::vector<solvers::Plan> plans;             ///< to write
    std::vector<std::string>
        planTexts;        ///< as read: each plan's JSON, parsed by restoreSessionPlans
    int currentPlan = -1; ///< index into the plans; -1: none
    size_t opCount = 0, tensorCount = 0; ///< of the training graph the plans' ids refer to
    // Version 2 (absent from version-1 files: empty).
    std::string solver;                     ///< the solver chosen in the planner
    std::vector<SessionParetoPoint> pareto; ///< the last Pareto sweep
    SessionView view;                       ///< colour mode, selections
    std::optional<SessionRun> run;          ///< the last run's result
};

/// Written as 2 (optional "training", "solver", "pareto", "view" and "run"); version 1 (without
/// them) is still read.
/// 3: precision names as Lightning's (bf16-mixed is autocast); 2 and 1 are read as written.
inline constexpr int kSessionFormatVersion = 3;
inline constexpr int kOldestSessionFormatVersion = 1;

/// The session as JSON text, for a file at `sessionPath` (the model's path is also written relative
/// to it). The plans need the training graph they were made on; `graph` also gives the op and
/// tensor counts (else the session's own). Errors: plans without a graph.
Expected<std::string> formatSession(const Session &session, const std::string &sessionPath,
                                    const training::TrainingGraph *graph);
/// Writes formatSession()'s text to `path`, through a temporary file renamed over it (a failed
/// write leaves the old file whole).
Status saveSession(const std::string &path, const Session &session,
                   const training::TrainingGraph *graph);

/// Reads a session from `text`; `path` names it in messages and resolves the model's relative
/// path (a session moved together with its model). Every malformed input is a Status naming
/// `path` (docs/readers.md). The plans are kept as text: they can only be checked against the
/// model's training graph (restoreSessionPlans).
Expected<Session> parseSession(const std::string &text, const std::string &path);
/// The same from the file `path` (at most 1 GiB).
Expected<Session> readSession(const std::string &path);

/// Parses the session's plans against the rebuilt training graph (names, ids, model identity,
/// schedule validation; plan_file.h) and re-simulates their figures with `costs`, one timeline
/// point per step. `origin` names the session in messages ("run.rematproj, plan 2: ...").
Expected<std::vector<solvers::Plan>> restoreSessionPlans(const Session &session,
                                                         const training::TrainingGraph &graph,
                                                         const cost::Costs &costs,
                                                         const std::string &origin);

} // namespace remat::core::io
