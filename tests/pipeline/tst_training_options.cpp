// Training options through the pipeline, on the corpus MLP (fc 32-64-64-10 with biases: 6,922
// parameters, every size a multiple of 2, so every ZeRO share below is exact):
// - model-state bytes equal the closed forms per parameter P: Adam fp32 16 (weights 4, gradients
//   4, exp_avg + exp_avg_sq 8); bf16-master Adam 18 (weights 2, master 4, gradients 4, state 8);
//   SGD 8, SGD-momentum 12, pure bf16 Adam 8; ZeRO-1/2/3 over 4 ranks divide the state (and
//   master), then the gradients, then the weights by 4;
// - default options leave the graph and every figure as built;
// - the store-all timeline and every solver's plan hold the optimizer state and end with the
//   update ops, whose transients are in the peak (the offload solver's streamed weights are
//   prefetched for their update);
// - micro-batches keep the gradients resident from the start.
#include "core/pipeline/compare.h"
#include "core/pipeline/problem.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"
#include "core/training/apply_training_options.h"

#include "common/test_support.h"

#include <QFileInfo>
#include <QTest>

using namespace remat;
using namespace remat::core;
using training::Optimizer;
using training::Precision;
using training::Sharding;

namespace {

std::string mlpPath() { return tests::toStd(tests::sharedPath("corpus/with_weights/mlp.onnx")); }

std::shared_ptr<const pipeline::Problem> load(const training::TrainingOptions &t, int64_t batch = 4)
{
    pipeline::LoadOptions o;
    o.import.batch = batch;
    o.training = t;
    auto p = pipeline::loadProblem(mlpPath(), o);
    if (!p || !(*p)->isValid())
        return nullptr;
    return *p;
}

constexpr int64_t kParams = 64 * 32 + 64 + 64 * 64 + 64 + 10 * 64 + 10; // 6,922

} // namespace

class TestTrainingOptions : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        if (!QFileInfo::exists(QString::fromStdString(mlpPath())))
            QSKIP("corpus not found");
    }
    void modelStatesEqualClosedForms_data();
    void modelStatesEqualClosedForms();
    void defaultsLeaveTheGraphAsBuilt();
    void optimizerStepIsInTheTimeline();
    void everySolverPlansWithTheOptimizerStep();
    void microBatchesKeepGradientsResident();
    void modelStatesStackInTheirOwnCategories();
    void comparisonRowsLineUpTwoSteps();
    void badOptionsAreRefused();
};

void TestTrainingOptions::modelStatesEqualClosedForms_data()
{
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<QString>("precision");
    QTest::addColumn<QString>("shard");
    QTest::addColumn<int>("ranks");
    // bytes per parameter, x4 so ZeRO's quarters stay whole: weights, gradients, master, state
    QTest::addColumn<int>("weights4");
    QTest::addColumn<int>("grads4");
    QTest::addColumn<int>("master4");
    QTest::addColumn<int>("state4");
    QTest::addColumn<int>("total4");
    QTest::newRow("adam fp32: 16") << "adam"
                                   << "fp32"
                                   << "none" << 1 << 16 << 16 << 0 << 32 << 64;
    QTest::newRow("adamw fp32: 16") << "adamw"
                                    << "fp32"
                                    << "none" << 1 << 16 << 16 << 0 << 32 << 64;
    QTest::newRow("bf16-master adam: 18") << "adam"
                                          << "bf16-master"
                                          << "none" << 1 << 8 << 16 << 16 << 32 << 72;
    QTest::newRow("16-master adam: 18") << "adam"
                                        << "16-master"
                                        << "none" << 1 << 8 << 16 << 16 << 32 << 72;
    QTest::newRow("bf16-true adam: 8") << "adam"
                                       << "bf16-true"
                                       << "none" << 1 << 8 << 8 << 0 << 16 << 32;
    // autocast leaves the model states as float32 has them (its weight copies are activations)
    QTest::newRow("bf16-mixed (autocast) adam: 16") << "adam"
                                                    << "bf16-mixed"
                                                    << "none" << 1 << 16 << 16 << 0 << 32 << 64;
    QTest::newRow("16-mixed (autocast) adam: 16") << "adam"
                                                  << "16-mixed"
                                                  << "none" << 1 << 16 << 16 << 0 << 32 << 64;
    QTest::newRow("sgd fp32: 8") << "sgd"
                                 << "fp32"
                                 << "none" << 1 << 16 << 16 << 0 << 0 << 32;
    QTest::newRow("sgd-momentum fp32: 12") << "sgd-momentum"
                                           << "fp32"
                                           << "none" << 1 << 16 << 16 << 0 << 16 << 48;
    // ZeRO over 4 ranks, bf16-master Adam: 2 + 4 + 12/4 = 9; + grads/4: 2 + 1 + 3 = 6; + weights:
    // 0.5 + 1 + 3 = 4.5 (DeepSpeed's 2+2+12/N family, with float32 gradients)
    QTest::newRow("zero1 x4 bf16-master adam: 9") << "adam"
                                                  << "bf16-master"
                                                  << "zero1" << 4 << 8 << 16 << 4 << 8 << 36;
    QTest::newRow("zero2 x4 bf16-master adam: 6") << "adam"
                                                  << "bf16-master"
                                                  << "zero2" << 4 << 8 << 4 << 4 << 8 << 24;
    QTest::newRow("zero3 x4 bf16-master adam: 4.5") << "adam"
                                                    << "bf16-master"
                                                    << "zero3" << 4 << 2 << 4 << 4 << 8 << 18;
    QTest::newRow("fsdp x4 fp32 adam: 4") << "adam"
                                          << "fp32"
                                          << "fsdp" << 4 << 4 << 4 << 0 << 8 << 16;
    QTest::newRow("zero1 x1: nothing sharded") << "adam"
                                               << "fp32"
                                               << "zero1" << 1 << 16 << 16 << 0 << 32 << 64;
}

