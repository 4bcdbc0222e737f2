// The built `remat fit` and `remat train-graph` training options (REMAT_CLI_BINARY) on the corpus
// MLP with weights. Expected:
// - `fit --memory 1MiB --solver chen-greedy --json`: one object per solver (store-all first),
//   each with solver / batch / peak_bytes / recompute_percent / plan; each peak within 1 MiB; and
//   the batch is the largest that fits: `train-graph --batch B+1` (store-all) peaks over 1 MiB
//   while `--batch B` matches fit's peak exactly;
// - the same with `--optimizer adam`: the 16 B per parameter take memory, so the batch is smaller;
// - a memory below the model states: batch 0, exit 0, the peak at batch 1 reported;
// - `--device 24gb` is 24 GiB; an unknown preset, a bad memory string, --batch, and an unknown
//   solver: non-zero exit naming the culprit;
// - `train-graph --optimizer adam --precision bf16-mixed --json`: the stable keys, 18 B per
//   parameter, and peak_bytes above the model states;
// - `train-graph --json` lists the training graph: one entry per op (forward first, then loss and
//   backward), each reading and writing tensors named in tensor_bytes (one per tensor).
#include "common/test_support.h"

#include "common/run_process.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace remat::tests;

namespace {

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

using Run = ProcessRun;

Run runRemat(const QStringList &args)
{
    return runProcess(QString(REMAT_CLI_BINARY), args, 120000);
}

QString model() { return sharedPath("corpus/with_weights/mlp.onnx"); }

constexpr qint64 kParams = 6922;

qint64 storeAllPeak(int batch, const QStringList &extra = {})
{
    Run r = runRemat(
        QStringList{"train-graph", model(), "--batch", QString::number(batch), "--json"} + extra);
    if (r.exitCode != 0)
        return -1;
    return QJsonDocument::fromJson(r.out).object().value("peak_bytes").toInteger();
}

} // namespace

class TstFitCli : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        if (!QFileInfo::exists(model()))
            QSKIP("corpus not found");
    }
    void largestBatchThatFits_data();
    void largestBatchThatFits();
    void nothingFits();
    void maxOverheadLimitsTheBatch();
    void badArgumentsAreNamed();
    void searchLimitSaysWhereItStopped();
    void trainGraphReportsModelStates();
    void trainGraphListsItsOps();
};

void TstFitCli::largestBatchThatFits_data()
{
    QTest::addColumn<QStringList>("training");
    QTest::newRow("no optimizer") << QStringList{};
    QTest::newRow("adam") << QStringList{"--optimizer", "adam"};
}

void TstFitCli::largestBatchThatFits()
{
    QFETCH(QStringList, training);
    const qint64 memory = 1 << 20;
    Run r = runRemat(
        QStringList{"fit", model(), "--memory", "1MiB", "--solver", "chen-greedy", "--json"} +
        training);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonArray rows = QJsonDocument::fromJson(r.out).array();
    QCOMPARE(rows.size(), 2);
    QCOMPARE(rows[0].toObject().value("solver").toString(), QString("store-all"));
    QCOMPARE(rows[1].toObject().value("solver").toString(), QString("chen-greedy"));
    for (const QJsonValue &v : rows) {
        const QJsonObject o = v.toObject();
        for (const char *key : {"solver", "batch", "peak_bytes", "recompute_percent", "plan"})
            QVERIFY2(o.contains(key), key);
        QVERIFY(o.value("batch").toInt() >= 1);
        QVERIFY(o.value("peak_bytes").toInteger() <= memory);
        QVERIFY(o.value("plan").isObject());
    }
    // Store-all's answer is the largest batch: B fits with fit's figure, B + 1 does not.
    const QJsonObject sa = rows[0].toObject();
    const int b = sa.value("batch").toInt();
    QCOMPARE(storeAllPeak(b, training), sa.value("peak_bytes").toInteger());
    QVERIFY(storeAllPeak(b + 1, training) > memory);
    QCOMPARE(sa.value("recompute_percent").toDouble(), 0.0);
    // A checkpointing solver fits at least as large a batch.
    QVERIFY(rows[1].toObject().value("batch").toInt() >= b);
    if (training.isEmpty()) {
        Run adam = runRemat({"fit", model(), "--memory", "1MiB", "--optimizer", "adam", "--json"});
        QVERIFY(adam.exitCode == 0);
        const int withAdam =
            QJsonDocument::fromJson(adam.out).array()[0].toObject().value("batch").toInt();
        QVERIFY2(withAdam < b, "Adam's state must take room from the batch");
    }
}

