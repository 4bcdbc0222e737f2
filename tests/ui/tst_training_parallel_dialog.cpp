// Tensor and sequence parallelism and the attention mode in the Training dialog (issue #34),
// offscreen, on tests/data/attention/llama_style.onnx (tests/python/attention_nets.py
// LlamaStyle: 4 query heads, 2 K/V heads, batch 2). Expected:
// - the form round-trips tensor-parallel N and sequence parallelism; sequence parallelism is off
//   (and its box disabled) at one tensor-parallel rank;
// - OK with --tensor-parallel 3 (dividing neither 4 nor 2 heads) stays open and says which sizes
//   divide the heads (1, 2); 2 with sequence parallelism and sdpa is taken as one undo step and
//   the rebuilt problem carries them;
// - a session saved with them reopens with them.
// - the status bar's training summary (and the undo text) names tensor / sequence parallelism
//   when set, and says nothing of it at one rank.
#include "common/test_support.h"

#include "core/pipeline/problem.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/set_training_command.h"
#include "ui/planner/training_options_dialog.h"
#include "ui_test_util.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <QtTest>

using namespace remat;
using namespace remat::ui;
using core::training::Attention;
using core::training::TrainingOptions;

namespace {

QString llama()
{
    return tests::sourceDir() + QStringLiteral("/tests/data/attention/llama_style.onnx");
}

} // namespace

class TestTrainingParallelDialog : public QObject
{
    Q_OBJECT

private slots:
    void formRoundTrips()
    {
        TrainingOptionsForm form;
        TrainingOptions o;
        o.tensorParallel = 4;
        o.sequenceParallel = true;
        o.attention = Attention::Sdpa;
        form.setOptions(o);
        QCOMPARE(form.options(), o);
        QCOMPARE(form.tensorParallelBox()->value(), 4);
        QVERIFY(form.sequenceParallelBox()->isEnabled());
        QVERIFY(form.findChild<QLabel *>(QStringLiteral("trainingExplanation"))
                    ->text()
                    .contains(QStringLiteral("4-way tensor parallelism with sequence")));
        // one rank: nothing to split along the sequence
        form.tensorParallelBox()->setValue(1);
        QVERIFY(!form.sequenceParallelBox()->isEnabled());
        QCOMPARE(form.options().sequenceParallel, false);
        QCOMPARE(form.options().tensorParallel, int64_t(1));
        // a typed size out of range is said, not replaced
        form.tensorParallelBox()->findChild<QLineEdit *>()->setText(QStringLiteral("0"));
        QVERIFY2(form.inputError().contains(QStringLiteral("Tensor parallel: '0'")),
                 qPrintable(form.inputError()));
    }

    void summaryNamesTensorAndSequenceParallel()
    {
        TrainingOptions o;
        QVERIFY(!trainingSummary(o).contains(QStringLiteral("parallel")));
        o.tensorParallel = 4;
        QVERIFY2(trainingSummary(o).contains(QStringLiteral("tensor parallel over 4")),
                 qPrintable(trainingSummary(o)));
        QVERIFY(!trainingSummary(o).contains(QStringLiteral("sequence parallel")));
        o.sequenceParallel = true;
        QVERIFY2(trainingSummary(o).contains(QStringLiteral("tensor parallel over 4 + sequence "
                                                            "parallel")),
                 qPrintable(trainingSummary(o)));
        // the undo stack's entry says it too
        PlannerDocument doc;
        SetTrainingCommand command(&doc, o);
        QVERIFY2(command.text().contains(QStringLiteral("sequence parallel")),
                 qPrintable(command.text()));
    }

    void headsNotDividedAreRefusedInTheDialog()
    {
        QTemporaryDir dir;
        const QString session = dir.filePath(QStringLiteral("tp.rematproj"));
        TrainingOptions want;
        want.attention = Attention::Sdpa;
        want.tensorParallel = 2;
        want.sequenceParallel = true;
        {
            Planner planner;
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            QVERIFY(tests::openInPlanner(planner, loaded, llama(), 2));
            // the refusal is core's: the same text the CLI's --tensor-parallel 3 gives
            TrainingOptions three;
            three.tensorParallel = 3;
            const QString refusal = tensorParallelRefusal(planner.problem().get(), three);
            QVERIFY2(refusal.contains(QStringLiteral("--tensor-parallel 3")) &&
                         refusal.contains(QStringLiteral("one of 1, 2")),
                     qPrintable(refusal));

            QString shown;
            bool stayedOpen = false;
            QTimer::singleShot(0, this, [&] {
                auto *d = qobject_cast<TrainingOptionsDialog *>(QApplication::activeModalWidget());
                QVERIFY(d);
                TrainingOptionsForm *f = d->form();
                f->attentionBox()->setCurrentIndex(
                    f->attentionBox()->findData(int(Attention::Sdpa)));
                f->tensorParallelBox()->setValue(3);
                QPushButton *ok = d->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
                ok->click();
                stayedOpen = d->isVisible();
                shown = d->findChild<QLabel *>(QStringLiteral("trainingOptionsError"))->text();
                f->tensorParallelBox()->setValue(2);
                f->sequenceParallelBox()->setChecked(true);
                ok->click();
            });
            const int undoBefore = planner.document()->undoStack()->count();
            planner.trainingAction()->trigger();
            QVERIFY(stayedOpen);
            QCOMPARE(shown, refusal);
            QVERIFY(tests::waitLoaded(planner, loaded));
            QCOMPARE(planner.document()->training(), want);
            QCOMPARE(planner.problem()->options.training, want);
            QCOMPARE(planner.problem()->training->info().training.attention, Attention::Sdpa);
            QCOMPARE(planner.problem()->training->info().fusedSites.size(), size_t(2));
            QCOMPARE(planner.document()->undoStack()->count(), undoBefore + 1);
            const core::Status saved = planner.saveSession(session);
            QVERIFY2(saved.isOk(), saved.message().c_str());
        }
        Planner reopened;
        const QString why = tests::openSessionAndWait(reopened, session);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QCOMPARE(reopened.document()->training(), want);
        QCOMPARE(reopened.problem()->options.training, want);
    }
};

QTEST_MAIN(TestTrainingParallelDialog)
#include "tst_training_parallel_dialog.moc"
