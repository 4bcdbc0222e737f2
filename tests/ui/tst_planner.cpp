// The planner end to end on corpus models, offscreen: solve with two solvers, pins with undo,
// sessions saved and reopened, a CPU run feeding the live chart, a cancelled solve.
#include "common/test_support.h"

#include "core/exec/cpu/cpu_backend.h"
#include "core/pipeline/compare.h"
#include "core/sim/simulator.h"
#include "core/util/bytes.h"
#include "ui/byte_text.h"
#include "ui/planner/memory_chart_view.h"
#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/planner.h"
#include "ui/planner/rs_matrix_view.h"
#include "ui/planner/run_panel.h"
#include "ui/planner/set_budget_command.h"
#include "ui/planner/solver_panel.h"
#include "ui/planner/step_comparison_view.h"
#include "ui/planner/teaching_view.h"
#include "ui_test_util.h"

#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMainWindow>
#include <QMenuBar>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

using namespace remat;
using namespace remat::ui;
using core::solvers::PinKind;

class TestPlanner : public QObject
{
    Q_OBJECT

private:
    std::shared_ptr<const PlannerProblem> m_resnet;
    QString m_resnetPath;

    std::unique_ptr<Planner> makePlanner()
    {
        auto p = std::make_unique<Planner>();
        p->setSolvers(Planner::registrySolvers());
        p->setProblem(m_resnet);
        p->solverPanel()->setLiveResolve(false);
        return p;
    }

