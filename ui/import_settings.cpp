#include "ui/import_settings.h"

#include "core/io/import_settings_json.h"
#include "core/onnx/input_spec.h"

#include <QJsonDocument>
#include <QSettings>

namespace remat::ui {

namespace ox = core::onnx;

namespace {

QString qs(const std::string &s) { return QString::fromStdString(s); }

} // namespace

bool sameImportSettings(const ox::ImportOptions &a, const ox::ImportOptions &b)
{
    return a.dimValues == b.dimValues && a.inputShapes == b.inputShapes &&
           a.inputValues == b.inputValues && a.branches == b.branches &&
           a.kindOverrides == b.kindOverrides && a.freezePatterns == b.freezePatterns &&
           a.trainablePatterns == b.trainablePatterns && a.semantics == b.semantics;
}

// The JSON form is core's (core/io/import_settings_json.h, also the sessions' "import"); these
// carry it across as text.
QJsonObject importSettingsToJson(const ox::ImportOptions &s)
{
    const std::string text = core::io::importSettingsJson(s).dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
}

core::Expected<ox::ImportOptions> importSettingsFromJson(const QJsonObject &json,
                                                         const QString &what)
{
    const nlohmann::json j =
        nlohmann::json::parse(QJsonDocument(json).toJson(QJsonDocument::Compact).toStdString(),
                              nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
        return core::makeError(core::StatusCode::InvalidArgument,
                               (what + QStringLiteral(": not JSON")).toStdString());
    return core::io::importSettingsFromJson(j, what.toStdString());
}

QString importSettingsSummary(const ox::ImportOptions &s)
{
    QStringList parts;
    for (const auto &[name, v] : s.dimValues)
        parts << QStringLiteral("%1=%2").arg(qs(name)).arg(v);
    for (const auto &[name, d] : s.inputShapes)
        parts << QStringLiteral("%1=%2").arg(qs(name), qs(ox::formatDims(d)));
    for (const auto &[name, v] : s.inputValues)
        parts << QStringLiteral("%1=%2").arg(qs(name)).arg(v);
    for (const auto &[name, then] : s.branches)
        parts << QStringLiteral("%1=%2").arg(qs(name), then ? QStringLiteral("then")
                                                            : QStringLiteral("else"));
    if (!s.kindOverrides.empty())
        parts << QStringLiteral("%1 reclassified").arg(s.kindOverrides.size());
    for (const std::string &p : s.freezePatterns)
        parts << QStringLiteral("freeze %1").arg(qs(p));
    for (const std::string &p : s.trainablePatterns)
        parts << QStringLiteral("trainable %1").arg(qs(p));
    if (s.semantics == ox::Semantics::AsExported)
        parts << QStringLiteral("as exported");
    return parts.join(QLatin1Char(' '));
}

ox::ImportOptions rememberedImportSettings(const QString &path)
{
    const QByteArray text =
        QSettings().value(QStringLiteral("importSettings/") + path).toByteArray();
    if (text.isEmpty())
        return {};
    auto s = importSettingsFromJson(QJsonDocument::fromJson(text).object(), path);
    return s ? *s : ox::ImportOptions{};
}

void rememberImportSettings(const QString &path, const ox::ImportOptions &settings)
{
    QSettings().setValue(
        QStringLiteral("importSettings/") + path,
        QJsonDocument(importSettingsToJson(settings)).toJson(QJsonDocument::Compact));
}

} // namespace remat::ui
