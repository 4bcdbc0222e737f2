#include "ui/planner/session_file.h"

#include "core/io/plan_file.h"
#include "core/sim/simulator.h"
#include "core/util/reader_guard.h"
#include "ui/import_settings.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <cmath>

namespace remat::ui {

using core::StatusCode;
using core::solvers::Plan;

namespace {

QString str(const std::string &s) { return QString::fromStdString(s); }

core::Status bad(const QString &path, const QString &what)
{
    return core::makeError(StatusCode::ParseError, (path + QStringLiteral(": ") + what).toStdString());
}

/// `key` of `o` as an integer in [lo, hi], `fallback` when absent. QJson stores every number as
/// a double: a plain cast of 1e300 or -1 to int64_t / size_t is undefined behaviour.
core::Expected<int64_t> integer(const QString &path, const QJsonObject &o, const QString &key,
                                int64_t fallback, int64_t lo, int64_t hi)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined() || v.isNull())
        return fallback;
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || !(d >= double(lo) && d <= double(hi)) || d != std::floor(d))
        return bad(path, QStringLiteral("\"%1\" must be an integer from %2 to %3")
                             .arg(key)
                             .arg(lo)
                             .arg(hi));
    return int64_t(d);
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

namespace {

core::Expected<SessionData> parseSessionFileUnguarded(const QByteArray &bytes, const QString &path)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
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
    // 2^53: the largest integer a JSON double holds exactly.
    const int64_t maxExact = int64_t(1) << 53;
    REMAT_ASSIGN_OR_RETURN(s.batch, integer(path, root, QStringLiteral("batch"), 1, 0, maxExact));
    if (root.contains(QStringLiteral("import"))) {
        if (!root.value(QStringLiteral("import")).isObject())
            return bad(path, QStringLiteral("\"import\" is not an object"));
        auto settings = importSettingsFromJson(root.value(QStringLiteral("import")).toObject(), path);
        if (!settings)
            return settings.status();
        s.importSettings = std::move(*settings);
    }
    REMAT_ASSIGN_OR_RETURN(s.budgetBytes, integer(path, root, QStringLiteral("budget_bytes"), 0, 0, maxExact));
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
    REMAT_ASSIGN_OR_RETURN(const int64_t opCount, integer(path, root, QStringLiteral("op_count"), 0, 0, maxExact));
    REMAT_ASSIGN_OR_RETURN(const int64_t tensorCount,
                           integer(path, root, QStringLiteral("tensor_count"), 0, 0, maxExact));
    s.opCount = size_t(opCount);
    s.tensorCount = size_t(tensorCount);
    for (const QJsonValue &v : root.value(QStringLiteral("plans")).toArray()) {
        if (!v.isObject())
            return bad(path, QStringLiteral("a plan is not a JSON object"));
        s.planTexts.push_back(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact).toStdString());
    }
    s.currentPlan = root.value(QStringLiteral("current_plan")).toInt(-1);
    if (s.currentPlan >= int(s.planTexts.size()))
        s.currentPlan = int(s.planTexts.size()) - 1;
    if (s.currentPlan < -1)
        s.currentPlan = -1;
    return s;
}

core::Expected<std::vector<Plan>> restorePlansUnguarded(const SessionData &session, const PlannerProblem &problem,
                                                        const QString &origin)
{
    if (!problem.training || !problem.costs)
        return core::makeError(StatusCode::InvalidArgument,
                               origin.toStdString() + ": the session's model is not loaded");
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

} // namespace

core::Expected<SessionData> parseSessionFile(const QByteArray &bytes, const QString &path)
{
    return core::guardReader(path.toStdString(), [&] { return parseSessionFileUnguarded(bytes, path); });
}

core::Expected<SessionData> readSessionFile(const QString &path)
{
    return core::guardReader(path.toStdString(), [&]() -> core::Expected<SessionData> {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly))
            return core::makeError(StatusCode::NotFound,
                                   (path + QStringLiteral(": ") + file.errorString()).toStdString());
        if (file.size() > (int64_t(1) << 30))
            return bad(path, QStringLiteral("larger than 1 GiB: not a session file"));
        return parseSessionFile(file.readAll(), path);
    });
}

core::Expected<std::vector<Plan>> restorePlans(const SessionData &session, const PlannerProblem &problem,
                                               const QString &origin)
{
    return core::guardReader(origin.toStdString(), [&] { return restorePlansUnguarded(session, problem, origin); });
}

} // namespace remat::ui
