// The built `remat bench remat-graphs` (REMAT_CLI_BINARY) on Checkmate's fcn_8_vgg graph (73 ops)
// with checkmate-milp. Expected:
// - `--time-limit 20 --csv F`: exit 0; two CSV rows (ratios 0.9, 0.8), both "optimal" (CBC proves
//   them in under a second), peak within the budget, TDI 0.03 % and 0.14 % (our proofs; the
//   published best is 0.0 and 0.1, Checkmate/Gurobi and Moccasin), so at most 0.05 and 0.15;
// - `--target --csv F`: the time limit of each row is a tenth of the best published time (3.1 s
//   -> 0.31 s), the published TDI and time are in the row, target_met is "met" or "missed" (which
//   one depends on the machine: not checked), and the table prints the published columns;
// - a folder without graphs: exit 2 and a message naming the folder.
#include "common/test_support.h"

#include "common/run_process.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace remat::tests;

namespace {

using Run = ProcessRun;

Run runRemat(const QStringList &args)
{
    return runProcess(QString(REMAT_CLI_BINARY), args, 120000);
}

/// CSV rows as column name -> text (the note is the last column and may hold commas).
QList<QMap<QString, QString>> readCsv(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    if (lines.isEmpty())
        return {};
    const QStringList header = lines.first().split(',');
    QList<QMap<QString, QString>> rows;
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList cells = lines[i].split(',');
        QMap<QString, QString> row;
        for (int c = 0; c < header.size() && c < cells.size(); ++c)
            row[header[c]] = cells[c];
        rows.push_back(row);
    }
    return rows;
}

QString graphDir() { return sharedPath("benchmarks/remat-graphs"); }

} // namespace

class TstBenchCli : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!QFile::exists(graphDir() + "/fcn_8_vgg_32_416x608_train.json"))
            QSKIP("shared benchmark graphs not found");
    }

    void provesFcnOptimal()
    {
        QTemporaryDir tmp;
        const QString csv = tmp.filePath("fcn.csv");
        const Run r =
            runRemat({"bench", "remat-graphs", "--dir", graphDir(), "--graphs", "fcn_8_vgg",
                      "--solvers", "checkmate-milp", "--time-limit", "20", "--csv", csv});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto rows = readCsv(csv);
        QCOMPARE(rows.size(), 2);
        const double maxTdi[] = {0.05, 0.15};
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(rows[i]["solver"], QString("checkmate-milp"));
            QCOMPARE(rows[i]["status"], QString("optimal"));
            QVERIFY(rows[i]["peak_bytes"].toLongLong() <= rows[i]["budget_bytes"].toLongLong());
            const double tdi = rows[i]["tdi_percent"].toDouble();
            QVERIFY2(tdi >= 0 && tdi <= maxTdi[i], qPrintable(rows[i]["tdi_percent"]));
            QCOMPARE(rows[i]["time_limit_seconds"].toDouble(), 20.0);
        }
        QCOMPARE(rows[0]["ratio"].toDouble(), 0.9);
        QCOMPARE(rows[1]["ratio"].toDouble(), 0.8);
    }

    void targetUsesPublishedTimes()
    {
        QTemporaryDir tmp;
        const QString csv = tmp.filePath("target.csv");
        const Run r =
            runRemat({"bench", "remat-graphs", "--dir", graphDir(), "--graphs", "fcn_8_vgg",
                      "--solvers", "checkmate-milp", "--target", "--csv", csv});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(r.out.contains("pub TDI %"));
        const auto rows = readCsv(csv);
        QCOMPARE(rows.size(), 2);
        const double publishedTdi[] = {0.0, 0.1};
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(rows[i]["time_limit_seconds"].toDouble(), 0.31);
            QCOMPARE(rows[i]["published_seconds"].toDouble(), 3.1);
            QCOMPARE(rows[i]["published_tdi_percent"].toDouble(), publishedTdi[i]);
            QVERIFY2(rows[i]["target_met"] == "met" || rows[i]["target_met"] == "missed",
                     qPrintable(rows[i]["target_met"]));
            QVERIFY(rows[i]["peak_bytes"].toLongLong() <= rows[i]["budget_bytes"].toLongLong());
        }
    }

    void emptyFolderIsAnError()
    {
        QTemporaryDir tmp;
        const Run r = runRemat({"bench", "remat-graphs", "--dir", tmp.path()});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(tmp.path().toUtf8()), r.err.constData());
    }

    void junkRatioIsAnErrorNotAnAbort()
    {
        // std::stod threw out of main (exit 134) on a ratio that is no number.
        const Run r = runRemat({"bench", "remat-graphs", "--ratios", "0.9,abc"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("'abc' is not a budget ratio"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TstBenchCli)
#include "tst_bench_cli.moc"
