// Recomputation and offloading do not change the numbers: for every corpus model with weights,
// plans from four solvers (chen-sqrtn, feng-huang at minimum peak, rotor at a tight budget, offload
// streaming weights and activations at half the store-all peak) and a hand-made offload schedule give bitwise the store-all run's loss and gradients (the CPU kernels
// are deterministic and a recompute replays BN and Dropout exactly), and for every schedule the
// allocator's measured peak equals the simulator's prediction to the byte.
#include "exec_test_util.h"

#include "core/schedule/schedule.h"
#include "core/solvers/registry.h"
#include "core/util/stop_token.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;
using core::OpId;
using core::TensorId;
using core::schedule::Schedule;
using core::schedule::StepKind;

namespace {

/// Store-all, but the largest forward activation read by backward is offloaded right after its
/// compute, freed, and prefetched just before its first backward reader.
Schedule offloadOneActivation(const core::training::TrainingGraph &g)
{
    const Schedule base = core::schedule::storeAllSchedule(g);
    TensorId pick;
    int64_t best = 0;
    for (const core::training::Tensor &t : g.tensors()) {
        if (t.preloaded || t.role != core::training::TensorRole::Activation || !t.producer.valid())
            continue;
        bool backwardReader = false;
        for (OpId c : t.consumers)
            backwardReader = backwardReader || g.op(c).phase == core::training::Phase::Backward;
        if (backwardReader && t.bytes > best) {
            best = t.bytes;
            pick = t.id;
        }
    }
    if (!pick.valid())
        return base;
    const core::training::Tensor &t = g.tensor(pick);
    OpId firstBackward;
    for (OpId c : t.consumers)
        if (g.op(c).phase == core::training::Phase::Backward) {
            firstBackward = c;
            break;
        }
    // forward readers of the tensor must run before it leaves the device
    OpId lastForward = t.producer;
    for (OpId c : t.consumers)
        if (g.op(c).phase != core::training::Phase::Backward)
            lastForward = c;
    Schedule s;
    for (const auto &step : base.steps) {
        if (step.kind == StepKind::Compute && step.op() == firstBackward)
            s.prefetch(pick);
        s.steps.push_back(step);
        if (step.kind == StepKind::Compute && step.op() == lastForward) {
            s.offload(pick);
            s.free(pick);
        }
    }
    return s;
}

} // namespace

class TestPlanGradients : public QObject
{
    Q_OBJECT

private slots:
    void plansReproduceStoreAll_data();
    void plansReproduceStoreAll();
    void cancelStopsBetweenSteps();
};

void TestPlanGradients::plansReproduceStoreAll_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("tiny_vit") << "tiny_vit";
    QTest::newRow("mobilenet_v2_b2_64") << "mobilenet_v2_b2_64";
}

