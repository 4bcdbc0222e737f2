// The Plans table on the Pareto chart, offscreen, with the planner on a corpus model: after
// "Compare all" every answered row is a point at the row's own peak and time overhead, in its
// solver's colour; a row another beats on peak and step time is dimmed (the table says
// "dominated" of the same rows), the best row starred; clicking a point selects its row as a
// click in the table does; another batch or another model takes the points away with the rows.
#include "common/test_support.h"

#include "ui/planner/pareto_chart_view.h"
#include "ui/planner/plan_table_model.h"
#include "ui/planner/planner.h"
#include "ui/planner/solver_panel.h"

#include <QHash>
#include <QMainWindow>
#include <QPushButton>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>

using namespace remat;
using namespace remat::ui;

class TestParetoPlans : public QObject
{
    Q_OBJECT

private:
    std::shared_ptr<const PlannerProblem> m_resnet;

    /// The answered rows of the Plans table (plan index -> peak and time overhead), read from
    /// the table model.
    static QHash<int, QPair<qint64, double>> answeredRows(Planner &planner)
    {
        QHash<int, QPair<qint64, double>> rows;
        PlanTableModel *m = planner.planTableModel();
        for (int r = 0; r < m->rowCount(); ++r) {
            const QString status = m->index(r, PlanTableModel::Status).data().toString();
            // A timed-out row holds its best plan so far, an infeasible one its smallest peak
            // (over the budget); a cancelled one nothing.
            if (status.contains(QStringLiteral("cancelled")))
                continue;
            rows.insert(
                r,
                {m->data(m->index(r, PlanTableModel::Peak), PlanTableModel::SortRole).toLongLong(),
                 m->data(m->index(r, PlanTableModel::TimeOverhead), PlanTableModel::SortRole)
                     .toDouble()});
        }
        return rows;
    }

private slots:
    void initTestCase()
    {
        const QString path = tests::sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        auto p = loadPlannerProblem(path.toStdString(), 2, {});
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        m_resnet = *p;
    }

