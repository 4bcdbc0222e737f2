// The built `remat solve` (REMAT_CLI_BINARY, built before this test) on resnet18 from the corpus.
// Expected:
// - `--batch 8 --compare --json --time-limit 3`: exit 0 within ~20 s, a JSON list with one entry
//   per applicable solver (the eight checkpoint solvers at least; this once crashed inside CBC),
//   every planned entry carrying the keys, store-all's peak the largest activation peak;
// - `--solver chen-sqrtn --objective min-time --budget 200MiB --out plan.json --json`: exit 0,
//   peak <= budget, the plan file has format/version/model(sha256, batch 8)/solver/schedule/
//   checkpoints/figures, and `remat simulate --plan` reads it back to the same peak; at 64MiB
//   (below anything chen-sqrtn reaches) exit 3, status "infeasible", a note naming the budget;
// - a bad budget string, an unknown solver and an unknown --pin kind or value: non-zero exit and
//   a message naming the culprit;
// - a budget and no --objective: min-time ran, and the JSON says so and why; no budget: min-peak;
// - a budget store-all fits (512MiB; store-all peaks at 245.56 MiB): chen-sqrtn answers store-all's
//   plan (optimal, no recompute) and says so, instead of a plan that recomputes 30%;
// - `--compare` with an offload pin: a row for every solver, none an error; the checkpoint
//   solvers stream the pinned tensor (their notes say so), revolve and rotor (no pins) answer
//   "infeasible: cannot honour offload pin on X";
// - `--pareto --pareto-points 4 --json`: a frontier of points with peaks within their budgets,
//   recompute falling as the budget grows, every lower bound at or below its plan's recompute,
//   and store-all's peak (0% recompute) the last point.
// - `--pareto --json` on the corpus MLP (a plain chain, batch 4096): the chain DP ran (one op per
//   stage, its slots and slot size stated), every point simulated and labelled (chain-dp or
//   sweep; exact, bounded or not proven), peaks strictly rising and recompute strictly falling,
//   no lower bound above its plan, store-all's peak last at 0%, and rotor asked for each point's
//   peak as its budget finds no plan with less recompute; --pareto-slots 5 is refused.
#include "common/test_support.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace remat::tests;

