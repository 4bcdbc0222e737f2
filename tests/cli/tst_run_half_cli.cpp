// `remat run --check` on half-precision training steps (the built remat, REMAT_CLI_BINARY), on
// tests/data/exec/half_net_torch.onnx (Conv, LayerNorm, Gemm, GELU) with Adam. Expected:
// - all-bfloat16 and half with float32 master weights (bfloat16, float16): exit 0, measured peak ==
//   predicted peak (peak_matches_prediction), gradients bitwise equal to the store-all check run,
//   backend_scratch_peak_bytes > 0 (the CPU reference's float32 copies, reported apart);
// - float32: the same with backend_scratch_peak_bytes == 0;
// - the text output names the scratch as outside the modelled memory.
#include "common/test_support.h"

#include "common/run_process.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace remat::tests;

namespace {

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

ProcessRun runRemat(const QStringList &args)
{
    return runProcess(QString(REMAT_CLI_BINARY), args, 300000);
}

QString dataFile(const char *name) { return sourceDir() + "/tests/data/exec/" + name; }

/// Runs with the first of `names` that --precision accepts (the names changed over time).
ProcessRun runWithPrecision(const QStringList &names, const QStringList &args, QString *used)
{
    ProcessRun r;
    for (const QString &n : names) {
        r = runRemat(args + QStringList{"--precision", n});
        *used = n;
        if (r.exitCode == 0 || !r.err.contains("--precision"))
            break;
    }
    return r;
}

} // namespace

class TstRunHalfCli : public QObject
{
    Q_OBJECT

private slots:
    void runCheck_data()
    {
        QTest::addColumn<QStringList>("precision");
        QTest::addColumn<bool>("half");
        QTest::newRow("float32") << QStringList{"fp32"} << false;
        QTest::newRow("all bfloat16") << QStringList{"bf16-true", "bf16"} << true;
        QTest::newRow("bfloat16 master") << QStringList{"bf16-master", "bf16-mixed"} << true;
        QTest::newRow("float16 master")
            << QStringList{"16-master", "fp16-master", "fp16-mixed"} << true;
    }

    void runCheck()
    {
        QFETCH(QStringList, precision);
        QFETCH(bool, half);
        const QStringList args = {"run",         dataFile("half_net_torch.onnx"),
                                  "--feed",      dataFile("half_net_torch.npz"),
                                  "--optimizer", "adam",
                                  "--check"};
        QString used;
        const ProcessRun r = runWithPrecision(precision, args + QStringList{"--json"}, &used);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QVERIFY2(j.value("peak_matches_prediction").toBool(), r.out.constData());
        QCOMPARE(j.value("measured_peak_bytes").toInteger(),
                 j.value("predicted_peak_bytes").toInteger());
        QVERIFY(j.value("gradients_match").toBool());
        QVERIFY(j.value("gradients_bitwise_equal").toBool());
        const qint64 scratch = j.value("backend_scratch_peak_bytes").toInteger(-1);
        QVERIFY2(half ? scratch > 0 : scratch == 0, r.out.constData());
        std::printf("%s: peak %lld B = predicted, scratch %lld B\n", qPrintable(used),
                    (long long)j.value("measured_peak_bytes").toInteger(), (long long)scratch);
        if (half) {
            const ProcessRun text = runRemat(args + QStringList{"--precision", used});
            QCOMPARE(text.exitCode, 0);
            QVERIFY2(text.out.contains("= predicted"), text.out.constData());
            QVERIFY2(text.out.contains("outside the modelled memory"), text.out.constData());
        }
    }
};

QTEST_GUILESS_MAIN(TstRunHalfCli)
#include "tst_run_half_cli.moc"