    void compareAllPutsEveryPlanOnTheChart()
    {
        Planner planner;
        // The interactive solvers (the MILP and offload searches run to their time limit: too
        // long for a unit test; the chart treats every solver's rows alike).
        std::vector<std::shared_ptr<const core::solvers::Solver>> solvers;
        for (const auto &s : Planner::registrySolvers())
            if (s->capabilities().speed == core::solvers::SpeedClass::Interactive)
                solvers.push_back(s);
        QVERIFY(solvers.size() >= 4);
        planner.setSolvers(solvers);
        planner.setProblem(m_resnet);
        planner.solverPanel()->setLiveResolve(false);
        // A budget between the floor and store-all: the solvers trade memory for time.
        const auto &sa = m_resnet->storeAll.timeline;
        planner.document()->setBudgetBytes(sa.peakBytes - sa.activationPeakBytes / 3);

        QMainWindow window;
        planner.createDocks(&window);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(planner.raiseView(QStringLiteral("pareto")));
        ParetoChartView *chart = planner.paretoChart();
        QVERIFY(chart->planPoints().isEmpty());

        // Expected: the Solver dock's "Compare all" fills the table and the chart alike.
        QPushButton *compare = nullptr;
        for (QPushButton *b : planner.solverPanel()->findChildren<QPushButton *>())
            if (b->text() == QStringLiteral("Compare all"))
                compare = b;
        QVERIFY(compare);
        QTest::mouseClick(compare, Qt::LeftButton);
        planner.waitForIdle();
        const auto &plans = planner.document()->plans();
        QCOMPARE(plans.size(), solvers.size());

        // One point per answered row, at the row's peak and time overhead.
        const QHash<int, QPair<qint64, double>> rows = answeredRows(planner);
        QVERIFY2(rows.size() >= 4, "too few answered rows to compare");
        const QList<ParetoPlanPoint> points = chart->planPoints();
        QCOMPARE(points.size(), rows.size());
        QSet<int> seen;
        for (const ParetoPlanPoint &p : points) {
            const int row = p.plan; // the table model's rows are the plans, in solve order
            QVERIFY2(rows.contains(row), qPrintable(p.solver));
            QCOMPARE(p.peakBytes, rows[row].first);
            QCOMPARE(p.overheadPercent, rows[row].second);
            QCOMPARE(p.solver, QString::fromStdString(plans[size_t(p.plan)].solver));
            seen.insert(p.plan);
            QVERIFY(chart->planPosition(p.plan));
        }
        QCOMPARE(seen.size(), points.size());

        // Dominated: exactly the points another point beats (no more peak, a step no slower,
        // better on one), and the rows the table calls dominated (one problem: the same
        // budget, objective and pins). Dimmed: a faint fill.
        int dominated = 0;
        int over = 0;
        for (const ParetoPlanPoint &p : points) {
            bool beaten = false;
            for (const ParetoPlanPoint &q : points) {
                const double tol = 1e-6;
                beaten =
                    beaten ||
                    (q.plan != p.plan && q.peakBytes <= p.peakBytes &&
                     q.overheadPercent <= p.overheadPercent + tol &&
                     (q.peakBytes < p.peakBytes || q.overheadPercent < p.overheadPercent - tol));
            }
            QCOMPARE(p.dominatedBy >= 0, beaten);
            // The table judges answered and timed-out rows among themselves (an over-budget
            // row, higher in peak than any within the budget, never beats one): it agrees with
            // the chart.
            const QString status =
                planner.planTableModel()->index(p.plan, PlanTableModel::Status).data().toString();
            QCOMPARE(p.overBudget, status.contains(QStringLiteral("infeasible")));
            over += p.overBudget ? 1 : 0;
            if (!p.overBudget)
                QCOMPARE(status.contains(QStringLiteral("dominated")), beaten);
            if (!p.best)
                QCOMPARE(chart->planColour(p.plan).alpha() < 128, beaten);
            QCOMPARE(chart->planColour(p.plan).rgb(),
                     ParetoChartView::solverColour(p.solver).rgb());
            dominated += beaten ? 1 : 0;
        }
        QCOMPARE(chart->dominatedLabel().isEmpty(), dominated == 0);
        QCOMPARE(chart->overBudgetLabel().isEmpty(), over == 0);
        qInfo("%d plans on the chart, %d of them dominated, %d over budget", int(points.size()),
              dominated, over);
        // The table's best row is the one starred.
        int best = -1;
        for (const ParetoPlanPoint &p : points)
            if (p.best)
                best = p.plan;
        QCOMPARE(best, planner.planTableModel()->bestRow());

        // Expected: a click on a point that is not the current plan's selects that plan's row.
        const int current = planner.document()->currentPlanIndex();
        int target = -1;
        for (const ParetoPlanPoint &p : points) {
            if (p.plan == current)
                continue;
            bool alone = true;
            for (const ParetoPlanPoint &q : points)
                if (q.plan != p.plan)
                    alone = alone && (*chart->planPosition(q.plan) - *chart->planPosition(p.plan))
                                             .manhattanLength() > 24;
            if (alone)
                target = p.plan;
        }
        QVERIFY2(target >= 0, "every point overlaps another");
        const size_t before = plans.size();
        QTest::mouseClick(chart->viewport(), Qt::LeftButton, {}, *chart->planPosition(target));
        QCOMPARE(planner.document()->currentPlanIndex(), target);
        auto *sorted = qobject_cast<QSortFilterProxyModel *>(planner.planTable()->model());
        QVERIFY(sorted);
        QCOMPARE(sorted->mapToSource(planner.planTable()->currentIndex()).row(), target);
        QCOMPARE(planner.planTable()->selectionModel()->selectedRows().size(), 1);
        QCOMPARE(chart->currentPeakBytes(), plans[size_t(target)].timeline.peakBytes);
        planner.waitForIdle();
        QCOMPARE(planner.document()->plans().size(), before); // selected, not solved again

        // Expected: another batch sets the rows aside and the points with them; undo brings
        // both back.
        planner.setBatch(4);
        QVERIFY(planner.document()->plans().empty());
        QVERIFY(chart->planPoints().isEmpty());
        QVERIFY(!chart->planPosition(target));
        planner.waitForIdle();
        QVERIFY(chart->planPoints().isEmpty());
        // ... and the Solver dock no longer describes a plan that is not in the table.
        const QString said = planner.solverPanel()->messageText();
        QVERIFY2(!said.startsWith(QStringLiteral("Plan ")), qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("No plan for these settings")), qPrintable(said));
        planner.document()->undoStack()->undo();
        QCOMPARE(chart->planPoints().size(), points.size());
        planner.waitForIdle();

        // Expected: another model starts clean.
        const QString mlp = tests::sharedPath("corpus/with_weights/mlp.onnx");
        planner.startNewSession(mlp);
        QVERIFY(chart->planPoints().isEmpty());
        planner.waitForIdle();
        QVERIFY(chart->planPoints().isEmpty());
    }
};

QTEST_MAIN(TestParetoPlans)
#include "tst_pareto_plans.moc"
