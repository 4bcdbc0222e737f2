// PlanBuilder::offerCheckpointSets (min-time: times read off the lowered schedules, cheapest
// simulated first, the rest skipped once slower than the best plan under budget) against offering
// every set one by one.
// Expected: on 60 random training DAGs, 40 random checkpoint sets each, at three budgets (below
// every set's peak, between, above all) and for min-peak, both give the same plan: the same checkpoints, peak, compute
// and recompute time, and status (infeasible: the smallest peak, then the least time, when
// nothing fits).
#include "random_graphs.h"

#include "core/solvers/plan_builder.h"

#include <QtTest>

#include <random>

using namespace remat::core;
using namespace remat::core::solvers;

class TstPlanBuilder : public QObject
{
    Q_OBJECT
private slots:
    void batchEqualsOneByOne()
    {
        int compared = 0, infeasible = 0;
        for (uint32_t seed = 1; seed <= 60; ++seed) {
            remat::tests::RandomGraphOptions o;
            o.dag = seed % 3 != 0;
            o.forwardOps = 5 + int(seed % 8);
            auto rg = remat::tests::randomTrainingGraph(seed * 131u, o);
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            std::mt19937 rng(seed);
            std::vector<std::vector<TensorId>> sets;
            std::vector<double> objectives;
            const auto &cands = facts->candidates();
            for (int k = 0; k < 40; ++k) {
                std::vector<TensorId> keep;
                for (TensorId t : cands)
                    if (rng() % 2)
                        keep.push_back(t);
                sets.push_back(keep);
                objectives.push_back(double(k % 7)); // ties in the proxy are fine
            }
            // Budgets from the sets' own peaks: below all, between, above all.
            SolveRequest probe;
            probe.graph = &rg.graph;
            probe.costs = &rg.costs;
            PlanBuilder pp("probe", probe);
            QVERIFY(pp.init().isOk());
            int64_t hi = 0;
            for (const auto &keep : sets) {
                auto t = pp.offerCheckpoints(keep, 0);
                QVERIFY(t.hasValue());
                hi = std::max(hi, t->peakBytes);
            }
            const int64_t lo = pp.smallestPeak(); // lo - 1: no set fits
            for (int variant = 0; variant < 4; ++variant) {
                SolveRequest r;
                r.graph = &rg.graph;
                r.costs = &rg.costs;
                if (variant < 3) {
                    r.objective = Objective::MinTime;
                    r.budgetBytes = variant == 0 ? lo - 1 : variant == 1 ? (lo + hi) / 2 : hi;
                }
                PlanBuilder one("one", r), batch("batch", r);
                QVERIFY(one.init().isOk() && batch.init().isOk());
                for (size_t k = 0; k < sets.size(); ++k)
                    QVERIFY(one.offerCheckpoints(sets[k], objectives[k]).hasValue());
                auto done = batch.offerCheckpointSets(sets, objectives);
                QVERIFY2(done.hasValue() && *done,
                         done ? "stopped" : done.status().toString().c_str());
                auto a = one.finish(SolveStatus::Feasible);
                auto b = batch.finish(SolveStatus::Feasible);
                const QByteArray what = QByteArray("seed ") + QByteArray::number(seed) +
                                        " variant " + QByteArray::number(variant);
                QVERIFY2(a.hasValue() && b.hasValue(), what.constData());
                QCOMPARE(b->status, a->status);
                QCOMPARE(b->checkpoints, a->checkpoints);
                QCOMPARE(b->timeline.peakBytes, a->timeline.peakBytes);
                QCOMPARE(b->timeline.computeSeconds, a->timeline.computeSeconds);
                QCOMPARE(b->timeline.recomputeSeconds, a->timeline.recomputeSeconds);
                QCOMPARE(b->solverObjective, a->solverObjective);
                infeasible += a->status == SolveStatus::Infeasible ? 1 : 0;
                ++compared;
            }
        }
        qInfo("%d plans compared, %d infeasible", compared, infeasible);
        QCOMPARE(infeasible, 60); // the tight budget is below every set, the others are not
    }
};

QTEST_GUILESS_MAIN(TstPlanBuilder)
#include "tst_plan_builder.moc"
