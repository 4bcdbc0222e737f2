#include "ui/planner/session_file.h"

#include "core/sim/simulator.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace remat::ui {

using core::StatusCode;
using core::solvers::Plan;

namespace {

QString str(const std::string &s) { return QString::fromStdString(s); }

core::Status bad(const QString &path, const QString &what)
{
    return core::makeError(StatusCode::ParseError, (path + QStringLiteral(": ") + what).toStdString());
}

std::optional<core::solvers::SolveStatus> parseStatus(const QString &s)
{
    using core::solvers::SolveStatus;
    for (SolveStatus v : {SolveStatus::Optimal, SolveStatus::Feasible, SolveStatus::Infeasible,
                          SolveStatus::TimedOut, SolveStatus::Cancelled})
        if (s == QLatin1String(core::solvers::solveStatusName(v)))
            return v;
    return std::nullopt;
}

std::optional<core::solvers::PinKind> parsePinKind(const QString &s)
{
    using core::solvers::PinKind;
    for (PinKind v : {PinKind::Keep, PinKind::Recompute, PinKind::Offload})
        if (s == QLatin1String(core::solvers::pinKindName(v)))
            return v;
    return std::nullopt;
}

QJsonArray pinsToJson(const std::vector<core::solvers::Pin> &pins)
{
    QJsonArray a;
    for (const auto &p : pins)
        a.append(QJsonObject{{QStringLiteral("tensor"), p.tensor.value},
                             {QStringLiteral("kind"), QLatin1String(core::solvers::pinKindName(p.kind))}});
    return a;
}

QJsonObject planToJson(const Plan &p)
{
    QJsonObject o;
    o[QStringLiteral("solver")] = str(p.solver);
    o[QStringLiteral("status")] = QLatin1String(core::solvers::solveStatusName(p.status));
    o[QStringLiteral("objective")] = QLatin1String(core::solvers::objectiveName(p.objective));
    o[QStringLiteral("budget_bytes")] = double(p.budgetBytes);
    o[QStringLiteral("solver_objective")] = p.solverObjective;
    o[QStringLiteral("solver_objective_name")] = str(p.solverObjectiveName);
    o[QStringLiteral("bound")] = p.bound;
    o[QStringLiteral("solve_seconds")] = p.solveSeconds;
    o[QStringLiteral("note")] = str(p.note);
    QJsonObject settings;
    for (const auto &[k, v] : p.settings)
        settings[str(k)] = str(v);
    o[QStringLiteral("settings")] = settings;
    QJsonArray ckpt;
    for (core::TensorId t : p.checkpoints)
        ckpt.append(t.value);
    o[QStringLiteral("checkpoints")] = ckpt;
    o[QStringLiteral("pins")] = pinsToJson(p.pins);
    // Flat [kind, target, kind, target, ...]: compact for schedules of tens of thousands of steps.
    QJsonArray steps;
    for (const auto &s : p.schedule.steps) {
        steps.append(int(s.kind));
        steps.append(s.target);
    }
    o[QStringLiteral("steps")] = steps;
    return o;
}

core::Expected<Plan> planFromJson(const QJsonObject &o, const QString &path)
{
    Plan p;
    p.solver = o.value(QStringLiteral("solver")).toString().toStdString();
    const auto status = parseStatus(o.value(QStringLiteral("status")).toString());
    if (!status)
        return bad(path, QStringLiteral("plan '%1' has an unknown status").arg(str(p.solver)));
    p.status = *status;
    auto objective = core::solvers::parseObjective(o.value(QStringLiteral("objective")).toString().toStdString());
    if (!objective)
        return bad(path, QStringLiteral("plan '%1': %2").arg(str(p.solver), str(objective.status().message())));
    p.objective = *objective;
    p.budgetBytes = int64_t(o.value(QStringLiteral("budget_bytes")).toDouble());
    p.solverObjective = o.value(QStringLiteral("solver_objective")).toDouble();
    p.solverObjectiveName = o.value(QStringLiteral("solver_objective_name")).toString().toStdString();
    p.bound = o.value(QStringLiteral("bound")).toDouble(-1);
    p.solveSeconds = o.value(QStringLiteral("solve_seconds")).toDouble();
    p.note = o.value(QStringLiteral("note")).toString().toStdString();
    const QJsonObject settings = o.value(QStringLiteral("settings")).toObject();
    for (auto it = settings.begin(); it != settings.end(); ++it)
        p.settings[it.key().toStdString()] = it.value().toString().toStdString();
    for (const QJsonValue &v : o.value(QStringLiteral("checkpoints")).toArray())
        p.checkpoints.push_back(core::TensorId(int32_t(v.toInt(-1))));
    for (const QJsonValue &v : o.value(QStringLiteral("pins")).toArray()) {
        const auto kind = parsePinKind(v.toObject().value(QStringLiteral("kind")).toString());
        if (!kind)
            return bad(path, QStringLiteral("plan '%1' has a pin of unknown kind").arg(str(p.solver)));
        p.pins.push_back({core::TensorId(int32_t(v.toObject().value(QStringLiteral("tensor")).toInt(-1))), *kind});
    }
    const QJsonArray steps = o.value(QStringLiteral("steps")).toArray();
    if (steps.size() % 2 != 0)
        return bad(path, QStringLiteral("plan '%1': odd step array").arg(str(p.solver)));
    p.schedule.steps.reserve(size_t(steps.size() / 2));
    for (qsizetype i = 0; i < steps.size(); i += 2) {
        const int kind = steps[i].toInt(-1);
        if (kind < 0 || kind > int(core::schedule::StepKind::Phase))
            return bad(path, QStringLiteral("plan '%1': step %2 has an unknown kind").arg(str(p.solver)).arg(i / 2));
        p.schedule.steps.push_back({static_cast<core::schedule::StepKind>(kind), int32_t(steps[i + 1].toInt(-1))});
    }
    return p;
}

} // namespace