void TstFitCli::maxOverheadLimitsTheBatch()
{
    // --max-overhead P: a plan fits only when its step is at most P% slower than store-all's at
    // the same batch. P = 0 allows no recompute: where chen-greedy fits a larger batch than
    // store-all by recomputing, the limit takes it back.
    Run free = runRemat({"fit", model(), "--memory", "1MiB", "--solver", "chen-greedy", "--json"});
    Run zero = runRemat({"fit", model(), "--memory", "1MiB", "--solver", "chen-greedy",
                         "--max-overhead", "0", "--json"});
    QVERIFY2(free.exitCode == 0 && zero.exitCode == 0, zero.err.constData());
    const QJsonArray a = QJsonDocument::fromJson(free.out).array();
    const QJsonArray z = QJsonDocument::fromJson(zero.out).array();
    const int storeAll = a[0].toObject().value("batch").toInt();
    const int greedy = a[1].toObject().value("batch").toInt();
    const int greedyZero = z[1].toObject().value("batch").toInt();
    QVERIFY2(greedyZero <= greedy, qPrintable(QString::number(greedyZero)));
    QVERIFY(z[1].toObject().value("time_overhead_percent").toDouble() <= 1e-6);
    if (greedy > storeAll) // the larger batch was bought with recompute
        QVERIFY2(greedyZero < greedy, qPrintable(QString("%1 %2").arg(greedyZero).arg(greedy)));
    QCOMPARE(z[1].toObject().value("max_overhead_percent").toDouble(), 0.0);
}

