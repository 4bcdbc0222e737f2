// The simulator on the hand-built two-layer graph (sim/hand_graphs.h): bytes after every step,
// the peak step, the categories and the times with copy / compute overlap, all worked out by hand.
#include "core/schedule/store_all.h"
#include "core/sim/copy_stalls.h"
#include "core/sim/simulator.h"
#include "sim/hand_graphs.h"

#include <QtTest>

using namespace remat::core;
using schedule::MemCategory;
using schedule::Schedule;

namespace {

OpId op(int i) { return OpId(int32_t(i)); }
TensorId ten(int i) { return TensorId(int32_t(i)); }
int64_t at(const schedule::CategoryBytes &c, MemCategory m) { return c[static_cast<size_t>(m)]; }

struct Recorder : schedule::ScheduleObserver
{
    int begins = 0, ends = 0, resident = 0, freed = 0;
    std::vector<schedule::StepEvent> events;
    void onStepBegin(StepIndex, const schedule::Step &) override { ++begins; }
    void onStepEnd(const schedule::StepEvent &e) override
    {
        ++ends;
        events.push_back(e);
    }
    void onTensorResident(TensorId, int64_t) override { ++resident; }
    void onTensorFreed(TensorId) override { ++freed; }
};

} // namespace

class TstSimulator : public QObject
{
    Q_OBJECT

private:
    training::TrainingGraph m_g = remat::tests::twoLayerGraph();
    cost::Costs m_c = remat::tests::twoLayerCosts();

private slots:
    void storeAll()
    {
        const Schedule s = schedule::storeAllSchedule(m_g);
        Recorder rec;
        auto t = sim::simulate(s, m_g, m_c, {.observer = &rec});
        QVERIFY2(t.hasValue(), t.status().message().c_str());
        // Steps: FB, f1, f2, loss, free b, free L, BB, f2/grad, free a, free gb, f1/grad, free ga, End.
        const std::vector<int64_t> after = {110, 310, 610, 914, 614, 610, 610,
                                            810, 610, 310, 320, 120, 120};
        const std::vector<int64_t> during = {110, 350, 610, 914, 614, 610, 610,
                                             860, 610, 310, 320, 120, 120};
        QCOMPARE(t->points.size(), after.size());
        for (size_t i = 0; i < after.size(); ++i) {
            QCOMPARE(t->points[i].bytesInUse, after[i]);
            QCOMPARE(t->points[i].peakDuringStep, during[i]);
        }
        QCOMPARE(t->peakBytes, int64_t(914));
        QCOMPARE(t->peakStep, size_t(3));
        QCOMPARE(at(t->peakByCategory, MemCategory::Weights), int64_t(110));
        QCOMPARE(at(t->peakByCategory, MemCategory::StoredActivations), int64_t(500));
        QCOMPARE(at(t->peakByCategory, MemCategory::ActivationGrads), int64_t(304));
        QCOMPARE(t->activationPeakBytes, int64_t(804));
        QCOMPARE(t->weightBytes, int64_t(110));
        QCOMPARE(t->weightGradBytes, int64_t(10));
        QCOMPARE(at(t->points[7].byCategory, MemCategory::Workspace), int64_t(50));
        QCOMPARE(at(t->points[10].byCategory, MemCategory::WeightGrads), int64_t(10));
        QCOMPARE(t->computeSeconds, 10.5);
        QCOMPARE(t->oneComputeSeconds, 10.5);
        QCOMPARE(t->recomputeSeconds, 0.0);
        QCOMPARE(t->totalSeconds, 10.5);
        QCOMPARE(t->computeSteps, size_t(5));
        QCOMPARE(t->points[7].endSeconds, 7.5);
        // Observer: every step begins and ends; 2 preloaded + 6 computed tensors appear; 5 freed.
        QCOMPARE(rec.begins, 13);
        QCOMPARE(rec.ends, 13);
        QCOMPARE(rec.resident, 8);
        QCOMPARE(rec.freed, 5);
        QCOMPARE(rec.events[7].startSeconds, 3.5);
        QCOMPARE(rec.events[7].peakDuringStep, int64_t(860));

        // The summary without points is the same.
        auto fast = sim::simulate(s, m_g, m_c, {.recordPoints = false});
        QVERIFY(fast.hasValue());
        QVERIFY(fast->points.empty());
        QCOMPARE(fast->peakBytes, t->peakBytes);
        QCOMPARE(fast->activationPeakBytes, t->activationPeakBytes);
    }

    void recompute()
    {
        Schedule s;
        s.compute(op(0)); // 0: 310 (350 during)
        s.compute(op(1)); // 1: 610
        s.free(ten(2));   // 2: 410
        s.compute(op(2)); // 3: 714
        s.free(ten(3));   // 4: 414
        s.free(ten(4));   // 5: 410
        s.compute(op(0)); // 6: recompute a: 610 (650 during), 200 B recomputed
        s.compute(op(3)); // 7: 810 (860 during)
        s.free(ten(2));   // 8: 610
        s.free(ten(5));   // 9: 310
        s.compute(op(4)); // 10: 320
        s.free(ten(6));   // 11: 120
        auto t = sim::simulate(s, m_g, m_c);
        QVERIFY2(t.hasValue(), t.status().message().c_str());
        QCOMPARE(t->peakBytes, int64_t(860));
        QCOMPARE(t->peakStep, size_t(7));
        QCOMPARE(at(t->peakByCategory, MemCategory::RecomputedActivations), int64_t(200));
        QCOMPARE(at(t->peakByCategory, MemCategory::StoredActivations), int64_t(0));
        QCOMPARE(at(t->peakByCategory, MemCategory::ActivationGrads), int64_t(500));
        QCOMPARE(at(t->peakByCategory, MemCategory::Workspace), int64_t(50));
        QCOMPARE(t->points[6].peakDuringStep, int64_t(650));
        QCOMPARE(t->recomputeSeconds, 1.0);
        QCOMPARE(t->recomputeSteps, size_t(1));
        QCOMPARE(t->totalSeconds, 11.5);
        QVERIFY(qAbs(t->tdiPercent() - 100.0 / 10.5) < 1e-9);
    }

