// The optimizer step executed on the CPU backend, on the corpus MLP with its feed: for SGD,
// SGD-momentum, Adam and AdamW the allocator's peak equals the simulator's (the update's
// transients included) and the updated weights equal torch.optim's step on the same gradients
// within 1e-6 (tests/data/exec/optimizer_torch.npz, made by make_optimizer_references.py from the
// gradients this backend computes; the test first checks they are still these gradients). A run
// repeats the same step (the weights and state are restored), and what is simulated only
// (sharding, micro-batches, adafactor) is refused before anything runs, saying so. Half precision
// runs: tst_half_precision.
#include "exec_test_util.h"

#include "core/training/apply_training_options.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;
using namespace remat::core;

namespace {

Expected<exec::NpzArchive> torchReference()
{
    return exec::readNpz(toStd(sourceDir()) + "/tests/data/exec/optimizer_torch.npz");
}

double maxAbsDiff(const exec::HostTensor &a, const exec::HostTensor &b)
{
    const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
    if (x.size() != y.size())
        return 1e300;
    double d = 0;
    for (size_t i = 0; i < x.size(); ++i)
        d = std::max(d, std::abs(x[i] - y[i]));
    return d;
}

} // namespace

class TestOptimizerStep : public QObject
{
    Q_OBJECT

private slots:
    void updatesEqualTorchOptim_data();
    void updatesEqualTorchOptim();
    void simulatedOnlyOptionsAreRefused_data();
    void simulatedOnlyOptionsAreRefused();
};

void TestOptimizerStep::updatesEqualTorchOptim_data()
{
    QTest::addColumn<QString>("optimizer");
    // expected: measured peak == predicted peak; every weight within 1e-6 of torch.optim's
    QTest::newRow("sgd") << "sgd";
    QTest::newRow("sgd-momentum") << "sgd-momentum";
    QTest::newRow("adam") << "adam";
    QTest::newRow("adamw") << "adamw";
}

