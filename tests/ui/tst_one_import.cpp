// One open imports a model once (core::pipeline::loadProblem's process-wide count), offscreen in a
// MainWindow with its planner: opening a file, changing the batch on the toolbar and opening a
// session each load once, and the explorer and the planner share that one problem.
#include "common/test_support.h"
#include "ui_test_util.h"

#include "core/pipeline/problem.h"
#include "ui/main_window.h"
#include "ui/planner/planner.h"

#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace remat;
using namespace remat::ui;

namespace {

constexpr int kTimeoutMs = 120000;

QString mlpModel() { return tests::sharedPath(QStringLiteral("corpus/with_weights/mlp.onnx")); }

// Waits until the explorer shows `batch` and the planner has a problem at that batch, both idle.
bool waitForBoth(MainWindow &w, int64_t batch)
{
    return QTest::qWaitFor(
        [&] {
            const Planner *p = w.planner();
            return !w.isBusy() && w.document()->hasModel() &&
                   w.document()->graph().info().batch == batch && !p->isLoading() && p->problem() &&
                   p->problem()->batch == batch;
        },
        kTimeoutMs);
}

} // namespace

class TestOneImport : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        tests::isolateSettings();
        if (!QFileInfo::exists(mlpModel()))
            QSKIP("shared corpus not found");
    }

    void openingAModelImportsItOnce()
    {
        MainWindow w;
        const int64_t before = core::pipeline::loadProblemCount();
        QVERIFY(tests::openAndWait(w, mlpModel(), kTimeoutMs));
        const int64_t fileBatch = w.document()->graph().info().batch;
        QVERIFY(fileBatch > 0);
        QVERIFY(waitForBoth(w, fileBatch));
        // Expected: 1 (it was 2: the explorer imported, then the planner imported again).
        QCOMPARE(core::pipeline::loadProblemCount() - before, int64_t(1));
        // The planner plans on the very problem the explorer shows.
        QCOMPARE(w.planner()->problem().get(), w.document()->model().problem.get());
        QVERIFY(w.planner()->problem()->isValid());

        // Another batch on the toolbar: the explorer re-imports once, the planner follows with it.
        const int64_t next = fileBatch + 3;
        w.setBatch(next);
        QVERIFY(waitForBoth(w, next));
        QCOMPARE(core::pipeline::loadProblemCount() - before, int64_t(2));
        QCOMPARE(w.planner()->problem().get(), w.document()->model().problem.get());
        QCOMPARE(w.planner()->document()->batch(), next);
    }

    void openingASessionImportsItOnce()
    {
        QTemporaryDir dir;
        const QString session = dir.filePath(QStringLiteral("mlp.rematproj"));
        int64_t batch = 0;
        {
            MainWindow w;
            QVERIFY(tests::openAndWait(w, mlpModel(), kTimeoutMs));
            batch = w.document()->graph().info().batch + 1;
            w.setBatch(batch);
            QVERIFY(waitForBoth(w, batch));
            QVERIFY(w.planner()->saveSession(session).isOk());
        }
        MainWindow w;
        const int64_t before = core::pipeline::loadProblemCount();
        QSignalSpy opened(w.planner(), &Planner::sessionOpened);
        QVERIFY(w.planner()->openSession(session).isOk());
        QVERIFY(QTest::qWaitFor([&] { return opened.count() > 0; }, kTimeoutMs));
        QVERIFY(opened.front().at(0).toBool());
        // The window follows the session's model: from the planner's problem, not a new import.
        QVERIFY(waitForBoth(w, batch));
        QCOMPARE(core::pipeline::loadProblemCount() - before, int64_t(1));
        QCOMPARE(w.planner()->problem().get(), w.document()->model().problem.get());
    }
};

QTEST_MAIN(TestOneImport)
#include "tst_one_import.moc"