    void offloadOverlapsCompute()
    {
        Schedule s;
        s.compute(op(0));   // 0: [0,1]  310
        s.compute(op(1));   // 1: [1,3]  610
        s.offload(ten(2));  // 2: copy lane [3,5] (200 B at 100 B/s)
        s.compute(op(2));   // 3: [3,3.5] overlaps the copy; 914
        s.free(ten(2));     // 4: waits for the copy: compute lane at 5; 714
        s.free(ten(3));     // 5: 414
        s.free(ten(4));     // 6: 410
        s.prefetch(ten(2)); // 7: copy lane [5, 5+2/3]; 610, 200 B in flight
        s.compute(op(3));   // 8: waits for a: [5.667, 9.667]; 810 (860 during)
        s.free(ten(2));     // 9
        s.free(ten(5));     // 10
        s.compute(op(4));   // 11: [9.667, 12.667]
        s.free(ten(6));     // 12
        Recorder rec;
        auto t = sim::simulate(s, m_g, m_c, {.observer = &rec});
        QVERIFY2(t.hasValue(), t.status().message().c_str());
        QCOMPARE(rec.events[2].startSeconds, 3.0);
        QCOMPARE(rec.events[2].endSeconds, 5.0);
        QCOMPARE(rec.events[3].endSeconds, 3.5);
        QCOMPARE(t->points[3].bytesInUse, int64_t(914));
        QCOMPARE(rec.events[4].startSeconds, 5.0);
        QCOMPARE(t->points[7].bytesInUse, int64_t(610));
        QCOMPARE(at(t->points[7].byCategory, MemCategory::OffloadInFlight), int64_t(200));
        QCOMPARE(at(t->points[8].byCategory, MemCategory::OffloadInFlight), int64_t(0));
        QCOMPARE(at(t->points[8].byCategory, MemCategory::StoredActivations), int64_t(200));
        const double prefetchEnd = 5.0 + 200.0 / 300.0;
        QVERIFY(qAbs(rec.events[7].endSeconds - prefetchEnd) < 1e-12);
        QVERIFY(qAbs(rec.events[8].startSeconds - prefetchEnd) < 1e-12);
        QVERIFY(qAbs(t->totalSeconds - (prefetchEnd + 7.0)) < 1e-12);
        QVERIFY(qAbs(t->copySeconds - (2.0 + 200.0 / 300.0)) < 1e-12);
        QCOMPARE(t->hostPeakBytes, int64_t(200));
        QCOMPARE(t->peakBytes, int64_t(914));
        QCOMPARE(t->computeSeconds, 10.5);
        // The compute lane's waits for the copy lane, per step (the memory chart marks them):
        // the Free at 4 waits 3.5 -> 5 for the offload, op 3 at 8 waits 5 -> 5.667 for the
        // prefetch; no other step waits.
        auto stalls = sim::copyStalls(s, m_g, m_c);
        QVERIFY2(stalls.hasValue(), stalls.status().message().c_str());
        QCOMPARE(stalls->perStep.size(), s.steps.size());
        QCOMPARE(stalls->perStep[4], 1.5);
        QVERIFY(qAbs(stalls->perStep[8] - 200.0 / 300.0) < 1e-12);
        for (size_t i = 0; i < stalls->perStep.size(); ++i)
            if (i != 4 && i != 8)
                QCOMPARE(stalls->perStep[i], 0.0);
        QCOMPARE(stalls->steps, size_t(2));
        QVERIFY(qAbs(stalls->totalSeconds - (1.5 + 200.0 / 300.0)) < 1e-12);
        // The stalls are the step's lost time: the makespan is the compute plus them.
        QVERIFY(qAbs(t->totalSeconds - (t->computeSeconds + stalls->totalSeconds)) < 1e-12);
        auto none = sim::copyStalls(schedule::storeAllSchedule(m_g), m_g, m_c);
        QVERIFY(none.hasValue());
        QCOMPARE(none->steps, size_t(0));
        QCOMPARE(none->totalSeconds, 0.0);
    }

    void costsMustCoverEveryOp()
    {
        cost::Costs c = m_c;
        c.opSeconds.pop_back();
        auto t = sim::simulate(schedule::storeAllSchedule(m_g), m_g, c);
        QVERIFY(!t.hasValue());
    }

    void validationOffStillMeasures()
    {
        auto t = sim::simulate(schedule::storeAllSchedule(m_g), m_g, m_c,
                               {.recordPoints = false, .validate = false});
        QVERIFY(t.hasValue());
        QCOMPARE(t->peakBytes, int64_t(914));
    }
};

QTEST_GUILESS_MAIN(TstSimulator)
#include "tst_simulator.moc"