void TestOptimizerStep::updatesEqualTorchOptim()
{
    QFETCH(QString, optimizer);
    auto m = loadCorpusModel("mlp");
    REMAT_REQUIRE_CORPUS_MODEL(m);
    auto ref = torchReference();
    QVERIFY2(ref, ref.status().toString().c_str());
    training::TrainingOptions t;
    t.optimizer = *training::parseOptimizer(optimizer.toStdString());
    auto tg = training::applyTrainingOptions((*m)->training, t);
    QVERIFY2(tg, tg.status().toString().c_str());
    const cost::Costs costs = cost::rooflineCosts(*tg);
    const schedule::Schedule s = schedule::storeAllSchedule(*tg);
    auto predicted = sim::simulate(s, *tg, costs);
    QVERIFY2(predicted, predicted.status().toString().c_str());

    auto backend = exec::makeCpuBackend();
    exec::Executor ex(*backend, *tg, (*m)->graph);
    exec::ExecInputs in;
    in.feed = (*m)->feed;
    QVERIFY2(ex.prepare(in).isOk(), "prepare");
    exec::ExecOptions opt;
    opt.downloadParameters = true;
    for (int run = 0; run < 2; ++run) { // the second run repeats the same step
        auto r = ex.run(s, opt);
        QVERIFY2(r, r.status().toString().c_str());
        QCOMPARE(r->measuredPeakBytes, predicted->peakBytes);
        // The measured chart stacks as the predicted one: step by step, category by category,
        // optimizer state apart from the weights (its closed form: 0, 1 or 2 floats a weight).
        QCOMPARE(r->timeline.points.size(), predicted->points.size());
        for (size_t i = 0; i < r->timeline.points.size(); ++i)
            QVERIFY2(r->timeline.points[i].byCategory == predicted->points[i].byCategory,
                     qPrintable(QStringLiteral("categories differ at step %1").arg(i)));
        const int64_t stateFloats = optimizer == "sgd" ? 0 : optimizer == "sgd-momentum" ? 1 : 2;
        const int64_t params = training::modelStateBytes(*tg).parameterCount;
        const auto at = [&](schedule::MemCategory c) {
            return r->timeline.peakByCategory[size_t(c)];
        };
        QCOMPARE(at(schedule::MemCategory::OptimizerState), stateFloats * 4 * params);
        QCOMPARE(at(schedule::MemCategory::MasterWeights), int64_t(0));
        QCOMPARE(r->timeline.optimizerStateBytes, stateFloats * 4 * params);
        int compared = 0;
        double worst = 0;
        for (const auto &[name, expected] : ref->entries()) {
            const std::string prefix = optimizer.toStdString() + "/";
            if (name.rfind(prefix, 0) != 0)
                continue;
            const std::string param = name.substr(prefix.size());
            // The same gradients as the reference was made from.
            const exec::HostTensor *g = r->gradients.find("grad:" + param);
            const exec::HostTensor *gRef = ref->find("grad:" + param);
            QVERIFY(g && gRef);
            QVERIFY2(maxAbsDiff(*g, *gRef) <= 1e-6, ("gradient of " + param).c_str());
            const exec::HostTensor *updated = r->parameters.find(param);
            QVERIFY2(updated, ("no updated " + param).c_str());
            const double d = maxAbsDiff(*updated, expected);
            worst = std::max(worst, d);
            QVERIFY2(d <= 1e-6, (param + " differs from torch.optim").c_str());
            // The update changed the weight (an update that does nothing cannot pass).
            const exec::HostTensor *before = ex.preloadedData(*tg->findTensor(param));
            QVERIFY(before && maxAbsDiff(*updated, *before) > 1e-5);
            ++compared;
        }
        QCOMPARE(compared, 6);
        if (run == 0)
            std::printf("%s: 6 parameters, max |ours - torch.optim| = %.3g, peak %lld B\n",
                        optimizer.toStdString().c_str(), worst, (long long)r->measuredPeakBytes);
    }
}

void TestOptimizerStep::simulatedOnlyOptionsAreRefused_data()
{
    QTest::addColumn<QString>("precision");
    QTest::addColumn<QString>("shard");
    QTest::addColumn<int>("microBatches");
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<QString>("says");
    QTest::newRow("zero2") << "fp32"
                           << "zero2" << 1 << "adam"
                           << "--shard none";
    QTest::newRow("micro-batches") << "fp32"
                                   << "none" << 2 << "sgd"
                                   << "--micro-batches 1";
    QTest::newRow("adafactor") << "fp32"
                               << "none" << 1 << "adafactor"
                               << "simulated only";
}

void TestOptimizerStep::simulatedOnlyOptionsAreRefused()
{
    QFETCH(QString, precision);
    QFETCH(QString, shard);
    QFETCH(int, microBatches);
    QFETCH(QString, optimizer);
    QFETCH(QString, says);
    auto m = loadCorpusModel("mlp");
    REMAT_REQUIRE_CORPUS_MODEL(m);
    training::TrainingOptions t;
    t.optimizer = *training::parseOptimizer(optimizer.toStdString());
    t.precision = *training::parsePrecision(precision.toStdString());
    t.shard = *training::parseSharding(shard.toStdString());
    t.ranks = 2;
    t.microBatches = microBatches;
    auto tg = training::applyTrainingOptions((*m)->training, t);
    QVERIFY2(tg, tg.status().toString().c_str());
    auto backend = exec::makeCpuBackend();
    exec::Executor ex(*backend, *tg, (*m)->graph);
    const Status st = ex.prepare({});
    QVERIFY(!st.isOk());
    QCOMPARE(st.code(), StatusCode::Unsupported);
    QVERIFY2(st.message().find(says.toStdString()) != std::string::npos, st.message().c_str());
}

QTEST_GUILESS_MAIN(TestOptimizerStep)
#include "tst_optimizer_step.moc"
