// The validator on a hand-built graph: each kind of broken schedule is caught at the right step
// with the documented wording, and the simulator's inline check says exactly the same.
#include "core/schedule/schedule.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "sim/hand_graphs.h"

#include <QtTest>

using namespace remat::core;
using schedule::PhaseMark;
using schedule::Schedule;

namespace {

OpId op(int i) { return OpId(int32_t(i)); }
TensorId ten(int i) { return TensorId(int32_t(i)); }

} // namespace

class TstValidate : public QObject
{
    Q_OBJECT

private:
    training::TrainingGraph m_g = remat::tests::twoLayerGraph();

    void expectError(const Schedule &s, const std::string &message)
    {
        Status v = schedule::validate(s, m_g);
        QVERIFY(!v.isOk());
        QCOMPARE(v.code(), StatusCode::InvalidArgument);
        QCOMPARE(QString::fromStdString(v.message()), QString::fromStdString(message));
        auto t = sim::simulate(s, m_g, remat::tests::twoLayerCosts(), {.recordPoints = false});
        QVERIFY(!t.hasValue());
        QCOMPARE(QString::fromStdString(t.status().message()), QString::fromStdString(message));
    }

private slots:
    void storeAllIsTheExpectedSequence()
    {
        const Schedule s = schedule::storeAllSchedule(m_g);
        // Expected, worked out from the graph: a lives until f2/grad, b until the loss.
        const std::string expected = "    0  phase     forward-begin\n"
                                     "    1  compute   f1\n"
                                     "    2  compute   f2\n"
                                     "    3  compute   loss\n"
                                     "    4  free      b\n"
                                     "    5  free      L\n"
                                     "    6  phase     backward-begin\n"
                                     "    7  compute   f2/grad\n"
                                     "    8  free      a\n"
                                     "    9  free      gb\n"
                                     "   10  compute   f1/grad\n"
                                     "   11  free      ga\n"
                                     "   12  phase     end\n";
        QCOMPARE(QString::fromStdString(schedule::printSchedule(s, m_g)),
                 QString::fromStdString(expected));
        QVERIFY(schedule::validate(s, m_g).isOk());
    }

    void useBeforeCompute()
    {
        Schedule s;
        s.compute(op(1));
        expectError(s, "step 0 (compute f2): input 'a' is not resident (never computed)");
    }

    void useAfterFree()
    {
        Schedule s;
        s.compute(op(0));
        s.compute(op(1));
        s.free(ten(2));
        s.compute(op(2));
        s.compute(op(3));
        expectError(s, "step 4 (compute f2/grad): input 'a' is not resident (freed at step 2)");
    }

    void doubleFree()
    {
        Schedule s;
        s.compute(op(0));
        s.free(ten(2));
        s.free(ten(2));
        expectError(s, "step 2 (free a): 'a' is not resident (freed at step 1)");
    }

    void freeOfUnknown()
    {
        Schedule s;
        s.free(ten(99));
        expectError(s, "step 0 (free #99): tensor id 99 out of range (graph has 8 tensors)");
    }

    void computeOfUnknown()
    {
        Schedule s;
        s.compute(op(7));
        expectError(s, "step 0 (compute #7): op id 7 out of range (graph has 5 ops)");
    }

    void freeOfPreloaded()
    {
        Schedule s;
        s.free(ten(1));
        expectError(s, "step 0 (free w): 'w' is a preloaded parameter without a host copy: offload "
                       "it before freeing it");
    }

    void prefetchOfNonOffloaded()
    {
        Schedule s;
        s.compute(op(0));
        s.free(ten(2));
        s.prefetch(ten(2));
        expectError(s, "step 2 (prefetch a): 'a' has no host copy (never offloaded)");
    }

    void offloadedButNotPrefetched()
    {
        Schedule s;
        s.compute(op(0));
        s.offload(ten(2));
        s.free(ten(2));
        s.compute(op(1));
        expectError(s,
                    "step 3 (compute f2): input 'a' is not resident (offloaded at step 1 and freed "
                    "at step 2; prefetch it first)");
    }

    void offloadTwice()
    {
        Schedule s;
        s.compute(op(0));
        s.offload(ten(2));
        s.offload(ten(2));
        expectError(s, "step 2 (offload a): 'a' already has a host copy (offloaded at step 1)");
    }

    void requiredGradMissingAtEnd()
    {
        Schedule s = schedule::storeAllSchedule(m_g);
        // Drop "compute f1/grad" (step 10) and the free after it.
        s.steps.erase(s.steps.begin() + 10, s.steps.begin() + 12);
        expectError(s, "end of schedule: required tensor 'gw' is not resident (never computed)");
    }

    void requiredGradFreed()
    {
        Schedule s = schedule::storeAllSchedule(m_g);
        s.free(ten(7));
        expectError(s, "end of schedule: required tensor 'gw' is not resident (freed at step 13)");
    }

    void unknownPhaseMark()
    {
        Schedule s;
        s.steps.push_back({schedule::StepKind::Phase, 9});
        expectError(s, "step 0 (phase #9): unknown phase mark 9");
    }

    void recomputeAndOffloadValidate()
    {
        Schedule s;
        s.compute(op(0));
        s.compute(op(1));
        s.offload(ten(2));
        s.free(ten(2));
        s.compute(op(2));
        s.prefetch(ten(2));
        s.free(ten(2));
        s.compute(op(0)); // recompute a
        s.compute(op(3));
        s.compute(op(4));
        QVERIFY(schedule::validate(s, m_g).isOk());
    }

    void names()
    {
        QCOMPARE(QString(schedule::stepKindName(schedule::StepKind::Prefetch)),
                 QString("prefetch"));
        QCOMPARE(QString(schedule::phaseMarkName(PhaseMark::BackwardBegin)),
                 QString("backward-begin"));
        QCOMPARE(QString(schedule::memCategoryName(schedule::MemCategory::OffloadInFlight)),
                 QString("offload_in_flight"));
    }
};

QTEST_GUILESS_MAIN(TstValidate)
#include "tst_validate.moc"
