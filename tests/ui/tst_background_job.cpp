// ui::BackgroundJob, the one helper behind every worker of the GUI: a job that throws (bad_alloc
// or any other exception) reports an error instead of leaving the GUI waiting, a superseded
// generation's result is dropped, progress is throttled, the destructor waits for every job; and
// the run controller, on it, reports a backend that throws as a failed run.
#include "common/test_support.h"

#include "core/pipeline/problem.h"
#include "ui/background_job.h"
#include "ui/planner/run_controller.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QSemaphore>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <optional>
#include <stdexcept>

using namespace remat;
using namespace remat::ui;

namespace {

constexpr int kTimeoutMs = 30000;

} // namespace

class TestBackgroundJob : public QObject
{
    Q_OBJECT
private slots:
    void throwingJobReportsAnError_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("bad_alloc") << 0 << int(core::StatusCode::ResourceExhausted)
                                   << QStringLiteral("out of host memory while testing");
        QTest::newRow("runtime_error") << 1 << int(core::StatusCode::Internal)
                                       << QStringLiteral("testing failed: a solver bug");
        QTest::newRow("int") << 2 << int(core::StatusCode::Internal)
                             << QStringLiteral("testing failed with an unknown exception");
    }

    void throwingJobReportsAnError()
    {
        QFETCH(int, kind);
        QFETCH(int, code);
        QFETCH(QString, message);
        BackgroundJob<int> job("testing");
        std::optional<core::Status> got;
        job.start(
            [kind](JobContext &) -> core::Expected<int> {
                if (kind == 0)
                    throw std::bad_alloc();
                if (kind == 1)
                    throw std::runtime_error("a solver bug");
                throw 42;
            },
            [&](quint64, core::Expected<int> r) { got = r.status(); });
        QVERIFY(job.busy());
        // Expected: the error arrives and the job is no longer busy (the GUI stops waiting).
        QVERIFY(QTest::qWaitFor([&] { return got.has_value(); }, kTimeoutMs));
        QVERIFY(!job.busy());
        QCOMPARE(int(got->code()), code);
        QCOMPARE(QString::fromStdString(got->message()), message);
    }

    void staleGenerationIsDropped()
    {
        BackgroundJob<int> job("testing");
        QSemaphore release;
        std::atomic<bool> firstStopped{false};
        QList<int> delivered;
        QList<quint64> settled;
        job.setSettledHandler([&](quint64 id) { settled << id; });
        // The first job runs until released, then returns 1 although it was told to stop.
        const quint64 first = job.replace(
            [&](JobContext &ctx) -> core::Expected<int> {
                release.acquire();
                firstStopped = ctx.stop().stopRequested();
                return 1;
            },
            [&](quint64, core::Expected<int> r) { delivered << *r; });
        const quint64 second =
            job.replace([](JobContext &) -> core::Expected<int> { return 2; },
                        [&](quint64, core::Expected<int> r) { delivered << *r; });
        QVERIFY(first != second);
        QCOMPARE(job.generation(), quint64(2));
        QVERIFY(QTest::qWaitFor([&] { return delivered.contains(2); }, kTimeoutMs));
        release.release();
        QVERIFY(QTest::qWaitFor([&] { return settled.size() == 2; }, kTimeoutMs));
        // Expected: only the newer generation's 2; the first was stopped and its 1 dropped.
        QCOMPARE(delivered, QList<int>{2});
        QVERIFY(firstStopped);
        QVERIFY(!job.busy());
    }

    void stopStillDeliversButDropDoesNot()
    {
        BackgroundJob<int> job("testing");
        QList<int> delivered;
        auto untilStopped = [](JobContext &ctx) -> core::Expected<int> {
            while (!ctx.stop().stopRequested())
                QThread::msleep(1);
            return core::makeError(core::StatusCode::Cancelled, "stopped");
        };
        const quint64 a = job.start(untilStopped, [&](quint64, core::Expected<int> r) {
            delivered << (r.status().code() == core::StatusCode::Cancelled ? -1 : 0);
        });
        const quint64 b =
            job.start(untilStopped, [&](quint64, core::Expected<int>) { delivered << 99; });
        QCOMPARE(job.running(), 2);
        job.stop(a);
        job.drop(b);
        QVERIFY(QTest::qWaitFor([&] { return !job.busy(); }, kTimeoutMs));
        QCOMPARE(delivered, QList<int>{-1});
    }

    void progressIsThrottled()
    {
        // A worker reporting in a tight loop: what reaches the GUI thread is at most one report
        // per 1/kProgressPerSecond s.
        BackgroundJob<int> counted("testing");
        std::atomic<int> calls{0};
        int received = 0;
        std::optional<int> done;
        counted.start(
            [&](JobContext &ctx) -> core::Expected<int> {
                QElapsedTimer t;
                t.start();
                while (t.elapsed() < 350) {
                    ctx.postProgress([&received] { ++received; });
                    ++calls;
                }
                return int(t.elapsed());
            },
            [&](quint64, core::Expected<int> r) { done = *r; });
        QVERIFY(QTest::qWaitFor([&] { return done.has_value(); }, kTimeoutMs));
        const int limit = *done * JobContext::kProgressPerSecond / 1000 + 1;
        QVERIFY2(received >= 1 && received <= limit,
                 qPrintable(QStringLiteral("%1 reports of %2 calls in %3 ms")
                                .arg(received)
                                .arg(calls.load())
                                .arg(*done)));
        QVERIFY(calls.load() > received * 10);
    }

    void destructorWaitsForEveryJob()
    {
        std::atomic<bool> finished{false};
        bool delivered = false;
        {
            BackgroundJob<int> job("testing");
            job.start(
                [&finished](JobContext &) -> core::Expected<int> {
                    QThread::msleep(200); // ignores its stop token on purpose
                    finished = true;
                    return 1;
                },
                [&](quint64, core::Expected<int>) { delivered = true; });
        }
        // Expected: the worker had returned before the destructor did; its result was dropped.
        QVERIFY(finished);
        QCoreApplication::processEvents();
        QVERIFY(!delivered);
    }

    void runControllerReportsAThrowingBackend()
    {
        const QString mlp = tests::sharedPath(QStringLiteral("corpus/with_weights/mlp.onnx"));
        if (!QFileInfo::exists(mlp))
            QSKIP("shared corpus not found");
        auto problem = core::pipeline::loadProblem(tests::toStd(mlp), {});
        QVERIFY2(problem.hasValue(), problem.status().message().c_str());
        RunController runs;
        runs.setBackends({{QStringLiteral("cpu"), QStringLiteral("throws"),
                           []() -> core::Expected<std::unique_ptr<core::exec::Backend>> {
                               throw std::bad_alloc();
                           }}});
        QSignalSpy finished(&runs, &RunController::finished);
        RunRequest request;
        request.problem = *problem;
        request.schedule = (*problem)->storeAll.schedule;
        request.reference = (*problem)->storeAll.schedule;
        QVERIFY(runs.start(request));
        QVERIFY(runs.isRunning());
        QVERIFY(finished.wait(kTimeoutMs));
        const RunSummary summary = finished.front().at(0).value<RunSummary>();
        QVERIFY(!summary.ok);
        QVERIFY2(
            summary.error.contains(QStringLiteral("out of host memory while running the plan")),
            qPrintable(summary.error));
        QVERIFY(!runs.isRunning());
    }
};

QTEST_MAIN(TestBackgroundJob)
#include "tst_background_job.moc"
