#include "ui/import_settings.h"

#include "core/onnx/input_spec.h"

#include <QJsonDocument>
#include <QSettings>

namespace remat::ui {

namespace ox = core::onnx;

namespace {

QString qs(const std::string &s) { return QString::fromStdString(s); }

const char *kindName(core::ir::ValueKind k)
{
    switch (k) {
    case core::ir::ValueKind::Parameter: return "parameter";
    case core::ir::ValueKind::Buffer: return "buffer";
    case core::ir::ValueKind::Input: return "input";
    case core::ir::ValueKind::Constant: return "constant";
    case core::ir::ValueKind::Intermediate: break;
    }
    return "intermediate";
}

} // namespace

bool sameImportSettings(const ox::ImportOptions &a, const ox::ImportOptions &b)
{
    return a.dimValues == b.dimValues && a.inputShapes == b.inputShapes && a.inputValues == b.inputValues &&
           a.kindOverrides == b.kindOverrides && a.semantics == b.semantics;
}

QJsonObject importSettingsToJson(const ox::ImportOptions &s)
{
    QJsonObject out;
    QJsonObject dims, shapes, values, classify;
    for (const auto &[name, v] : s.dimValues)
        dims[qs(name)] = double(v);
    for (const auto &[name, d] : s.inputShapes)
        shapes[qs(name)] = qs(ox::formatDims(d));
    for (const auto &[name, v] : s.inputValues)
        values[qs(name)] = v;
    for (const auto &[name, k] : s.kindOverrides)
        classify[qs(name)] = QLatin1String(kindName(k));
    if (!dims.isEmpty())
        out[QStringLiteral("dims")] = dims;
    if (!shapes.isEmpty())
        out[QStringLiteral("input_shapes")] = shapes;
    if (!values.isEmpty())
        out[QStringLiteral("input_values")] = values;
    if (!classify.isEmpty())
        out[QStringLiteral("classify")] = classify;
    out[QStringLiteral("semantics")] = QLatin1String(ox::semanticsName(s.semantics));
    return out;
}

core::Expected<ox::ImportOptions> importSettingsFromJson(const QJsonObject &json, const QString &what)
{
    ox::ImportOptions s;
    auto bad = [&](const QString &problem) {
        return core::makeError(core::StatusCode::InvalidArgument, (what + QStringLiteral(": ") + problem).toStdString());
    };
    // Every entry goes through the same parsers as the command line, so a session cannot hold
    // what `remat --dim` would refuse.
    const QJsonObject dims = json.value(QStringLiteral("dims")).toObject();
    for (auto it = dims.begin(); it != dims.end(); ++it) {
        if (!it.value().isDouble())
            return bad(QStringLiteral("dim '%1' is not a number").arg(it.key()));
        const double v = it.value().toDouble();
        if (!(v >= 1 && v <= 9.0e15) || double(int64_t(v)) != v)
            return bad(QStringLiteral("dim '%1' is not a whole number >= 1").arg(it.key()));
        if (core::Status st = ox::addDimValue(s, (it.key() + QStringLiteral("=") + QString::number(int64_t(v))).toStdString());
            !st.isOk())
            return bad(qs(st.message()));
    }
    const QJsonObject shapes = json.value(QStringLiteral("input_shapes")).toObject();
    for (auto it = shapes.begin(); it != shapes.end(); ++it)
        if (core::Status st = ox::addInputShape(s, (it.key() + QStringLiteral("=") + it.value().toString()).toStdString());
            !st.isOk())
            return bad(qs(st.message()));
    const QJsonObject values = json.value(QStringLiteral("input_values")).toObject();
    for (auto it = values.begin(); it != values.end(); ++it) {
        if (!it.value().isDouble())
            return bad(QStringLiteral("input value '%1' is not a number").arg(it.key()));
        s.inputValues[it.key().toStdString()] = it.value().toDouble();
    }
    const QJsonObject classify = json.value(QStringLiteral("classify")).toObject();
    for (auto it = classify.begin(); it != classify.end(); ++it)
        if (core::Status st = ox::addClassification(s, (it.key() + QStringLiteral("=") + it.value().toString()).toStdString());
            !st.isOk())
            return bad(qs(st.message()));
    if (json.contains(QStringLiteral("semantics"))) {
        auto sem = ox::parseSemantics(json.value(QStringLiteral("semantics")).toString().toStdString());
        if (!sem)
            return bad(qs(sem.status().message()));
        s.semantics = *sem;
    }
    return s;
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
    if (!s.kindOverrides.empty())
        parts << QStringLiteral("%1 reclassified").arg(s.kindOverrides.size());
    if (s.semantics == ox::Semantics::AsExported)
        parts << QStringLiteral("as exported");
    return parts.join(QLatin1Char(' '));
}

ox::ImportOptions rememberedImportSettings(const QString &path)
{
    const QByteArray text = QSettings().value(QStringLiteral("importSettings/") + path).toByteArray();
    if (text.isEmpty())
        return {};
    auto s = importSettingsFromJson(QJsonDocument::fromJson(text).object(), path);
    return s ? *s : ox::ImportOptions{};
}

void rememberImportSettings(const QString &path, const ox::ImportOptions &settings)
{
    QSettings().setValue(QStringLiteral("importSettings/") + path,
                         QJsonDocument(importSettingsToJson(settings)).toJson(QJsonDocument::Compact));
}

} // namespace remat::ui
