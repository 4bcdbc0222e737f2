// Every CPU backward kernel against central finite differences of its forward kernel, on tiny
// shapes: L = sum_k sum(Y_k * R_k) in double, dL/dX_i ~ (L(X + h e_i) - L(X - h e_i)) / 2h.
// Expected: |analytic - numeric| <= 2e-3 * max(1, |analytic|) for every element of every
// differentiable input (h = 1e-2; inputs kept away from kinks of Relu, Clip, MaxPool ties).
#include "kernel_gradient_cases.h"

#include "core/exec/cpu/kernel.h"
#include "core/exec/host_tensor.h"
#include "core/ir/graph.h"
#include "core/ir/tensor_data.h"

#include <QTest>

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

using namespace remat;
using namespace remat::core;
using exec::HostTensor;
using exec::cpu::KView;
using tests::constant;
using tests::In;
using tests::ints;
using tests::OpCase;
using tests::Out;
using tests::randn;

namespace {

KView view(HostTensor &t) { return KView{t.data.data(), t.dtype, t.shape}; }

Status runForward(const ir::Node &node, std::vector<std::optional<In>> &inputs,
                  std::vector<HostTensor> &outs, const std::vector<std::optional<Out>> &specs)
{
    const exec::cpu::KernelFn *fn = exec::cpu::findCpuKernel(node.opType);
    if (!fn)
        return makeError(StatusCode::NotFound, "no kernel " + node.opType);
    exec::cpu::KernelContext c;
    c.node = &node;
    c.opName = node.opType;
    c.seed = 42;
    std::vector<KView> iv(inputs.size()), ov(specs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
        c.inShapes.push_back(inputs[k] ? inputs[k]->t.shape : std::vector<int64_t>{});
        if (inputs[k]) {
            iv[k] = view(inputs[k]->t);
            c.in.push_back(&iv[k]);
        } else {
            c.in.push_back(nullptr);
        }
    }
    outs.assign(specs.size(), HostTensor{});
    for (size_t k = 0; k < specs.size(); ++k) {
        c.outShapes.push_back(specs[k] ? specs[k]->shape : std::vector<int64_t>{});
        if (specs[k]) {
            outs[k] = HostTensor::zeros(specs[k]->dtype, specs[k]->shape);
            ov[k] = view(outs[k]);
            c.out.push_back(&ov[k]);
        } else {
            c.out.push_back(nullptr);
        }
    }
    return (*fn)(c);
}

double lossOf(const std::vector<HostTensor> &outs, const std::vector<HostTensor> &r,
              const std::vector<bool> &weighted)
{
    double l = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
        if (!weighted[k])
            continue;
        const auto y = outs[k].floats();
        const auto w = r[k].floats();
        for (size_t i = 0; i < y.size(); ++i)
            l += double(y[i]) * double(w[i]);
    }
    return l;
}

