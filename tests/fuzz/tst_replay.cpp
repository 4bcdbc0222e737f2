// Every input the fuzzers ever crashed on, replayed in the ordinary build: each file under
// tests/data/fuzz/<target>/ goes through the same entry point as its libFuzzer harness
// (fuzz_targets.h), which must return a Status — no exception, no abort (the harness's own
// invariants abort). One row per file; the inputs and what each one broke: tests/data/fuzz/README.md.
// Expected: every target has a folder, and every file returns.
#include "common/test_support.h"
#include "fuzz_targets.h"

#include "core/io/session_file.h"
#include "core/onnx/importer.h"

#include <QDir>
#include <QFile>
#include <QTest>

#include <exception>

using namespace remat;
using namespace remat::tests;

class TstReplay : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!QFile::exists(sharedPath("corpus/with_weights/mlp.onnx")))
            QSKIP("shared corpus (mlp.onnx, the model plans are read against) not found");
    }

    void replaysEveryRegressionInput_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("file");
        const QDir root(sourceDir() + "/tests/data/fuzz");
        int rows = 0;
        for (const fuzz::Target &t : fuzz::targets()) {
            const QDir dir(root.filePath(t.name));
            for (const QString &f : dir.entryList(QDir::Files | QDir::Hidden, QDir::Name)) {
                QTest::addRow("%s/%s", t.name, qPrintable(f)) << QString(t.name) << dir.filePath(f);
                ++rows;
            }
        }
        if (rows == 0)
            QTest::addRow("no inputs") << QString() << QString();
    }
    void replaysEveryRegressionInput()
    {
        QFETCH(QString, target);
        QFETCH(QString, file);
        QVERIFY2(!target.isEmpty(), "tests/data/fuzz holds no input");
        const fuzz::Target *t = fuzz::findTarget(toStd(target));
        QVERIFY2(t, qPrintable("no fuzz target named " + target));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        try {
            const core::Status s =
                t->run(reinterpret_cast<const uint8_t *>(bytes.constData()), size_t(bytes.size()));
            qDebug("%s", s.isOk() ? "ok" : s.toString().c_str());
        } catch (const std::exception &e) {
            QFAIL(qPrintable(QString("an exception left the reader: ") + e.what()));
        } catch (...) {
            QFAIL("an exception left the reader");
        }
    }

    void everyTargetHasARegressionFolder()
    {
        for (const fuzz::Target &t : fuzz::targets())
            QVERIFY2(QDir(sourceDir() + "/tests/data/fuzz/" + t.name).exists(),
                     qPrintable(QString("tests/data/fuzz/%1 is missing").arg(t.name)));
    }

    void onnxNamesMustBeUtf8()
    {
        // Found by fuzz_onnx: a node name that is not UTF-8 passed the importer, and writePlan's
        // JSON dump threw type_error 316 through `remat solve --out` (and `remat info --json`).
        QFile f(sourceDir() + "/tests/data/fuzz/onnx/node-name-not-utf8");
        QVERIFY(f.open(QIODevice::ReadOnly));
        auto g = core::onnx::importModelFromBytes(f.readAll().toStdString(), "latin1.onnx");
        QVERIFY(!g);
        QCOMPARE(g.status().code(), core::StatusCode::ParseError);
        QVERIFY2(g.status().message().find("latin1.onnx: ") == 0, g.status().toString().c_str());
        QVERIFY2(g.status().message().find("not valid UTF-8") != std::string::npos,
                 g.status().toString().c_str());
    }

    void sessionNumbersOutOfRangeAreErrors()
    {
        // The first reader (QJson) held every number as a double; casting 1e300 to int64_t was
        // undefined behaviour. Core's reader range-checks the same way.
        const std::string text =
            R"({"format": "remat-studio-session", "version": 1, "objective": "min-peak",)"
            R"( "batch": 1e300})";
        auto s = core::io::parseSession(text, "big.rematproj");
        QVERIFY(!s);
        QVERIFY2(s.status().message().find("big.rematproj") != std::string::npos,
                 s.status().toString().c_str());
        QVERIFY2(s.status().message().find("\"batch\"") != std::string::npos,
                 s.status().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(TstReplay)
#include "tst_replay.moc"