namespace {

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

struct Run
{
    int exitCode = -1;
    QByteArray out, err;
    qint64 ms = 0;
};

Run runRemat(const QStringList &args, int timeoutMs = 60000)
{
    QProcess p;
    QElapsedTimer t;
    t.start();
    p.start(QString(REMAT_CLI_BINARY), args);
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.ms = t.elapsed();
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString model() { return sharedPath("corpus/graph_only/resnet18.onnx"); }

const char *const kPlanKeys[] = {"solver",           "status",         "objective",
                                 "budget_bytes",     "peak_bytes",     "activation_peak_bytes",
                                 "compute_time",     "recompute_time", "tdi_percent",
                                 "solver_objective", "bound",          "solve_seconds",
                                 "checkpoints"};

} // namespace

class TstSolveCli : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QVERIFY2(QFileInfo::exists(REMAT_CLI_BINARY), REMAT_CLI_BINARY);
        if (!QFileInfo::exists(model()))
            QSKIP("shared corpus not found");
    }

    void compareJson()
    {
        const Run r = runRemat(
            {"solve", model(), "--batch", "8", "--compare", "--json", "--time-limit", "3"}, 120000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.ms < 30000, qPrintable(QString("took %1 ms").arg(r.ms)));
        const QJsonDocument doc = QJsonDocument::fromJson(r.out);
        QVERIFY2(doc.isArray(), r.out.left(200).constData());
        QSet<QString> ids;
        qint64 storeAllActivations = -1, smallestActivations = -1;
        for (const QJsonValue &v : doc.array()) {
            const QJsonObject o = v.toObject();
            const QString id = o.value("solver").toString();
            ids.insert(id);
            if (o.value("status").toString() == "error") {
                QVERIFY2(!o.value("error").toString().isEmpty(), qPrintable(id));
                continue;
            }
            for (const char *key : kPlanKeys)
                QVERIFY2(o.contains(key), qPrintable(id + ": no key " + key));
            QCOMPARE(o.value("objective").toString(), QString("min-peak"));
            QVERIFY2(o.value("peak_bytes").toDouble() > 0, qPrintable(id));
            QVERIFY(o.value("checkpoints").isArray());
            const qint64 act = qint64(o.value("activation_peak_bytes").toDouble());
            if (id == "store-all")
                storeAllActivations = act;
            if (smallestActivations < 0 || act < smallestActivations)
                smallestActivations = act;
        }
        for (const char *id : {"store-all", "chen-sqrtn", "chen-greedy", "revolve", "feng-huang",
                               "hong-dp", "hong-linear", "rotor"})
            QVERIFY2(ids.contains(id), id);
        QVERIFY(storeAllActivations > 0);
        QVERIFY(smallestActivations < storeAllActivations);
        qInfo("--compare: %lld solvers in %lld ms", static_cast<long long>(ids.size()),
              static_cast<long long>(r.ms));
    }

    void overheadIsTheSimulatedStep()
    {
        // Issue 36 on densenet121 at batch 16: every plan's cost is its simulated step. The
        // offload plan recomputes nothing but waits on copies the compute cannot hide: its
        // time_overhead_percent is its simulated step over store-all's (re-simulated here from
        // its plan file), far above 100%, and no plan is called dominated by one that is slower.
        const QString dn = sharedPath("corpus/graph_only/densenet121.onnx");
        if (!QFileInfo::exists(dn))
            QSKIP("densenet121 not in the corpus");
        QTemporaryDir dir;
        const QString plan = dir.filePath("offload.json");
        const Run base = runRemat({"simulate", dn, "--batch", "16", "--json"});
        QVERIFY2(base.exitCode == 0, base.err.constData());
        const double baseStep =
            QJsonDocument::fromJson(base.out).object()["total_seconds"].toDouble();
        QVERIFY(baseStep > 0);
        const Run off = runRemat({"solve", dn, "--batch", "16", "--solver", "offload",
                                  "--objective", "min-peak", "--json", "--out", plan});
        QVERIFY2(off.exitCode == 0, off.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(off.out).object();
        const Run sim = runRemat({"simulate", dn, "--batch", "16", "--plan", plan, "--json"});
        QVERIFY2(sim.exitCode == 0, sim.err.constData());
        const double step = QJsonDocument::fromJson(sim.out).object()["total_seconds"].toDouble();
        QCOMPARE(o["step_seconds"].toDouble(), step);
        QCOMPARE(o["store_all_step_seconds"].toDouble(), baseStep);
        QVERIFY(std::abs(o["time_overhead_percent"].toDouble() - 100 * (step / baseStep - 1)) <
                1e-6);
        QCOMPARE(o["tdi_percent"].toDouble(), 0.0);
        QVERIFY2(o["time_overhead_percent"].toDouble() > 100,
                 qPrintable(QString::number(o["time_overhead_percent"].toDouble())));

        const Run cmp = runRemat({"solve", dn, "--batch", "16", "--compare", "--objective",
                                  "min-peak", "--json", "--time-limit", "3"},
                                 300000);
        QVERIFY2(cmp.exitCode == 0, cmp.err.constData());
        QHash<QString, QJsonObject> rows;
        for (const QJsonValue &v : QJsonDocument::fromJson(cmp.out).array())
            rows.insert(v.toObject()["solver"].toString(), v.toObject());
        QVERIFY(rows.contains("offload"));
        QVERIFY(rows["offload"]["far_end"].toBool());
        int dominated = 0;
        for (const QJsonObject &r : rows) {
            QVERIFY(r.contains("step_seconds") && r.contains("time_overhead_percent"));
            const QString note = r["note"].toString();
            const qsizetype at = note.indexOf("dominated by ");
            if (at < 0)
                continue;
            ++dominated;
            const QString by = note.mid(at + 13).section(' ', 0, 0);
            QVERIFY2(rows.contains(by), qPrintable(note));
            QVERIFY2(rows[by]["step_seconds"].toDouble() <= r["step_seconds"].toDouble() &&
                         rows[by]["peak_bytes"].toDouble() <= r["peak_bytes"].toDouble(),
                     qPrintable(r["solver"].toString() + ": " + note));
        }
        qInfo("densenet121 b16: offload +%.0f%% time at 0%% recompute; %d plans dominated, each "
              "by a plan no slower and no larger",
              o["time_overhead_percent"].toDouble(), dominated);
    }

    void maxOverheadHonouredOrSaid()
    {
        // --objective min-peak --max-overhead 35: every answered plan within 35% of store-all's
        // step, the table naming the lowest peak among them and the solvers that could not.
        const Run cmp =
            runRemat({"solve", model(), "--batch", "8", "--compare", "--objective", "min-peak",
                      "--max-overhead", "35", "--json", "--time-limit", "3"},
                     300000);
        QVERIFY2(cmp.exitCode == 0, cmp.err.constData());
        int honoured = 0;
        for (const QJsonValue &v : QJsonDocument::fromJson(cmp.out).array()) {
            const QJsonObject r = v.toObject();
            if (r["status"].toString() == "error")
                continue;
            QCOMPARE(r["max_overhead_percent"].toDouble(), 35.0);
            if (r["honours_max_overhead"].toBool()) {
                ++honoured;
                QVERIFY2(r["time_overhead_percent"].toDouble() <= 35 + 1e-6,
                         qPrintable(r["solver"].toString()));
            } else {
                QCOMPARE(r["status"].toString(), QString("infeasible"));
            }
        }
        QVERIFY(honoured >= 8);
        const Run text = runRemat({"solve", model(), "--batch", "8", "--solver", "rotor",
                                   "--objective", "min-peak", "--max-overhead", "35"});
        QVERIFY2(text.exitCode == 0, text.err.constData());
        QVERIFY2(text.out.contains("at most 35% slower than store-all"), text.out.constData());
        QVERIFY2(text.out.contains("time %"), text.out.constData());
        // With min-time the limit means nothing: refused, saying why.
        const Run bad =
            runRemat({"solve", model(), "--batch", "8", "--solver", "rotor", "--objective",
                      "min-time", "--budget-ratio", "0.5", "--max-overhead", "35"});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.contains("--objective min-peak"), bad.err.constData());
    }

    void planFileRoundTrip()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString plan = dir.filePath("plan.json");
        const Run r =
            runRemat({"solve", model(), "--batch", "8", "--solver", "chen-sqrtn", "--objective",
                      "min-time", "--budget", "200MiB", "--out", plan, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        for (const char *key : kPlanKeys)
            QVERIFY2(o.contains(key), key);
        QCOMPARE(o.value("solver").toString(), QString("chen-sqrtn"));
        QCOMPARE(o.value("budget_bytes").toDouble(), 200.0 * 1024 * 1024);
        QCOMPARE(o.value("status").toString(), QString("feasible"));
        QVERIFY(o.value("peak_bytes").toDouble() <= 200.0 * 1024 * 1024);
        QVERIFY(o.value("checkpoints").toArray().size() > 0);

        QFile f(plan);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject file = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(file.value("format").toString(), QString("remat-plan"));
        QCOMPARE(file.value("version").toInt(), 1);
        const QJsonObject m = file.value("model").toObject();
        QCOMPARE(m.value("batch").toInt(), 8);
        QCOMPARE(m.value("sha256").toString().size(), 64);
        const QJsonObject s = file.value("solver").toObject();
        QCOMPARE(s.value("id").toString(), QString("chen-sqrtn"));
        QCOMPARE(s.value("status").toString(), QString("feasible"));
        QCOMPARE(s.value("objective").toString(), QString("min-time"));
        QCOMPARE(s.value("budget_bytes").toDouble(), 200.0 * 1024 * 1024);
        QVERIFY(file.value("schedule").toArray().size() > 100);
        QCOMPARE(file.value("checkpoints").toArray(), o.value("checkpoints").toArray());
        QCOMPARE(file.value("figures").toObject().value("peak_bytes").toDouble(),
                 o.value("peak_bytes").toDouble());

        // Read back by the simulator: the same peak; refused at another batch.
        const Run sim = runRemat({"simulate", model(), "--batch", "8", "--plan", plan, "--json"});
        QVERIFY2(sim.exitCode == 0, sim.err.constData());
        const QJsonObject so = QJsonDocument::fromJson(sim.out).object();
        QCOMPARE(so.value("peak_bytes").toDouble(), o.value("peak_bytes").toDouble());
        QCOMPARE(so.value("recompute_seconds").toDouble(), o.value("recompute_time").toDouble());
        const Run other = runRemat({"simulate", model(), "--batch", "4", "--plan", plan});
        QVERIFY(other.exitCode != 0);
        QVERIFY2(other.err.contains("batch 8"), other.err.constData());
    }

    void budgetWithoutObjective()
    {
        const Run r = runRemat({"solve", model(), "--batch", "8", "--solver", "chen-sqrtn",
                                "--budget", "200MiB", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value("objective").toString(), QString("min-time"));
        QVERIFY2(o.value("objective_source").toString().contains("budget"), r.out.constData());
        QVERIFY(o.value("peak_bytes").toDouble() <= 200.0 * 1024 * 1024);
        const Run text = runRemat(
            {"solve", model(), "--batch", "8", "--solver", "chen-sqrtn", "--budget-ratio", "0.8"});
        QVERIFY2(text.exitCode == 0, text.err.constData());
        QVERIFY2(text.out.contains("objective min-time (default: a budget was given)"),
                 text.out.constData());
        const Run none =
            runRemat({"solve", model(), "--batch", "8", "--solver", "chen-sqrtn", "--json"});
        QVERIFY2(none.exitCode == 0, none.err.constData());
        QCOMPARE(QJsonDocument::fromJson(none.out).object().value("objective").toString(),
                 QString("min-peak"));
    }

    void storeAllFitsTheBudget()
    {
        const Run r = runRemat({"solve", model(), "--batch", "8", "--solver", "chen-sqrtn",
                                "--objective", "min-time", "--budget", "512MiB", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value("solver").toString(), QString("chen-sqrtn"));
        QCOMPARE(o.value("status").toString(), QString("optimal"));
        QCOMPARE(o.value("tdi_percent").toDouble(), 0.0);
        QVERIFY2(o.value("note").toString().contains("store-all returned"), r.out.constData());
    }

    void offloadPinRows()
    {
        const QString pinned = "/layer1/layer1.0/relu/Relu_output_0";
        const Run r = runRemat({"solve", model(), "--batch", "8", "--compare", "--json",
                                "--time-limit", "3", "--pin", "offload:" + pinned},
                               120000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QSet<QString> ids;
        for (const QJsonValue &v : QJsonDocument::fromJson(r.out).array()) {
            const QJsonObject o = v.toObject();
            const QString id = o.value("solver").toString();
            const QString note = o.value("note").toString();
            ids.insert(id);
            QVERIFY2(o.value("status").toString() != "error",
                     qPrintable(id + ": " + o.value("error").toString()));
            QCOMPARE(o.value("pins").toArray().size(), 1);
            if (id == "revolve" || id == "rotor") {
                QCOMPARE(o.value("status").toString(), QString("infeasible"));
                QVERIFY2(note.contains("infeasible: cannot honour offload pin on " + pinned),
                         qPrintable(note));
            } else if (id != "offload") {
                QVERIFY2(note.contains("offload pins: " + pinned), qPrintable(id + ": " + note));
            }
        }
        for (const char *id : {"store-all", "chen-sqrtn", "chen-greedy", "revolve", "feng-huang",
                               "hong-dp", "hong-linear", "rotor", "offload"})
            QVERIFY2(ids.contains(id), id);
    }

    void paretoFrontier()
    {
        const Run r = runRemat({"solve", model(), "--batch", "2", "--pareto", "--pareto-points",
                                "4", "--time-limit", "2", "--json"},
                               180000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonArray f = o.value("frontier").toArray();
        QVERIFY2(f.size() >= 2, r.out.constData());
        double lastTdi = 1e300, lastBudget = -1;
        for (const QJsonValue &v : f) {
            const QJsonObject p = v.toObject();
            QVERIFY(p.value("peak_bytes").toDouble() <= p.value("budget_bytes").toDouble());
            QVERIFY(p.value("budget_bytes").toDouble() > lastBudget);
            QVERIFY(p.value("tdi_percent").toDouble() < lastTdi);
            const double lb = p.value("lower_bound_tdi_percent").toDouble();
            QVERIFY(lb <= p.value("tdi_percent").toDouble() + 1e-6);
            lastTdi = p.value("tdi_percent").toDouble();
            lastBudget = p.value("budget_bytes").toDouble();
        }
        QCOMPARE(lastTdi, 0.0);
        QCOMPARE(lastBudget, o.value("store_all_peak_bytes").toDouble());
        // A bound proven at a sweep budget covers every point peaking at or below it: each
        // point's bound is at least the best such bound, and names a budget >= its peak.
        for (const QJsonValue &v : f) {
            const QJsonObject p = v.toObject();
            double best = -1;
            for (const QJsonValue &w : f) {
                const QJsonObject q = w.toObject();
                if (q.value("provenance").toString() == "sweep" &&
                    q.value("bound_budget_bytes").toDouble() >= p.value("peak_bytes").toDouble())
                    best = std::max(best, q.value("lower_bound_tdi_percent").toDouble());
            }
            QVERIFY(p.value("lower_bound_tdi_percent").toDouble() >= best - 1e-9);
            if (p.value("lower_bound_tdi_percent").toDouble() >= 0)
                QVERIFY(p.value("bound_budget_bytes").toDouble() >=
                        p.value("peak_bytes").toDouble());
        }
    }

    void paretoChainDp()
    {
        const QString mlp = sharedPath("corpus/with_weights/mlp.onnx");
        if (!QFileInfo::exists(mlp))
            QSKIP("corpus mlp not found");
        const Run r = runRemat({"solve", mlp, "--batch", "4096", "--pareto", "--pareto-points", "3",
                                "--time-limit", "2", "--json"},
                               120000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonObject dp = o.value("chain_dp").toObject();
        QVERIFY2(dp.value("one_op_per_stage").toBool(), r.out.constData());
        QCOMPARE(dp.value("slots").toInt(), 2000);
        QVERIFY(dp.value("slot_bytes").toDouble() > 0);
        QVERIFY(dp.value("breakpoints").toInt() >= 1);
        QVERIFY2(dp.value("exact_over_checkpoint_sets").toBool(), r.out.constData());
        QCOMPARE(dp.value("exact_dp_mismatches").toInt(), 0);
        const QJsonArray f = o.value("frontier").toArray();
        QVERIFY2(f.size() >= 2, r.out.constData());
        {
            // The text table keeps at most --pareto-rows rows (plus sweep points) and says so.
            int sweeps = 0;
            for (const QJsonValue &v : f)
                sweeps += v.toObject().value("provenance").toString() == "sweep" ? 1 : 0;
            const Run t = runRemat({"solve", mlp, "--batch", "4096", "--pareto", "--pareto-points",
                                    "3", "--time-limit", "2", "--pareto-rows", "2"},
                                   120000);
            QVERIFY2(t.exitCode == 0, t.err.constData());
            const QString text = QString::fromUtf8(t.out);
            const int rows = int(text.count(" chain-dp ") + text.count(" sweep "));
            QVERIFY2(rows <= 2 + sweeps, t.out.constData());
            QCOMPARE(text.contains(QString("of the %1 frontier points shown").arg(f.size())),
                     rows < f.size());
        }
        double lastPeak = -1, lastTdi = 1e300;
        for (const QJsonValue &v : f) {
            const QJsonObject p = v.toObject();
            QVERIFY(p.value("simulated").toBool());
            const QString prov = p.value("provenance").toString();
            QVERIFY2(prov == "chain-dp" || prov == "sweep", qPrintable(prov));
            const QString kind = p.value("kind").toString();
            QVERIFY2(kind == "exact" || kind == "bounded" || kind == "not proven" ||
                         kind == "exact-sets",
                     qPrintable(kind));
            // The mlp is a plain chain: its exact DP's points carry the exact-sets kind.
            QCOMPARE(kind == "exact-sets", p.value("solver").toString() == "exact-dp" &&
                                               dp.value("exact_over_checkpoint_sets").toBool());
            const double peak = p.value("peak_bytes").toDouble();
            const double tdi = p.value("tdi_percent").toDouble();
            QVERIFY(peak > lastPeak);
            QVERIFY(tdi < lastTdi);
            QVERIFY(p.value("lower_bound_tdi_percent").toDouble() <= tdi + 1e-6);
            if (kind != "exact-sets")
                QCOMPARE(kind == "not proven", p.value("lower_bound_tdi_percent").toDouble() < 0);
            // Rotor with this peak as its budget finds nothing better.
            const Run q = runRemat({"solve", mlp, "--batch", "4096", "--solver", "rotor",
                                    "--budget", QString::number(qint64(peak)), "--json"});
            const QJsonObject plan = QJsonDocument::fromJson(q.out).object();
            if (q.exitCode == 0 && plan.value("status").toString() != "infeasible")
                QVERIFY2(plan.value("tdi_percent").toDouble() >= tdi - 1e-6, q.out.constData());
            lastPeak = peak;
            lastTdi = tdi;
        }
        QCOMPARE(lastTdi, 0.0);
        QCOMPARE(lastPeak, o.value("store_all_peak_bytes").toDouble());
        const Run bad = runRemat({"solve", mlp, "--pareto", "--pareto-slots", "5"});
        QVERIFY(bad.exitCode != 0);
        QVERIFY2(bad.err.contains("pareto-slots"), bad.err.constData());
    }

    void infeasibleBudget()
    {
        // Expected: 64 MiB is below the weights, gradients and one activation of resnet18 b8
        // (store-all 245.56 MiB, chen-sqrtn 203.50 MiB): exit 3, status infeasible, and the
        // note states the smallest peak reached and the budget.
        const Run r = runRemat({"solve", model(), "--batch", "8", "--solver", "chen-sqrtn",
                                "--objective", "min-time", "--budget", "64MiB", "--json"});
        QCOMPARE(r.exitCode, 3);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value("status").toString(), QString("infeasible"));
        QVERIFY(o.value("peak_bytes").toDouble() > 64.0 * 1024 * 1024);
        const QString note = o.value("note").toString();
        QVERIFY2(note.contains("infeasible") && note.contains("64.00 MiB"), qPrintable(note));
    }

    void badArguments_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message"); // part of the message on stderr
        QTest::newRow("budget") << QStringList{"--solver", "chen-sqrtn", "--objective",
                                               "min-time", "--budget",   "12 potatoes"}
                                << "12 potatoes";
        QTest::newRow("solver") << QStringList{"--solver", "no-such-solver"}
                                << "unknown solver 'no-such-solver'";
        QTest::newRow("pin kind") << QStringList{"--solver", "feng-huang", "--pin", "maybe:input"}
                                  << "unknown kind 'maybe'";
        QTest::newRow("pin value")
            << QStringList{"--solver", "feng-huang", "--pin", "keep:no_such_tensor"}
            << "no tensor named 'no_such_tensor'";
        QTest::newRow("pin form") << QStringList{"--solver", "feng-huang", "--pin", "keep"}
                                  << "expected keep:VALUE";
        QTest::newRow("min-time without budget")
            << QStringList{"--solver", "rotor", "--objective", "min-time"}
            << "min-time needs --budget";
    }

    void badArguments()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = runRemat(QStringList{"solve", model(), "--batch", "2"} + args);
        QVERIFY(r.exitCode != 0 && r.exitCode != -1);
        QVERIFY2(QString(r.err).contains(message), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TstSolveCli)
#include "tst_solve_cli.moc"