void TstFitCli::nothingFits()
{
    Run r = runRemat({"fit", model(), "--memory", "64KiB", "--optimizer", "adam", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).array()[0].toObject();
    QCOMPARE(o.value("batch").toInt(), 0);
    QVERIFY(o.value("peak_at_batch_1").toInteger() > 16 * kParams); // over 64 KiB, said
    QVERIFY(o.value("plan").isNull());
}

void TstFitCli::badArgumentsAreNamed()
{
    struct Case
    {
        QStringList args;
        const char *says;
    };
    const Case cases[] = {
        {{"fit", model(), "--device", "tpu"}, "--device tpu"},
        {{"fit", model(), "--memory", "lots"}, "--memory lots"},
        {{"fit", model()}, "--memory"},
        {{"fit", model(), "--memory", "1GiB", "--batch", "8"}, "--batch"},
        {{"fit", model(), "--memory", "1GiB", "--solver", "nope"}, "--solver nope"},
        {{"fit", model(), "--memory", "1GiB", "--optimizer", "lamb"}, "--optimizer"},
        {{"train-graph", model(), "--precision", "fp8"}, "--precision"},
    };
    for (const Case &c : cases) {
        Run r = runRemat(c.args);
        QVERIFY2(r.exitCode != 0, c.args.join(' ').toUtf8().constData());
        QVERIFY2(r.err.contains(c.says), (c.args.join(' ') + ": " + r.err).toUtf8().constData());
    }
    Run r = runRemat({"fit", model(), "--device", "24gb", "--max-batch", "2", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).array()[0].toObject();
    QCOMPARE(o.value("memory_bytes").toInteger(), qint64(24) << 30);
    QCOMPARE(o.value("batch").toInt(), 2); // capped by --max-batch
    QCOMPARE(o.value("search_stopped").toBool(), false);
}

// --search-limit spent at once: the search answers batch 1 and says it stopped, in JSON and in
// the table; --search-limit 0 does not stop it; a solver out of time before any plan says so
// while the others answer; a negative limit is refused.
void TstFitCli::searchLimitSaysWhereItStopped()
{
    Run r = runRemat({"fit", model(), "--memory", "1MiB", "--search-limit", "1e-9", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QJsonObject o = QJsonDocument::fromJson(r.out).array()[0].toObject();
    QCOMPARE(o.value("batch").toInt(), 1);
    QCOMPARE(o.value("search_stopped").toBool(), true);
    QCOMPARE(o.value("batches_tried").toInt(), 1);
    Run table = runRemat({"fit", model(), "--memory", "1MiB", "--search-limit", "1e-9"});
    QVERIFY2(
        table.out.contains("search stopped at --search-limit 1e-09s: larger batches not tried"),
        table.out.constData());
    Run none = runRemat({"fit", model(), "--memory", "1MiB", "--search-limit", "0", "--json"});
    o = QJsonDocument::fromJson(none.out).array()[0].toObject();
    QCOMPARE(o.value("search_stopped").toBool(), false);
    QVERIFY(o.value("batch").toInt() > 1);
    QCOMPARE(o.value("first_batch_not_fitting").toInt(), o.value("batch").toInt() + 1);
    // A solver out of time before any plan says so; store-all's answer stands, exit 0.
    Run late =
        runRemat({"fit", model(), "--memory", "1MiB", "--solver", "rotor", "--time-limit", "1e-9"});
    QVERIFY2(late.exitCode == 0, late.err.constData());
    QVERIFY2(late.out.contains("stopped at its time limit before any plan"), late.out.constData());
    Run lateJson = runRemat({"fit", model(), "--memory", "1MiB", "--solver", "rotor",
                             "--time-limit", "1e-9", "--json"});
    const QJsonArray rows = QJsonDocument::fromJson(lateJson.out).array();
    QCOMPARE(rows.size(), 2);
    QVERIFY(rows[0].toObject().value("batch").toInt() > 1);
    QCOMPARE(rows[1].toObject().value("out_of_time").toBool(), true);
    Run bad = runRemat({"fit", model(), "--memory", "1MiB", "--search-limit", "-1"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("--search-limit"), bad.err.constData());
}

void TstFitCli::trainGraphReportsModelStates()
{
    Run r = runRemat({"train-graph", model(), "--batch", "4", "--optimizer", "adam", "--precision",
                      "bf16-master", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o.value("optimizer").toString(), QString("adam"));
    QCOMPARE(o.value("precision").toString(), QString("bf16-master"));
    QCOMPARE(o.value("shard").toString(), QString("none"));
    QCOMPARE(o.value("ranks").toInt(), 1);
    QCOMPARE(o.value("param_bytes").toInteger(), 2 * kParams);
    QCOMPARE(o.value("param_grad_bytes").toInteger(), 4 * kParams);
    QCOMPARE(o.value("master_weight_bytes").toInteger(), 4 * kParams);
    QCOMPARE(o.value("optimizer_state_bytes").toInteger(), 8 * kParams);
    QVERIFY(o.value("peak_bytes").toInteger() > 18 * kParams);
    Run plain = runRemat({"train-graph", model(), "--batch", "4", "--json"});
    const QJsonObject p = QJsonDocument::fromJson(plain.out).object();
    QCOMPARE(p.value("optimizer").toString(), QString("none"));
    QCOMPARE(p.value("optimizer_state_bytes").toInteger(), qint64(0));
    QCOMPARE(p.value("master_weight_bytes").toInteger(), qint64(0));
    // bf16-mixed is autocast: float32 model states (16 B a parameter with Adam), the weights'
    // bfloat16 copies as activations, on the CPU's lists when asked.
    Run ac = runRemat({"train-graph", model(), "--batch", "4", "--optimizer", "adam", "--precision",
                       "bf16-mixed", "--autocast-device", "cpu", "--json"});
    QVERIFY2(ac.exitCode == 0, ac.err.constData());
    const QJsonObject a = QJsonDocument::fromJson(ac.out).object();
    QCOMPARE(a.value("precision").toString(), QString("bf16-mixed"));
    QCOMPARE(a.value("autocast_device").toString(), QString("cpu"));
    QCOMPARE(a.value("param_bytes").toInteger(), 4 * kParams);
    QCOMPARE(a.value("master_weight_bytes").toInteger(), qint64(0));
    QCOMPARE(a.value("weight_cast_bytes").toInteger(), 2 * kParams); // every weight cast once
    // Mistakes name the way out.
    Run noMixed = runRemat({"train-graph", model(), "--autocast-device", "cpu"});
    QVERIFY(noMixed.exitCode != 0);
    QVERIFY2(noMixed.err.contains("bf16-mixed"), noMixed.err.constData());
    Run retired = runRemat({"train-graph", model(), "--precision", "fp16-mixed"});
    QVERIFY(retired.exitCode != 0);
    QVERIFY2(retired.err.contains("16-master"), retired.err.constData());
}

void TstFitCli::trainGraphListsItsOps()
{
    Run r = runRemat({"train-graph", model(), "--batch", "4", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const QJsonArray ops = o.value("ops").toArray();
    const QJsonObject bytes = o.value("tensor_bytes").toObject();
    QCOMPARE(qint64(ops.size()), o.value("forward_ops").toInteger() +
                                     o.value("loss_ops").toInteger() +
                                     o.value("backward_ops").toInteger());
    QCOMPARE(qint64(bytes.size()), o.value("tensors").toInteger());
    const QStringList order{"forward", "loss", "backward"};
    int phase = 0, backward = 0;
    for (const QJsonValue &v : ops) {
        const QJsonObject op = v.toObject();
        const int at = order.indexOf(op.value("phase").toString());
        QVERIFY2(at >= phase, qPrintable(op.value("name").toString() + " is out of phase order"));
        phase = at;
        backward += at == 2 ? 1 : 0;
        for (const char *side : {"inputs", "outputs"})
            for (const QJsonValue &t : op.value(side).toArray())
                QVERIFY2(bytes.contains(t.toString()), qPrintable(t.toString()));
    }
    QCOMPARE(qint64(backward), o.value("backward_ops").toInteger());
}

QTEST_GUILESS_MAIN(TstFitCli)
#include "tst_fit_cli.moc"
