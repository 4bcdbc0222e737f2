// The planner's "Largest batch for this GPU" dialog (ui/planner/fit_dialog.h), offscreen, against
// the built `remat fit` (REMAT_CLI_BINARY) on the corpus MLP with weights. Expected:
// - for the same memory, solver and training options, every row (store-all first, then the
//   solver) has `remat fit --json`'s batch, peak and recompute; the table shows them and the
//   chart has the memory line, one curve per row and the batches that did not fit;
// - applying a row opens the model at its batch (one undo step);
// - Cancel stops a search on resnet18 at 141 GiB (many imports of a larger model): finished(true),
//   "Cancelled.";
// - a memory that is not a byte count is refused, naming it; "this GPU" leads the presets when
//   a backend reports free memory.
#include "common/test_support.h"

#include "common/run_process.h"
#include "core/util/bytes.h"
#include "ui/planner/fit_dialog.h"
#include "ui/planner/planner.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#ifndef REMAT_CLI_BINARY
#error "REMAT_CLI_BINARY (the remat executable) must be defined by tests/CMakeLists.txt"
#endif

using namespace remat;
using namespace remat::ui;

namespace {

QString mlp() { return tests::sharedPath("corpus/with_weights/mlp.onnx"); }

QJsonArray rematFit(const QStringList &args)
{
    const tests::ProcessRun r =
        tests::runProcess(QString(REMAT_CLI_BINARY), QStringList{"fit", mlp(), "--json"} + args);
    if (r.exitCode != 0)
        qWarning("remat fit: %s", r.err.constData());
    return QJsonDocument::fromJson(r.out).array();
}

bool loadInto(Planner &planner, const QString &path, int64_t batch)
{
    QSignalSpy loaded(&planner, &Planner::problemChanged);
    planner.openModel(path, batch);
    const bool ok = loaded.wait(60000);
    planner.waitForIdle();
    return ok;
}

} // namespace