void TestTrainingOptions::modelStatesEqualClosedForms()
{
    QFETCH(QString, optimizer);
    QFETCH(QString, precision);
    QFETCH(QString, shard);
    QFETCH(int, ranks);
    QFETCH(int, weights4);
    QFETCH(int, grads4);
    QFETCH(int, master4);
    QFETCH(int, state4);
    QFETCH(int, total4);
    training::TrainingOptions t;
    t.optimizer = *training::parseOptimizer(optimizer.toStdString());
    t.precision = *training::parsePrecision(precision.toStdString());
    t.shard = *training::parseSharding(shard.toStdString());
    t.ranks = ranks;
    auto p = load(t);
    QVERIFY(p);
    const training::ModelStateBytes m = training::modelStateBytes(*p->training);
    QCOMPARE(m.parameterCount, kParams);
    QCOMPARE(m.parameterBytes * 4, weights4 * kParams);
    QCOMPARE(m.paramGradBytes * 4, grads4 * kParams);
    QCOMPARE(m.masterWeightBytes * 4, master4 * kParams);
    QCOMPARE(m.optimizerStateBytes * 4, state4 * kParams);
    QCOMPARE(m.total() * 4, total4 * kParams);
    // The store-all timeline holds them: the resident optimizer state and master weights are
    // reported apart, and the peak is at least every model state at once.
    const sim::Timeline &tl = p->storeAll.timeline;
    QCOMPARE(tl.optimizerStateBytes, m.optimizerStateBytes);
    QCOMPARE(tl.masterWeightBytes, m.masterWeightBytes);
    QVERIFY(tl.peakBytes >= m.total());
    // One update op per parameter tensor (6), none without an optimizer.
    QCOMPARE(p->training->optimizerOpCount(), size_t(6));
}

void TestTrainingOptions::defaultsLeaveTheGraphAsBuilt()
{
    auto plain = load({});
    QVERIFY(plain);
    pipeline::LoadOptions o;
    o.import.batch = 4;
    auto again = pipeline::loadProblem(mlpPath(), o);
    QVERIFY(again);
    QCOMPARE(plain->training->opCount(), (*again)->training->opCount());
    QCOMPARE(plain->training->optimizerOpCount(), size_t(0));
    QCOMPARE(plain->storeAll.timeline.peakBytes, (*again)->storeAll.timeline.peakBytes);
    QCOMPARE(plain->storeAll.timeline.optimizerStateBytes, int64_t(0));
    QVERIFY(plain->training->info().training.isDefault());
}

