#pragma once
// Helpers shared by the GUI tests (offscreen): open a model in a MainWindow or a Planner and wait
// for it.
//   MainWindow w;  QVERIFY(remat::tests::openAndWait(w, sharedPath("corpus/graph_only/resnet18.onnx")));
//   Planner planner;  QSignalSpy loaded(&planner, &Planner::problemChanged);
//   QVERIFY(remat::tests::openInPlanner(planner, loaded, path, 4));

#include "ui/main_window.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/solver_panel.h"

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

/// Shows `w` at `size`, opens `path` and waits for the planner's problem; false (with a warning
/// saying which step) when the window is not exposed, the model does not open or the planner
/// never gets its problem.
inline bool showAndOpen(ui::MainWindow &w, const QString &path, QSize size = QSize(1400, 900),
                        int timeoutMs = 60000)
{
    w.resize(size);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) {
        qWarning("the window was not exposed");
        return false;
    }
    if (!openAndWait(w, path, timeoutMs)) {
        qWarning("%s did not open", qPrintable(path));
        return false;
    }
    ui::Planner *planner = w.planner();
    if (!QTest::qWaitFor([&] { return planner->problem() && !planner->isLoading(); }, timeoutMs)) {
        qWarning("the planner has no problem for %s", qPrintable(path));
        return false;
    }
    return true;
}

/// Shows `w` at 1400x900, opens `path` and solves it with `solver` for the lowest peak, so that
/// every dock is filled; false as showAndOpen.
inline bool showAndSolve(ui::MainWindow &w, const QString &path, const QString &solver,
                         int timeoutMs = 60000)
{
    if (!showAndOpen(w, path, QSize(1400, 900), timeoutMs))
        return false;
    ui::Planner *planner = w.planner();
    planner->document()->setObjective(core::solvers::Objective::MinPeak);
    planner->solve(solver);
    planner->waitForIdle();
    return true;
}

/// Waits for `spy` (on Planner::problemChanged) to have seen a load and for the planner to be
/// idle, then clears the spy for the next load; false on a timeout.
inline bool waitLoaded(ui::Planner &planner, QSignalSpy &spy, int timeoutMs = 60000)
{
    const bool ok = spy.count() > 0 || spy.wait(timeoutMs);
    planner.waitForIdle();
    spy.clear();
    return ok;
}

/// Gives `planner` the registry's solvers with live re-solving off (each test solves when it
/// says so), opens `path` at `batch` and waits for it (waitLoaded on `loaded`, the caller's spy on
/// Planner::problemChanged).
inline bool openInPlanner(ui::Planner &planner, QSignalSpy &loaded, const QString &path,
                          int64_t batch, int timeoutMs = 60000)
{
    planner.setSolvers(ui::Planner::registrySolvers());
    planner.solverPanel()->setLiveResolve(false);
    planner.openModel(path, batch);
    return waitLoaded(planner, loaded, timeoutMs);
}

/// Opens the session at `path` in `planner` (given the registry's solvers) and waits for it; an
/// empty string when it opened, else what went wrong.
inline QString openSessionAndWait(ui::Planner &planner, const QString &path, int timeoutMs = 60000)
{
    planner.setSolvers(ui::Planner::registrySolvers());
    QSignalSpy opened(&planner, &ui::Planner::sessionOpened);
    const core::Status st = planner.openSession(path);
    if (!st.isOk())
        return QString::fromStdString(st.message());
    if (!opened.wait(timeoutMs))
        return QStringLiteral("the session did not open within %1 ms").arg(timeoutMs);
    if (!opened.first().first().toBool())
        return opened.first().last().toString();
    return {};
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
