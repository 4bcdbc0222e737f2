// The built `remat` (REMAT_CLI_BINARY) on malformed inputs that used to abort it with an uncaught
// exception (std::terminate, exit by SIGABRT). Expected for each: exit code 1, no signal, and a
// one-line "error: ..." on stderr that names the file and the problem.
// - `simulate mlp.onnx --plan P` with P = `9e859` (5 bytes, nlohmann out_of_range 406: the number
//   overflows a double) and with a plan whose "version" is 1e400: "not valid JSON (... number
//   overflow ...)";
// - the same with a plan whose solver.bound is a string (nlohmann type_error from value()):
//   "\"bound\" must be a number";
// - `solve mlp.onnx --solver chen-sqrtn --objective min-time --budget 1.2.3GiB` (std::stod used to
//   throw invalid_argument) and `--budget` with 400 digits (out_of_range): exit 1, "byte count".
#include "common/test_support.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace remat::tests;

namespace {

struct Run
{
    int exitCode = -1;
    bool crashed = false;
    QByteArray out, err;
};

Run runRemat(const QStringList &args)
{
    QProcess p;
    p.start(QString(REMAT_CLI_BINARY), args);
    Run r;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.crashed = p.exitStatus() != QProcess::NormalExit;
    r.exitCode = r.crashed ? -2 : p.exitCode();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString model() { return sharedPath("corpus/with_weights/mlp.onnx"); }

} // namespace

class TstReaderErrorsCli : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!QFile::exists(model()))
            QSKIP("shared corpus (mlp.onnx) not found");
    }

    void malformedPlanIsAnError_data()
    {
        QTest::addColumn<QByteArray>("plan");
        QTest::addColumn<QString>("expected");
        QTest::newRow("9e859") << QByteArray("9e859") << "number overflow";
        QTest::newRow("version 1e400")
            << QByteArray(R"({"format": "remat-plan", "version": 1e400, "schedule": []})")
            << "number overflow";
        QTest::newRow("bound is a string")
            << QByteArray(
                   R"({"format": "remat-plan", "version": 1, "model": {"sha256": "", "batch": 4},)"
                   R"( "solver": {"id": "x", "status": "optimal", "objective": "min-peak",)"
                   R"( "budget_bytes": 0, "bound": "high"}, "schedule": []})")
            << "\"bound\" must be a number";
    }
    void malformedPlanIsAnError()
    {
        QFETCH(QByteArray, plan);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString path = dir.filePath("bad.plan.json");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(plan);
        f.close();
        const Run r = runRemat({"simulate", model(), "--plan", path});
        QVERIFY2(!r.crashed, r.err.constData());
        QCOMPARE(r.exitCode, 1);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.startsWith("error: "), qPrintable(err));
        QVERIFY2(err.contains(path), qPrintable(err));
        QVERIFY2(err.contains(expected), qPrintable(err));
    }

    void malformedBudgetIsAnError_data()
    {
        QTest::addColumn<QString>("budget");
        QTest::newRow("two dots") << "1.2.3GiB";
        QTest::newRow("only a dot") << ".";
        QTest::newRow("400 digits") << QString(400, '9');
        QTest::newRow("trailing words") << "6 GiB please";
    }
    void malformedBudgetIsAnError()
    {
        QFETCH(QString, budget);
        const Run r = runRemat({"solve", model(), "--solver", "chen-sqrtn", "--objective",
                                "min-time", "--budget", budget});
        QVERIFY2(!r.crashed, r.err.constData());
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(QString::fromUtf8(r.err).contains("byte count"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TstReaderErrorsCli)
#include "tst_reader_errors_cli.moc"
