// checkmate-milp's time constraint (`remat solve --objective min-peak --max-overhead P`): the
// min-peak MILP with one more row, the recompute time summed over every run at most P% of
// store-all's step.
// Expected, on small random DAGs and P in {0, 5, 15, 35}:
// - the answer (the MILP's own: fallback off, streaming off) is the exact lowest peak of
//   Checkmate's stage model among plans recomputing at most P% of store-all's step, found here
//   by bisecting the budget over the exhaustive stage-plan DP (stage_plan_optimum.h), on most
//   (never above it; below it only where the least-recompute pass at that peak starts from
//   another solver's op order), and CBC proves its answer (status optimal) on most;
// - the simulator's step is within P% of store-all's (the guard's check passes: no plan is
//   turned infeasible), and the limit binds on some graphs (the answer's peak is above the
//   unconstrained lowest peak), so the row is not vacuous;
// - models too large for CBC (forced here with max-columns 0) answer by budget bisection within
//   the limit, below store-all's peak on most;
// - a stop fired before solving cancels on both paths;
// - the model's row: a plan's point satisfies it exactly when its recompute is within the limit.
#include "random_graphs.h"
#include "stage_plan_optimum.h"
#include "tiny_checkmate_case.h"

#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/checkmate/model.h"
#include "core/solvers/checkmate/problem.h"

#include <QtTest>

#include <cmath>

using namespace remat::core;
using namespace remat::core::solvers;
using remat::tests::dagOptions;
using remat::tests::stagePlanOptimum;