    // A plan's figures must be the simulator's: re-simulate its schedule and compare.
    static void checkFigures(const core::solvers::Plan &plan, const PlannerProblem &problem)
    {
        auto t = core::sim::simulate(plan.schedule, *problem.training, *problem.costs);
        QVERIFY2(t.hasValue(), t.status().message().c_str());
        QCOMPARE(plan.timeline.peakBytes, t->peakBytes);
        QCOMPARE(plan.timeline.points.size(), plan.schedule.steps.size());
    }

private slots:
    void initTestCase()
    {
        m_resnetPath = tests::sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(m_resnetPath))
            QSKIP("shared corpus not found");
        auto p = loadPlannerProblem(m_resnetPath.toStdString(), 2, {});
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        m_resnet = *p;
        // resnet18 at batch 2 keeps activations worth more than half its peak: checkpointing has
        // something to save.
        QVERIFY(m_resnet->storeAll.timeline.activationPeakBytes > 0);
    }

    // Bug: Redo was bound to Ctrl+Shift+Z and QKeySequence::Redo, the same keys on Linux desktops:
    // Qt calls that an ambiguous shortcut and Ctrl+Shift+Z did nothing. Every platform Redo key and
    // Ctrl+Shift+Z is bound once, and each press redoes one step.
    void redoKeysAreBoundOnceAndWork()
    {
        auto planner = makePlanner();
        QAction *redo = planner->redoAction();
        QList<QKeySequence> keys = QKeySequence::keyBindings(QKeySequence::Redo);
        keys << QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z);
        for (const QKeySequence &k : keys)
            QVERIFY2(redo->shortcuts().count(k) == 1, qPrintable(k.toString()));
        QCOMPARE(QSet<QKeySequence>(redo->shortcuts().cbegin(), redo->shortcuts().cend()).size(),
                 redo->shortcuts().size());

        QMainWindow window;
        window.menuBar()->addMenu(planner->createMenu(&window));
        window.show();
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        for (const QKeySequence &k :
             {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)}) {
            if (!redo->shortcuts().contains(k))
                continue;
            const int64_t before = planner->document()->budgetBytes();
            const int64_t edited = before + 4096;
            planner->document()->undoStack()->push(
                new SetBudgetCommand(planner->document(), edited));
            QTest::keySequence(&window, QKeySequence(Qt::CTRL | Qt::Key_Z));
            QCOMPARE(planner->document()->budgetBytes(), before);
            QTest::keySequence(&window, k);
            QVERIFY2(planner->document()->budgetBytes() == edited, qPrintable(k.toString()));
        }
    }

    // Bug: "'abc' is not a byte count" stayed after a valid budget was typed, and "0" emptied the
    // field. Typed as a user types: text, then Return.
    void budgetFieldErrorsClearAndZeroIsRefused()
    {
        auto planner = makePlanner();
        SolverPanel *panel = planner->solverPanel();
        auto *field = panel->findChild<QLineEdit *>(QStringLiteral("plannerBudgetText"));
        QVERIFY(field);
        auto type = [&](const QString &text) {
            field->selectAll();
            QTest::keyClicks(field, text);
            QTest::keyClick(field, Qt::Key_Return);
        };
        // Every label of the panel: wherever the message is shown, it must go.
        auto panelText = [&] {
            QStringList texts;
            for (const QLabel *l : panel->findChildren<QLabel *>())
                if (l->isVisibleTo(panel))
                    texts << l->text();
            return texts.join(QLatin1Char('\n'));
        };
        type(QStringLiteral("abc"));
        QVERIFY2(panelText().contains(QStringLiteral("not a byte count")), qPrintable(panelText()));
        type(QStringLiteral("3 MiB"));
        QCOMPARE(planner->document()->budgetBytes(), int64_t(3) << 20);
        QVERIFY2(!panelText().contains(QStringLiteral("not a byte count")),
                 qPrintable(panelText()));
        QCOMPARE(panel->budgetErrorText(), QString());
        type(QStringLiteral("0"));
        QVERIFY2(!field->text().isEmpty(), "typing 0 emptied the budget field");
        QCOMPARE(planner->document()->budgetBytes(), int64_t(3) << 20); // refused, not applied
        QVERIFY(!panel->budgetErrorText().isEmpty());
        type(QStringLiteral("4 MiB"));
        QCOMPARE(planner->document()->budgetBytes(), int64_t(4) << 20);
        QCOMPARE(panel->budgetErrorText(), QString());
    }

    // Bug: solving again with the same solver and inputs added a second row that claimed the
    // first solve's time. The row that has the plan is selected instead; two requests in flight
    // at once give one row too.
    void identicalSolveSelectsTheRowItHas()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        planner->solve(QStringLiteral("hong-dp"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), size_t(2));
        QCOMPARE(planner->document()->currentPlanIndex(), 1);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), size_t(2));
        QCOMPARE(planner->document()->currentPlanIndex(), 0);
        QCOMPARE(planner->planTable()->currentIndex().row(), 0);

        auto fresh = makePlanner();
        fresh->document()->setObjective(core::solvers::Objective::MinPeak);
        fresh->solve(QStringLiteral("hong-dp"));
        fresh->solve(QStringLiteral("hong-dp")); // pressed twice before the first returned
        fresh->waitForIdle();
        QCOMPARE(fresh->document()->plans().size(), size_t(1));
    }

    // Bug: the Solver dock kept naming the last solve while other plan rows were selected.
    void solverTextFollowsTheSelectedRow()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        planner->solve(QStringLiteral("hong-dp"));
        planner->waitForIdle();
        SolverPanel *panel = planner->solverPanel();
        QVERIFY2(panel->messageText().contains(QStringLiteral("hong-dp")),
                 qPrintable(panel->messageText()));
        planner->planTable()->selectRow(0);
        QVERIFY2(panel->messageText().contains(QStringLiteral("chen-sqrtn")),
                 qPrintable(panel->messageText()));
        QVERIFY2(!panel->messageText().contains(QStringLiteral("hong-dp")),
                 qPrintable(panel->messageText()));
        planner->planTable()->selectRow(1);
        QVERIFY2(panel->messageText().contains(QStringLiteral("hong-dp")),
                 qPrintable(panel->messageText()));
    }

    // Bug: the memory chart's budget line showed the budget field, not the budget the plan was
    // solved for: after a new budget is typed (no re-solve yet) and after selecting an older row.
    void memoryChartShowsThePlansOwnBudget()
    {
        auto planner = makePlanner();
        const auto &sa = m_resnet->storeAll.timeline;
        const int64_t floor = sa.peakBytes - sa.activationPeakBytes;
        const int64_t first = floor + (sa.peakBytes - floor) * 8 / 10;
        const int64_t second = floor + (sa.peakBytes - floor) * 9 / 10;
        planner->document()->setBudgetBytes(first);
        planner->solve(QStringLiteral("chen-greedy"));
        planner->waitForIdle();
        QCOMPARE(planner->memoryChart()->budgetBytes(), first);
        planner->document()->undoStack()->push(new SetBudgetCommand(planner->document(), second));
        planner->waitForIdle();
        QCOMPARE(planner->document()->currentPlan()->budgetBytes, first); // not re-solved
        QCOMPARE(planner->memoryChart()->budgetBytes(), first);
        planner->solve(QStringLiteral("chen-greedy"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), size_t(2));
        QCOMPARE(planner->memoryChart()->budgetBytes(), second);
        planner->planTable()->selectRow(0);
        QCOMPARE(planner->memoryChart()->budgetBytes(), first);
    }

    // Bug: a run the user stopped was drawn with the red "failed here" marker of an error.
    void stoppedRunIsNotMarkedFailed()
    {
        Planner planner;
        RunPanel *panel = planner.runPanel();
        RunSummary stopped;
        stopped.cancelled = true;
        stopped.failedStep = 12;
        stopped.error = QStringLiteral("Cancelled: stopped at step 12");
        emit planner.runController()->finished(stopped);
        QVERIFY(!panel->failureMarked());
        QVERIFY2(panel->statusText().startsWith(QStringLiteral("Stopped")),
                 qPrintable(panel->statusText()));
        RunSummary oom;
        oom.failedStep = 7;
        oom.error = QStringLiteral("OutOfMemory: step 7 needs 2.00 GiB");
        emit planner.runController()->finished(oom);
        QVERIFY(panel->failureMarked());
        QVERIFY2(panel->statusText().contains(QStringLiteral("at step 7")),
                 qPrintable(panel->statusText()));
    }

    // Bug: opening another model dropped the solved plans without asking, listed the old model's
    // pins on the new one, and the Run tab kept "Gradient check passed" and the old measured
    // curve. In a window, as a user opens a file: asked first (Cancel keeps everything), then a
    // clean planner for the new model.
    void openingAnotherModelAsksAndStartsClean()
    {
        tests::isolateSettings();
        const QString mlp = tests::sharedPath("corpus/with_weights/mlp.onnx");
        const QString vit = tests::sharedPath("corpus/with_weights/tiny_vit.onnx");
        MainWindow w;
        Planner *planner = w.planner();
        planner->setSolvers(Planner::registrySolvers());
        QVERIFY(tests::openAndWait(w, mlp));
        QTRY_VERIFY_WITH_TIMEOUT(planner->problem() && !planner->isLoading(), 60000);
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QVERIFY(planner->document()->currentPlan());
        const QString node = planner->analysis().nodeDecisions().keys().first();
        QVERIFY(planner->pinNode(node, PinKind::Keep));
        planner->waitForIdle();
        planner->runPanel()->setIterations(1);
        QSignalSpy ran(planner->runPanel(), &RunPanel::runFinished);
        planner->runPanel()->run();
        QVERIFY(ran.wait(120000));
        QVERIFY(!planner->runPanel()->gradientText().isEmpty());
        QVERIFY(planner->runPanel()->measuredPointCount() > 0);

        QStringList asked;
        QMessageBox::StandardButton answer = QMessageBox::Cancel;
        planner->setSaveQuestion([&](QWidget *, const QString &text) {
            asked << text;
            return answer;
        });
        w.openModel(vit);
        QCOMPARE(asked.size(), 1);
        QVERIFY2(asked[0].contains(QStringLiteral("tiny_vit.onnx")), qPrintable(asked[0]));
        QVERIFY(!w.isBusy()); // cancelled: nothing loads
        QCOMPARE(planner->document()->plans().size(), size_t(1));
        QVERIFY(planner->document()->modelPath().endsWith(QStringLiteral("mlp.onnx")));

        answer = QMessageBox::Discard;
        QVERIFY(tests::openAndWait(w, vit));
        QTRY_VERIFY_WITH_TIMEOUT(
            planner->document()->modelPath().endsWith(QStringLiteral("tiny_vit.onnx")), 60000);
        planner->waitForIdle();
        QCOMPARE(asked.size(), 2);
        QVERIFY(planner->document()->plans().empty());
        QVERIFY(planner->document()->pins().isEmpty());
        QCOMPARE(planner->pinsWidget()->pinCount(), 0);
        QCOMPARE(planner->runPanel()->measuredPointCount(), 0);
        QCOMPARE(planner->runPanel()->gradientText(), QString());
        QVERIFY(!planner->runPanel()->lastSummary().ok);
        // The Solver dock no longer describes the old model's plan ("Plan 1 of 1 — ...").
        QVERIFY2(!planner->solverPanel()->messageText().contains(QStringLiteral("Plan ")),
                 qPrintable(planner->solverPanel()->messageText()));
    }

    // Bug: the Schedule explanation said a tensor "is recomputed ... because no backward op needs
    // it". A tensor is kept or recomputed for a reader after the forward pass: a backward op, or
    // a forward op run again in backward; the explanation names it, never "no backward op".
    void explanationsNameWhoNeedsTheTensor()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        const PlanAnalysis &a = planner->analysis();
        int recomputed = 0;
        for (auto it = a.nodeDecisions().cbegin(); it != a.nodeDecisions().cend(); ++it) {
            if (it.value() != PlanDecision::Recompute && it.value() != PlanDecision::Keep)
                continue;
            const QString text = a.explainNode(it.key());
            const QString first = text.section(QLatin1Char('\n'), 0, 0);
            QVERIFY2(!first.contains(QStringLiteral("no backward op")), qPrintable(text));
            if (it.value() == PlanDecision::Recompute) {
                ++recomputed;
                QVERIFY2(first.contains(QStringLiteral("because")) ||
                             first.contains(QStringLiteral("nothing after the forward pass")),
                         qPrintable(text));
                QVERIFY2(first.contains(QStringLiteral("computed again")), qPrintable(text));
            }
        }
        QVERIFY(recomputed > 0);
    }

    // Bug: text cut off. The graph menu's explanation ended mid-word (the first 120 characters),
    // plan table columns stayed narrower than their entries, chart PNGs were 782x430 screenshots.
    void textIsNotCutOff()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->solve(QStringLiteral("hong-dp"));
        planner->waitForIdle();
        // Every word of the explanation survives the wrapping, no line is longer than asked
        // (a single longer word stays whole).
        const PlanAnalysis &a = planner->analysis();
        const QString text = a.explainNode(a.nodeDecisions().keys().first());
        QVERIFY(text.size() > 120);
        const QStringList lines = wrapAtWords(text, 90);
        QVERIFY(lines.size() > 1);
        for (const QString &l : lines)
            QVERIFY2(l.size() <= 90 || !l.contains(QLatin1Char(' ')), qPrintable(l));
        QCOMPARE(lines.join(QLatin1Char(' ')).simplified(), QString(text).simplified());

        QTableView *table = planner->planTable();
        table->resize(1400, 300);
        for (int c = 0; c + 1 < PlanTableModel::ColumnCount; ++c)
            QVERIFY2(
                table->columnWidth(c) >=
                    static_cast<QAbstractItemView *>(table)->sizeHintForColumn(c),
                qPrintable(planner->planTableModel()->headerData(c, Qt::Horizontal).toString()));

        QTemporaryDir dir;
        planner->memoryChart()->resize(782, 430);
        const QString png = dir.filePath(QStringLiteral("memory.png"));
        QVERIFY(planner->exportChart(planner->memoryChart(), png).isOk());
        const QImage image(png);
        QVERIFY2(image.width() >= 1600, qPrintable(QString::number(image.width())));
        QVERIFY(qAbs(double(image.height()) / image.width() - 430.0 / 782) < 0.01); // aspect kept
    }

    // Bug: Cancel gave no feedback. After Cancel the panel says "Cancelling" (the button off)
    // until the job has wound down, then "cancelled", and the planner is idle again; checkmate-lp
    // (when this build has CBC) ends too.
    void cancelShowsCancellingUntilTheJobEnds()
    {
        auto planner = makePlanner();
        SolverPanel *panel = planner->solverPanel();
        planner->sweep();
        QTest::qWait(50);
        QVERIFY(planner->solveController()->isBusy());
        planner->cancel();
        QVERIFY(panel->isCancelling());
        QVERIFY2(panel->messageText().contains(QStringLiteral("Cancelling")),
                 qPrintable(panel->messageText()));
        planner->waitForIdle();
        QVERIFY(!planner->solveController()->isBusy());
        QVERIFY(!panel->isCancelling());
        QVERIFY2(panel->messageText().contains(QStringLiteral("cancelled")),
                 qPrintable(panel->messageText()));

        if (planner->usableSolverIds().contains(QStringLiteral("checkmate-lp"))) {
            const auto &sa = m_resnet->storeAll.timeline;
            const int64_t floor = sa.peakBytes - sa.activationPeakBytes;
            planner->document()->setBudgetBytes(floor + (sa.peakBytes - floor) * 4 / 10);
            planner->solve(QStringLiteral("checkmate-lp"));
            QTest::qWait(200);
            const bool running = planner->solveController()->isBusy();
            planner->cancel();
            QCOMPARE(panel->isCancelling(), running);
            planner->waitForIdle();
            QVERIFY(!planner->solveController()->isBusy());
            QVERIFY(!panel->isCancelling());
        }
    }

    // Bug: the Pareto chart drew the current plan at its budget (not its peak), left checkmate
    // and offload out of the sweep, and its points could not be clicked. Expected: every
    // budget-taking solver swept, the current plan at its peak, a click on a point selects
    // (solves) that solver's plan at that budget.
    void paretoSweepCoversEverySolverAndPointsSelectPlans()
    {
        auto planner = makePlanner();
        // Two interactive solvers and offload (a search, left out of sweeps before); the MILP
        // solvers take their time limit per budget, too long for a test.
        std::vector<std::shared_ptr<const core::solvers::Solver>> solvers;
        for (const auto &s : Planner::registrySolvers())
            if (s->id() == "chen-greedy" || s->id() == "hong-dp" || s->id() == "offload")
                solvers.push_back(s);
        QCOMPARE(solvers.size(), size_t(3));
        for (const auto &s : solvers)
            QCOMPARE(s->capabilities().speed == core::solvers::SpeedClass::Interactive,
                     s->id() != "offload");
        planner->setSolvers(solvers);
        const auto &sa = m_resnet->storeAll.timeline;
        planner->document()->setBudgetBytes(sa.peakBytes - sa.activationPeakBytes / 10);
        planner->solve(QStringLiteral("chen-greedy"));
        planner->waitForIdle();
        const core::solvers::Plan current = *planner->document()->currentPlan();
        QVERIFY(current.timeline.peakBytes < current.budgetBytes); // so peak and budget differ
        planner->sweep();
        planner->waitForIdle();
        ParetoChartView *chart = planner->paretoChart();
        QStringList budgetSolvers;
        for (const auto &s : Planner::registrySolvers())
            if (s->capabilities().minTime &&
                planner->usableSolverIds().contains(QString::fromStdString(s->id())))
                budgetSolvers << QString::fromStdString(s->id());
        for (const QString &id : budgetSolvers)
            QVERIFY2(chart->pointCount(id) > 0, qPrintable(id));
        // The current plan's mark: at its peak, not at its budget.
        QCOMPARE(chart->currentPeakBytes(), current.timeline.peakBytes);

        QMainWindow window;
        planner->createDocks(&window);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(planner->raiseView(QStringLiteral("pareto")));
        QTest::qWait(80); // the chart redraws sweep points on a 50 ms timer
        // A point no other solver's point sits near (solvers often agree on a budget; one
        // solver's plan may be the same over several budgets, drawn on one spot).
        ParetoPoint target;
        const QList<ParetoPoint> all = chart->points();
        for (const ParetoPoint &p : all) {
            if (!p.feasible || p.budgetBytes == current.budgetBytes)
                continue;
            const QPoint at = *chart->pointPosition(p);
            bool alone = true;
            for (const ParetoPoint &q : all)
                if (q.feasible && q.solver != p.solver)
                    alone = alone && (*chart->pointPosition(q) - at).manhattanLength() > 24;
            if (alone)
                target = p;
        }
        QVERIFY2(target.feasible, "every point overlaps another solver's");
        const std::optional<QPoint> at = chart->pointPosition(target);
        QVERIFY(at);
        QTest::mouseClick(chart->viewport(), Qt::LeftButton, {}, *at);
        planner->waitForIdle();
        const core::solvers::Plan *picked = planner->document()->currentPlan();
        QCOMPARE(QString::fromStdString(picked->solver), target.solver);
        QCOMPARE(picked->timeline.peakBytes, target.peakBytes);
        QCOMPARE(core::solvers::timeOverheadPercent(*picked), target.overheadPercent);
        QCOMPARE(planner->document()->budgetBytes(), picked->budgetBytes);
        QCOMPARE(chart->currentPeakBytes(), picked->timeline.peakBytes);
        QCOMPARE(planner->document()->plans().size(), size_t(2)); // the first plan kept its row
        QCOMPARE(planner->document()->plans()[0].budgetBytes, current.budgetBytes);
    }

    // Expectation: the first solve succeeds. The bundled model's default budget was below its
    // weights + gradients, so every solver reported "infeasible". Now: the default is above the
    // floor (weights + gradients + the largest op's working set) and the in-memory solvers meet
    // it; an infeasible row explains the floor and "Set to floor" sets the budget to it.
    void defaultBudgetIsSolvableAndTheFloorIsExplained()
    {
        const QString bundled =
            tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx");
        auto loaded = loadPlannerProblem(bundled.toStdString(), 0, {});
        QVERIFY2(loaded.hasValue(), loaded.status().message().c_str());
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        planner.solverPanel()->setLiveResolve(false);
        planner.setProblem(*loaded);
        const MemoryFloor floor = memoryFloor(**loaded);
        QVERIFY(floor.weightBytes > 0 && floor.largestOpBytes > 0);
        const int64_t budget = planner.document()->budgetBytes();
        QVERIFY(budget >= floor.total());
        QVERIFY(budget <= (*loaded)->storeAll.timeline.peakBytes);
        int feasible = 0;
        for (const char *id : {"chen-sqrtn", "chen-greedy", "hong-dp"}) {
            planner.solve(QString::fromLatin1(id));
            planner.waitForIdle();
            const core::solvers::Plan *p = planner.document()->currentPlan();
            if (p->status != core::solvers::SolveStatus::Infeasible &&
                p->timeline.peakBytes <= budget)
                ++feasible;
        }
        QVERIFY2(feasible >= 2, qPrintable(QString::number(feasible)));

        // Below the floor: infeasible, and the row and the panel say why and what to do.
        planner.document()->setBudgetBytes(floor.total() / 2);
        planner.solve(QStringLiteral("chen-greedy"));
        planner.waitForIdle();
        const int row = planner.document()->currentPlanIndex();
        QCOMPARE(planner.document()->currentPlan()->status, core::solvers::SolveStatus::Infeasible);
        const QString tip = planner.planTableModel()
                                ->data(planner.planTableModel()->index(row, 0), Qt::ToolTipRole)
                                .toString();
        QVERIFY2(tip.contains(QStringLiteral("weights")) && tip.contains(QStringLiteral("floor")),
                 qPrintable(tip));
        QVERIFY2(planner.solverPanel()->messageText().contains(QStringLiteral("Set to floor")),
                 qPrintable(planner.solverPanel()->messageText()));
        auto *setFloor = planner.solverPanel()->findChild<QPushButton *>(
            QStringLiteral("plannerSetBudgetToFloor"));
        QVERIFY(setFloor && !setFloor->isHidden());
        setFloor->click();
        QCOMPARE(planner.document()->budgetBytes(), floor.total());
    }

    // Expectation: the plans table sorts by any column (rows still select their own plan), marks
    // the best feasible plan, shows the estimated step time, and Delete removes the selected rows
    // (one undo step).
    void plansTableSortsMarksBestAndDeletes()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        for (const char *id : {"chen-sqrtn", "hong-dp", "chen-greedy"})
            planner->solve(QString::fromLatin1(id));
        planner->waitForIdle();
        const auto plans = planner->document()->plans();
        QCOMPARE(plans.size(), size_t(3));
        PlanTableModel *model = planner->planTableModel();
        QCOMPARE(model->headerData(PlanTableModel::StepTime, Qt::Horizontal).toString(),
                 QStringLiteral("Step time"));
        // The step-time overhead and recompute come right after the peak on screen (they were
        // past a laptop-width dock's edge).
        const QHeaderView *header = planner->planTable()->horizontalHeader();
        QCOMPARE(header->visualIndex(PlanTableModel::TimeOverhead),
                 header->visualIndex(PlanTableModel::Peak) + 1);
        QCOMPARE(header->visualIndex(PlanTableModel::Overhead),
                 header->visualIndex(PlanTableModel::Peak) + 2);
        QCOMPARE(model->data(model->index(0, PlanTableModel::StepTime), PlanTableModel::SortRole)
                     .toDouble(),
                 plans[0].timeline.totalSeconds);
        // Best: the fastest step of the feasible plans, marked in its status.
        const int best = model->bestRow();
        QVERIFY(best >= 0);
        for (const auto &p : plans)
            QVERIFY(plans[size_t(best)].timeline.totalSeconds <= p.timeline.totalSeconds);
        QVERIFY(model->data(model->index(best, PlanTableModel::Status))
                    .toString()
                    .contains(QStringLiteral("best")));

        QTableView *table = planner->planTable();
        table->sortByColumn(PlanTableModel::Peak, Qt::AscendingOrder);
        size_t lowest = 0;
        for (size_t i = 1; i < plans.size(); ++i)
            if (plans[i].timeline.peakBytes < plans[lowest].timeline.peakBytes)
                lowest = i;
        table->selectRow(0);
        QCOMPARE(planner->document()->currentPlan()->timeline.peakBytes,
                 plans[lowest].timeline.peakBytes);
        QCOMPARE(planner->document()->currentPlanIndex(), int(lowest));

        // Delete the selected row; undo brings it back.
        const std::string removed = planner->document()->currentPlan()->solver;
        planner->deleteSelectedPlans();
        QCOMPARE(planner->document()->plans().size(), size_t(2));
        for (const auto &p : planner->document()->plans())
            QVERIFY(p.solver != removed);
        planner->document()->undoStack()->undo();
        QCOMPARE(planner->document()->plans().size(), size_t(3));
        QCOMPARE(planner->document()->plans()[lowest].solver, removed);
    }

    // Expectation 3 (rest): selecting several plans overlays their memory curves on the current
    // one's (a line each, named, in the chart's range); a single selection shows none.
    void selectedPlansOverlayTheirCurves()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->solve(QStringLiteral("hong-dp"));
        planner->solve(QStringLiteral("chen-greedy"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), size_t(3));
        QTableView *table = planner->planTable();
        table->selectRow(0);
        MemoryChartView *chart = planner->memoryChart();
        QVERIFY(chart->overlayNames().isEmpty());
        QVERIFY(planner->overlaidPlans().isEmpty());
        // Two more rows added to the selection, as a Ctrl+click does (the clicked row becomes
        // the current one, the others stay selected).
        for (int row : {1, 2})
            table->selectionModel()->setCurrentIndex(table->model()->index(row, 0),
                                                     QItemSelectionModel::Select |
                                                         QItemSelectionModel::Rows);
        const int current = planner->document()->currentPlanIndex();
        QCOMPARE(planner->overlaidPlans().size(), 2);
        QVERIFY(!planner->overlaidPlans().contains(current));
        const QStringList names = chart->overlayNames();
        QCOMPARE(names.size(), 2);
        for (int i : planner->overlaidPlans()) {
            const auto &plan = planner->document()->plans()[size_t(i)];
            const QString expected =
                QStringLiteral("plan %1: %2").arg(i + 1).arg(QString::fromStdString(plan.solver));
            bool found = false;
            for (const QString &n : names)
                found = found || n.startsWith(expected);
            QVERIFY2(found, qPrintable(names.join(QStringLiteral(" | "))));
        }
        // The title names every overlaid plan in full, wrapped to the chart's width rather than
        // elided (with three plans it was cut: "...; 2 other plans over...").
        chart->resize(560, 320);
        const QStringList lines = chart->titleLines();
        QVERIFY2(lines.join(QLatin1Char(' ')).contains(QStringLiteral("overlaid:")),
                 qPrintable(lines.join(QStringLiteral(" | "))));
        for (const QString &n : names)
            QVERIFY2(
                lines.join(QLatin1Char(' ')).contains(n),
                qPrintable(n + QStringLiteral(" not in ") + lines.join(QStringLiteral(" | "))));
        const QFontMetrics titleMetrics(chart->chart()->titleFont());
        for (const QString &line : lines)
            QVERIFY2(titleMetrics.horizontalAdvance(line) <= chart->width() - 20, qPrintable(line));
        QVERIFY(lines.size() >= 3); // at 560 px the two keys take a line each
        // Each overlay is the plan's own curve, in the axis' unit, and fits the y range.
        const auto *y = qobject_cast<QValueAxis *>(chart->chart()->axes(Qt::Vertical).first());
        QVERIFY(y);
        int64_t highest = m_resnet->storeAll.timeline.peakBytes;
        for (const auto &p : planner->document()->plans())
            highest = std::max(highest, p.timeline.peakBytes);
        const double unit = core::byteUnitFor(highest).bytes;
        int checked = 0;
        for (QAbstractSeries *series : chart->chart()->series()) {
            auto *line = qobject_cast<QLineSeries *>(series);
            const int at = line ? names.indexOf(line->name()) : -1;
            if (at < 0)
                continue;
            const int plan = line->name().section(QLatin1Char(' '), 1, 1).chopped(1).toInt() - 1;
            QVERIFY(plan >= 0 && plan < 3);
            double top = 0;
            for (const QPointF &p : line->points())
                top = std::max(top, p.y());
            QCOMPARE(qRound64(top * unit),
                     planner->document()->plans()[size_t(plan)].timeline.peakBytes);
            QVERIFY(top <= y->max());
            ++checked;
        }
        QCOMPARE(checked, 2);
        // "Compare selected plans": the current plan against the first other selected one,
        // with core's difference rows.
        {
            QWidget parent;
            QDialog *d = planner->openPlanComparison(&parent);
            QVERIFY(d);
            auto *view = d->findChild<StepComparisonView *>();
            QVERIFY(view);
            const auto &plans = planner->document()->plans();
            const auto expected = core::pipeline::differenceRows(
                plans[size_t(current)].timeline,
                plans[size_t(planner->overlaidPlans().front())].timeline);
            QCOMPARE(view->rows().size(), expected.size());
            for (size_t i = 0; i < expected.size(); ++i) {
                QCOMPARE(view->rows()[i].what, expected[i].what);
                QCOMPARE(view->rows()[i].a, expected[i].a);
                QCOMPARE(view->rows()[i].b, expected[i].b);
            }
            QCOMPARE(view->cellText(0, 1),
                     figureText(core::pipeline::FigureUnit::Bytes,
                                double(plans[size_t(current)].timeline.peakBytes)));
            QCOMPARE(view->chart()->overlayNames().size(), 1);
            delete d;
        }
        // Back to one selected row: no overlay, and nothing to compare.
        table->selectRow(0);
        QVERIFY(chart->overlayNames().isEmpty());
        QVERIFY(!chart->chart()->title().contains(QStringLiteral("overlaid")));
        QWidget parent;
        QVERIFY(!planner->openPlanComparison(&parent));
    }

    void twoSolversGiveTwoRows()
    {
        auto planner = makePlanner();
        QVERIFY(planner->usableSolverIds().contains(QStringLiteral("chen-sqrtn")));
        QVERIFY(planner->usableSolverIds().contains(QStringLiteral("hong-dp")));
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        QCOMPARE(planner->solverPanel()->currentSolver(), QStringLiteral("chen-sqrtn"));
        planner->solve(QStringLiteral("hong-dp"));
        // Bug: remat-studio --solve hong-dp showed the hong-dp plan with "store-all" in the
        // Solver combo. A solve names its solver there.
        QCOMPARE(planner->solverPanel()->currentSolver(), QStringLiteral("hong-dp"));
        planner->waitForIdle();
        QCOMPARE(planner->planTableModel()->rowCount(), 2);
        const auto &plans = planner->document()->plans();
        QStringList solvers;
        for (const auto &p : plans) {
            solvers << QString::fromStdString(p.solver);
            checkFigures(p, *m_resnet);
            // Both checkpoint a chain of resnet blocks: strictly less activation memory than
            // storing everything.
            QVERIFY(p.timeline.activationPeakBytes <
                    m_resnet->storeAll.timeline.activationPeakBytes);
        }
        solvers.sort();
        QCOMPARE(solvers, QStringList({"chen-sqrtn", "hong-dp"}));
        // The table shows the simulator's peak of each row.
        const QModelIndex peak = planner->planTableModel()->index(0, PlanTableModel::Peak);
        QCOMPARE(planner->planTableModel()->data(peak, PlanTableModel::SortRole).toLongLong(),
                 qint64(plans[0].timeline.peakBytes));
        // Selecting a row makes it the current plan.
        planner->planTable()->selectRow(0);
        QCOMPARE(planner->document()->currentPlanIndex(), 0);
        planner->planTable()->selectRow(1);
        QCOMPARE(planner->document()->currentPlanIndex(), 1);
        QCOMPARE(planner->memoryChart()->stepCount(), int(plans[1].schedule.steps.size()));
    }

    void pinChangesPlanAndUndoRestoresIt()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), size_t(1));
        const auto before = *planner->document()->currentPlan();
        // A node the plan recomputes; pinning it "keep" must store it.
        QString node;
        for (auto it = planner->analysis().nodeDecisions().cbegin();
             it != planner->analysis().nodeDecisions().cend(); ++it)
            if (it.value() == PlanDecision::Recompute &&
                !planner->pinTensorOfNode(it.key()).isEmpty()) {
                node = it.key();
                break;
            }
        QVERIFY2(!node.isEmpty(), "chen-sqrtn recomputes nothing on resnet18");
        QVERIFY(planner->pinNode(node, PinKind::Keep));
        planner->waitForIdle();
        const auto pinned = *planner->document()->currentPlan();
        QCOMPARE(planner->document()->plans().size(), size_t(1)); // replaced, not appended
        QVERIFY(pinned.schedule != before.schedule);
        QCOMPARE(planner->analysis().nodeDecisions().value(node), PlanDecision::Keep);
        QVERIFY(planner->analysis().pinnedNodes().contains(node));
        checkFigures(pinned, *m_resnet);

        planner->document()->undoStack()->undo();
        planner->waitForIdle();
        QVERIFY(planner->document()->pins().isEmpty());
        QVERIFY(planner->document()->currentPlan()->schedule == before.schedule);
        QCOMPARE(planner->document()->currentPlan()->timeline.peakBytes, before.timeline.peakBytes);
        QCOMPARE(planner->analysis().nodeDecisions().value(node), PlanDecision::Recompute);

        planner->document()->undoStack()->redo();
        planner->waitForIdle();
        QVERIFY(planner->document()->currentPlan()->schedule == pinned.schedule);

        // Context actions for the graph: keep / recompute / offload / clear; clear is an undo step.
        QObject owner;
        const QList<QAction *> actions = planner->pinActions(node, &owner);
        QCOMPARE(actions.size(), 4);
        QVERIFY(actions[0]->isChecked());
        actions[3]->trigger();
        planner->waitForIdle();
        QVERIFY(planner->document()->pins().isEmpty());
        QVERIFY(planner->document()->currentPlan()->schedule == before.schedule);
    }

    // Bug: rotor with a pin gave an infeasible plan and "try a larger budget or another solver";
    // Solve again said only "plan 1 was solved with these inputs already". Rotor takes no pins.
    void solverWithoutPinsSaysSoNotTheBudget()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("rotor"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->currentPlan()->status, core::solvers::SolveStatus::Feasible);
        QString node;
        for (auto it = planner->analysis().nodeDecisions().cbegin();
             it != planner->analysis().nodeDecisions().cend() && node.isEmpty(); ++it)
            if (!planner->pinTensorOfNode(it.key()).isEmpty())
                node = it.key();
        QVERIFY(!node.isEmpty());
        QVERIFY(planner->pinNode(node, PinKind::Keep));
        planner->waitForIdle();
        planner->solve(QStringLiteral("rotor")); // the pin change re-solved it already
        planner->waitForIdle();
        QCOMPARE(planner->document()->currentPlan()->status,
                 core::solvers::SolveStatus::Infeasible);
        const QString text = planner->solverPanel()->messageText();
        QVERIFY2(text.contains(QStringLiteral("rotor takes no pins")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("chen-greedy")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("larger budget")), qPrintable(text));
    }

    void sizesThatDifferNeverReadTheSame()
    {
        // bytesApart: two decimals while they tell the sizes apart, then more, then bytes.
        const int64_t mib = 1 << 20;
        QCOMPARE(bytesApart(3 * mib, 2 * mib),
                 qMakePair(QStringLiteral("3.00 MiB"), QStringLiteral("2.00 MiB")));
        QCOMPARE(bytesApart(465777300, 465777300).first, QStringLiteral("444.20 MiB"));
        QCOMPARE(bytesApart(465777300, 465776000),
                 qMakePair(QStringLiteral("444.200 MiB"), QStringLiteral("444.199 MiB")));
        QCOMPARE(bytesApart(465777301, 465777300),
                 qMakePair(QStringLiteral("444.199849 MiB"), QStringLiteral("444.199848 MiB")));
        // One byte apart at 5 GiB: six decimals of GiB cannot tell, bytes can.
        QCOMPARE(bytesApart((5LL << 30) + 1, 5LL << 30),
                 qMakePair(QStringLiteral("5368709121 B"), QStringLiteral("5368709120 B")));
        QCOMPARE(bytesApart(512, 511).first, QStringLiteral("512 B"));

        // The bug: store-all at a budget a few bytes under its peak is infeasible, and its row
        // read "444.20 MiB" for both the peak and the budget. They differ on screen now, and
        // the Solver dock's message says where the schedule peaks.
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinTime);
        const int64_t peak = m_resnet->storeAll.timeline.peakBytes;
        planner->document()->setBudgetBytes(peak - 100);
        planner->solve(QStringLiteral("store-all"));
        planner->waitForIdle();
        const core::solvers::Plan *plan = planner->document()->currentPlan();
        QVERIFY(plan);
        QCOMPARE(plan->status, core::solvers::SolveStatus::Infeasible);
        QCOMPARE(QString::fromStdString(core::formatBytes(plan->timeline.peakBytes)),
                 QString::fromStdString(core::formatBytes(plan->budgetBytes)));
        PlanTableModel *model = planner->planTableModel();
        const int row = planner->document()->currentPlanIndex();
        const QString peakText = model->index(row, PlanTableModel::Peak).data().toString();
        const QString budgetText = model->index(row, PlanTableModel::Budget).data().toString();
        QVERIFY2(peakText != budgetText, qPrintable(peakText + QStringLiteral(" = ") + budgetText));
        QVERIFY2(planner->solverPanel()->messageText().contains(peakText),
                 qPrintable(planner->solverPanel()->messageText()));
    }

    void budgetSliderResolvesLive()
    {
        auto planner = makePlanner();
        planner->solverPanel()->setLiveResolve(true);
        const auto &sa = m_resnet->storeAll.timeline;
        const int64_t floor = sa.peakBytes - sa.activationPeakBytes;
        planner->document()->setBudgetBytes(sa.peakBytes);
        planner->solve(QStringLiteral("hong-dp"));
        planner->waitForIdle();
        const int64_t tight = floor + (sa.peakBytes - floor) * 7 / 10;
        planner->solverPanel()->dragBudgetTo(tight);
        QTRY_VERIFY_WITH_TIMEOUT(planner->document()->currentPlan()->budgetBytes != sa.peakBytes,
                                 20000);
        planner->waitForIdle();
        const auto &plan = *planner->document()->currentPlan();
        QCOMPARE(planner->document()->plans().size(), size_t(1));
        QVERIFY(std::llabs(plan.budgetBytes - tight) <= (sa.peakBytes - floor) / 500 + 1);
        if (plan.status != core::solvers::SolveStatus::Infeasible)
            QVERIFY(plan.timeline.peakBytes <= plan.budgetBytes);
        // One drag is one undo step.
        QCOMPARE(planner->document()->undoStack()->count(), 1);
    }

    void teachingViewSteps()
    {
        auto planner = makePlanner();
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        TeachingView *t = planner->teachingView();
        const PlanAnalysis &a = planner->analysis();
        QVERIFY(a.backwardBeginStep() > 0);
        QSignalSpy states(t, &TeachingView::stepStateChanged);
        const int mid = (a.backwardBeginStep() + int(a.stepCount())) / 2;
        t->setStep(mid);
        QCOMPARE(states.count(), 1);
        QVERIFY(t->state().backward);
        QVERIFY(!t->state().resident.isEmpty());
        QCOMPARE(planner->memoryChart()->cursorStep(), mid);
        // R is square (stages x first-computed ops) and lower-triangular with a full diagonal.
        const QImage &r = t->rView()->image();
        QCOMPARE(r.width(), a.stageCount());
        QCOMPARE(r.height(), a.stageCount());
        for (int k = 0; k < a.stageCount(); k += 7) {
            QVERIFY(r.pixel(k, k) != qRgb(255, 255, 255));
            if (k + 1 < a.stageCount())
                QCOMPARE(r.pixel(k + 1, k), qRgb(255, 255, 255));
        }
        // Recomputes appear below the diagonal of R for a plan that recomputes.
        bool below = false;
        for (int k = 0; k < a.stageCount() && !below; ++k)
            for (int j = 0; j < k && !below; ++j)
                below = r.pixel(j, k) != qRgb(255, 255, 255);
        QVERIFY(below);
        QVERIFY(!a.explainNode(a.nodeDecisions().keys().first()).isEmpty());
    }

    void sessionRoundTrip()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.rematproj"));
        QString pinnedTensor;
        std::vector<core::solvers::Plan> plans;
        int64_t budget = 0;
        {
            auto planner = makePlanner();
            planner->solve(QStringLiteral("chen-sqrtn"));
            planner->solve(QStringLiteral("hong-dp"));
            planner->waitForIdle();
            const QString node = planner->analysis().nodeDecisions().keys().first();
            QVERIFY(planner->pinNode(node, PinKind::Recompute));
            planner->waitForIdle();
            pinnedTensor = planner->pinTensorOfNode(node);
            QVERIFY(planner->document()->isModified());
            QVERIFY(planner->saveSession(path).isOk());
            QVERIFY(!planner->document()->isModified());
            plans = planner->document()->plans();
            budget = planner->document()->budgetBytes();
        }
        Planner reopened;
        reopened.setSolvers(Planner::registrySolvers());
        QSignalSpy opened(&reopened, &Planner::sessionOpened);
        QVERIFY(reopened.openSession(path).isOk());
        QVERIFY(opened.wait(120000));
        QVERIFY2(opened.first().at(0).toBool(), qPrintable(opened.first().at(1).toString()));
        QCOMPARE(reopened.document()->budgetBytes(), budget);
        QCOMPARE(reopened.document()->pins().size(), 1);
        QCOMPARE(reopened.document()->pin(pinnedTensor),
                 std::optional<PinKind>(PinKind::Recompute));
        QCOMPARE(reopened.document()->plans().size(), plans.size());
        for (size_t i = 0; i < plans.size(); ++i) {
            const auto &a = plans[i], &b = reopened.document()->plans()[i];
            QCOMPARE(b.solver, a.solver);
            QVERIFY(b.schedule == a.schedule);
            QCOMPARE(b.timeline.peakBytes, a.timeline.peakBytes);
            QCOMPARE(b.timeline.activationPeakBytes, a.timeline.activationPeakBytes);
            QCOMPARE(b.timeline.tdiPercent(), a.timeline.tdiPercent());
            QCOMPARE(int(b.pins.size()), int(a.pins.size()));
        }
        QCOMPARE(reopened.planTableModel()->rowCount(), int(plans.size()));
        QVERIFY(!reopened.document()->isModified());
        // A damaged file is refused with its name in the message.
        QFile bad(dir.filePath(QStringLiteral("bad.rematproj")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("{\"format\": \"remat-studio-session\", \"version\": 99}");
        bad.close();
        const core::Status st = reopened.openSession(bad.fileName());
        QVERIFY(!st.isOk());
        QVERIFY(QString::fromStdString(st.message()).contains(QStringLiteral("version 99")));
        // Exports.
        QVERIFY(reopened.exportPlanJson(dir.filePath(QStringLiteral("p.json"))).isOk());
        QVERIFY(reopened.exportTimelineCsv(dir.filePath(QStringLiteral("t.csv"))).isOk());
        reopened.memoryChart()->resize(800, 400);
        QVERIFY(reopened.exportChart(reopened.memoryChart(), dir.filePath(QStringLiteral("m.png")))
                    .isOk());
        QVERIFY(reopened.exportChart(reopened.memoryChart(), dir.filePath(QStringLiteral("m.svg")))
                    .isOk());
        QFile csv(dir.filePath(QStringLiteral("t.csv")));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const int lines = QString::fromUtf8(csv.readAll()).count(QLatin1Char('\n'));
        QCOMPARE(lines, int(reopened.document()->currentPlan()->schedule.steps.size()) + 1);
        QVERIFY(QImage(dir.filePath(QStringLiteral("m.png"))).width() >= 1600);
    }

    // Expectation (part): a session keeps the Pareto sweep and the solver choice (format
    // version 2), and a version-1 file (without them) still opens.
    void sessionKeepsSweepAndSolverChoice()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("v2.rematproj"));
        QList<ParetoPoint> swept;
        {
            auto planner = makePlanner();
            std::vector<std::shared_ptr<const core::solvers::Solver>> fast;
            for (const auto &s : Planner::registrySolvers())
                if (s->id() == "chen-greedy" || s->id() == "hong-dp")
                    fast.push_back(s);
            planner->setSolvers(fast);
            planner->solve(QStringLiteral("chen-greedy"));
            planner->sweep();
            planner->waitForIdle();
            planner->solverPanel()->setCurrentSolver(QStringLiteral("hong-dp"));
            swept = planner->paretoChart()->points();
            QVERIFY(swept.size() >= 2);
            QVERIFY(planner->saveSession(path).isOk());
        }
        auto reopen = [&](const QString &file) {
            auto planner = std::make_unique<Planner>();
            planner->setSolvers(Planner::registrySolvers());
            QSignalSpy opened(planner.get(), &Planner::sessionOpened);
            if (!planner->openSession(file).isOk() || !opened.wait(120000) ||
                !opened.first().at(0).toBool())
                return std::unique_ptr<Planner>();
            return planner;
        };
        auto reopened = reopen(path);
        QVERIFY(reopened);
        QCOMPARE(reopened->solverPanel()->currentSolver(), QStringLiteral("hong-dp"));
        const QList<ParetoPoint> restored = reopened->paretoChart()->points();
        QCOMPARE(restored.size(), swept.size());
        for (int i = 0; i < swept.size(); ++i) {
            QCOMPARE(restored[i].solver, swept[i].solver);
            QCOMPARE(restored[i].budgetBytes, swept[i].budgetBytes);
            QCOMPARE(restored[i].peakBytes, swept[i].peakBytes);
            QCOMPARE(restored[i].overheadPercent, swept[i].overheadPercent);
            QCOMPARE(restored[i].feasible, swept[i].feasible);
        }
        // The same file as version 1 wrote it: no "solver", no "pareto".
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        f.close();
        QCOMPARE(root.value(QStringLiteral("version")).toInt(), 2);
        root[QStringLiteral("version")] = 1;
        root.remove(QStringLiteral("solver"));
        root.remove(QStringLiteral("pareto"));
        const QString v1 = dir.filePath(QStringLiteral("v1.rematproj"));
        QFile out(v1);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(root).toJson());
        out.close();
        auto old = reopen(v1);
        QVERIFY(old);
        QCOMPARE(old->document()->plans().size(), size_t(1));
        QVERIFY(old->paretoChart()->points().isEmpty());
    }

    void cpuRunFeedsLiveChart()
    {
        const QString mlp = tests::sharedPath("corpus/with_weights/mlp.onnx");
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        planner.setBackends(
            {BackendChoice{QStringLiteral("cpu"), QStringLiteral("CPU reference"), [] {
                               return core::Expected<std::unique_ptr<core::exec::Backend>>(
                                   core::exec::makeCpuBackend());
                           }}});
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        planner.openModel(mlp, 0);
        QVERIFY(loaded.wait(60000));
        planner.document()->setObjective(core::solvers::Objective::MinPeak);
        planner.solve(QStringLiteral("chen-sqrtn"));
        planner.waitForIdle();
        QVERIFY(planner.document()->currentPlan());
        RunPanel *panel = planner.runPanel();
        panel->setIterations(2);
        QSignalSpy done(panel, &RunPanel::runFinished);
        panel->run();
        QVERIFY(done.wait(120000));
        const RunSummary s = panel->lastSummary();
        QVERIFY2(s.ok, qPrintable(s.error));
        QCOMPARE(s.iterations, 2);
        QVERIFY(s.gradientsChecked);
        QVERIFY2(s.gradientsMatch,
                 qPrintable(QStringLiteral("%1 in %2").arg(s.maxRelativeError).arg(s.worstEntry)));
        // The live chart got the measured steps of the last iteration.
        QCOMPARE(panel->measuredPointCount(),
                 int(planner.document()->currentPlan()->schedule.steps.size()));
        // The measured bytes equal the simulator's (same allocation discipline).
        QCOMPARE(s.measuredPeakBytes, planner.document()->currentPlan()->timeline.peakBytes);
        // One unit system: the run chart, the memory chart and the table's peak agree.
        const QString unit = QString::fromLatin1(core::byteUnitFor(s.measuredPeakBytes).name);
        QCOMPARE(panel->memoryUnit(), unit);
        QCOMPARE(planner.memoryChart()->memoryUnit(), unit);
        const QString peakCell =
            planner.planTableModel()
                ->data(planner.planTableModel()->index(0, PlanTableModel::Peak))
                .toString();
        QVERIFY2(peakCell.endsWith(unit), qPrintable(peakCell));
    }

    // Expectation 9 (rest): a session keeps the last run (its outcome, gradient check and
    // measured curve) and the plans selected beside the current one.
    void sessionKeepsRunAndSelection()
    {
        const QString mlp = tests::sharedPath("corpus/with_weights/mlp.onnx");
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run.rematproj"));
        RunSummary ran;
        int measured = 0;
        QList<int> overlaid;
        int current = -1;
        {
            Planner planner;
            planner.setSolvers(Planner::registrySolvers());
            QSignalSpy loaded(&planner, &Planner::problemChanged);
            planner.openModel(mlp, 0);
            QVERIFY(loaded.wait(60000));
            planner.document()->setObjective(core::solvers::Objective::MinPeak);
            planner.solve(QStringLiteral("store-all"));
            planner.solve(QStringLiteral("chen-sqrtn"));
            planner.waitForIdle();
            QCOMPARE(planner.document()->plans().size(), size_t(2));
            current = planner.document()->currentPlanIndex();
            RunPanel *panel = planner.runPanel();
            QVERIFY(!panel->sessionRun());
            QSignalSpy done(panel, &RunPanel::runFinished);
            panel->run();
            QVERIFY(done.wait(120000));
            ran = panel->lastSummary();
            QVERIFY2(ran.ok && ran.gradientsMatch, qPrintable(ran.error));
            measured = panel->measuredPointCount();
            QVERIFY(measured > 0);
            planner.setOverlaidPlans({1 - current});
            overlaid = planner.overlaidPlans();
            QCOMPARE(overlaid, QList<int>{1 - current});
            QVERIFY(planner.saveSession(path).isOk());
        }
        Planner reopened;
        reopened.setSolvers(Planner::registrySolvers());
        QSignalSpy opened(&reopened, &Planner::sessionOpened);
        QVERIFY(reopened.openSession(path).isOk());
        QVERIFY(opened.wait(60000));
        QVERIFY(opened.first().at(0).toBool());
        QCOMPARE(reopened.document()->currentPlanIndex(), current);
        QCOMPARE(reopened.overlaidPlans(), overlaid);
        QCOMPARE(reopened.memoryChart()->overlayNames().size(), 1);
        RunPanel *panel = reopened.runPanel();
        const RunSummary back = panel->lastSummary();
        QCOMPARE(back.ok, true);
        QCOMPARE(back.iterations, ran.iterations);
        QCOMPARE(back.measuredPeakBytes, ran.measuredPeakBytes);
        QCOMPARE(back.gradientsMatch, ran.gradientsMatch);
        QCOMPARE(back.maxRelativeError, ran.maxRelativeError);
        QCOMPARE(panel->measuredPointCount(), measured);
        const QString expected =
            QStringLiteral("Saved run of plan %1: %2 (cpu): Done")
                .arg(current + 1)
                .arg(QString::fromStdString(reopened.document()->currentPlan()->solver));
        QVERIFY2(panel->statusText().startsWith(expected), qPrintable(panel->statusText()));
        QVERIFY2(panel->gradientText().startsWith(QStringLiteral("Gradient check passed")),
                 qPrintable(panel->gradientText()));
        // Saved again, it keeps the run (nothing ran in between).
        const QString again = dir.filePath(QStringLiteral("again.rematproj"));
        QVERIFY(reopened.saveSession(again).isOk());
        QFile f(again);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject run =
            QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("run")).toObject();
        QCOMPARE(run.value(QStringLiteral("plan")).toInt(), current);
        QCOMPARE(run.value(QStringLiteral("bytes_in_use")).toArray().size(), measured);
    }

    // "Calibrate on this device": store-all runs on the CPU, then the planner's costs are the
    // profile's (every op measured), the label says so, and the current plan's figures are
    // re-simulated with them (its time is the simulator's with the new costs).
    void calibrateUsesTheProfile()
    {
        const QString mlp = tests::sharedPath("corpus/with_weights/mlp.onnx");
        Planner planner;
        planner.setSolvers(Planner::registrySolvers());
        QSignalSpy loaded(&planner, &Planner::problemChanged);
        planner.openModel(mlp, 0);
        QVERIFY(loaded.wait(60000));
        planner.document()->setObjective(core::solvers::Objective::MinPeak);
        planner.solve(QStringLiteral("chen-sqrtn"));
        planner.waitForIdle();
        QVERIFY(planner.document()->currentPlan());
        RunPanel *panel = planner.runPanel();
        QVERIFY2(panel->timeSourceText().contains("estimate"), qPrintable(panel->timeSourceText()));
        const double before = planner.document()->currentPlan()->timeline.totalSeconds;
        QSignalSpy done(panel, &RunPanel::runFinished);
        panel->calibrate();
        QVERIFY(done.wait(120000));
        QVERIFY2(panel->lastSummary().ok, qPrintable(panel->lastSummary().error));
        QCOMPARE(planner.problem()->costs->timeSource, core::cost::TimeSource::Profile);
        QVERIFY2(panel->timeSourceText().startsWith("Times: profile"),
                 qPrintable(panel->timeSourceText()));
        const core::solvers::Plan *plan = planner.document()->currentPlan();
        QVERIFY(plan);
        auto t = core::sim::simulate(plan->schedule, *planner.problem()->training,
                                     *planner.problem()->costs);
        QVERIFY(t.hasValue());
        QCOMPARE(plan->timeline.totalSeconds, t->totalSeconds);
        QVERIFY(plan->timeline.totalSeconds != before); // measured, not the roofline's

        // Then, off the GUI thread, the store-all step at half the batch: every op gets its
        // second point (as `remat run --profile-out` takes it) and the label names both batches.
        const int64_t batch = planner.problem()->batch;
        QVERIFY(QTest::qWaitFor(
            [&] {
                return planner.calibrationProfile() &&
                       planner.calibrationProfile()->secondBatch > 0;
            },
            120000));
        const core::cost::Profile &p = *planner.calibrationProfile();
        QCOMPARE(p.secondBatch, batch > 1 ? batch / 2 : int64_t(2));
        QVERIFY(std::all_of(p.ops.begin(), p.ops.end(),
                            [](const core::cost::ProfiledOp &o) { return o.hasSecondPoint(); }));
        QVERIFY2(panel->timeSourceText().contains(
                     QStringLiteral("batches %1 and %2").arg(batch).arg(p.secondBatch)),
                 qPrintable(panel->timeSourceText()));
        // Still this batch's own times: the profile's, not a scaled guess.
        QCOMPARE(planner.problem()->costs->timeSource, core::cost::TimeSource::Profile);
    }

    void cancelledSolveLeavesPlannerUsable()
    {
        auto planner = makePlanner();
        // The Pareto sweep is the longest job every build has: cancel it early.
        planner->sweep();
        QTest::qWait(50);
        QVERIFY(planner->solveController()->isBusy());
        planner->cancel();
        planner->waitForIdle();
        QVERIFY(!planner->solveController()->isBusy());
        if (planner->usableSolverIds().contains(QStringLiteral("checkmate-milp"))) {
            planner->solve(QStringLiteral("checkmate-milp"));
            QTest::qWait(300);
            planner->cancel();
            planner->waitForIdle();
        }
        const size_t rows = planner->document()->plans().size();
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QCOMPARE(planner->document()->plans().size(), rows + 1);
        QCOMPARE(planner->document()->currentPlan()->solver, std::string("chen-sqrtn"));
    }
};

QTEST_MAIN(TestPlanner)
#include "tst_planner.moc"
