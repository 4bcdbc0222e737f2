#pragma once
// `.rematproj` session files as the planner holds them (Qt types). The format is core's
// (core/io/session_file.h, docs/session-format.md): these convert and call it. On open each plan
// is validated against the rebuilt training graph and re-simulated, so the figures the user sees
// are the simulator's, exactly as before saving (and as `remat simulate --session` prints them).
//   REMAT_RETURN_IF_ERROR(writeSessionFile("run.rematproj", session, graph));
//   Expected<SessionData> s = readSessionFile("run.rematproj");
//   Expected<std::vector<Plan>> plans = restorePlans(*s, problem, "run.rematproj");   // after loading the model

#include "core/io/session_file.h"
#include "core/onnx/importer.h"
#include "core/solvers/solver.h"
#include "ui/planner/planner_problem.h"

#include <QByteArray>
#include <QMap>
#include <QString>

#include <optional>
#include <vector>

namespace remat::ui {

class PlannerDocument;
/// The same alias as planner_document.h's: this header does not include the document (QUndoStack
/// is QtGui).
using PinMap = QMap<QString, core::solvers::PinKind>;

struct SessionData
{
    QString modelPath; ///< absolute when saved; resolved against the session folder on read
    QString modelSha256;
    int64_t batch = 1;
    /// Free dims, input shapes and values, classification, semantics ("import" in the file;
    /// absent in sessions written before it: the defaults).
    core::onnx::ImportOptions importSettings;
    /// Optimizer, precision, sharding, micro-batches ("training", version 2; absent: none).
    core::training::TrainingOptions training;
    int64_t budgetBytes = 0;
    core::solvers::Objective objective = core::solvers::Objective::MinTime;
    double maxOverheadPercent = -1; ///< "Lowest peak within X% slower" (-1: none)
    PinMap pins;
    std::vector<core::solvers::Plan> plans; ///< to write
    std::vector<std::string> planTexts;     ///< as read: plan JSON, parsed by restorePlanFigures
    int currentPlan = -1;
    size_t opCount = 0, tensorCount = 0;              ///< of the training graph the ids refer to
    QString solver;                                   ///< the Solver dock's choice
    std::vector<core::io::SessionParetoPoint> pareto; ///< the last Pareto sweep
    core::io::SessionView view;                       ///< colour mode, selections
    std::optional<core::io::SessionRun> run;          ///< the last run's result
};

/// Defined in session_from_document.cpp (it needs the document, hence QtGui).
SessionData sessionFromDocument(const PlannerDocument &document, const PlannerProblem *problem);
core::Status writeSessionFile(const QString &path, const SessionData &session,
                              const core::training::TrainingGraph *graph);
/// Reads a session file; every malformed input is a Status naming `path` (docs/readers.md).
core::Expected<SessionData> readSessionFile(const QString &path);
/// The same from bytes in memory; `path` names it in messages and resolves the model's relative
/// path.
core::Expected<SessionData> parseSessionFile(const QByteArray &bytes, const QString &path);
/// Parses the session's plans against the rebuilt problem (names, ids, model identity, schedule
/// validation) and re-simulates their figures.
core::Expected<std::vector<core::solvers::Plan>>
restorePlans(const SessionData &session, const PlannerProblem &problem, const QString &origin);

} // namespace remat::ui
