// Training options in the planner (issue #19), offscreen, on the corpus MLP (fc 32-64-64-10 with
// biases: 6,922 parameters) at batch 4. Expected:
// - Adam with bf16-master, set through the Training dialog's widgets, rebuilds the problem off the
//   GUI thread: the store-all timeline holds the closed-form model states, 18 B per parameter
//   (weights 2 + float32 master 4 + float32 gradients 4 + exp_avg and exp_avg_sq 8), its peak is
//   core's loadProblem's for the same options and grows by the 12 B per parameter of master
//   weights and state, less what bf16 saves on the weights and activations (the same difference
//   core computes); a store-all solve shows that peak in the memory chart's plan and the table;
// - the change is one undo step that set the plans aside: undo restores fp32 without an
//   optimizer, the old peak and the old plan;
// - a session saved with the options reopens with them (and the same peak);
// - the dialog reads sharding over one rank as no sharding; the problem cache never hands a
//   problem built with other training options.
#include "common/test_support.h"

#include "core/pipeline/compare.h"
#include "core/pipeline/problem.h"
#include "core/solvers/registry.h"
#include "core/training/apply_training_options.h"
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_problem.h"
#include "ui/planner/step_comparison_view.h"
#include "ui/planner/training_compare_dialog.h"
#include "ui/planner/training_options_dialog.h"
#include "ui/problem_cache.h"
#include "ui_test_util.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using namespace remat;
using namespace remat::ui;
using core::training::Optimizer;
using core::training::Precision;
using core::training::Sharding;
using core::training::TrainingOptions;

namespace {

constexpr int64_t kParams = 64 * 32 + 64 + 64 * 64 + 64 + 10 * 64 + 10; // 6,922
constexpr int64_t kBatch = 4;

QString mlp() { return tests::sharedPath("corpus/with_weights/mlp.onnx"); }

std::shared_ptr<const core::pipeline::Problem> reference(const TrainingOptions &t)
{
    core::pipeline::LoadOptions o;
    o.import.batch = kBatch;
    o.training = t;
    auto p = core::pipeline::loadProblem(tests::toStd(mlp()), o);
    return p && (*p)->isValid() ? *p : nullptr;
}

void selectData(QComboBox *combo, int data) { combo->setCurrentIndex(combo->findData(data)); }

} // namespace

