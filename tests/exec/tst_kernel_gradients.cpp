// Every CPU backward kernel against central finite differences of its forward kernel, on tiny
// shapes: L = sum_k sum(Y_k * R_k) in double, dL/dX_i ~ (L(X + h e_i) - L(X - h e_i)) / 2h.
// Expected: |analytic - numeric| <= 2e-3 * max(1, |analytic|) for every element of every
// differentiable input (h = 1e-2; inputs kept away from kinks of Relu, Clip, MaxPool ties).
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

namespace {

struct In
{
    HostTensor t;
    bool differentiable = true;
};

In randn(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0, double offset = 0.0, double minAbs = 0.0)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> d(0, 1);
    HostTensor t = HostTensor::zeros(ir::DataType::Float, shape);
    for (float &v : t.floats()) {
        double x = d(rng) * scale;
        if (std::abs(x) < minAbs)
            x = x < 0 ? x - minAbs : x + minAbs;
        v = float(x + offset);
    }
    return {t, true};
}

In ints(std::vector<int64_t> shape, std::vector<int64_t> values)
{
    return {HostTensor::fromInt64s(std::move(shape), values), false};
}

In constant(std::vector<int64_t> shape, std::vector<float> values)
{
    return {HostTensor::fromFloats(std::move(shape), values), false};
}

In bools(std::vector<int64_t> shape, std::vector<bool> values)
{
    HostTensor t = HostTensor::zeros(ir::DataType::Bool, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i)
        t.data[i] = std::byte(values[i] ? 1 : 0);
    return {t, false};
}

struct Out
{
    std::vector<int64_t> shape;
    ir::DataType dtype = ir::DataType::Float;
};

ir::Attribute attr(std::string name, ir::Attribute::Payload p) { return {std::move(name), std::move(p)}; }

struct OpCase
{
    std::string type;
    std::vector<ir::Attribute> attrs;
    std::vector<std::optional<In>> inputs; // nullopt: omitted optional input
    std::vector<std::optional<Out>> outputs;
    bool training = false;                 // recompute / seed semantics do not matter here
};

KView view(HostTensor &t) { return KView{t.data.data(), t.dtype, t.shape}; }

Status runForward(const ir::Node &node, std::vector<std::optional<In>> &inputs, std::vector<HostTensor> &outs,
                  const std::vector<std::optional<Out>> &specs)
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

double lossOf(const std::vector<HostTensor> &outs, const std::vector<HostTensor> &r, const std::vector<bool> &weighted)
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
        if ((cs.type == "BatchNormalization" && k >= 1) || (cs.type == "LayerNormalization" && k >= 1))
            continue;
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
                    qWarning("%s input %zu element %zu: analytic %.6f numeric %.6f", cs.type.c_str(), k, i, analytic, numeric);
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
    void everyGradientRuleHasKernels();
};

Q_DECLARE_METATYPE(std::shared_ptr<OpCase>)