class TestFitDialog : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        if (!QFileInfo::exists(mlp()))
            QSKIP("shared corpus not found");
    }

    void answerEqualsRematFit_data()
    {
        QTest::addColumn<QString>("memory");
        QTest::addColumn<QString>("solver");
        QTest::addColumn<bool>("adam");
        QTest::newRow("1 MiB chen-sqrtn") << "1MiB"
                                          << "chen-sqrtn" << false;
        QTest::newRow("300 KiB rotor, adam") << "300KiB"
                                             << "rotor" << true;
    }
    void answerEqualsRematFit()
    {
        QFETCH(QString, memory);
        QFETCH(QString, solver);
        QFETCH(bool, adam);
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        QVERIFY(loadInto(planner, mlp(), 4));
        QStringList cliArgs{"--memory", memory, "--solver", solver};
        if (adam) {
            core::training::TrainingOptions t;
            t.optimizer = core::training::Optimizer::Adam;
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            planner.setTraining(t);
            QVERIFY(loaded.wait(60000));
            cliArgs << "--optimizer"
                    << "adam";
        }
        const QJsonArray cli = rematFit(cliArgs);
        QCOMPARE(cli.size(), 2);

        QPointer<FitDialog> dialog = planner.openFitDialog(nullptr);
        QVERIFY(dialog);
        auto bytes = core::parseBytes(memory.toStdString());
        QVERIFY(bytes.hasValue());
        dialog->setMemoryBytes(*bytes);
        QCOMPARE(dialog->memoryBytes(), *bytes);
        dialog->setCheckedSolvers({solver});
        QSignalSpy finished(dialog.data(), &FitDialog::finished);
        QVERIFY(dialog->start());
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.first().first().toBool(), false);
        QCOMPARE(dialog->results().size(), size_t(2));
        auto *table = dialog->findChild<QTableWidget *>(QStringLiteral("fitTable"));
        QCOMPARE(table->rowCount(), 2);
        for (int i = 0; i < 2; ++i) {
            const QJsonObject want = cli[i].toObject();
            const core::pipeline::FitResult &got = dialog->results()[size_t(i)];
            QCOMPARE(QString::fromStdString(got.solver), want["solver"].toString());
            QCOMPARE(got.batch, want["batch"].toInteger());
            QVERIFY(got.batch > 0);
            QCOMPARE(got.plan->timeline.peakBytes, want["peak_bytes"].toInteger());
            QCOMPARE(got.tries, want["batches_tried"].toInt());
            QVERIFY(qAbs(got.plan->timeline.tdiPercent() - want["recompute_percent"].toDouble()) <
                    1e-9);
            QCOMPARE(table->item(i, 0)->text(), want["solver"].toString());
            QCOMPARE(table->item(i, 1)->text(), QString::number(want["batch"].toInteger()));
            QCOMPARE(table->item(i, 2)->text(),
                     QString::fromStdString(core::formatBytes(got.plan->timeline.peakBytes)));
        }
        auto *chart = dialog->findChild<QChartView *>(QStringLiteral("fitChart"));
        // The memory line, a curve per row and the batches that did not fit (the doubling
        // always tries one over the memory).
        QCOMPARE(chart->chart()->series().size(), 4);

        // Applying the solver's row opens the model at its batch; undo goes back.
        const int64_t batch = dialog->results()[1].batch;
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        QVERIFY(dialog->applyRow(1));
        QVERIFY(loaded.wait(60000));
        QCOMPARE(planner.document()->batch(), batch);
        QCOMPARE(planner.problem()->batch, batch);
        planner.document()->undoStack()->undo();
        QVERIFY(loaded.wait(60000));
        QCOMPARE(planner.problem()->batch, int64_t(4));
        dialog->close(); // deletes itself
        QTRY_VERIFY(!dialog);
    }

    // The spelling: `remat fit resnet50 --memory 24GiB --precision bf16-mixed
    // --trainable '^fc\.'` (autocast, only the classifier head trains) and the planner's Largest
    // batch dialog on the same model, opened with the same pattern and precision, give the same
    // rows (store-all and chen-sqrtn: batch, peak, batches tried).
    void resnet50AutocastHeadOnlyEqualsRematFit()
    {
        const QString resnet = tests::sharedPath("corpus/graph_only/resnet50.onnx");
        if (!QFileInfo::exists(resnet))
            QSKIP("resnet50 not in the corpus");
        const int64_t memory = int64_t(24) << 30;
        const tests::ProcessRun r =
            tests::runProcess(QString(REMAT_CLI_BINARY),
                              {"fit", resnet, "--memory", "24GiB", "--precision", "bf16-mixed",
                               "--trainable", "^fc\\.", "--solver", "chen-sqrtn", "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonArray cli = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(cli.size(), 2);

        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        core::onnx::ImportOptions settings;
        settings.trainablePatterns = {"^fc\\."};
        {
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            planner.openModel(resnet, 1, settings);
            QVERIFY(loaded.wait(120000));
            planner.waitForIdle();
        }
        core::training::TrainingOptions t;
        t.precision = core::training::Precision::Bf16Mixed;
        {
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            planner.setTraining(t);
            QVERIFY(loaded.wait(120000));
            planner.waitForIdle();
        }
        QCOMPARE(planner.document()->importSettings().trainablePatterns,
                 std::vector<std::string>{"^fc\\."});
        QPointer<FitDialog> dialog = planner.openFitDialog(nullptr);
        QVERIFY(dialog);
        dialog->setMemoryBytes(memory);
        dialog->setCheckedSolvers({QStringLiteral("chen-sqrtn")});
        QSignalSpy finished(dialog.data(), &FitDialog::finished);
        QVERIFY(dialog->start());
        QVERIFY(finished.count() > 0 || finished.wait(600000));
        QCOMPARE(finished.first().first().toBool(), false);
        QCOMPARE(dialog->results().size(), size_t(2));
        for (int i = 0; i < 2; ++i) {
            const QJsonObject want = cli[i].toObject();
            const core::pipeline::FitResult &got = dialog->results()[size_t(i)];
            QCOMPARE(want["precision"].toString(), QStringLiteral("bf16-mixed"));
            QCOMPARE(QString::fromStdString(got.solver), want["solver"].toString());
            QVERIFY2(got.error.empty(), got.error.c_str());
            QVERIFY(got.batch > 0);
            QCOMPARE(got.batch, want["batch"].toInteger());
            QVERIFY(got.plan);
            QCOMPARE(got.plan->timeline.peakBytes, want["peak_bytes"].toInteger());
            QVERIFY(got.plan->timeline.peakBytes <= memory);
            QCOMPARE(got.tries, want["batches_tried"].toInt());
            qInfo("%s: batch %lld, peak %lld B (remat fit: the same)", got.solver.c_str(),
                  (long long)got.batch, (long long)got.plan->timeline.peakBytes);
        }
        dialog->close();
        QTRY_VERIFY(!dialog);
    }

    void cancelStopsTheSearch()
    {
        const QString resnet = tests::sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(resnet))
            QSKIP("resnet18 not in the corpus");
        FitDialog::Inputs in;
        in.modelPath = resnet;
        in.solvers = Planner::registrySolvers();
        FitDialog dialog(in);
        dialog.setMemoryBytes(int64_t(141) << 30);
        dialog.setCheckedSolvers({QStringLiteral("chen-sqrtn")});
        QSignalSpy finished(&dialog, &FitDialog::finished);
        QVERIFY(dialog.start());
        QVERIFY(dialog.isRunning());
        dialog.cancel();
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().first().toBool(), true);
        QVERIFY(!dialog.isRunning());
        QCOMPARE(dialog.statusText(), QStringLiteral("Cancelled."));
        for (const auto &r : dialog.results())
            QVERIFY(!r.cancelled);
    }

    // Cancel in the middle of a search, after its progress has reached the window: the search
    // stops (the remaining solver is not searched), the dialog says Cancelled, and nothing is
    // left running.
    void cancelInTheMiddleOfASearch()
    {
        const QString resnet = tests::sharedPath("corpus/graph_only/resnet50.onnx");
        if (!QFileInfo::exists(resnet))
            QSKIP("resnet50 not in the corpus");
        FitDialog::Inputs in;
        in.modelPath = resnet;
        in.solvers = Planner::registrySolvers();
        FitDialog dialog(in);
        dialog.setMemoryBytes(int64_t(141) << 30);
        dialog.setCheckedSolvers({QStringLiteral("chen-sqrtn")});
        QSignalSpy finished(&dialog, &FitDialog::finished);
        QVERIFY(dialog.start());
        // store-all's search imports resnet50 at a dozen batches: the first progress line
        // arrives long before it ends.
        QVERIFY(QTest::qWaitFor(
            [&] { return dialog.statusText().contains(QStringLiteral("trying batch")); }, 60000));
        QVERIFY(dialog.isRunning());
        dialog.cancel();
        QVERIFY(finished.count() > 0 || finished.wait(60000));
        QCOMPARE(finished.first().first().toBool(), true);
        QVERIFY(!dialog.isRunning());
        QCOMPARE(dialog.statusText(), QStringLiteral("Cancelled."));
        // At most store-all's row, marked cancelled; chen-sqrtn never ran.
        QVERIFY(dialog.results().size() <= 1);
        for (const auto &r : dialog.results())
            QCOMPARE(r.solver, std::string("store-all"));
    }

    void badMemoryIsRefusedAndThisGpuLeads()
    {
        FitDialog::Inputs in;
        in.modelPath = mlp();
        in.solvers = Planner::registrySolvers();
        in.freeMemory = [] { return std::optional<int64_t>(int64_t(7) << 30); };
        FitDialog dialog(in);
        auto *preset = dialog.findChild<QComboBox *>(QStringLiteral("fitMemoryPreset"));
        QVERIFY2(preset->itemText(0).startsWith(QStringLiteral("This GPU")),
                 qPrintable(preset->itemText(0)));
        QCOMPARE(preset->count(), 7); // this GPU and the six presets
        QCOMPARE(dialog.memoryBytes(), int64_t(7) << 30);
        QCOMPARE(preset->itemData(2).toLongLong(), qlonglong(24) << 30);
        auto *field = dialog.findChild<QLineEdit *>(QStringLiteral("fitMemoryText"));
        field->setText(QStringLiteral("lots"));
        QVERIFY(!dialog.start());
        QVERIFY2(dialog.statusText().contains(QStringLiteral("'lots' is not a byte count")),
                 qPrintable(dialog.statusText()));
        QVERIFY(!dialog.isRunning());

        in.freeMemory = {};
        FitDialog noGpu(in);
        QCOMPARE(noGpu.findChild<QComboBox *>(QStringLiteral("fitMemoryPreset"))->count(), 6);
        QCOMPARE(noGpu.memoryBytes(), int64_t(24) << 30);
    }
};

QTEST_MAIN(TestFitDialog)
#include "tst_fit_dialog.moc"