class TestPlannerTraining : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        if (!QFileInfo::exists(mlp()))
            QSKIP("shared corpus not found");
    }

    void adamBf16MasterAddsModelStatesAndIsSaved()
    {
        QTemporaryDir dir;
        const QString session = dir.filePath(QStringLiteral("training.rematproj"));
        TrainingOptions adam;
        adam.optimizer = Optimizer::Adam;
        adam.precision = Precision::Bf16Master;
        const auto refPlain = reference({});
        const auto refAdam = reference(adam);
        QVERIFY(refPlain && refAdam);

        int64_t adamPeak = 0;
        {
            Planner planner;
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            QVERIFY(tests::openInPlanner(planner, loaded, mlp(), kBatch));
            const int64_t plainPeak = planner.problem()->storeAll.timeline.peakBytes;
            QCOMPARE(plainPeak, refPlain->storeAll.timeline.peakBytes);
            planner.solve(QStringLiteral("store-all"));
            planner.waitForIdle();
            QVERIFY(planner.document()->currentPlan());
            QCOMPARE(planner.document()->currentPlan()->timeline.peakBytes, plainPeak);

            // The Training action opens the dialog; its widgets choose Adam, bf16-master.
            QTimer::singleShot(0, this, [] {
                auto *d = qobject_cast<TrainingOptionsDialog *>(QApplication::activeModalWidget());
                QVERIFY(d);
                selectData(d->findChild<QComboBox *>(QStringLiteral("trainingOptimizer")),
                           int(Optimizer::Adam));
                selectData(d->findChild<QComboBox *>(QStringLiteral("trainingPrecision")),
                           int(Precision::Bf16Master));
                d->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
            });
            planner.trainingAction()->trigger();
            QVERIFY(tests::waitLoaded(planner, loaded));
            QCOMPARE(planner.document()->training(), adam);
            QCOMPARE(planner.problem()->options.training, adam);
            QVERIFY2(planner.trainingAction()->toolTip().contains(QStringLiteral("bf16-master")),
                     qPrintable(planner.trainingAction()->toolTip()));
            // The plans of the old step were set aside.
            QVERIFY(planner.document()->plans().empty());

            const core::sim::Timeline &t = planner.problem()->storeAll.timeline;
            const auto states = core::training::modelStateBytes(*planner.problem()->training);
            QCOMPARE(states.parameterCount, kParams);
            QCOMPARE(states.total(), 18 * kParams);
            QCOMPARE(t.optimizerStateBytes, 8 * kParams);
            QCOMPARE(t.masterWeightBytes, 4 * kParams);
            QCOMPARE(t.weightGradBytes, 4 * kParams);
            // The memory floor names the master weights and the optimizer state apart.
            const MemoryFloor floor = memoryFloor(*planner.problem());
            QCOMPARE(floor.masterWeightBytes, 4 * kParams);
            QCOMPARE(floor.optimizerStateBytes, 8 * kParams);
            QCOMPARE(floor.weightBytes + floor.masterWeightBytes + floor.optimizerStateBytes,
                     t.weightBytes);
            adamPeak = t.peakBytes;
            QCOMPARE(adamPeak, refAdam->storeAll.timeline.peakBytes);
            QCOMPARE(adamPeak - plainPeak,
                     refAdam->storeAll.timeline.peakBytes - refPlain->storeAll.timeline.peakBytes);
            QVERIFY2(adamPeak > plainPeak,
                     qPrintable(QStringLiteral("%1 <= %2").arg(adamPeak).arg(plainPeak)));

            // The chart and the table show the new peak once store-all is solved again.
            planner.solve(QStringLiteral("store-all"));
            planner.waitForIdle();
            QVERIFY(planner.document()->currentPlan());
            QCOMPARE(planner.document()->currentPlan()->timeline.peakBytes, adamPeak);
            QVERIFY(planner.memoryChart()->stepCount() > 0);
            QCOMPARE(planner.memoryChart()->stepCount(),
                     int(planner.document()->currentPlan()->schedule.steps.size()));

            // One undo step: fp32 without an optimizer, its peak and its plan come back.
            planner.document()->undoStack()->undo(); // solves are not undo steps: the training is
            QVERIFY(tests::waitLoaded(planner, loaded));
            QCOMPARE(planner.document()->training(), TrainingOptions{});
            QCOMPARE(planner.problem()->storeAll.timeline.peakBytes, plainPeak);
            QCOMPARE(planner.document()->plans().size(), size_t(1));
            QCOMPARE(planner.document()->currentPlan()->timeline.peakBytes, plainPeak);
            planner.document()->undoStack()->redo();
            QVERIFY(tests::waitLoaded(planner, loaded));
            QCOMPARE(planner.document()->training(), adam);
            QCOMPARE(planner.problem()->storeAll.timeline.peakBytes, adamPeak);

            const core::Status saved = planner.saveSession(session);
            QVERIFY2(saved.isOk(), saved.message().c_str());
        }
        Planner reopened;
        const QString why = tests::openSessionAndWait(reopened, session);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QCOMPARE(reopened.document()->training(), adam);
        QCOMPARE(reopened.problem()->options.training, adam);
        QCOMPARE(reopened.problem()->storeAll.timeline.peakBytes, adamPeak);
        QCOMPARE(reopened.document()->plans().size(), size_t(1));
        QCOMPARE(reopened.document()->currentPlan()->timeline.peakBytes, adamPeak);
    }

    // "Compare training options...": A = the open options (none, fp32), B chosen in its form
    // (Adam, bf16-master: the master-weight layout); both planned by chen-sqrtn at min-peak. The
    // difference table equals core's rows for the same two steps, the chart overlays B on A, and
    // B's master weights and optimizer state are rows that A has at 0.
    void comparesTwoTrainingOptionSets()
    {
        Planner planner;
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        QVERIFY(tests::openInPlanner(planner, loaded, mlp(), kBatch));
        QWidget parent;
        TrainingCompareDialog *d = planner.openTrainingCompareDialog(&parent);
        QVERIFY(d);
        d->setSolver(QStringLiteral("chen-sqrtn"));
        selectData(d->formB()->optimizerBox(), int(Optimizer::Adam));
        selectData(d->formB()->precisionBox(), int(Precision::Bf16Master));
        QSignalSpy done(d, &TrainingCompareDialog::finished);
        d->start();
        QVERIFY(done.wait(60000));
        QCOMPARE(done.front().front().toBool(), false);
        QVERIFY2(d->stepA() && d->stepB(), qPrintable(d->statusText()));

        TrainingOptions adam;
        adam.optimizer = Optimizer::Adam;
        adam.precision = Precision::Bf16Master;
        QCOMPARE(d->stepB()->problem->options.training, adam);
        QCOMPARE(d->stepA()->plan.solver, std::string("chen-sqrtn"));
        // Core's answer for the same two steps, planned outside the dialog.
        const core::solvers::SolverRegistry registry = core::solvers::makeRegistry();
        const core::solvers::Solver *chen = registry.find("chen-sqrtn");
        core::pipeline::LoadOptions o;
        o.import.batch = kBatch;
        auto refA = core::pipeline::planTrainingStep(tests::toStd(mlp()), o, chen, 0, 10);
        o.training = adam;
        auto refB = core::pipeline::planTrainingStep(tests::toStd(mlp()), o, chen, 0, 10);
        QVERIFY(refA && refB);
        const auto expected =
            core::pipeline::differenceRows(refA->plan.timeline, refB->plan.timeline);
        const auto &rows = d->comparison()->rows();
        QCOMPARE(rows.size(), expected.size());
        bool sawMaster = false, sawState = false;
        for (size_t i = 0; i < rows.size(); ++i) {
            QCOMPARE(rows[i].what, expected[i].what);
            QCOMPARE(rows[i].a, expected[i].a);
            QCOMPARE(rows[i].b, expected[i].b);
            QCOMPARE(d->comparison()->cellText(int(i), 0), QString::fromStdString(rows[i].what));
            if (rows[i].what == "master_weights at the peak") {
                sawMaster = true;
                QCOMPARE(rows[i].a, 0.0);
                QCOMPARE(rows[i].b, double(4 * kParams));
            }
            if (rows[i].what == "optimizer_state at the peak") {
                sawState = true;
                QCOMPARE(rows[i].b, double(8 * kParams));
            }
        }
        QVERIFY(sawMaster && sawState);
        QCOMPARE(rows.front().what, std::string("peak"));
        QCOMPARE(rows.front().b, double(refB->plan.timeline.peakBytes));
        QCOMPARE(d->comparison()->cellText(0, 3),
                 figureText(core::pipeline::FigureUnit::Bytes, rows.front().delta(), true));
        const QStringList overlays = d->comparison()->chart()->overlayNames();
        QCOMPARE(overlays.size(), 1);
        QVERIFY2(overlays.front().contains(QStringLiteral("bf16-master")),
                 qPrintable(overlays.join(",")));

        // Sharding chosen in B's form reaches B's step: ZeRO-1 over 4 ranks keeps a quarter
        // of the state and master weights per rank.
        selectData(d->formB()->shardBox(), int(Sharding::Zero1));
        d->formB()->ranksBox()->setValue(4);
        done.clear();
        d->start();
        QVERIFY(done.wait(60000));
        QVERIFY(!d->isRunning());
        QVERIFY(d->stepB());
        QCOMPARE(d->stepB()->problem->options.training.ranks, int64_t(4));
        for (const auto &r : d->comparison()->rows())
            if (r.what == "optimizer_state at the peak")
                QCOMPARE(r.b, double(8 * kParams / 4));
        delete d;
    }

    // Walkthrough: after a change of training options the budget stayed where it was, below the
    // new step's floor (every solver infeasible, the slider pinned at its end). Such a budget
    // moves to the default and the solver panel says so; one still inside the range stays.
    void budgetOutsideTheNewRangeMoves()
    {
        Planner planner;
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        QVERIFY(tests::openInPlanner(planner, loaded, mlp(), kBatch));
        const int64_t plainFloor = memoryFloor(*planner.problem()).total();
        planner.document()->setBudgetBytes(plainFloor + 1);
        TrainingOptions adam;
        adam.optimizer = Optimizer::Adam;
        planner.setTraining(adam);
        QVERIFY(tests::waitLoaded(planner, loaded));
        const int64_t adamFloor = memoryFloor(*planner.problem()).total();
        QVERIFY(adamFloor > plainFloor + 1); // Adam's state lifts the floor over the old budget
        QCOMPARE(planner.document()->budgetBytes(), Planner::defaultBudget(*planner.problem()));
        QVERIFY2(planner.solverPanel()->messageText().contains(QStringLiteral("below")),
                 qPrintable(planner.solverPanel()->messageText()));
        // Inside the new range: kept as the user set it.
        const int64_t inside = (adamFloor + planner.problem()->storeAll.timeline.peakBytes) / 2;
        planner.document()->setBudgetBytes(inside);
        adam.optimizer = Optimizer::AdamW; // the same bytes
        planner.setTraining(adam);
        QVERIFY(tests::waitLoaded(planner, loaded));
        QCOMPARE(planner.document()->budgetBytes(), inside);
    }

    void dialogReadsOneRankAsNoSharding()
    {
        TrainingOptionsDialog d;
        TrainingOptions z;
        z.optimizer = Optimizer::AdamW;
        z.shard = Sharding::Zero2;
        z.ranks = 8;
        z.microBatches = 4;
        z.hyper.lr = 3e-4;
        d.setOptions(z);
        QCOMPARE(d.options(), z);
        auto *ranks = d.findChild<QSpinBox *>(QStringLiteral("trainingRanks"));
        QVERIFY(ranks->isEnabled());
        ranks->setValue(1);
        QCOMPARE(d.options().shard, Sharding::None);
        QCOMPARE(d.options().ranks, int64_t(1));
        selectData(d.findChild<QComboBox *>(QStringLiteral("trainingShard")), int(Sharding::None));
        QVERIFY(!ranks->isEnabled());
    }

    void cacheKeepsTrainingOptionsApart()
    {
        auto plain = reference({});
        QVERIFY(plain);
        ProblemCache cache;
        cache.add(plain);
        TrainingOptions sgd;
        sgd.optimizer = Optimizer::Sgd;
        QCOMPARE(cache.find(mlp(), kBatch, {}, true), plain);
        QVERIFY(!cache.find(mlp(), kBatch, {}, true, sgd));
    }
};

QTEST_MAIN(TestPlannerTraining)
#include "tst_planner_training.moc"
