// The CPU backend against PyTorch: for every corpus model with weights, a store-all training step
// gives PyTorch's float64 loss and gradients within 1e-4 relative, both norm-wise (||ours - ref|| /
// ||ref||, the corpus manifest's figure) and element-wise (max |ours - ref| / max |ref|), and the
// allocator's peak equals the simulator's prediction exactly.
//
// One tensor cannot meet 1e-4 in any float32 run: mobilenet_v2's features.0.1.weight (the first BN
// scale). Its gradient sum(dY * x-hat) is 0.12 against sum |dY * x-hat| = 4e3 per channel (a
// condition number of 4e4; it is nearly zero for the same reason 17 BN biases are exactly zero: the
// depthwise conv and BN after it make the loss almost invariant to that channel's scale). Rounding
// dY alone to float32, in an otherwise exact float64 PyTorch run, moves it by 8.4e-5; rounding every
// node output and input gradient to float32 (float64 arithmetic otherwise, our kernels' contract)
// moves it by 1.8e-4 (max) / 1.4e-4 (norm). PyTorch's own float32 run is 1.7e-3 / 1.2e-3 off. That
// tensor is held to a quarter of PyTorch's float32 error and 3e-4.
#include "exec_test_util.h"

#include <QTest>

#include <cstdio>
#include <cstdlib>

using namespace remat;
using namespace remat::tests;

class TestCorpusGradients : public QObject
{
    Q_OBJECT

private slots:
    void storeAllMatchesPyTorch_data();
    void storeAllMatchesPyTorch();
};

void TestCorpusGradients::storeAllMatchesPyTorch_data()
{
    QTest::addColumn<QString>("model");
    // expected: every gradient within 1e-4 relative of PyTorch's float64 reference
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("tiny_vit") << "tiny_vit";
    QTest::newRow("mobilenet_v2_b2_64") << "mobilenet_v2_b2_64";
}

void TestCorpusGradients::storeAllMatchesPyTorch()
{
    QFETCH(QString, model);
    auto m = loadCorpusModel(toStd(model));
    REMAT_REQUIRE_CORPUS_MODEL(m);
    const core::schedule::Schedule s = core::schedule::storeAllSchedule((*m)->training);
    auto run = runOnCpu(**m, s);
    QVERIFY2(run, run.status().toString().c_str());
    const core::exec::ExecResult &r = run->result;

    // Loss: L = sum(output * R), PyTorch float64.
    const core::exec::HostTensor *refLoss = (*m)->reference.find("loss");
    QVERIFY(refLoss);
    const double lossRef = refLoss->toDoubles()[0];
    const double lossErr = std::abs(r.loss - lossRef) / std::max(1e-12, std::abs(lossRef));
    std::printf("%s: loss %.8f (PyTorch f64 %.8f, rel err %.2e)\n", toStd(model).c_str(), r.loss,
                lossRef, lossErr);
    QVERIFY2(lossErr < 1e-4, "loss differs from PyTorch");

    // Gradients: every reference entry must be produced and agree.
    double largestRef = 0;
    for (const auto &[name, ref] : (*m)->reference.entries())
        if (name.rfind("grad", 0) == 0)
            for (double v : ref.toDoubles())
                largestRef = std::max(largestRef, std::abs(v));
    double worst = 0, worstNorm = 0;
    std::string worstName, worstNormName;
    int compared = 0, zeroGrad = 0, overTolerance = 0;
    for (const auto &[name, ref] : (*m)->reference.entries()) {
        if (name.rfind("grad", 0) != 0)
            continue;
        const core::exec::HostTensor *ours = r.gradients.find(name);
        QVERIFY2(ours, ("missing gradient " + name).c_str());
        QCOMPARE(ours->numElements(), ref.numElements());
        double diff = 0, refMax = 0;
        const double rel = relativeError(*ours, ref, &diff, &refMax);
        const double relNorm = normRelativeError(*ours, ref);
        // A gradient that is exactly zero in exact arithmetic (BN bias feeding a BN through a
        // linear conv) is float noise in every float32 run: absolute tolerance, relative to the
        // model's largest gradient (README: corpus_manifest tier_b params_with_zero_true_grad).
        if (refMax <= 1e-6 * largestRef) {
            ++zeroGrad;
            QVERIFY2(diff <= 1e-5 * largestRef,
                     ("zero-gradient tensor too large: " + name).c_str());
            continue;
        }
        ++compared;
        if (rel >= 1e-4 || relNorm >= 1e-4) {
            // The ill-conditioned first BN scale (see the top of this file): no float32 run gets
            // it within 1e-4; it must stay well inside PyTorch's own float32 error.
            const core::exec::HostTensor *torch32 = (*m)->feed.find(name);
            QVERIFY2(torch32, ("gradient differs from PyTorch: " + name).c_str());
            const double torchRel = relativeError(*torch32, ref),
                         torchNorm = normRelativeError(*torch32, ref);
            std::printf("  %s: rel err %.2e max, %.2e norm (PyTorch float32: %.2e, %.2e)\n",
                        name.c_str(), rel, relNorm, torchRel, torchNorm);
            QVERIFY2(rel <= 0.25 * torchRel && relNorm <= 0.25 * torchNorm && rel < 3e-4 &&
                         relNorm < 3e-4,
                     ("gradient differs from PyTorch: " + name).c_str());
            ++overTolerance;
        }
        if (rel > worst) {
            worst = rel;
            worstName = name;
        }
        if (relNorm > worstNorm) {
            worstNorm = relNorm;
            worstNormName = name;
        }
    }
    std::printf("%s: %d gradients, max rel err %.3e (%s), max norm-wise rel err %.3e (%s); %d "
                "exact-zero gradients "
                "within abs tol\n",
                toStd(model).c_str(), compared, worst, worstName.c_str(), worstNorm,
                worstNormName.c_str(), zeroGrad);
    QVERIFY(compared > 0);
    // expected: at most one ill-conditioned tensor above 1e-4 (mobilenet's features.0.1.weight)
    QVERIFY(overTolerance <= 1);

    // Memory: the allocator's peak is the simulator's, to the byte.
    std::printf("%s: measured peak %lld B, predicted %lld B, step %.3f s\n", toStd(model).c_str(),
                (long long)r.measuredPeakBytes, (long long)run->predictedPeak, r.stepSeconds);
    QCOMPARE(r.measuredPeakBytes, run->predictedPeak);
    QCOMPARE(r.timeline.peakBytes, run->predictedPeak);
    // expected: every step's bytes (and categories) equal the simulator's; one event per step
    const std::string mismatch = firstStepMismatch(r.timeline, run->predicted);
    QVERIFY2(mismatch.empty(), mismatch.c_str());
    QCOMPARE(run->observedSteps, s.size());
}

QTEST_GUILESS_MAIN(TestCorpusGradients)
#include "tst_corpus_gradients.moc"
