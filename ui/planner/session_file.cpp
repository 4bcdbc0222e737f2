// The planner's session types over core's session format (core/io/session_file.h): the file is
// read and written there; this converts between its std types and the planner's Qt ones.
#include "ui/planner/session_file.h"

#include "core/io/session_file.h"
#include "core/util/reader_guard.h"

namespace remat::ui {

using core::solvers::Plan;

namespace {

QString qs(const std::string &s) { return QString::fromStdString(s); }

core::io::Session toCore(const SessionData &s)
{
    core::io::Session c;
    c.modelPath = s.modelPath.toStdString();
    c.modelSha256 = s.modelSha256.toStdString();
    c.batch = s.batch;
    c.importSettings = s.importSettings;
    c.training = s.training;
    c.budgetBytes = s.budgetBytes;
    c.objective = s.objective;
    c.maxOverheadPercent = s.maxOverheadPercent;
    for (auto it = s.pins.cbegin(); it != s.pins.cend(); ++it)
        c.pins.insert_or_assign(it.key().toStdString(), it.value());
    c.plans = s.plans;
    c.planTexts = s.planTexts;
    c.currentPlan = s.currentPlan;
    c.opCount = s.opCount;
    c.tensorCount = s.tensorCount;
    c.solver = s.solver.toStdString();
    c.pareto = s.pareto;
    c.view = s.view;
    c.run = s.run;
    return c;
}

SessionData fromCore(core::io::Session &&c)
{
    SessionData s;
    s.modelPath = qs(c.modelPath);
    s.modelSha256 = qs(c.modelSha256);
    s.batch = c.batch;
    s.importSettings = std::move(c.importSettings);
    s.training = c.training;
    s.budgetBytes = c.budgetBytes;
    s.objective = c.objective;
    s.maxOverheadPercent = c.maxOverheadPercent;
    for (const auto &[tensor, kind] : c.pins)
        s.pins.insert(qs(tensor), kind);
    s.plans = std::move(c.plans);
    s.planTexts = std::move(c.planTexts);
    s.currentPlan = c.currentPlan;
    s.opCount = c.opCount;
    s.tensorCount = c.tensorCount;
    s.solver = qs(c.solver);
    s.pareto = std::move(c.pareto);
    s.view = std::move(c.view);
    s.run = std::move(c.run);
    return s;
}

} // namespace

core::Status writeSessionFile(const QString &path, const SessionData &s,
                              const core::training::TrainingGraph *graph)
{
    return core::io::saveSession(path.toStdString(), toCore(s), graph);
}

core::Expected<SessionData> parseSessionFile(const QByteArray &bytes, const QString &path)
{
    return core::guardReader(path.toStdString(), [&]() -> core::Expected<SessionData> {
        REMAT_ASSIGN_OR_RETURN(core::io::Session s,
                               core::io::parseSession(bytes.toStdString(), path.toStdString()));
        return fromCore(std::move(s));
    });
}

core::Expected<SessionData> readSessionFile(const QString &path)
{
    return core::guardReader(path.toStdString(), [&]() -> core::Expected<SessionData> {
        REMAT_ASSIGN_OR_RETURN(core::io::Session s, core::io::readSession(path.toStdString()));
        return fromCore(std::move(s));
    });
}

core::Expected<std::vector<Plan>> restorePlans(const SessionData &session,
                                               const PlannerProblem &problem, const QString &origin)
{
    return core::guardReader(origin.toStdString(), [&]() -> core::Expected<std::vector<Plan>> {
        if (!problem.training || !problem.costs)
            return core::makeError(core::StatusCode::InvalidArgument,
                                   origin.toStdString() + ": the session's model is not loaded");
        return core::io::restoreSessionPlans(toCore(session), *problem.training, *problem.costs,
                                             origin.toStdString());
    });
}

} // namespace remat::ui