void TestTrainingOptions::optimizerStepIsInTheTimeline()
{
    auto none = load({});
    training::TrainingOptions t;
    t.optimizer = Optimizer::Adam;
    auto adam = load(t);
    QVERIFY(none && adam);
    const training::TrainingGraph &g = *adam->training;
    // Store-all ends with the six updates, after the backward.
    const auto &steps = adam->storeAll.schedule.steps;
    size_t updates = 0;
    for (const schedule::Step &s : steps)
        if (s.kind == schedule::StepKind::Compute &&
            g.op(s.op()).phase == training::Phase::Optimizer)
            ++updates;
    QCOMPARE(updates, size_t(6));
    // Adam's update of fc2.weight (4,096 floats) holds two transients of its size: 32 KiB.
    const training::Op *fc2 = nullptr;
    for (const training::Op &op : g.ops())
        if (op.name == "optimizer/fc2.weight")
            fc2 = &op;
    QVERIFY(fc2);
    QCOMPARE(fc2->type, std::string("AdamUpdate"));
    QCOMPARE(fc2->workspaceBytes, int64_t(2 * 4096 * 4));
    QCOMPARE(fc2->inputs.size(), size_t(4)); // weight, gradient, exp_avg, exp_avg_sq
    // At batch 4 the MLP's activations are tiny: the peak is the fc2 update, with every model
    // state resident: 16 B per parameter plus its transients (and the buffers, input and R).
    const sim::Timeline &tl = adam->storeAll.timeline;
    QCOMPARE(g.op(steps[tl.peakStep].op()).name, std::string("optimizer/fc2.weight"));
    const int64_t fixed = none->storeAll.timeline.weightBytes - 4 * kParams; // input, R
    QCOMPARE(tl.peakBytes, fixed + 16 * kParams + 2 * 4096 * 4);
    // Activation peak excludes the update's transients.
    QCOMPARE(tl.activationPeakBytes, none->storeAll.timeline.activationPeakBytes);
}

void TestTrainingOptions::everySolverPlansWithTheOptimizerStep()
{
    training::TrainingOptions t;
    t.optimizer = Optimizer::AdamW;
    auto p = load(t, 64);
    QVERIFY(p);
    const solvers::SolverRegistry registry = solvers::makeRegistry();
    const training::TrainingGraph &g = *p->training;
    const size_t firstUpdate = g.opCount() - g.optimizerOpCount();
    for (const auto &s : registry.solvers()) {
        if (s->capabilities().speed != solvers::SpeedClass::Interactive)
            continue;
        solvers::SolveRequest r;
        r.graph = &g;
        r.costs = p->costs.get();
        r.objective = solvers::Objective::MinPeak;
        auto plan = s->solve(r);
        QVERIFY2(plan, (s->id() + ": " + plan.status().toString()).c_str());
        if (plan->status == solvers::SolveStatus::Infeasible)
            continue;
        // The schedule ends with every update, in order, before the End mark ...
        const auto &steps = plan->schedule.steps;
        QVERIFY2(steps.size() > g.optimizerOpCount() + 1, s->id().c_str());
        for (size_t k = 0; k < g.optimizerOpCount(); ++k) {
            const schedule::Step &st = steps[steps.size() - 1 - g.optimizerOpCount() + k];
            QVERIFY2(st.kind == schedule::StepKind::Compute && st.op().index() == firstUpdate + k,
                     s->id().c_str());
        }
        // ... and the plan's figures are the simulator's on the whole graph.
        auto sim = sim::simulate(plan->schedule, g, *p->costs);
        QVERIFY2(sim, sim.status().toString().c_str());
        QCOMPARE(plan->timeline.peakBytes, sim->peakBytes);
        QVERIFY(plan->timeline.peakBytes >= training::modelStateBytes(g).total());
    }
    // The offload solver streams weights to the host: each streamed weight is prefetched for its
    // update (the plan simulates, every update runs).
    {
        solvers::SolveRequest r;
        r.graph = &g;
        r.costs = p->costs.get();
        r.objective = solvers::Objective::MinPeak;
        r.settings["stream-weights"] = "always";
        auto plan = registry.find("offload")->solve(r);
        QVERIFY2(plan, plan.status().toString().c_str());
        auto sim = sim::simulate(plan->schedule, g, *p->costs);
        QVERIFY2(sim, sim.status().toString().c_str());
        size_t updates = 0, prefetchedForUpdate = 0;
        const auto &steps = plan->schedule.steps;
        for (size_t i = 0; i < steps.size(); ++i) {
            const bool update = steps[i].kind == schedule::StepKind::Compute &&
                                g.op(steps[i].op()).phase == training::Phase::Optimizer;
            updates += update;
            prefetchedForUpdate +=
                update && i > 0 && steps[i - 1].kind == schedule::StepKind::Prefetch;
        }
        QCOMPARE(updates, g.optimizerOpCount());
        QVERIFY(prefetchedForUpdate > 0); // the weights were streamed, and come back
    }
    // A budget below the model states cannot be met by any plan: min-time says infeasible.
    solvers::SolveRequest r;
    r.graph = &g;
    r.costs = p->costs.get();
    r.objective = solvers::Objective::MinTime;
    r.budgetBytes = training::modelStateBytes(g).total() - 1;
    auto plan = registry.find("chen-greedy")->solve(r);
    QVERIFY(plan);
    QVERIFY(plan->status != solvers::SolveStatus::Optimal &&
            plan->status != solvers::SolveStatus::Feasible);
}

