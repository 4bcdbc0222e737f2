// The optimizer step on the CUDA backend, as tests/exec/tst_optimizer_step does it on the CPU: the
// corpus MLP with its feed, one store-all step with SGD, SGD-momentum, Adam and AdamW.
// Expected: the allocator's peak equals the simulator's to the byte, and every updated weight is
// within 1e-6 of torch.optim's step (tests/data/exec/optimizer_torch.npz) and of the CPU
// backend's. Without a CUDA device every test QSKIPs.
#include "gpu_test_util.h"

#include "exec/exec_test_util.h"

#include "core/cost/roofline.h"
#include "core/training/apply_training_options.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;
using namespace remat::core;

class TestCudaOptimizer : public QObject
{
    Q_OBJECT

private slots:
    void updatesEqualTorchOptim_data();
    void updatesEqualTorchOptim();
};

void TestCudaOptimizer::updatesEqualTorchOptim_data()
{
    QTest::addColumn<QString>("optimizer");
    QTest::newRow("sgd") << "sgd";
    QTest::newRow("sgd-momentum") << "sgd-momentum";
    QTest::newRow("adam") << "adam";
    QTest::newRow("adamw") << "adamw";
}

void TestCudaOptimizer::updatesEqualTorchOptim()
{
    QFETCH(QString, optimizer);
    if (!haveCudaDevice())
        QSKIP("no CUDA device");
    auto m = loadCorpusModel("mlp");
    REMAT_REQUIRE_CORPUS_MODEL(m);
    auto ref = exec::readNpz(toStd(sourceDir()) + "/tests/data/exec/optimizer_torch.npz");
    QVERIFY2(ref, ref.status().toString().c_str());
    training::TrainingOptions t;
    t.optimizer = *training::parseOptimizer(optimizer.toStdString());
    auto tg = training::applyTrainingOptions((*m)->training, t);
    QVERIFY2(tg, tg.status().toString().c_str());
    const schedule::Schedule s = schedule::storeAllSchedule(*tg);
    auto predicted = sim::simulate(s, *tg, cost::rooflineCosts(*tg));
    QVERIFY2(predicted, predicted.status().toString().c_str());

    auto be = gpu::makeCudaBackend(0);
    QVERIFY2(be, be.status().toString().c_str());
    exec::Executor ex(**be, *tg, (*m)->graph);
    exec::ExecInputs in;
    in.feed = (*m)->feed;
    const Status prepared = ex.prepare(in);
    QVERIFY2(prepared.isOk(), prepared.toString().c_str());
    exec::ExecOptions opt;
    opt.downloadParameters = true;
    auto r = ex.run(s, opt);
    QVERIFY2(r, r.status().toString().c_str());
    QCOMPARE(r->measuredPeakBytes, predicted->peakBytes);
    double worst = 0;
    int compared = 0;
    const std::string prefix = optimizer.toStdString() + "/";
    for (const auto &[name, expected] : ref->entries()) {
        if (name.rfind(prefix, 0) != 0)
            continue;
        const exec::HostTensor *updated = r->parameters.find(name.substr(prefix.size()));
        QVERIFY(updated);
        const std::vector<double> x = updated->toDoubles(), y = expected.toDoubles();
        QCOMPARE(x.size(), y.size());
        for (size_t i = 0; i < x.size(); ++i)
            worst = std::max(worst, std::abs(x[i] - y[i]));
        ++compared;
    }
    QCOMPARE(compared, 6);
    std::printf("%s on CUDA: max |ours - torch.optim| = %.3g, peak %lld B\n",
                optimizer.toStdString().c_str(), worst, (long long)r->measuredPeakBytes);
    QVERIFY(worst <= 1e-6);
}

QTEST_GUILESS_MAIN(TestCudaOptimizer)
#include "tst_cuda_optimizer.moc"