namespace {

/// The lowest budget at which the stage model has a plan recomputing at most `limit` seconds
/// (the stage optimum never rises as the budget grows, so the predicate is monotone).
int64_t lowestPeakWithin(const checkmate::Problem &p, double limit)
{
    int64_t lo = 0;
    int64_t hi = checkmate::evaluate(p, checkmate::storeAllSequence(p)).peakBytes;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (stagePlanOptimum(p, mid) <= limit * (1 + 1e-9) + 1e-15)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/// min-peak within `percent` of store-all's step, answered by the MILP itself (fallback and
/// streaming off), in at most `seconds`.
SolveRequest milpOwnMinPeak(const remat::tests::RandomGraph &rg, double percent, double seconds)
{
    SolveRequest req;
    req.graph = &rg.graph;
    req.costs = &rg.costs;
    req.objective = Objective::MinPeak;
    req.maxOverheadPercent = percent;
    req.timeLimitSeconds = seconds;
    req.settings["fallback"] = "off";
    req.settings["stream"] = "off";
    return req;
}

} // namespace

class TstCheckmateTime : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!checkmateAvailable())
            QSKIP("built without COIN-OR CBC");
    }

    void timeRowAgreesWithExhaustiveSearch()
    {
        auto milp = makeCheckmateMilpSolver();
        int compared = 0, proven = 0, exact = 0, binding = 0;
        for (uint32_t seed = 1; seed <= 14; ++seed) {
            const auto tiny = remat::tests::tinyCheckmateCase(seed, dagOptions(4));
            if (!tiny)
                continue;
            const remat::tests::RandomGraph &rg = tiny->rg;
            const checkmate::Problem &p = tiny->p;
            const schedule::Schedule sas = schedule::storeAllSchedule(rg.graph);
            auto sa = sim::simulate(sas, rg.graph, rg.costs, {.recordPoints = false});
            QVERIFY(sa);
            const double base = stepSeconds(*sa);
            double once = 0;
            for (double c : p.cost)
                once += c;
            QVERIFY(std::abs(once - base) <= 1e-9 * base); // the row's store-all is the simulator's
            const int64_t unconstrained =
                lowestPeakWithin(p, std::numeric_limits<double>::infinity());
            for (double percent : {0.0, 5.0, 15.0, 35.0}) {
                const double limit = once * percent / 100;
                const int64_t expected = lowestPeakWithin(p, limit);
                SolveRequest req = milpOwnMinPeak(rg, percent, 20);
                auto plan = milp->solve(req);
                const QString where = QString("seed %1, P %2").arg(seed).arg(percent);
                QVERIFY2(plan.hasValue(),
                         qPrintable(where + ": " + plan.status().toString().c_str()));
                QVERIFY2(plan->status == SolveStatus::Optimal ||
                             plan->status == SolveStatus::Feasible,
                         qPrintable(where + ": " + solveStatusName(plan->status) + " " +
                                    plan->note.c_str()));
                QVERIFY(withinMaxOverhead(*plan));
                QVERIFY2(stepSeconds(plan->timeline) <= base * (1 + percent / 100) * (1 + 1e-9),
                         qPrintable(where));
                QVERIFY(plan->timeline.recomputeSeconds <= limit * (1 + 1e-9) + 1e-15);
                QVERIFY2(plan->timeline.peakBytes <= expected,
                         qPrintable(QString("%1: milp %2 B, exhaustive %3 B: %4")
                                        .arg(where)
                                        .arg(plan->timeline.peakBytes)
                                        .arg(expected)
                                        .arg(plan->note.c_str())));
                ++compared;
                if (plan->status == SolveStatus::Optimal)
                    ++proven;
                // Below the stage model's optimum only through the least-recompute pass at the
                // peak found, whose warm start may come from another solver's op order.
                if (plan->timeline.peakBytes == expected)
                    ++exact;
                if (expected > unconstrained)
                    ++binding;
            }
        }
        qInfo("%d answers: %d proven optimal, %d at the exhaustive optimum, %d where the limit "
              "binds",
              compared, proven, exact, binding);
        QVERIFY(compared >= 20);
        QVERIFY2(proven * 4 >= compared * 3,
                 qPrintable(QString("%1 of %2").arg(proven).arg(compared)));
        QVERIFY2(
            exact * 4 >= compared * 3,
            qPrintable(QString("%1 of %2 at the exhaustive optimum").arg(exact).arg(compared)));
        QVERIFY2(binding >= 4, qPrintable(QString("%1 binding").arg(binding)));
    }

    void modelsTooLargeForCbcBisectAndKeepTheLimit()
    {
        // Setting max-columns 0 sends every graph down the path ResNet-152 takes (no time row:
        // a budget bisection over the solver's min-time plans, then the best plan walked down).
        auto milp = makeCheckmateMilpSolver();
        int answers = 0, lowered = 0;
        for (uint32_t seed = 1; seed <= 6; ++seed) {
            auto rg = remat::tests::randomTrainingGraph(seed, dagOptions(6));
            const schedule::Schedule sas = schedule::storeAllSchedule(rg.graph);
            auto sa = sim::simulate(sas, rg.graph, rg.costs, {.recordPoints = false});
            QVERIFY(sa);
            for (double percent : {10.0, 35.0}) {
                SolveRequest req = milpOwnMinPeak(rg, percent, 3);
                req.settings["max-columns"] = "0";
                auto plan = milp->solve(req);
                const QString where = QString("seed %1, P %2").arg(seed).arg(percent);
                QVERIFY2(plan.hasValue(), qPrintable(where));
                QVERIFY2(plan->status == SolveStatus::Feasible,
                         qPrintable(where + ": " + plan->note.c_str()));
                QVERIFY2(plan->note.find("budget bisection") != std::string::npos,
                         qPrintable(where + ": " + plan->note.c_str()));
                QVERIFY(withinMaxOverhead(*plan));
                QVERIFY(stepSeconds(plan->timeline) <=
                        stepSeconds(*sa) * (1 + percent / 100) * (1 + 1e-9));
                QVERIFY(plan->timeline.peakBytes <= sa->peakBytes);
                ++answers;
                if (plan->timeline.peakBytes < sa->peakBytes)
                    ++lowered;
            }
        }
        QCOMPARE(answers, 12);
        QVERIFY(lowered >= 6);
    }

    void cancelledBeforeStartOnBothPaths()
    {
        // A stop fired before solving: no answered plan, on the MILP path and the bisection.
        auto rg = remat::tests::randomTrainingGraph(3, dagOptions(8));
        for (const char *columns : {"150000", "0"}) {
            StopSource src;
            src.requestStop();
            SolveRequest req;
            req.graph = &rg.graph;
            req.costs = &rg.costs;
            req.objective = Objective::MinPeak;
            req.maxOverheadPercent = 35;
            req.settings["max-columns"] = columns;
            req.stop = src.token();
            auto plan = makeCheckmateMilpSolver()->solve(req);
            QVERIFY2(!plan.hasValue() || plan->status == SolveStatus::Cancelled, columns);
        }
    }

    void modelRowSeparatesPlansByTheirRecompute()
    {
        int over = 0, within = 0;
        for (uint32_t seed = 1; seed <= 8; ++seed) {
            auto rg = remat::tests::randomTrainingGraph(seed, dagOptions(5));
            auto p = checkmate::buildProblem(rg.graph, rg.costs, {});
            QVERIFY(p.hasValue());
            const std::vector<int> seq = checkmate::lowestPeakSequence(*p);
            const double recompute = checkmate::evaluate(*p, seq).recomputeSeconds;
            if (recompute <= 0)
                continue;
            for (double share : {0.5, 2.0}) {
                checkmate::ModelOptions mo;
                mo.minimisePeak = true;
                mo.maxRecomputeSeconds = recompute * share;
                const checkmate::LinearModel m = checkmate::buildModel(*p, mo);
                const checkmate::LinearModel plain =
                    checkmate::buildModel(*p, {.minimisePeak = true});
                QCOMPARE(m.rows(), plain.rows() + 1);
                const std::vector<double> x =
                    m.pointFromPlan(*p, checkmate::stagePlanFromSequence(*p, seq));
                const size_t row = m.rows() - 1;
                double lhs = 0;
                for (size_t e = 0; e < m.value.size(); ++e)
                    if (size_t(m.rowOf[e]) == row)
                        lhs += m.value[e] * x[size_t(m.colOf[e])];
                // The row sums R, which may hold runs the sequence skips: never less.
                QVERIFY2(lhs * m.objectiveScale >= recompute * (1 - 1e-9),
                         qPrintable(QString("seed %1: row %2 s, plan %3 s")
                                        .arg(seed)
                                        .arg(lhs * m.objectiveScale)
                                        .arg(recompute)));
                const bool keeps = lhs <= m.rowUpper[row] * (1 + 1e-12);
                if (share < 1) {
                    QVERIFY(!keeps);
                    ++over;
                } else if (keeps) {
                    ++within;
                }
            }
        }
        QVERIFY(over >= 3);
        QVERIFY(within >= 3);
    }
};

QTEST_GUILESS_MAIN(TstCheckmateTime)
#include "tst_checkmate_time.moc"