void TestTrainingOptions::microBatchesKeepGradientsResident()
{
    training::TrainingOptions t;
    t.optimizer = Optimizer::Sgd;
    auto one = load(t);
    t.microBatches = 4;
    auto four = load(t);
    QVERIFY(one && four);
    // The gradients (4 B per parameter) are resident before the first step, as accumulators.
    QVERIFY(four->storeAll.timeline.points.size() > 0);
    const auto &first = four->storeAll.timeline.points.front();
    QCOMPARE(first.byCategory[size_t(schedule::MemCategory::WeightGrads)], 4 * kParams);
    QCOMPARE(one->storeAll.timeline.points.front()
                 .byCategory[size_t(schedule::MemCategory::WeightGrads)],
             int64_t(0));
    // The same model states at the end; the step is not cheaper.
    QCOMPARE(training::modelStateBytes(*four->training).total(),
             training::modelStateBytes(*one->training).total());
    QVERIFY(four->storeAll.timeline.peakBytes >= one->storeAll.timeline.peakBytes);
    QCOMPARE(four->training->info().training.microBatches, int64_t(4));
}

void TestTrainingOptions::modelStatesStackInTheirOwnCategories()
{
    // bf16-master Adam: weights 2 B, master weights 4 B and Adam's state 8 B a parameter, each in
    // its own chart category at every step; the weights' category keeps the rest (input, R).
    training::TrainingOptions t;
    t.optimizer = Optimizer::Adam;
    t.precision = Precision::Bf16Master;
    auto mixed = load(t);
    auto plain = load({});
    QVERIFY(mixed && plain);
    const sim::Timeline &tl = mixed->storeAll.timeline;
    const auto at = [](const schedule::CategoryBytes &b, schedule::MemCategory c) {
        return b[size_t(c)];
    };
    const int64_t others = plain->storeAll.timeline.weightBytes - 4 * kParams; // input, R
    QVERIFY(!tl.points.empty());
    for (const sim::TimelinePoint &p : tl.points) {
        QCOMPARE(at(p.byCategory, schedule::MemCategory::MasterWeights), 4 * kParams);
        QCOMPARE(at(p.byCategory, schedule::MemCategory::OptimizerState), 8 * kParams);
        QVERIFY(at(p.byCategory, schedule::MemCategory::Weights) <= others + 2 * kParams);
    }
    QCOMPARE(tl.masterWeightBytes, 4 * kParams);
    QCOMPARE(tl.optimizerStateBytes, 8 * kParams);
    QCOMPARE(tl.weightBytes, at(tl.points.front().byCategory, schedule::MemCategory::Weights) +
                                 4 * kParams + 8 * kParams);
    // Model state is not activation memory: the activation peak is the fp32 one's at half
    // precision or less, never the optimizer state's.
    QVERIFY(tl.activationPeakBytes <= plain->storeAll.timeline.activationPeakBytes);
    QVERIFY(schedule::isModelStateCategory(schedule::MemCategory::OptimizerState));
    QVERIFY(schedule::isModelStateCategory(schedule::MemCategory::MasterWeights));
    QVERIFY(!schedule::isModelStateCategory(schedule::MemCategory::StoredActivations));
    QCOMPARE(QString(schedule::memCategoryName(schedule::MemCategory::OptimizerState)),
             QString("optimizer_state"));
    // Without options neither category holds a byte.
    for (const sim::TimelinePoint &p : plain->storeAll.timeline.points) {
        QCOMPARE(at(p.byCategory, schedule::MemCategory::MasterWeights), int64_t(0));
        QCOMPARE(at(p.byCategory, schedule::MemCategory::OptimizerState), int64_t(0));
    }
}