void TestKernelGradients::backwardMatchesFiniteDifferences_data()
{
    QTest::addColumn<std::shared_ptr<OpCase>>("op");
    using V = std::vector<int64_t>;
    auto add = [](const char *name, OpCase c) { QTest::newRow(name) << std::make_shared<OpCase>(std::move(c)); };
    const Out f23{V{2, 3}};
    // element-wise, broadcasting
    add("Add broadcast", {"Add", {}, {randn({2, 3}, 1), randn({3}, 2)}, {f23}});
    add("Sub broadcast", {"Sub", {}, {randn({2, 1}, 1), randn({2, 3}, 2)}, {f23}});
    add("Mul broadcast", {"Mul", {}, {randn({2, 1, 3}, 1), randn({4, 3}, 2)}, {Out{V{2, 4, 3}}}});
    add("Div", {"Div", {}, {randn({2, 3}, 1), randn({3}, 2, 0.3, 0, 1.0)}, {f23}});
    add("Pow", {"Pow", {}, {randn({2, 3}, 1, 0.3, 1.5), randn({1}, 2, 0.2, 2.0)}, {f23}});
    add("Where", {"Where", {}, {bools({2, 3}, {true, false, true, true, false, false}), randn({2, 3}, 1), randn({3}, 2)}, {f23}});
    add("Sum", {"Sum", {}, {randn({2, 3}, 1), randn({3}, 2), randn({2, 1}, 3)}, {f23}});
    add("Max broadcast", {"Max", {}, {randn({2, 3}, 1), randn({3}, 2)}, {f23}});
    add("Min broadcast", {"Min", {}, {randn({2, 1}, 1), randn({2, 3}, 2)}, {f23}});
    add("Relu", {"Relu", {}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Sigmoid", {"Sigmoid", {}, {randn({2, 3}, 1)}, {f23}});
    add("Tanh", {"Tanh", {}, {randn({2, 3}, 1)}, {f23}});
    add("Erf", {"Erf", {}, {randn({2, 3}, 1)}, {f23}});
    add("Sqrt", {"Sqrt", {}, {randn({2, 3}, 1, 0.2, 1.0)}, {f23}});
    add("Exp", {"Exp", {}, {randn({2, 3}, 1)}, {f23}});
    add("Log", {"Log", {}, {randn({2, 3}, 1, 0.2, 1.0)}, {f23}});
    add("Neg", {"Neg", {}, {randn({2, 3}, 1)}, {f23}});
    add("LeakyRelu", {"LeakyRelu", {attr("alpha", 0.2)}, {randn({2, 3}, 1, 1.0, 0, 0.05)}, {f23}});
    add("Gelu", {"Gelu", {}, {randn({2, 3}, 1)}, {f23}});
    add("Gelu tanh", {"Gelu", {attr("approximate", std::string("tanh"))}, {randn({2, 3}, 1)}, {f23}});
    add("HardSigmoid", {"HardSigmoid", {}, {randn({2, 3}, 1, 3.0, 0, 0.05)}, {f23}});
    add("HardSwish", {"HardSwish", {}, {randn({2, 3}, 1, 3.0, 0, 0.05)}, {f23}});
    add("Clip ReLU6", {"Clip", {}, {randn({2, 4}, 1, 4.0, 3.0, 0.1), constant({}, {0.0f}), constant({}, {6.0f})}, {Out{V{2, 4}}}});
    add("Identity", {"Identity", {}, {randn({2, 3}, 1)}, {f23}});
    add("Cast", {"Cast", {attr("to", int64_t(1))}, {randn({2, 3}, 1)}, {f23}});
    add("Dropout", {"Dropout", {}, {randn({4, 5}, 1), constant({}, {0.4f}), {In{[] { HostTensor t = HostTensor::zeros(ir::DataType::Bool, {}); t.data[0] = std::byte{1}; return t; }(), false}}},
                    {Out{V{4, 5}}, Out{V{4, 5}, ir::DataType::Bool}}});
    // layout
    add("Reshape", {"Reshape", {}, {randn({2, 3}, 1), ints({2}, {3, 2})}, {Out{V{3, 2}}}});
    add("Flatten", {"Flatten", {}, {randn({2, 3, 2}, 1)}, {Out{V{2, 6}}}});
    add("Squeeze", {"Squeeze", {}, {randn({2, 1, 3}, 1), ints({1}, {1})}, {f23}});
    add("Unsqueeze", {"Unsqueeze", {}, {randn({2, 3}, 1), ints({1}, {0})}, {Out{V{1, 2, 3}}}});
    add("Transpose", {"Transpose", {attr("perm", V{2, 0, 1})}, {randn({2, 3, 4}, 1)}, {Out{V{4, 2, 3}}}});
    add("Concat", {"Concat", {attr("axis", int64_t(1))}, {randn({2, 1}, 1), randn({2, 3}, 2)}, {Out{V{2, 4}}}});
    add("Split", {"Split", {attr("axis", int64_t(1))}, {randn({2, 5}, 1), ints({2}, {2, 3})}, {Out{V{2, 2}}, Out{V{2, 3}}}});
    add("Slice steps", {"Slice", {}, {randn({3, 6}, 1), ints({2}, {0, 5}), ints({2}, {3, 0}), ints({2}, {0, 1}), ints({2}, {2, -2})}, {Out{V{2, 3}}}});
    add("Gather", {"Gather", {attr("axis", int64_t(1))}, {randn({2, 4}, 1), ints({3}, {3, 0, -1})}, {f23}});
    add("Expand", {"Expand", {}, {randn({3, 1}, 1), ints({3}, {2, 3, 4})}, {Out{V{2, 3, 4}}}});
    add("Pad constant", {"Pad", {}, {randn({2, 3}, 1), ints({4}, {1, 0, 0, 2})}, {Out{V{3, 5}}}});
    add("Pad reflect", {"Pad", {attr("mode", std::string("reflect"))}, {randn({2, 3}, 1), ints({4}, {0, 1, 0, 2})}, {Out{V{2, 6}}}});
    add("Trilu", {"Trilu", {attr("upper", int64_t(0))}, {randn({3, 3}, 1)}, {Out{V{3, 3}}}});
    add("ScatterND", {"ScatterND", {}, {randn({4, 2}, 1), ints({2, 1}, {2, 0}), randn({2, 2}, 2)}, {Out{V{4, 2}}}});
    add("Resize nearest", {"Resize", {attr("mode", std::string("nearest")), attr("coordinate_transformation_mode", std::string("asymmetric")), attr("nearest_mode", std::string("floor"))},
                           {randn({1, 1, 2, 3}, 1), std::nullopt, constant({4}, {1, 1, 2, 2})}, {Out{V{1, 1, 4, 6}}}});
    // matrix products and normalisation
    add("Gemm transB + C", {"Gemm", {attr("transB", int64_t(1)), attr("alpha", 0.7), attr("beta", 1.3)},
                            {randn({2, 3}, 1), randn({4, 3}, 2), randn({4}, 3)}, {Out{V{2, 4}}}});
    add("Gemm transA", {"Gemm", {attr("transA", int64_t(1))}, {randn({3, 2}, 1), randn({3, 4}, 2)}, {Out{V{2, 4}}}});
    add("MatMul batched broadcast", {"MatMul", {}, {randn({2, 1, 3, 4}, 1), randn({3, 4, 2}, 2)}, {Out{V{2, 3, 3, 2}}}});
    add("MatMul 1-D", {"MatMul", {}, {randn({4}, 1), randn({2, 4, 3}, 2)}, {Out{V{2, 3}}}});
    add("BatchNormalization train", {"BatchNormalization", {attr("training_mode", int64_t(1)), attr("epsilon", 1e-5)},
                                     {randn({2, 3, 2, 2}, 1), randn({3}, 2, 0.5, 1.0), randn({3}, 3), constant({3}, {0, 0, 0}), constant({3}, {1, 1, 1})},
                                     {Out{V{2, 3, 2, 2}}, std::nullopt, std::nullopt, Out{V{3}}, Out{V{3}}}});
    add("LayerNormalization", {"LayerNormalization", {attr("axis", int64_t(-1))},
                               {randn({2, 3, 4}, 1), randn({4}, 2, 0.5, 1.0), randn({4}, 3)},
                               {Out{V{2, 3, 4}}, Out{V{2, 3, 1}}, Out{V{2, 3, 1}}}});
    add("Softmax", {"Softmax", {attr("axis", int64_t(1))}, {randn({2, 4, 2}, 1)}, {Out{V{2, 4, 2}}}});
    add("LogSoftmax", {"LogSoftmax", {attr("axis", int64_t(1))}, {randn({2, 4, 2}, 1)}, {Out{V{2, 4, 2}}}});
    add("ReduceMean", {"ReduceMean", {attr("axes", V{1}), attr("keepdims", int64_t(0))}, {randn({2, 3, 2}, 1)}, {Out{V{2, 2}}}});
    add("ReduceSum", {"ReduceSum", {}, {randn({2, 3, 2}, 1), ints({2}, {0, 2})}, {Out{V{1, 3, 1}}}});
    add("LRN", {"LRN", {attr("size", int64_t(3)), attr("alpha", 0.5), attr("beta", 0.75), attr("bias", 1.0)},
                {randn({2, 5, 2, 1}, 1)}, {Out{V{2, 5, 2, 1}}}});
    add("GlobalAveragePool", {"GlobalAveragePool", {}, {randn({2, 2, 3, 3}, 1)}, {Out{V{2, 2, 1, 1}}}});
    // windows
    add("Conv groups/stride/pad/dilation", {"Conv", {attr("group", int64_t(2)), attr("strides", V{2, 1}), attr("pads", V{1, 1, 1, 0}), attr("dilations", V{1, 2})},
                                            {randn({2, 4, 5, 5}, 1), randn({2, 2, 3, 2}, 2), randn({2}, 3)}, {Out{V{2, 2, 3, 4}}}});
    add("Conv pointwise", {"Conv", {}, {randn({2, 3, 2, 2}, 1), randn({4, 3, 1, 1}, 2)}, {Out{V{2, 4, 2, 2}}}});
    add("Conv depthwise SAME", {"Conv", {attr("group", int64_t(3)), attr("auto_pad", std::string("SAME_UPPER"))},
                                {randn({1, 3, 4, 4}, 1), randn({3, 1, 3, 3}, 2)}, {Out{V{1, 3, 4, 4}}}});
    add("Conv 1-D", {"Conv", {attr("strides", V{2})}, {randn({2, 2, 7}, 1), randn({3, 2, 3}, 2), randn({3}, 3)}, {Out{V{2, 3, 3}}}});
    add("MaxPool", {"MaxPool", {attr("kernel_shape", V{3, 3}), attr("strides", V{2, 2}), attr("pads", V{1, 1, 1, 1})},
                    {randn({1, 2, 5, 5}, 1)}, {Out{V{1, 2, 3, 3}}, Out{V{1, 2, 3, 3}, ir::DataType::Int64}}});
    add("AveragePool", {"AveragePool", {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2}), attr("pads", V{0, 0, 1, 1})},
                        {randn({1, 2, 3, 3}, 1)}, {Out{V{1, 2, 2, 2}}}});
    add("AveragePool count pad", {"AveragePool", {attr("kernel_shape", V{3, 3}), attr("pads", V{1, 1, 1, 1}), attr("count_include_pad", int64_t(1))},
                                  {randn({1, 1, 3, 3}, 1)}, {Out{V{1, 1, 3, 3}}}});
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

void TestKernelGradients::everyGradientRuleHasKernels()
{
    // The op types of the issue list: each has a forward kernel, and a backward one where a
    // gradient flows through it.
    const std::vector<std::string> forwardOnly = {"Constant", "ConstantOfShape", "Equal", "Mod", "Not", "Range", "Shape"};
    const std::vector<std::string> differentiable = {
        "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Conv", "Div", "Dropout", "Erf", "Expand",
        "Flatten", "Gather", "Gemm", "GlobalAveragePool", "HardSigmoid", "HardSwish", "LayerNormalization", "MatMul",
        "MaxPool", "Mul", "Pad", "Pow", "ReduceMean", "Relu", "Reshape", "Resize", "ScatterND", "Sigmoid", "Slice",
        "Softmax", "Sub", "Transpose", "Trilu", "Unsqueeze", "Where", "Split", "Squeeze", "Sqrt", "Tanh", "Gelu",
        "Identity", "Sum", "ReduceSum", "LRN"};
    for (const std::string &t : forwardOnly)
        QVERIFY2(exec::cpu::findCpuKernel(t), t.c_str());
    for (const std::string &t : differentiable) {
        QVERIFY2(exec::cpu::findCpuKernel(t), t.c_str());
        QVERIFY2(exec::cpu::findCpuKernel(t + "Grad"), (t + "Grad").c_str());
    }
    QVERIFY(exec::cpu::findCpuKernel("Loss"));
    QVERIFY(exec::cpu::findCpuKernel("Accumulate"));
    QVERIFY(!exec::cpu::findCpuKernel("Einsum"));
}

QTEST_GUILESS_MAIN(TestKernelGradients)
#include "tst_kernel_gradients.moc"
