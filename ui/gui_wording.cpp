#include "ui/gui_wording.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace remat::ui {

namespace {
QString tr(const char *text) { return QCoreApplication::translate("GuiWording", text); }
} // namespace

QString guiWording(const QString &message)
{
    if (!message.contains(QLatin1String("--")))
        return message;
    QString out = message;
    const QString inputs = tr("Inputs... (toolbar)");
    // A run of dims ("--dim batch=N --dim sequence=N") reads as one list.
    static const QRegularExpression dimRun(
        QStringLiteral(R"(--dim [\w.:/-]+=(?:N|\d+)(?: --dim [\w.:/-]+=(?:N|\d+))+)"));
    static const QRegularExpression dimName(QStringLiteral(R"(--dim ([\w.:/-]+)=)"));
    for (QRegularExpressionMatch run = dimRun.match(out); run.hasMatch(); run = dimRun.match(out)) {
        QStringList names;
        for (auto it = dimName.globalMatch(run.captured(0)); it.hasNext();)
            names << it.next().captured(1);
        const QString last = names.takeLast();
        out.replace(run.capturedStart(0), run.capturedLength(0),
                    tr("dims %1 and %2 in %3").arg(names.join(QStringLiteral(", ")), last, inputs));
    }
    // Most specific first: a flag with its NAME=VALUE example, then the bare flag.
    const struct
    {
        const char *pattern;
        QString replacement;
    } rules[] = {
        {R"(run with --precision fp32)", tr("choose fp32 under Planner > Training...")},
        {R"(--batch N)", tr("the Batch box (toolbar)")},
        {R"(--batch \d+)", tr("the Batch box (toolbar)")},
        {R"(--precision(?: [\w-]+)?)", tr("the precision under Planner > Training...")},
        {R"(--semantics as-exported)", tr("Semantics \"as exported\" in %1").arg(inputs)},
        {R"(--semantics(?: [\w-]+)?)", tr("Semantics in %1").arg(inputs)},
        {R"(--dim ([\w.:/-]+)=(?:N|\d+))", tr("dim \\1 in %1").arg(inputs)},
        {R"(--dim ([\w.:/-]+))", tr("dim \\1 in %1").arg(inputs)},
        {R"(--dim\b)", tr("a dim in %1").arg(inputs)},
        {R"(--input-shape ([\w.:/-]+)=[\dxN?]+)", tr("the shape of \\1 in %1").arg(inputs)},
        {R"(--input-shape ([\w.:/-]+))", tr("the shape of \\1 in %1").arg(inputs)},
        {R"(--input-shape\b)", tr("an input shape in %1").arg(inputs)},
        {R"(--input-value NAME=V)", tr("a scalar input's value in %1").arg(inputs)},
        {R"(--input-value ([\w.:/-]+)=(?:V|[\w.+-]+))", tr("the value of \\1 in %1").arg(inputs)},
        {R"(--input-value ([\w.:/-]+))", tr("the value of \\1 in %1").arg(inputs)},
        {R"(--input-value\b)", tr("a scalar input's value in %1").arg(inputs)},
    };
    for (const auto &rule : rules)
        out.replace(QRegularExpression(QString::fromLatin1(rule.pattern)), rule.replacement);
    return out;
}

} // namespace remat::ui
