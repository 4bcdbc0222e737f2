#pragma once
// `.rematproj` session files: model path and SHA-256, batch, budget, objective, pins and every
// plan (schedule as op / tensor ids of the training graph the model gives at that batch, plus the
// solver's own figures). Figures are not stored: on open each plan is re-simulated, so what the
// user sees is the simulator's, exactly as before saving.
//   REMAT_RETURN_IF_ERROR(writeSessionFile("run.rematproj", session));
//   Expected<SessionData> s = readSessionFile("run.rematproj");
//   REMAT_RETURN_IF_ERROR(restorePlanFigures(&s->plans, problem));   // after loading the model

#include "core/solvers/solver.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/planner_problem.h"

#include <QString>

#include <vector>

namespace remat::ui {

struct SessionData
{
    QString modelPath;      ///< absolute when saved; resolved against the session folder on read
    QString modelSha256;
    int64_t batch = 1;
    int64_t budgetBytes = 0;
    core::solvers::Objective objective = core::solvers::Objective::MinTime;
    PinMap pins;
    std::vector<core::solvers::Plan> plans; ///< timelines empty until restorePlanFigures
    int currentPlan = -1;
    size_t opCount = 0, tensorCount = 0; ///< of the training graph the ids refer to
};

inline constexpr int kSessionFormatVersion = 1;

SessionData sessionFromDocument(const PlannerDocument &document, const PlannerProblem *problem);
core::Status writeSessionFile(const QString &path, const SessionData &session,
                              const core::training::TrainingGraph *graph);
core::Expected<SessionData> readSessionFile(const QString &path);
/// Checks the plans' ids against the rebuilt problem and fills their timelines by simulation.
core::Status restorePlanFigures(std::vector<core::solvers::Plan> *plans, const SessionData &session,
                                const PlannerProblem &problem);

} // namespace remat::ui