/// Runs the case; returns the worst |analytic - numeric| / max(1, |analytic|).
double checkGradient(OpCase cs, int *checked)
{
    ir::Node node;
    node.opType = cs.type;
    node.name = cs.type;
    node.attributes = cs.attrs;
    std::vector<HostTensor> outs;
    Status s = runForward(node, cs.inputs, outs, cs.outputs);
    if (!s.isOk()) {
        qWarning("%s forward: %s", cs.type.c_str(), s.toString().c_str());
        return 1e9;
    }
    // Only float outputs take part in the loss; saved statistics (BN 3/4, LN 1/2) have no R.
    std::vector<HostTensor> r(outs.size());
    std::vector<bool> weighted(outs.size(), false);
    for (size_t k = 0; k < outs.size(); ++k) {
        if (!cs.outputs[k] || cs.outputs[k]->dtype != ir::DataType::Float)
            continue;
        if ((cs.type == "BatchNormalization" && k >= 1) ||
            (cs.type == "LayerNormalization" && k >= 1) ||
            (cs.type == "GroupNormalization" && k >= 1) ||
            (cs.type == "InstanceNormalization" && k >= 1) || (cs.type == "LSTM" && k >= 3) ||
            ((cs.type == "GRU" || cs.type == "RNN") && k >= 2) ||
            ((cs.type == "SoftmaxCrossEntropyLoss" || cs.type == "WeightNorm" ||
              cs.type == "ScaledDotProductAttention") &&
             k >= 1))
            continue; // saved statistics / recurrent saved state: read by the backward, no R
        weighted[k] = true;
        r[k] = randn(cs.outputs[k]->shape, 1000 + k).t;
    }
    // Backward: all forward inputs and outputs, dY = R, dX for differentiable inputs.
    const exec::cpu::KernelFn *bwd = exec::cpu::findCpuKernel(cs.type + "Grad");
    if (!bwd) {
        qWarning("no backward kernel for %s", cs.type.c_str());
        return 1e9;
    }
    exec::cpu::KernelContext c;
    c.node = &node;
    c.opName = cs.type + "Grad";
    c.seed = 42;
    std::vector<KView> iv(cs.inputs.size()), ov(outs.size()), gv(outs.size()), dv(cs.inputs.size());
    std::vector<HostTensor> grads(cs.inputs.size());
    for (size_t k = 0; k < cs.inputs.size(); ++k) {
        c.inShapes.push_back(cs.inputs[k] ? cs.inputs[k]->t.shape : std::vector<int64_t>{});
        c.in.push_back(nullptr);
        c.dIn.push_back(nullptr);
        if (!cs.inputs[k])
            continue;
        iv[k] = view(cs.inputs[k]->t);
        c.in[k] = &iv[k];
        if (cs.inputs[k]->differentiable) {
            grads[k] = HostTensor::zeros(ir::DataType::Float, cs.inputs[k]->t.shape);
            dv[k] = view(grads[k]);
            c.dIn[k] = &dv[k];
        }
    }
    for (size_t k = 0; k < outs.size(); ++k) {
        c.outShapes.push_back(cs.outputs[k] ? cs.outputs[k]->shape : std::vector<int64_t>{});
        c.out.push_back(nullptr);
        c.dOut.push_back(nullptr);
        if (!cs.outputs[k])
            continue;
        ov[k] = view(outs[k]);
        c.out[k] = &ov[k];
        if (weighted[k]) {
            gv[k] = view(r[k]);
            c.dOut[k] = &gv[k];
        }
    }
    s = (*bwd)(c);
    if (!s.isOk()) {
        qWarning("%s backward: %s", cs.type.c_str(), s.toString().c_str());
        return 1e9;
    }
    double worst = 0;
    const float h = 1e-2f;
    for (size_t k = 0; k < cs.inputs.size(); ++k) {
        if (!cs.inputs[k] || !cs.inputs[k]->differentiable)
            continue;
        auto x = cs.inputs[k]->t.floats();
        for (size_t i = 0; i < x.size(); ++i) {
            const float saved = x[i];
            std::vector<HostTensor> o;
            x[i] = saved + h;
            (void)runForward(node, cs.inputs, o, cs.outputs);
            const double lp = lossOf(o, r, weighted);
            x[i] = saved - h;
            (void)runForward(node, cs.inputs, o, cs.outputs);
            const double lm = lossOf(o, r, weighted);
            x[i] = saved;
            const double numeric = (lp - lm) / (2.0 * double(h));
            const double analytic = grads[k].floats()[i];
            const double err = std::abs(numeric - analytic) / std::max(1.0, std::abs(analytic));
            if (err > worst) {
                worst = err;
                if (err > 2e-3)
                    qWarning("%s input %zu element %zu: analytic %.6f numeric %.6f",
                             cs.type.c_str(), k, i, analytic, numeric);
            }
            ++*checked;
        }
    }
    return worst;
}

} // namespace

class TestKernelGradients : public QObject
{
    Q_OBJECT

private slots:
    void backwardMatchesFiniteDifferences_data();
    void backwardMatchesFiniteDifferences();
    void dropoutReplaysItsMask();
    void generatorsWriteWhatTheySay();
    void oneHotWritesTheCodes();
    void everyGradientRuleHasKernels();
};

Q_DECLARE_METATYPE(std::shared_ptr<OpCase>)

void TestKernelGradients::backwardMatchesFiniteDifferences_data()
{
    QTest::addColumn<std::shared_ptr<OpCase>>("op");
    for (auto &[name, c] : tests::kernelGradientCases())
        QTest::newRow(name.c_str()) << std::make_shared<OpCase>(std::move(c));
}

void TestKernelGradients::backwardMatchesFiniteDifferences()
{
    QFETCH(std::shared_ptr<OpCase>, op);
    int checked = 0;
    const double worst = checkGradient(*op, &checked);
    std::printf("%-34s %4d elements, worst %.2e\n", QTest::currentDataTag(), checked, worst);
    QVERIFY(checked > 0);
    QVERIFY2(worst <= 2e-3, qPrintable(QString("worst error %1").arg(worst)));
}

void TestKernelGradients::dropoutReplaysItsMask()
{
    // Same seed: identical mask and output (a recompute); another seed: another mask.
    ir::Node node;
    node.opType = "Dropout";
    HostTensor train = HostTensor::zeros(ir::DataType::Bool, {});
    train.data[0] = std::byte{1};
    std::vector<std::optional<In>> in = {randn({64}, 1), constant({}, {0.5f}), In{train, false}};
    std::vector<std::optional<Out>> outs = {Out{{64}}, Out{{64}, ir::DataType::Bool}};
    std::vector<HostTensor> a, b;
    QVERIFY(runForward(node, in, a, outs).isOk());
    QVERIFY(runForward(node, in, b, outs).isOk());
    QCOMPARE(a[0].data, b[0].data);
    QCOMPARE(a[1].data, b[1].data);
    int kept = 0;
    for (std::byte v : a[1].data)
        kept += v != std::byte{0};
    // expected: about half of 64 kept, scaled by 2
    QVERIFY(kept > 16 && kept < 48);
}