void TestTrainingOptions::comparisonRowsLineUpTwoSteps()
{
    training::TrainingOptions adam;
    adam.optimizer = Optimizer::Adam;
    pipeline::LoadOptions o;
    o.import.batch = 4;
    auto a = pipeline::planTrainingStep(mlpPath(), o, nullptr, 0, 10);
    o.training = adam;
    auto b = pipeline::planTrainingStep(mlpPath(), o, nullptr, 0, 10);
    QVERIFY2(a && b, (a ? b : a).status().toString().c_str());
    QVERIFY(a->plan.timeline.peakBytes == load({})->storeAll.timeline.peakBytes);
    const auto rows = pipeline::differenceRows(a->plan.timeline, b->plan.timeline);
    // peak first, then the categories either step holds at its peak, in stacking order, then
    // model state, activation peak, step time and recompute.
    QCOMPARE(rows.front().what, std::string("peak"));
    QCOMPARE(rows.front().delta(), double(b->plan.timeline.peakBytes - a->plan.timeline.peakBytes));
    QCOMPARE(rows.back().what, std::string("recompute"));
    QCOMPARE(rows.back().unit, pipeline::FigureUnit::Percent);
    bool state = false, master = false;
    for (const auto &r : rows) {
        state = state || r.what == "optimizer_state at the peak";
        master = master || r.what == "master_weights at the peak";
        if (r.what.rfind("model state", 0) == 0)
            QCOMPARE(r.delta(), double(8 * kParams)); // Adam's two moments, fp32
    }
    QVERIFY(state && !master); // no mixed precision: no master weights row
    // A step against itself differs by nothing.
    for (const auto &r : pipeline::differenceRows(a->plan.timeline, a->plan.timeline))
        QCOMPARE(r.delta(), 0.0);
    // A stopped comparison says so.
    StopSource stop;
    stop.requestStop();
    auto c = pipeline::planTrainingStep(mlpPath(), o, nullptr, 0, 10, stop.token());
    QVERIFY(!c);
    QCOMPARE(c.status().code(), StatusCode::Cancelled);
}

void TestTrainingOptions::badOptionsAreRefused()
{
    QVERIFY(!training::parseOptimizer("lamb"));
    QVERIFY(training::parseOptimizer("lamb").status().message().find("adamw") != std::string::npos);
    QVERIFY(!training::parsePrecision("fp8"));
    // Lightning's names; the retired spellings name their replacements.
    QCOMPARE(*training::parsePrecision("fp32"), Precision::Fp32);
    QCOMPARE(*training::parsePrecision("32-true"), Precision::Fp32);
    QCOMPARE(*training::parsePrecision("bf16-mixed"), Precision::Bf16Mixed);
    QCOMPARE(*training::parsePrecision("16-mixed"), Precision::Fp16Mixed);
    QCOMPARE(*training::parsePrecision("bf16-true"), Precision::Bf16True);
    QCOMPARE(*training::parsePrecision("16-master"), Precision::Fp16Master);
    const std::string retired = training::parsePrecision("fp16-mixed").status().message();
    QVERIFY2(retired.find("16-master") != std::string::npos &&
                 retired.find("16-mixed") != std::string::npos,
             retired.c_str());
    const std::string ambiguous = training::parsePrecision("bf16").status().message();
    QVERIFY2(ambiguous.find("bf16-true") != std::string::npos &&
                 ambiguous.find("bf16-mixed") != std::string::npos,
             ambiguous.c_str());
    // Session files before version 3: the old meanings.
    QCOMPARE(*training::parseLegacyPrecision("bf16-mixed"), Precision::Bf16Master);
    QCOMPARE(*training::parseLegacyPrecision("fp16-mixed"), Precision::Fp16Master);
    QCOMPARE(*training::parseLegacyPrecision("bf16"), Precision::Bf16True);
    QCOMPARE(*training::parseAutocastDevice("cpu"), training::AutocastDevice::Cpu);
    QVERIFY(!training::parseAutocastDevice("tpu"));
    QCOMPARE(*training::parseSharding("fsdp"), Sharding::Zero3);
    training::TrainingOptions t;
    t.ranks = 0;
    pipeline::LoadOptions o;
    o.training = t;
    auto p = pipeline::loadProblem(mlpPath(), o);
    QVERIFY(!p);
    QVERIFY(p.status().message().find("--ranks") != std::string::npos);
}

QTEST_GUILESS_MAIN(TestTrainingOptions)
#include "tst_training_options.moc"