SessionData sessionFromDocument(const PlannerDocument &doc, const PlannerProblem *problem)
{
    SessionData s;
    s.modelPath = doc.modelPath();
    s.modelSha256 = doc.modelSha256();
    s.batch = doc.batch();
    s.budgetBytes = doc.budgetBytes();
    s.objective = doc.objective();
    s.pins = doc.pins();
    s.plans = doc.plans();
    s.currentPlan = doc.currentPlanIndex();
    if (problem && problem->training) {
        s.opCount = problem->training->opCount();
        s.tensorCount = problem->training->tensorCount();
    }
    return s;
}

core::Status writeSessionFile(const QString &path, const SessionData &s, const core::training::TrainingGraph *graph)
{
    QJsonObject root;
    root[QStringLiteral("format")] = QStringLiteral("remat-studio-session");
    root[QStringLiteral("version")] = kSessionFormatVersion;
    const QString absModel = QFileInfo(s.modelPath).absoluteFilePath();
    root[QStringLiteral("model")] = QJsonObject{
        {QStringLiteral("path"), absModel},
        {QStringLiteral("relative_path"), QFileInfo(path).absoluteDir().relativeFilePath(absModel)},
        {QStringLiteral("sha256"), s.modelSha256}};
    root[QStringLiteral("batch")] = double(s.batch);
    root[QStringLiteral("budget_bytes")] = double(s.budgetBytes);
    root[QStringLiteral("objective")] = QLatin1String(core::solvers::objectiveName(s.objective));
    QJsonArray pins;
    for (auto it = s.pins.cbegin(); it != s.pins.cend(); ++it)
        pins.append(QJsonObject{{QStringLiteral("tensor"), it.key()},
                                {QStringLiteral("kind"), QLatin1String(core::solvers::pinKindName(it.value()))}});
    root[QStringLiteral("pins")] = pins;
    root[QStringLiteral("op_count")] = double(graph ? graph->opCount() : s.opCount);
    root[QStringLiteral("tensor_count")] = double(graph ? graph->tensorCount() : s.tensorCount);
    QJsonArray plans;
    for (const Plan &p : s.plans)
        plans.append(planToJson(p));
    root[QStringLiteral("plans")] = plans;
    root[QStringLiteral("current_plan")] = s.currentPlan;

    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return core::makeError(StatusCode::NotFound, (path + QStringLiteral(": ") + file.errorString()).toStdString());
    file.write(QJsonDocument(root).toJson(QJsonDocument::Indented));
    if (!file.commit())
        return core::makeError(StatusCode::Internal, (path + QStringLiteral(": ") + file.errorString()).toStdString());
    return core::Status::ok();
}