void TestPlanGradients::plansReproduceStoreAll()
{
    QFETCH(QString, model);
    auto m = loadCorpusModel(toStd(model));
    REMAT_REQUIRE_CORPUS_MODEL(m);
    const core::training::TrainingGraph &tg = (*m)->training;
    const core::cost::Costs costs = core::cost::rooflineCosts(tg);

    auto base = runOnCpu(**m, core::schedule::storeAllSchedule(tg));
    QVERIFY2(base, base.status().toString().c_str());
    QCOMPARE(base->result.measuredPeakBytes, base->predictedPeak);

    const core::solvers::SolverRegistry registry = core::solvers::makeRegistry();
    struct Case
    {
        std::string solver;
        core::solvers::Objective objective;
        double budgetFraction; // of the store-all peak (MinTime only; 0: see rotor)
    };
    const std::vector<Case> cases = {
        {"chen-sqrtn", core::solvers::Objective::MinPeak, 0},
        {"feng-huang", core::solvers::Objective::MinPeak, 0},
        {"rotor", core::solvers::Objective::MinTime,
         0.0}, // budget: feng-huang's peak + 10% of the gap
        // weights, the input and activations streamed over the copy lane
        {"offload", core::solvers::Objective::MinTime, 0.5},
    };
    int64_t minPeak = 0;
    int plansRun = 0;
    for (const Case &c : cases) {
        const core::solvers::Solver *solver = registry.find(c.solver);
        QVERIFY2(solver, ("solver not in the registry: " + c.solver).c_str());
        core::solvers::SolveRequest req;
        req.graph = &tg;
        req.costs = &costs;
        req.objective = c.objective;
        req.timeLimitSeconds = 20;
        if (c.objective == core::solvers::Objective::MinTime)
            req.budgetBytes = c.budgetFraction > 0
                                  ? int64_t(c.budgetFraction * double(base->predictedPeak))
                                  : minPeak + (base->predictedPeak - minPeak) / 10;
        auto plan = solver->solve(req);
        QVERIFY2(plan, (c.solver + ": " + plan.status().toString()).c_str());
        if (plan->status == core::solvers::SolveStatus::Infeasible) {
            std::printf("%s %s: infeasible at %lld B, skipped\n", toStd(model).c_str(),
                        c.solver.c_str(), (long long)req.budgetBytes);
            continue;
        }
        if (c.solver == "feng-huang")
            minPeak = plan->timeline.peakBytes;
        auto run = runOnCpu(**m, plan->schedule);
        QVERIFY2(run, (c.solver + ": " + run.status().toString()).c_str());
        ++plansRun;
        const core::exec::ExecResult &r = run->result;
        std::printf("%s %-10s: measured peak %lld B, predicted %lld B (store-all %lld B), %zu "
                    "recomputes, %.3f s\n",
                    toStd(model).c_str(), c.solver.c_str(), (long long)r.measuredPeakBytes,
                    (long long)run->predictedPeak, (long long)base->predictedPeak,
                    r.timeline.recomputeSteps, r.stepSeconds);
        // expected: measured == predicted exactly, and == the plan's own simulator figure
        QCOMPARE(r.measuredPeakBytes, run->predictedPeak);
        QCOMPARE(run->predictedPeak, plan->timeline.peakBytes);
        const std::string mismatch = firstStepMismatch(r.timeline, run->predicted);
        QVERIFY2(mismatch.empty(), (c.solver + ": " + mismatch).c_str());
        // expected: bitwise the store-all gradients and loss
        auto cmp = core::exec::compareGradients(r.gradients, base->result.gradients);
        QVERIFY2(cmp, cmp.status().toString().c_str());
        QVERIFY2(cmp->bitwiseEqual,
                 (c.solver + ": gradients differ, worst " + cmp->worstEntry).c_str());
        QCOMPARE(r.loss, base->result.loss);
    }
    QVERIFY(plansRun >= 2);

    // Offload / prefetch through the backend's copy hooks: same numbers, predicted peak.
    const Schedule off = offloadOneActivation(tg);
    QVERIFY2(core::schedule::validate(off, tg).isOk(),
             core::schedule::validate(off, tg).toString().c_str());
    auto offRun = runOnCpu(**m, off);
    QVERIFY2(offRun, offRun.status().toString().c_str());
    QCOMPARE(offRun->result.measuredPeakBytes, offRun->predictedPeak);
    const std::string offMismatch = firstStepMismatch(offRun->result.timeline, offRun->predicted);
    QVERIFY2(offMismatch.empty(), ("offload: " + offMismatch).c_str());
    QVERIFY(offRun->result.timeline.hostPeakBytes > 0);
    auto cmp = core::exec::compareGradients(offRun->result.gradients, base->result.gradients);
    QVERIFY2(cmp && cmp->bitwiseEqual, "offload changed the gradients");
}

void TestPlanGradients::cancelStopsBetweenSteps()
{
    auto m = loadCorpusModel("mlp");
    REMAT_REQUIRE_CORPUS_MODEL(m);
    auto backend = core::exec::makeCpuBackend();
    core::exec::Executor ex(*backend, (*m)->training, (*m)->graph);
    QVERIFY(ex.prepare({}).isOk());
    const int64_t preloaded = backend->memoryStats().bytesInUse;
    core::StopSource stop;
    stop.requestStop();
    core::exec::ExecOptions opt;
    opt.stop = stop.token();
    auto r = ex.run(core::schedule::storeAllSchedule((*m)->training), opt);
    // expected: Cancelled, and nothing but the preloaded tensors left allocated
    QVERIFY(!r);
    QCOMPARE(r.status().code(), core::StatusCode::Cancelled);
    QCOMPARE(backend->memoryStats().bytesInUse, preloaded);
}

QTEST_GUILESS_MAIN(TestPlanGradients)
#include "tst_plan_gradients.moc"
