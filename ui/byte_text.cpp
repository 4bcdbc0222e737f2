#include "ui/byte_text.h"

#include "core/util/bytes.h"

#include <cmath>

namespace remat::ui {

namespace {
/// formatBytes' unit with `decimals` decimals.
QString withDecimals(int64_t bytes, int decimals)
{
    const core::ByteUnit unit = core::byteUnitFor(std::llabs(bytes));
    if (unit.bytes <= 1)
        return QString::fromStdString(core::formatBytes(bytes));
    return QStringLiteral("%1 %2")
        .arg(double(bytes) / unit.bytes, 0, 'f', decimals)
        .arg(QLatin1String(unit.name));
}
} // namespace

QPair<QString, QString> bytesApart(int64_t a, int64_t b)
{
    const QString fa = QString::fromStdString(core::formatBytes(a));
    const QString fb = QString::fromStdString(core::formatBytes(b));
    if (a == b || fa != fb)
        return {fa, fb};
    for (int decimals = 3; decimals <= 6; ++decimals) {
        QString da = withDecimals(a, decimals), db = withDecimals(b, decimals);
        if (da != db)
            return {da, db};
    }
    return {QStringLiteral("%1 B").arg(a), QStringLiteral("%1 B").arg(b)};
}

} // namespace remat::ui