core::Expected<SessionData> readSessionFile(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return core::makeError(StatusCode::NotFound, (path + QStringLiteral(": ") + file.errorString()).toStdString());
    if (file.size() > (int64_t(1) << 30))
        return bad(path, QStringLiteral("larger than 1 GiB: not a session file"));
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return bad(path, QStringLiteral("not JSON (%1 at offset %2)").arg(err.errorString()).arg(err.offset));
    const QJsonObject root = doc.object();
    if (root.value(QStringLiteral("format")).toString() != QLatin1String("remat-studio-session"))
        return bad(path, QStringLiteral("not a Remat Studio session"));
    const int version = root.value(QStringLiteral("version")).toInt(-1);
    if (version != kSessionFormatVersion)
        return core::makeError(StatusCode::Unsupported,
                               (path + QStringLiteral(": session format version %1, this build reads %2")
                                           .arg(version)
                                           .arg(kSessionFormatVersion))
                                   .toStdString());
    SessionData s;
    const QJsonObject model = root.value(QStringLiteral("model")).toObject();
    s.modelPath = model.value(QStringLiteral("path")).toString();
    // A session moved together with its model: prefer the path relative to the session file.
    const QString rel = model.value(QStringLiteral("relative_path")).toString();
    if (!QFileInfo::exists(s.modelPath) && !rel.isEmpty()) {
        const QString candidate = QFileInfo(path).absoluteDir().absoluteFilePath(rel);
        if (QFileInfo::exists(candidate))
            s.modelPath = candidate;
    }
    s.modelSha256 = model.value(QStringLiteral("sha256")).toString();
    s.batch = int64_t(root.value(QStringLiteral("batch")).toDouble(1));
    s.budgetBytes = int64_t(root.value(QStringLiteral("budget_bytes")).toDouble());
    auto objective = core::solvers::parseObjective(root.value(QStringLiteral("objective")).toString().toStdString());
    if (!objective)
        return bad(path, str(objective.status().message()));
    s.objective = *objective;
    for (const QJsonValue &v : root.value(QStringLiteral("pins")).toArray()) {
        const QJsonObject o = v.toObject();
        const auto kind = parsePinKind(o.value(QStringLiteral("kind")).toString());
        if (!kind)
            return bad(path, QStringLiteral("pin of unknown kind '%1'").arg(o.value(QStringLiteral("kind")).toString()));
        s.pins.insert(o.value(QStringLiteral("tensor")).toString(), *kind);
    }
    s.opCount = size_t(root.value(QStringLiteral("op_count")).toDouble());
    s.tensorCount = size_t(root.value(QStringLiteral("tensor_count")).toDouble());
    for (const QJsonValue &v : root.value(QStringLiteral("plans")).toArray()) {
        REMAT_ASSIGN_OR_RETURN(Plan p, planFromJson(v.toObject(), path));
        s.plans.push_back(std::move(p));
    }
    s.currentPlan = root.value(QStringLiteral("current_plan")).toInt(-1);
    if (s.currentPlan >= int(s.plans.size()))
        s.currentPlan = int(s.plans.size()) - 1;
    return s;
}

core::Status restorePlanFigures(std::vector<Plan> *plans, const SessionData &session, const PlannerProblem &problem)
{
    const auto &tg = *problem.training;
    if (session.opCount != 0 && (session.opCount != tg.opCount() || session.tensorCount != tg.tensorCount()))
        return core::makeError(StatusCode::InvalidArgument,
                               "the model no longer gives the training graph the session's plans were made for "
                               "(op or tensor count changed)");
    for (Plan &p : *plans) {
        auto t = core::sim::simulate(p.schedule, tg, *problem.costs);
        if (!t)
            return t.status().withContext("plan " + p.solver);
        p.timeline = std::move(*t);
    }
    return core::Status::ok();
}

} // namespace remat::ui
