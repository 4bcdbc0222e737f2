// Checkpoint-set lowering on hand-checked graphs and on random DAGs: every lowered set
// validates, keeping everything reproduces store-all's peak, keeping nothing recomputes.
#include "random_graphs.h"

#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/lowering.h"

#include <QtTest>

using namespace remat::core;
using namespace remat::core::solvers;

class TstLowering : public QObject
{
    Q_OBJECT
private slots:
    void keepAllEqualsStoreAll()
    {
        // Expected: the lowering of "keep every tensor backward reads" has exactly store-all's
        // peak and no recompute, on 100 random DAGs.
        for (uint32_t seed = 1; seed <= 100; ++seed) {
            auto rg = remat::tests::randomTrainingGraph(seed, {.forwardOps = 10, .dag = true});
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            auto s = lowerCheckpointSet(*facts, facts->backwardNeeded(), {});
            QVERIFY2(s.hasValue(), s.status().toString().c_str());
            auto t = sim::simulate(*s, rg.graph, rg.costs);
            QVERIFY2(t.hasValue(), t.status().toString().c_str());
            auto ref = sim::simulate(schedule::storeAllSchedule(rg.graph), rg.graph, rg.costs);
            QVERIFY(ref.hasValue());
            QCOMPARE(t->peakBytes, ref->peakBytes);
            QCOMPARE(t->recomputeSteps, size_t(0));
        }
    }
    void everySetValidates()
    {
        // Expected: any subset of candidates lowers to a valid schedule; dropping everything
        // recomputes at least one op when backward needs an activation.
        for (uint32_t seed = 1; seed <= 60; ++seed) {
            auto rg =
                remat::tests::randomTrainingGraph(seed, {.forwardOps = 7, .dag = seed % 2 == 0});
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            const auto &cand = facts->candidates();
            std::mt19937 rng(seed);
            for (int trial = 0; trial < 30; ++trial) {
                std::vector<TensorId> keep;
                for (TensorId t : cand)
                    if (rng() % 2)
                        keep.push_back(t);
                auto s = lowerCheckpointSet(*facts, keep, {});
                QVERIFY2(s.hasValue(), s.status().toString().c_str());
                auto t = sim::simulate(*s, rg.graph, rg.costs);
                QVERIFY2(
                    t.hasValue(),
                    (t.status().toString() + "\n" + schedule::printSchedule(*s, rg.graph)).c_str());
            }
            auto none = lowerCheckpointSet(*facts, {}, {});
            QVERIFY(none.hasValue());
            auto t = sim::simulate(*none, rg.graph, rg.costs);
            QVERIFY(t.hasValue());
            if (!facts->backwardNeeded().empty())
                QVERIFY(t->recomputeSteps > 0);
        }
    }
    void sequenceSchedule()
    {
        // Expected: store-all's op order through scheduleFromSequence gives store-all's peak.
        for (uint32_t seed = 1; seed <= 50; ++seed) {
            auto rg = remat::tests::randomTrainingGraph(seed, {.forwardOps = 9, .dag = true});
            std::vector<OpId> seq;
            for (const auto &op : rg.graph.ops())
                seq.push_back(op.id);
            auto s = scheduleFromSequence(rg.graph, seq);
            QVERIFY2(s.hasValue(), s.status().toString().c_str());
            auto t = sim::simulate(*s, rg.graph, rg.costs);
            QVERIFY2(t.hasValue(), t.status().toString().c_str());
            auto ref = sim::simulate(schedule::storeAllSchedule(rg.graph), rg.graph, rg.costs);
            QCOMPARE(t->peakBytes, ref->peakBytes);
        }
    }
};

QTEST_GUILESS_MAIN(TstLowering)
#include "tst_lowering.moc"
