#include "ui/planner/session_file.h"

#include "core/io/plan_file.h"
#include "core/sim/simulator.h"
#include "ui/import_settings.h"

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

std::optional<core::solvers::PinKind> parsePinKind(const QString &s)
{
    using core::solvers::PinKind;
    for (PinKind v : {PinKind::Keep, PinKind::Recompute, PinKind::Offload})
        if (s == QLatin1String(core::solvers::pinKindName(v)))
            return v;
    return std::nullopt;
}

} // namespace

SessionData sessionFromDocument(const PlannerDocument &doc, const PlannerProblem *problem)
{
    SessionData s;
    s.modelPath = doc.modelPath();
    s.modelSha256 = doc.modelSha256();
    s.batch = doc.batch();
    s.importSettings = doc.importSettings();
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
    root[QStringLiteral("import")] = importSettingsToJson(s.importSettings);
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
    if (!s.plans.empty() && !graph)
        return core::makeError(StatusCode::InvalidArgument, "plans need their training graph to be saved");
    for (const Plan &p : s.plans) {
        const std::string text = core::io::writePlan(p, *graph, core::io::ModelIdentity::of(*graph));
        plans.append(QJsonDocument::fromJson(QByteArray::fromStdString(text)).object());
    }
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
    if (root.contains(QStringLiteral("import"))) {
        if (!root.value(QStringLiteral("import")).isObject())
            return bad(path, QStringLiteral("\"import\" is not an object"));
        auto settings = importSettingsFromJson(root.value(QStringLiteral("import")).toObject(), path);
        if (!settings)
            return settings.status();
        s.importSettings = std::move(*settings);
    }
    s.budgetBytes = int64_t(root.value(QStringLiteral("budget_bytes")).toDouble());
    // No objective written: a budget asks for the least recompute within it (as `remat solve` does).
    const QString objectiveText = root.contains(QStringLiteral("objective"))
                                      ? root.value(QStringLiteral("objective")).toString()
                                      : s.budgetBytes > 0 ? QStringLiteral("min-time") : QStringLiteral("min-peak");
    auto objective = core::solvers::parseObjective(objectiveText.toStdString());
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
        if (!v.isObject())
            return bad(path, QStringLiteral("a plan is not a JSON object"));
        s.planTexts.push_back(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact).toStdString());
    }
    s.currentPlan = root.value(QStringLiteral("current_plan")).toInt(-1);
    if (s.currentPlan >= int(s.planTexts.size()))
        s.currentPlan = int(s.planTexts.size()) - 1;
    return s;
}

core::Expected<std::vector<Plan>> restorePlans(const SessionData &session, const PlannerProblem &problem,
                                               const QString &origin)
{
    std::vector<Plan> plans;
    for (size_t i = 0; i < session.planTexts.size(); ++i) {
        const std::string where = QStringLiteral("%1, plan %2").arg(origin).arg(i + 1).toStdString();
        REMAT_ASSIGN_OR_RETURN(Plan p, core::io::parsePlan(session.planTexts[i], *problem.training,
                                                           problem.costs.get(), where));
        // The charts and the teaching view need one point per step.
        if (p.timeline.points.size() != p.schedule.steps.size()) {
            REMAT_ASSIGN_OR_RETURN(p.timeline, core::sim::simulate(p.schedule, *problem.training, *problem.costs));
        }
        plans.push_back(std::move(p));
    }
    return plans;
}

} // namespace remat::ui
