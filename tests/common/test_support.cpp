#include "common/test_support.h"

#include <QDir>
#include <QFileInfo>
#include <QtGlobal>

namespace remat::tests {

QString sourceDir()
{
    const QByteArray env = qgetenv("REMAT_SOURCE_DIR");
    return env.isEmpty() ? QDir::currentPath() : QString::fromLocal8Bit(env);
}

QString binaryDir()
{
    const QByteArray env = qgetenv("REMAT_BINARY_DIR");
    return env.isEmpty() ? QDir::currentPath() : QString::fromLocal8Bit(env);
}

QString sharedDir()
{
    const QByteArray env = qgetenv("REMAT_SHARED_DIR");
    if (!env.isEmpty())
        return QDir::cleanPath(QString::fromLocal8Bit(env));
    return QDir::cleanPath(sourceDir() + "/../shared");
}

QString sharedPath(const QString &relative) { return sharedDir() + "/" + relative; }

std::string toStd(const QString &s) { return s.toStdString(); }

} // namespace remat::tests
