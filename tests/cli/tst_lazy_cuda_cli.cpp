// The built `remat` (REMAT_CLI_BINARY) opens the CUDA backend only when a run asks for it: the
// dynamic loader's own list of what it loads (LD_DEBUG=files) is read for each command.
// - `remat --help` and `remat info tiny_vit.onnx`: no libcudart / libcublas* / libcudnn* /
//   libremat_cuda loaded (and the list is not empty: libstdc++ is in it);
// - `remat run tiny_vit.onnx --backend cuda`: where the build has the module, libremat_cuda.so is
//   loaded, and without a device the run ends with exit 1 and "no CUDA device"; without the module,
//   exit 1 and "this build has no CUDA backend";
// - REMAT_CUDA_MODULE naming a missing file: exit 1, the message names the file; naming a file
//   that is no library: exit 1, "could not be loaded".
#include "common/test_support.h"

#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace remat::tests;

namespace {

struct Run
{
    int exitCode = -1;
    QByteArray out, err;
    QStringList loaded; ///< every "file=..." the dynamic loader reported
};

Run runRemat(const QStringList &args, const QMap<QString, QString> &env = {})
{
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("LD_DEBUG"), QStringLiteral("files"));
    for (auto it = env.begin(); it != env.end(); ++it)
        e.insert(it.key(), it.value());
    p.setProcessEnvironment(e);
    p.start(QString(REMAT_CLI_BINARY), args);
    Run r;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    static const QRegularExpression file(
        QStringLiteral("file=(\\S+)\\s+\\[\\d+\\];\\s+needed by|"
                       "file=(\\S+)\\s+\\[\\d+\\];\\s+dynamically"));
    for (const QString &line : QString::fromLocal8Bit(r.err).split(QLatin1Char('\n'))) {
        const QRegularExpressionMatch m = file.match(line);
        if (m.hasMatch())
            r.loaded << (m.captured(1).isEmpty() ? m.captured(2) : m.captured(1));
    }
    return r;
}

QStringList cudaLibraries(const QStringList &loaded)
{
    QStringList out;
    for (const QString &f : loaded)
        for (const char *n : {"libcudart", "libcublas", "libcudnn", "libremat_cuda"})
            if (f.contains(QLatin1String(n)))
                out << f;
    return out;
}

QString sample() { return sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx"); }

/// Whether this build has the CUDA module (tests/CMakeLists.txt names it in REMAT_CUDA_MODULE).
bool moduleBuilt() { return !qgetenv("REMAT_CUDA_MODULE").isEmpty(); }

} // namespace

class TstLazyCudaCli : public QObject
{
    Q_OBJECT
private slots:
    void helpAndInfoLoadNoCuda_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("--help") << QStringList{QStringLiteral("--help")};
        QTest::newRow("info") << QStringList{QStringLiteral("info"), sample()};
    }
    void helpAndInfoLoadNoCuda()
    {
        QFETCH(QStringList, args);
        const Run r = runRemat(args);
        QVERIFY2(r.exitCode == 0, r.err.right(2000).constData());
        bool sawStdcxx = false;
        for (const QString &f : r.loaded)
            sawStdcxx = sawStdcxx || f.contains(QLatin1String("libstdc++"));
        QVERIFY2(sawStdcxx, "LD_DEBUG=files listed no libstdc++: the check would see nothing");
        const QStringList cuda = cudaLibraries(r.loaded);
        QVERIFY2(cuda.isEmpty(), qPrintable(cuda.join(QStringLiteral(", "))));
    }

    void cudaRunOpensTheModule()
    {
        const Run r = runRemat(
            {QStringLiteral("run"), sample(), QStringLiteral("--backend"), QStringLiteral("cuda")});
        const QString err = QString::fromLocal8Bit(r.err);
        if (!moduleBuilt()) {
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(err.contains(QLatin1String("this build has no CUDA backend")),
                     qPrintable(err.right(2000)));
            return;
        }
        QVERIFY2(!cudaLibraries(r.loaded).filter(QStringLiteral("libremat_cuda")).isEmpty(),
                 qPrintable(r.loaded.join(QStringLiteral(", "))));
        QVERIFY2(!cudaLibraries(r.loaded).filter(QStringLiteral("libcudart")).isEmpty(),
                 qPrintable(r.loaded.join(QStringLiteral(", "))));
        // exit 0 on a machine with a GPU; without one, the message it always gave
        if (r.exitCode != 0) {
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(err.contains(QLatin1String("no CUDA device")), qPrintable(err.right(2000)));
        }
    }

    void badModulePathIsNamed()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString missing = dir.filePath(QStringLiteral("no_such_libremat_cuda.so"));
        const QStringList args{QStringLiteral("run"), sample(), QStringLiteral("--backend"),
                               QStringLiteral("cuda")};
        Run r = runRemat(args, {{QStringLiteral("REMAT_CUDA_MODULE"), missing}});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(missing.toLocal8Bit()) && r.err.contains("does not exist"),
                 r.err.right(2000).constData());

        const QString notALibrary = dir.filePath(QStringLiteral("libremat_cuda.so"));
        QFile f(notALibrary);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not an ELF file\n");
        f.close();
        r = runRemat(args, {{QStringLiteral("REMAT_CUDA_MODULE"), notALibrary}});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("could not be loaded"), r.err.right(2000).constData());
    }
};

QTEST_GUILESS_MAIN(TstLazyCudaCli)
#include "tst_lazy_cuda_cli.moc"