void TestKernelGradients::generatorsWriteWhatTheySay()
{
    // EyeLike k = 1 on [3, 4]: ones at (0,1), (1,2), (2,3); RandomNormalLike replays its values
    // (the same per-op seed: a recompute) and draws a standard normal.
    ir::Node eye;
    eye.opType = "EyeLike";
    eye.attributes = {{"k", int64_t(1)}};
    std::vector<std::optional<In>> in = {randn({3, 4}, 1)};
    std::vector<HostTensor> y;
    QVERIFY(runForward(eye, in, y, {Out{{3, 4}}}).isOk());
    const std::vector<float> expected = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    QCOMPARE(std::vector<float>(y[0].floats().begin(), y[0].floats().end()), expected);
    ir::Node noise;
    noise.opType = "RandomNormalLike";
    std::vector<std::optional<In>> like = {randn({4096}, 2)};
    std::vector<HostTensor> a, b;
    QVERIFY(runForward(noise, like, a, {Out{{4096}}}).isOk());
    QVERIFY(runForward(noise, like, b, {Out{{4096}}}).isOk());
    QCOMPARE(a[0].data, b[0].data);
    double sum = 0, sq = 0;
    for (float v : a[0].floats()) {
        sum += v;
        sq += double(v) * v;
    }
    QVERIFY(std::abs(sum / 4096) < 0.1);
    QVERIFY(std::abs(sq / 4096 - 1.0) < 0.1);
}

void TestKernelGradients::oneHotWritesTheCodes()
{
    // F.one_hot(argmax) of a capsule network: indices [2, 3] = {0, 2, -1 | 3, 9, 1}, depth 4,
    // values [0, 1], axis -1: each row of 4 holds a 1 where the index points (-1 is the last
    // class, 9 is out of range and gives no 1); axis 0 puts the classes first.
    ir::Node n;
    n.opType = "OneHot";
    std::vector<std::optional<In>> in = {ints({2, 3}, {0, 2, -1, 3, 9, 1}), ints({}, {4}),
                                         ints({2}, {0, 1})};
    std::vector<HostTensor> y;
    QVERIFY(runForward(n, in, y, {Out{{2, 3, 4}, ir::DataType::Int64}}).isOk());
    const std::vector<double> last = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                      0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0};
    QCOMPARE(y[0].toDoubles(), last);
    n.attributes = {{"axis", int64_t(0)}};
    in[2] = constant({2}, {-1.f, 5.f});
    QVERIFY(runForward(n, in, y, {Out{{4, 2, 3}}}).isOk());
    const std::vector<double> first = {5,  -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 5,
                                       -1, 5,  -1, -1, -1, -1, -1, -1, 5,  5,  -1, -1};
    QCOMPARE(y[0].toDoubles(), first);
}

void TestKernelGradients::everyGradientRuleHasKernels()
{
    // The op types of the issue list: each has a forward kernel, and a backward one where a
    // gradient flows through it.
    const std::vector<std::string> forwardOnly = {
        "Constant", "ConstantOfShape", "Equal", "Mod", "Not", "Range", "Shape", "ArgMax", "ArgMin"};
    const std::vector<std::string> differentiable = {
        "Add",         "AveragePool", "BatchNormalization",
        "Cast",        "Clip",        "Concat",
        "Conv",        "Div",         "Dropout",
        "Erf",         "Expand",      "Flatten",
        "Gather",      "Gemm",        "GlobalAveragePool",
        "HardSigmoid", "HardSwish",   "LayerNormalization",
        "MatMul",      "MaxPool",     "Mul",
        "Pad",         "Pow",         "ReduceMean",
        "Relu",        "Reshape",     "Resize",
        "ScatterND",   "Sigmoid",     "Slice",
        "Softmax",     "Sub",         "Transpose",
        "Trilu",       "Unsqueeze",   "Where",
        "Split",       "Squeeze",     "Sqrt",
        "Tanh",        "Gelu",        "Identity",
        "Sum",         "ReduceSum",   "LRN",
        "Einsum",      "TopK"};
    for (const std::string &t : forwardOnly)
        QVERIFY2(exec::cpu::findCpuKernel(t), t.c_str());
    for (const std::string &t : differentiable) {
        QVERIFY2(exec::cpu::findCpuKernel(t), t.c_str());
        QVERIFY2(exec::cpu::findCpuKernel(t + "Grad"), (t + "Grad").c_str());
    }
    QVERIFY(exec::cpu::findCpuKernel("Loss"));
    QVERIFY(exec::cpu::findCpuKernel("Accumulate"));
}

QTEST_GUILESS_MAIN(TestKernelGradients)
#include "tst_kernel_gradients.moc"
