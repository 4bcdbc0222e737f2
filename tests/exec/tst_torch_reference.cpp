// The CPU kernels of ops PyTorch runs through other code paths, against PyTorch 1.13 itself: small
// models exported with torch.onnx beside their float32 / float64 runs (tests/data/exec,
// make_torch_references.py). A store-all training step gives PyTorch's loss and every gradient
// (input and parameters) within 1e-4 relative of the float64 run, the allocator's peak equals the
// simulator's, and the bytes the training graph keeps for backward equal what PyTorch's autograd
// saved on the CPU (saved_tensors_hooks, by storage): the gradient rules save what PyTorch saves.
//   recurrent_torch: bidirectional LSTM -> batch-first GRU (linear_before_reset) -> RNN, T 5, B 2
//   conv_transpose_torch: ConvTranspose 2-D (groups, stride, output_padding), 1-D (dilation), 3-D
//   reductions_torch: pixel_shuffle (DepthToSpace CRD), torch.norm p=2 / p=1 (ReduceL2 / ReduceL1)
//   norms_resize_torch: Conv / MaxPool 3-D, GroupNorm (exported as InstanceNormalization, fused
//     back), InstanceNorm, bilinear interpolate (half_pixel and align_corners), repeat (Tile),
//     cumsum, Conv / AveragePool 1-D
//   resize_cubic_torch: bicubic interpolate x2 (half_pixel) and to a size (align_corners)
//   resize_antialias_torch: antialiased bicubic and bilinear (Resize-18 antialias, exclude_outside,
//     a = -0.5 for bicubic), each shrinking one dim and growing the other
#include "exec_test_util.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;

class TestTorchReference : public QObject
{
    Q_OBJECT

private slots:
    void storeAllMatchesPyTorch_data();
    void storeAllMatchesPyTorch();
};

void TestTorchReference::storeAllMatchesPyTorch_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("recurrent_torch") << "recurrent_torch";
    QTest::newRow("conv_transpose_torch") << "conv_transpose_torch";
    QTest::newRow("reductions_torch") << "reductions_torch";
    QTest::newRow("norms_resize_torch") << "norms_resize_torch";
    QTest::newRow("resize_cubic_torch") << "resize_cubic_torch";
    QTest::newRow("resize_antialias_torch") << "resize_antialias_torch";
}

void TestTorchReference::storeAllMatchesPyTorch()
{
    QFETCH(QString, model);
    const std::string dir = toStd(sourceDir()) + "/tests/data/exec/", name = toStd(model);
    CorpusModel m;
    m.name = name;
    auto graph = core::onnx::importModel(dir + name + ".onnx");
    QVERIFY2(graph, graph.status().toString().c_str());
    m.graph = std::move(*graph);
    core::training::BuildOptions opt;
    opt.inputGradients = true;
    auto tg = core::training::buildTrainingGraph(m.graph, opt);
    QVERIFY2(tg, tg.status().toString().c_str());
    m.training = std::move(*tg);
    auto feed = core::exec::readNpz(dir + name + ".npz");
    QVERIFY2(feed, feed.status().toString().c_str());
    m.feed = std::move(*feed);
    auto ref = core::exec::readNpz(dir + name + ".f64.npz");
    QVERIFY2(ref, ref.status().toString().c_str());
    m.reference = std::move(*ref);

    auto run = runOnCpu(m, core::schedule::storeAllSchedule(m.training));
    QVERIFY2(run, run.status().toString().c_str());
    const core::exec::ExecResult &r = run->result;
    const double lossRef = m.reference.find("loss")->toDoubles()[0];
    const double lossErr = std::abs(r.loss - lossRef) / std::max(1e-12, std::abs(lossRef));
    std::printf("%s: loss %.8f (PyTorch f64 %.8f, rel err %.2e)\n", name.c_str(), r.loss, lossRef,
                lossErr);
    QVERIFY2(lossErr < 1e-4, "loss differs from PyTorch");

    int compared = 0;
    for (const auto &[key, want] : m.reference.entries()) {
        if (key.rfind("grad", 0) != 0)
            continue;
        const core::exec::HostTensor *ours = r.gradients.find(key);
        QVERIFY2(ours, ("missing gradient " + key).c_str());
        QCOMPARE(ours->numElements(), want.numElements());
        const double rel = relativeError(*ours, want), relNorm = normRelativeError(*ours, want);
        std::printf("  %-40s rel err %.2e max, %.2e norm\n", key.c_str(), rel, relNorm);
        // expected: float32 kernels with double sums, against float64: ~1e-6
        QVERIFY2(rel < 1e-4 && relNorm < 1e-4, ("gradient differs from PyTorch: " + key).c_str());
        ++compared;
    }
    QVERIFY(compared >= 3);

    QCOMPARE(r.measuredPeakBytes, run->predictedPeak);
    const core::training::TrainingSummary s = core::training::summarize(m.training);
    const int64_t torchSaved =
        m.reference.find("saved_activation_bytes")->toDoubles()[0] > 0
            ? int64_t(m.reference.find("saved_activation_bytes")->toDoubles()[0])
            : 0;
    std::printf("%s: saved for backward %lld B, PyTorch (CPU autograd) %lld B\n", name.c_str(),
                (long long)s.savedForBackwardBytes, (long long)torchSaved);
    // expected: equal to the byte (the rules save what PyTorch's autograd saves, nothing more)
    QCOMPARE(s.savedForBackwardBytes, torchSaved);
}

QTEST_GUILESS_MAIN(TestTorchReference)
#include "tst_torch_reference.moc"
