#pragma once
// Helpers shared by the GUI tests (offscreen): open a model in a MainWindow and wait for it.
//   MainWindow w;  QVERIFY(remat::tests::openAndWait(w, sharedPath("corpus/graph_only/resnet18.onnx")));

#include "ui/main_window.h"

#include <QCoreApplication>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

namespace remat::tests {

/// Opens `path` and waits (up to `timeoutMs`) for its first layout on screen; false on an error
/// or a timeout.
inline bool openAndWait(ui::MainWindow &w, const QString &path, int timeoutMs = 60000)
{
    QSignalSpy shown(&w, &ui::MainWindow::modelShown);
    QSignalSpy failed(&w, &ui::MainWindow::errorOccurred);
    w.openModel(path);
    if (!QTest::qWaitFor([&] { return shown.count() > 0 || failed.count() > 0; }, timeoutMs))
        return false;
    return shown.count() > 0;
}

/// Settings of a test organisation in Qt's test locations, cleared: what a user saved (fold,
/// recent files) never reaches a test.
inline void isolateSettings()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("RematStudioTest"));
    QSettings().clear();
}

} // namespace remat::tests
