// `remat run --profile-out` and `--profile` on simulate / solve / train-graph (the built remat,
// REMAT_CLI_BINARY), on mlp and tiny_vit from the corpus. Expected:
// - `run mlp --iters 3 --profile-out P --json`: exit 0, P is a remat-profile of mlp (its sha256,
//   batch, backend cpu, 2 timed iterations after 1 warm-up), the JSON names it and says
//   time_source "estimate" (no --profile given);
// - `simulate mlp --profile P --json`: exit 0, time_source "profile" or "calibrated" (run's graph
//   also differentiates the input: the first layer's backward differs in size), most ops
//   measured, none estimated; `train-graph` and `solve --solver chen-sqrtn` say the same; without
//   --profile all three say "estimate"; the text output has a "times:" label;
// - `simulate tiny_vit --profile P` (mlp's profile): exit 0, a warning on stderr that it was
//   measured on another model, naming both, time_source "calibrated", no op measured;
// - a missing profile and a malformed one: exit 1, the message names the file.
#include "common/test_support.h"

#include "common/run_process.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace remat::tests;

namespace {

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

using Run = ProcessRun;

Run runRemat(const QStringList &args)
{
    return runProcess(QString(REMAT_CLI_BINARY), args, 300000);
}

QJsonObject json(const Run &r) { return QJsonDocument::fromJson(r.out).object(); }

} // namespace

class TstProfileCli : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_profile;

    static QString model(const char *name)
    {
        return sharedPath(QString("corpus/with_weights/%1.onnx").arg(name));
    }

private slots:
    void initTestCase()
    {
        if (!QFileInfo::exists(model("mlp")) || !QFileInfo::exists(model("tiny_vit")))
            QSKIP("shared corpus not found");
        m_profile = m_dir.filePath("mlp.profile.json");
        const Run r =
            runRemat({"run", model("mlp"), "--iters", "3", "--profile-out", m_profile, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(json(r)["profile_out"].toString(), m_profile);
        QCOMPARE(json(r)["time_source"].toString(), QString("estimate"));
        QFile f(m_profile);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject p = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(p["format"].toString(), QString("remat-profile"));
        QCOMPARE(p["version"].toInt(), 1);
        QCOMPARE(p["backend"].toString(), QString("cpu"));
        QCOMPARE(p["iterations"].toInt(), 2);
        QCOMPARE(p["warmup_iterations"].toInt(), 1);
        QCOMPARE(p["model"].toObject()["sha256"].toString().size(), 64);
        QVERIFY(p["model"].toObject()["batch"].toInt() > 0);
        QVERIFY(p["step_seconds"].toDouble() > 0);
        // The second point: every op timed again at half the batch (mlp's 4 -> 2), smaller.
        const int batch = p["model"].toObject()["batch"].toInt();
        QCOMPARE(p["model"].toObject()["second_batch"].toInt(), batch > 1 ? batch / 2 : 2);
        int seconds = 0;
        for (const QJsonValue &v : p["ops"].toArray()) {
            const QJsonObject o = v.toObject(), second = o["second"].toObject();
            QVERIFY2(!second.isEmpty(), qPrintable(o["name"].toString()));
            QVERIFY(second["seconds"].toDouble() > 0);
            QVERIFY(second["bytes"].toDouble() <= o["bytes"].toDouble());
            ++seconds;
        }
        QVERIFY(seconds > 0);
        QVERIFY(json(r)["profile_second_point"].toString().contains("also at batch"));
        // --profile-one-batch: none.
        const QString one = m_dir.filePath("one.profile.json");
        QCOMPARE(runRemat({"run", model("mlp"), "--iters", "2", "--profile-out", one,
                           "--profile-one-batch"})
                     .exitCode,
                 0);
        QFile g(one);
        QVERIFY(g.open(QIODevice::ReadOnly));
        const QJsonObject q = QJsonDocument::fromJson(g.readAll()).object();
        QVERIFY(!q["model"].toObject().contains("second_batch"));
        QVERIFY(!q["ops"].toArray().first().toObject().contains("second"));
    }

    void commandsUseTheProfile()
    {
        const QList<QStringList> commands = {
            {"simulate", model("mlp"), "--json"},
            {"train-graph", model("mlp"), "--json"},
            {"solve", model("mlp"), "--solver", "chen-sqrtn", "--json"},
        };
        for (const QStringList &c : commands) {
            const Run plain = runRemat(c);
            QVERIFY2(plain.exitCode == 0, plain.err.constData());
            QCOMPARE(json(plain)["time_source"].toString(), QString("estimate"));
            const Run r = runRemat(c + QStringList{"--profile", m_profile});
            QVERIFY2(r.exitCode == 0, r.err.constData());
            const QJsonObject j = json(r);
            const QString source = j["time_source"].toString();
            QVERIFY2(source == "profile" || source == "calibrated",
                     qPrintable(c[0] + ": " + source));
            const QJsonObject counts = j["time_sources"].toObject();
            QVERIFY2(counts["profile"].toInt() > counts["calibrated"].toInt(), qPrintable(c[0]));
            QCOMPARE(counts["estimate"].toInt(), 0);
        }
        const Run text = runRemat({"simulate", model("mlp"), "--profile", m_profile});
        QVERIFY(text.exitCode == 0);
        QVERIFY2(text.out.contains("times: profile") || text.out.contains("times: calibrated"),
                 text.out.constData());
        const Run estimate = runRemat({"simulate", model("mlp")});
        QVERIFY2(estimate.out.contains("times: estimate"), estimate.out.constData());
    }

    void anotherModelWarns()
    {
        const Run r = runRemat({"simulate", model("tiny_vit"), "--profile", m_profile, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("warning:") && r.err.contains("another model") &&
                     r.err.contains("mlp.onnx"),
                 r.err.constData());
        const QJsonObject j = json(r);
        QCOMPARE(j["time_source"].toString(), QString("calibrated"));
        QCOMPARE(j["time_sources"].toObject()["profile"].toInt(), 0);
    }

    void badProfiles()
    {
        const QString missing = m_dir.filePath("nothing.json");
        const Run r = runRemat({"simulate", model("mlp"), "--profile", missing});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(missing.toUtf8()) && r.err.contains("--profile-out"),
                 r.err.constData());
        const QString bad = m_dir.filePath("bad.json");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            R"({"format": "remat-profile", "version": 1, "ops": [{"name": "x", "seconds": -2}]})");
        f.close();
        for (const char *cmd : {"simulate", "solve", "train-graph"}) {
            QStringList args = {cmd, model("mlp"), "--profile", bad};
            if (QString(cmd) == "solve")
                args << "--solver"
                     << "chen-sqrtn";
            const Run b = runRemat(args);
            QCOMPARE(b.exitCode, 1);
            QVERIFY2(b.err.contains(bad.toUtf8()) && b.err.contains("seconds"), b.err.constData());
        }
    }
};

QTEST_GUILESS_MAIN(TstProfileCli)
#include "tst_profile_cli.moc"
