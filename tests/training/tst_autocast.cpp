// The autocast pass (core/training/autocast.h) on tiny graphs, each with what torch.autocast does
// to it written beside the expected bytes (torch 1.13's autocast_mode.cpp; the CPU rows also
// measured with torch 1.13 on the CPU).
// - conv + relu on the CPU in bfloat16: the input is cast at its use, the weight and bias once
//   (cached); the conv keeps both copies, relu its bfloat16 output.
// - a weight read by two matrix products: one cached copy, kept by both backwards, and each
//   gradient through it cast back to float32 (two CastGrad ops) before it is summed.
// - softmax after a matrix product: on CUDA's fp32 list (its input cast back to float32, its
//   float32 output kept), on no CPU list (bfloat16 kept).
// - promotion: a float32 residual plus a bfloat16 branch is float32; a zero-dim constant does not
//   promote a bfloat16 tensor; a frozen weight (a buffer) is cast at every use, not cached.
#include "common/mini_graph.h"
#include "core/training/apply_training_options.h"
#include "core/training/autocast.h"
#include "core/training/builder.h"

#include <QtTest>

using namespace remat::core;
using remat::tests::MiniGraph;
using training::Precision;
using training::TensorRole;
using training::TrainingGraph;

namespace {

TrainingGraph autocast(MiniGraph &m, std::vector<ValueId> outputs, ops::AutocastDevice device,
                       ir::Graph *keep = nullptr)
{
    auto g = m.build(outputs);
    if (!g)
        qFatal("%s", g.status().message().c_str());
    auto built = training::buildTrainingGraph(*g);
    if (!built)
        qFatal("%s", built.status().message().c_str());
    training::TrainingOptions o;
    o.precision = Precision::Bf16Mixed;
    o.autocastDevice = device;
    auto tg = training::applyTrainingOptions(*built, o, &*g);
    if (!tg)
        qFatal("%s", tg.status().message().c_str());
    if (keep)
        *keep = std::move(*g);
    return std::move(*tg);
}

const training::Tensor &named(const TrainingGraph &g, const std::string &name)
{
    const TensorId *t = g.findTensor(name);
    if (!t)
        qFatal("no tensor '%s'", name.c_str());
    return g.tensor(*t);
}

int countOps(const TrainingGraph &g, const std::string &type)
{
    int n = 0;
    for (const training::Op &op : g.ops())
        n += op.type == type;
    return n;
}

} // namespace

class TstAutocast : public QObject
{
    Q_OBJECT

private slots:
    void policyRowsFollowTorchLists_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("rank");
        QTest::addColumn<QString>("mode"); // Pad's mode / Scatter's reduction, else empty
        QTest::addColumn<QString>("cuda");
        QTest::addColumn<QString>("cpu");
        // autocast_mode.cpp, torch 1.13 (CPU rows also measured with torch 1.13 on the CPU)
        QTest::newRow("conv") << "Conv" << 4 << ""
                              << "lower"
                              << "lower";
        QTest::newRow("conv_transpose") << "ConvTranspose" << 4 << ""
                                        << "lower"
                                        << "fp32";
        QTest::newRow("matmul") << "MatMul" << 3 << ""
                                << "lower"
                                << "lower";
        QTest::newRow("addmm") << "Gemm" << 2 << ""
                               << "lower"
                               << "lower";
        QTest::newRow("einsum (bmm)") << "Einsum" << 3 << ""
                                      << "lower"
                                      << "lower";
        // no list names them: the CPU runs ATen's composite, whose projections are addmm
        // (lower); CUDA's cuDNN wrapper casts to float16 (recurrentLayers* below)
        QTest::newRow("lstm") << "LSTM" << 3 << ""
                              << "lower"
                              << "lower";
        QTest::newRow("gru") << "GRU" << 3 << ""
                             << "lower"
                             << "lower";
        QTest::newRow("prelu") << "PRelu" << 4 << ""
                               << "lower"
                               << "fp32";
        QTest::newRow("softmax") << "Softmax" << 3 << ""
                                 << "fp32"
                                 << "fallthrough";
        QTest::newRow("log_softmax") << "LogSoftmax" << 3 << ""
                                     << "fp32"
                                     << "fallthrough";
        QTest::newRow("layer_norm") << "LayerNormalization" << 3 << ""
                                    << "fp32"
                                    << "fallthrough";
        QTest::newRow("group_norm") << "GroupNormalization" << 4 << ""
                                    << "fp32"
                                    << "fallthrough";
        QTest::newRow("batch_norm") << "BatchNormalization" << 4 << ""
                                    << "fallthrough"
                                    << "fallthrough";
        QTest::newRow("exp") << "Exp" << 2 << ""
                             << "fp32"
                             << "fallthrough";
        QTest::newRow("pow") << "Pow" << 2 << ""
                             << "fp32"
                             << "fallthrough";
        QTest::newRow("sum") << "ReduceSum" << 2 << ""
                             << "fp32"
                             << "fallthrough";
        QTest::newRow("prod") << "ReduceProd" << 2 << ""
                              << "fp32"
                              << "fp32";
        QTest::newRow("cross_entropy") << "SoftmaxCrossEntropyLoss" << 2 << ""
                                       << "fp32"
                                       << "fp32";
        QTest::newRow("relu") << "Relu" << 4 << ""
                              << "fallthrough"
                              << "fallthrough";
        QTest::newRow("add") << "Add" << 4 << ""
                             << "fallthrough"
                             << "fallthrough";
        QTest::newRow("max_pool2d") << "MaxPool" << 4 << ""
                                    << "fallthrough"
                                    << "fallthrough";
        QTest::newRow("max_pool3d") << "MaxPool" << 5 << ""
                                    << "fallthrough"
                                    << "fp32";
        QTest::newRow("constant pad") << "Pad" << 4 << "constant"
                                      << "fallthrough"
                                      << "fallthrough";
        QTest::newRow("reflection_pad") << "Pad" << 4 << "reflect"
                                        << "fallthrough"
                                        << "fp32";
        QTest::newRow("scatter_add") << "ScatterElements" << 2 << "add"
                                     << "promote"
                                     << "fallthrough";
    }

    void policyRowsFollowTorchLists()
    {
        QFETCH(QString, type);
        QFETCH(int, rank);
        QFETCH(QString, mode);
        QFETCH(QString, cuda);
        QFETCH(QString, cpu);
        const ops::OpDef *def = ops::findOp(type.toStdString());
        QVERIFY(def);
        ir::Node node;
        node.opType = type.toStdString();
        if (!mode.isEmpty())
            node.attributes.push_back({type == "Pad" ? "mode" : "reduction", mode.toStdString()});
        QCOMPARE(QString(ops::autocastPolicyName(
                     ops::autocastPolicy(*def, &node, size_t(rank), ops::AutocastDevice::Cuda))),
                 cuda);
        QCOMPARE(QString(ops::autocastPolicyName(
                     ops::autocastPolicy(*def, &node, size_t(rank), ops::AutocastDevice::Cpu))),
                 cpu);
    }

    void convReluOnCpu()
    {
        // x[2,3,8,8] -> Conv(W[4,3,3,3], b[4]) -> c[2,4,6,6] -> Relu -> r
        MiniGraph m;
        const ValueId x = m.input("x", {2, 3, 8, 8});
        const ValueId w = m.param("W", {4, 3, 3, 3});
        const ValueId b = m.param("b", {4});
        const ValueId c = m.op("Conv", {x, w, b}, {2, 4, 6, 6});
        const ValueId r = m.op("Relu", {c}, {2, 4, 6, 6});
        const TrainingGraph g = autocast(m, {r}, ops::AutocastDevice::Cpu);
        // Casts: x at its use (an activation), W and b once (weight casts).
        QCOMPARE(countOps(g, "Cast"), 3);
        const training::Tensor &xc = named(g, "x::bf16@/Conv0");
        QCOMPARE(xc.role, TensorRole::Activation);
        QCOMPARE(xc.bytes, int64_t(2 * 3 * 8 * 8 * 2));
        const training::Tensor &wc = named(g, "W::bf16");
        QCOMPARE(wc.role, TensorRole::WeightCast);
        QCOMPARE(wc.dtype, ir::DataType::BFloat16);
        QCOMPARE(wc.bytes, int64_t(4 * 3 * 3 * 3 * 2));
        QCOMPARE(named(g, "b::bf16").role, TensorRole::WeightCast);
        QCOMPARE(named(g, "/Conv0_y").dtype, ir::DataType::BFloat16);
        QCOMPARE(named(g, "/Relu1_y").bytes, int64_t(2 * 4 * 6 * 6 * 2));
        // The weights, their gradients and the input stay float32.
        QCOMPARE(named(g, "W").bytes, int64_t(4 * 3 * 3 * 3 * 4));
        QCOMPARE(named(g, "grad:W").dtype, ir::DataType::Float);
        QVERIFY(named(g, "grad:W").requiredAtEnd);
        QCOMPARE(named(g, "grad:W::bf16").dtype, ir::DataType::BFloat16);
        // ConvolutionBackward keeps x::bf16 (768 B) and W::bf16 (216 B); ReluBackward its
        // bfloat16 output (576 B); the bias copy is read by nobody's backward.
        const training::TrainingSummary s = training::summarize(g);
        QCOMPARE(s.savedForBackwardBytes, int64_t(768 + 216 + 576));
        QCOMPARE(s.savedForBackwardBytesByDtype.at("bfloat16"), int64_t(768 + 216 + 576));
        // W's and b's gradients come back through CastGrad (x needs none).
        QCOMPARE(countOps(g, "CastGrad"), 2);
        // No master weights: the optimizer side is float32's.
        for (const training::Tensor &t : g.tensors())
            QVERIFY(t.role != TensorRole::MasterWeight);
    }

    void matmulSharesTheCachedWeightCopy()
    {
        // x[4,8] -> MatMul(W[8,8]) -> h -> MatMul(W) -> y: W read twice (tied)
        MiniGraph m;
        const ValueId x = m.input("x", {4, 8});
        const ValueId w = m.param("W", {8, 8});
        const ValueId h = m.op("MatMul", {x, w}, {4, 8});
        const ValueId y = m.op("MatMul", {h, w}, {4, 8});
        const TrainingGraph g = autocast(m, {y}, ops::AutocastDevice::Cuda);
        int castsOfW = 0;
        for (const training::Op &op : g.ops())
            if (op.type == "Cast" && g.tensor(op.inputs[0]).name == "W")
                ++castsOfW;
        QCOMPARE(castsOfW, 1);
        const training::Tensor &wc = named(g, "W::bf16");
        // both products read it; mm(h, W)'s backward keeps it for h's gradient (mm(x, W)'s
        // backward needs only x, x having no gradient)
        QCOMPARE(wc.consumers.size(), size_t(3));
        // mm(x, W) keeps x::bf16 (64 B) for W's gradient (x needs none); mm(h, W) keeps h (64 B)
        // and W::bf16 (128 B, counted once).
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(64 + 64 + 128));
        // Both gradients through the copy are cast back, then summed in float32.
        QCOMPARE(countOps(g, "CastGrad"), 2);
        QCOMPARE(named(g, "grad:W").dtype, ir::DataType::Float);
        QCOMPARE(named(g, "grad:W").bytes, int64_t(8 * 8 * 4));
    }

    // A linear's bias Add runs in the product's kernel where PyTorch runs addmm (a 2-D or a
    // contiguous 3-D input: one rounding), not where at::linear takes matmul + add_ (a 4-D input,
    // or a 3-D input transposed from a feature map): isProductEpilogue says which.
    void biasAddRoundsWithItsProductWhereTorchUsesAddmm()
    {
        MiniGraph m;
        const ValueId x3 = m.input("x3", {2, 8, 16});
        const ValueId x4 = m.input("x4", {2, 4, 4, 16});
        const ValueId fm = m.input("fm", {2, 16, 8});
        const ValueId w = m.param("W", {16, 8});
        const ValueId b = m.param("b", {8});
        const ValueId p3 = m.op("MatMul", {x3, w}, {2, 8, 8});
        const ValueId y3 = m.op("Add", {p3, b}, {2, 8, 8});
        const ValueId p4 = m.op("MatMul", {x4, w}, {2, 4, 4, 8});
        const ValueId y4 = m.op("Add", {p4, b}, {2, 4, 4, 8});
        const ValueId tokens =
            m.op("Transpose", {fm}, {2, 8, 16}, {remat::tests::attrInts("perm", {0, 2, 1})});
        const ValueId pt = m.op("MatMul", {tokens, w}, {2, 8, 8});
        const ValueId yt = m.op("Add", {pt, b}, {2, 8, 8});
        const TrainingGraph g = autocast(m, {y3, y4, yt}, ops::AutocastDevice::Cpu);
        std::vector<bool> epilogue; // the three Adds in the order they were made
        for (const training::Op &op : g.ops())
            if (op.phase == training::Phase::Forward && op.type == "Add")
                epilogue.push_back(training::isProductEpilogue(op));
        QCOMPARE(epilogue, (std::vector<bool>{true, false, false}));
        // Each Add is bfloat16 either way (add_ keeps the product's dtype).
        for (const training::Op &op : g.ops())
            if (op.phase == training::Phase::Forward && op.type == "Add")
                QCOMPARE(g.tensor(op.outputs[0]).dtype, ir::DataType::BFloat16);
    }

    void softmaxStaysFloat32OnCuda()
    {
        // x[2,8] -> MatMul(W[8,8]) -> s -> Softmax -> p
        for (const auto device : {ops::AutocastDevice::Cuda, ops::AutocastDevice::Cpu}) {
            MiniGraph m;
            const ValueId x = m.input("x", {2, 8});
            const ValueId w = m.param("W", {8, 8});
            const ValueId s = m.op("MatMul", {x, w}, {2, 8});
            const ValueId p = m.op("Softmax", {s}, {2, 8}, {{"axis", int64_t(-1)}});
            const TrainingGraph g = autocast(m, {p}, device);
            QCOMPARE(named(g, "/MatMul0_y").dtype, ir::DataType::BFloat16);
            if (device == ops::AutocastDevice::Cuda) {
                // CUDA: softmax is on the fp32 list: its input is cast to float32 (a copy at its
                // use, which nothing keeps), its float32 output is kept (64 B).
                QCOMPARE(named(g, "/Softmax1_y").dtype, ir::DataType::Float);
                QCOMPARE(named(g, "/MatMul0_y::fp32@/Softmax1").role, TensorRole::Activation);
                QCOMPARE(training::summarize(g).savedForBackwardBytes,
                         int64_t(2 * 8 * 2 + 2 * 8 * 4)); // x::bf16 + the softmax
            } else {
                // CPU (torch 1.13): softmax is on no list: bfloat16 in and out (32 B kept).
                QCOMPARE(named(g, "/Softmax1_y").dtype, ir::DataType::BFloat16);
                QCOMPARE(training::summarize(g).savedForBackwardBytes,
                         int64_t(2 * 8 * 2 + 2 * 8 * 2));
            }
        }
    }

    void promotion()
    {
        // x[2,8] -> MatMul(W) -> h (bf16); a = Add(x, h): float32 by promotion;
        // z = Mul(h, 0.5 as a zero-dim constant): bfloat16; f = MatMul(a, F) with F frozen
        // (a buffer): F cast at its use, an activation-like copy, not a cached weight.
        MiniGraph m;
        const ValueId x = m.input("x", {2, 8});
        const ValueId w = m.param("W", {8, 8});
        const ValueId frozen = m.value("F", {8, 8}, ir::ValueKind::Buffer);
        const ValueId half = m.constFloats("half", {0.5f}, {});
        const ValueId h = m.op("MatMul", {x, w}, {2, 8});
        const ValueId a = m.op("Add", {x, h}, {2, 8});
        const ValueId z = m.op("Mul", {h, half}, {2, 8});
        const ValueId f = m.op("MatMul", {a, frozen}, {2, 8});
        const ValueId out = m.op("Add", {z, f}, {2, 8});
        const TrainingGraph g = autocast(m, {out}, ops::AutocastDevice::Cpu);
        QCOMPARE(named(g, "/Add1_y").dtype, ir::DataType::Float);
        QCOMPARE(named(g, "/Mul2_y").dtype, ir::DataType::BFloat16);
        QCOMPARE(named(g, "/MatMul3_y").dtype, ir::DataType::BFloat16);
        const training::Tensor &fc = named(g, "F::bf16@/MatMul3");
        QCOMPARE(fc.role, TensorRole::WeightCast); // a weight's copy, but not cached
        QCOMPARE(named(g, "/Add1_y::bf16@/MatMul3").dtype, ir::DataType::BFloat16);
        // bf16 + bf16 stays bf16; gradients take their tensors' dtypes
        QCOMPARE(named(g, "/Add4_y").dtype, ir::DataType::BFloat16);
        QCOMPARE(named(g, "grad:/Add1_y").dtype, ir::DataType::Float);
        QCOMPARE(named(g, "grad:/Mul2_y").dtype, ir::DataType::BFloat16);
    }

    void configurationInputsDoNotPromote()
    {
        // x[1,2,4,4] -> Conv(W[2,2,1,1]) -> c (bf16) -> Resize(scales = float32 [1,1,2,2]) -> r:
        // the scales configure the op (no gradient, not data): r stays bfloat16, as
        // upsample_nearest2d returns it (YOLO's up-sampled lateral was cast twice, +1.6%).
        MiniGraph m;
        const ValueId x = m.input("x", {1, 2, 4, 4});
        const ValueId c = m.op("Conv", {x, m.param("W", {2, 2, 1, 1})}, {1, 2, 4, 4});
        const ValueId scales = m.constFloats("scales", {1, 1, 2, 2});
        const ValueId r = m.op("Resize", {c, ValueId(), scales}, {1, 2, 8, 8},
                               {{"mode", std::string("nearest")}});
        const TrainingGraph g = autocast(m, {r}, ops::AutocastDevice::Cpu);
        QCOMPARE(named(g, "/Resize1_y").dtype, ir::DataType::BFloat16);
        QCOMPARE(countOps(g, "Cast"), 2); // x and W, not the scales
    }

    void frozenWeightCopiesAreKeptMemory()
    {
        // x[4,8] -> MatMul(W) -> h -> MatMul(F frozen) -> y: F is cast at its use (not cached)
        // and mm(h, F)'s backward keeps F::bf16 for h's gradient: new memory PyTorch counts
        // (a frozen backbone under autocast keeps a bf16 copy of each weight it multiplies),
        // not a layout of the weight.
        MiniGraph m;
        const ValueId x = m.input("x", {4, 8});
        const ValueId h = m.op("MatMul", {x, m.param("W", {8, 8})}, {4, 8});
        const ValueId y =
            m.op("MatMul", {h, m.value("F", {8, 16}, ir::ValueKind::Frozen)}, {4, 16});
        const TrainingGraph g = autocast(m, {y}, ops::AutocastDevice::Cpu);
        const training::Tensor &fc = named(g, "F::bf16@/MatMul1");
        QCOMPARE(fc.role, TensorRole::WeightCast);
        // mm(x, W) keeps x::bf16 (64 B); mm(h, F) keeps F::bf16 (256 B), not h (F needs no
        // gradient).
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(64 + 256));
    }

    void recurrentLayersOnCpuFollowAtensComposite_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("direction");
        QTest::addColumn<bool>("frozenR");
        QTest::addColumn<qint64>("saved");
        // x[T=5, B=2, I=8], H=16, as torch 1.13 keeps it under CPU autocast (one forward,
        // saved_tensors_hooks, by storage; nn.LSTM(8, 16) / nn.GRU(8, 16) on a non-leaf x):
        // LSTM: x::bf16 160, W::bf16 1024, R::bf16 2048, and per step the state cast to bf16
        //   (64), the four gates in one bf16 storage (256), the float32 cell it starts from
        //   (128) and tanh of the new cell (128): 6112.
        QTest::newRow("lstm") << "LSTM"
                              << "forward" << false << qint64(160 + 1024 + 2048 + 5 * 576);
        // GRU (linear_before_reset): x::bf16 160, W::bf16 768, R::bf16 1536, per step the
        //   state cast (64), the hidden projection's gates (192), the reset-scaled copy (64),
        //   the new gate (64), float32 h - n (128): 5024.
        QTest::newRow("gru") << "GRU"
                             << "forward" << false << qint64(160 + 768 + 1536 + 5 * 512);
        // Bidirectional: each direction projects x on its own (two bf16 copies of x), and
        //   the weights, the steps and the saved state double.
        QTest::newRow("bidirectional lstm")
            << "LSTM"
            << "bidirectional" << false << qint64(2 * 160 + 2 * 1024 + 2 * 2048 + 2 * 5 * 576);
        // R frozen: not cached, cast at every step; each step's mm keeps its copy but the
        //   first, whose zero state needs no gradient (no initial_h here). Known over-count
        //   against PyTorch (tests/bench/autocast_ratios.md, +2.84% on a tagger): no step keeps
        //   the state's cast (hidden_in, read only for R's gradient), which the layer's saved
        //   state holds.
        QTest::newRow("lstm, R frozen")
            << "LSTM"
            << "forward" << true << qint64(160 + 1024 + 4 * 2048 + 5 * 576);
        // Elman RNN (tanh): every state is bf16: x::bf16 160, W::bf16 256, R::bf16 512, the
        //   initial state's cast and the 5 outputs (6 x 64).
        QTest::newRow("rnn") << "RNN"
                             << "forward" << false << qint64(160 + 256 + 512 + 6 * 64);
    }

    void recurrentLayersOnCpuFollowAtensComposite()
    {
        QFETCH(QString, type);
        QFETCH(QString, direction);
        QFETCH(bool, frozenR);
        QFETCH(qint64, saved);
        const int64_t T = 5, B = 2, I = 8, H = 16;
        const int64_t D = direction == "bidirectional" ? 2 : 1;
        const int64_t G = type == "LSTM" ? 4 : (type == "GRU" ? 3 : 1);
        MiniGraph m;
        // x needs a gradient (a shift learned before the layer), so the layer keeps W for it
        const ValueId x = m.op("Add", {m.input("in", {T, B, I}), m.param("shift", {I})}, {T, B, I});
        const ValueId w = m.param("W", {D, G * H, I});
        const ValueId r = frozenR ? m.value("R", {D, G * H, H}, ir::ValueKind::Frozen)
                                  : m.param("R", {D, G * H, H});
        const ValueId b = m.param("B", {D, 2 * G * H});
        std::vector<ir::Attribute> attrs = {{"hidden_size", H},
                                            {"direction", direction.toStdString()}};
        if (type == "GRU")
            attrs.push_back({"linear_before_reset", int64_t(1)});
        std::vector<std::pair<std::vector<int64_t>, ir::DataType>> states = {
            {{D, B, H}, ir::DataType::Float}};
        if (type == "LSTM")
            states.push_back({{D, B, H}, ir::DataType::Float});
        const std::string t = type.toStdString();
        const ValueId y = m.op(t, {x, w, r, b}, {T, D, B, H}, attrs, states);
        const TrainingGraph g = autocast(m, {y}, ops::AutocastDevice::Cpu);
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(saved));
        const std::string name = "/" + t + "1_y";
        // The states start as float32 zeros: an LSTM's and a GRU's outputs stay float32, an
        // Elman RNN's tanh of bf16 gates is bf16.
        QCOMPARE(named(g, name).dtype,
                 type == "RNN" ? ir::DataType::BFloat16 : ir::DataType::Float);
        if (type == "LSTM") {
            QCOMPARE(named(g, name + "::gates").dtype, ir::DataType::BFloat16);
            QCOMPARE(named(g, name + "::hidden_in").dtype, ir::DataType::BFloat16);
            QCOMPARE(named(g, name + "::cell_in").dtype, ir::DataType::Float);
            QCOMPARE(named(g, name + "::cell_act").dtype, ir::DataType::Float);
        } else if (type == "GRU") {
            QCOMPARE(named(g, name + "::new_gate").dtype, ir::DataType::BFloat16);
            QCOMPARE(named(g, name + "::hidden_minus_new").dtype, ir::DataType::Float);
        }
        // x is cast once per direction (one Cast whose copy counts both); the states are not
        // cast (the per-step casts of h are the saved hidden_in).
        QCOMPARE(named(g, "/Add0_y::bf16@/" + t + "1").bytes, D * T * B * I * 2);
        for (const training::Op &op : g.ops())
            if (op.type == "Cast")
                QVERIFY(g.tensor(op.inputs[0]).name != name);
        if (frozenR)
            QCOMPARE(named(g, "R::bf16@/" + t + "1").bytes, (T - 1) * D * G * H * H * 2);
    }

    void recurrentLayersOnCudaRunInFloat16()
    {
        // cuDNN's autocast wrapper (aten/src/ATen/cudnn/AutocastRNN.cpp) casts the input, the
        // states and a flat copy of the weights to at::kHalf whatever autocast's dtype: under
        // bf16 autocast an LSTM runs, saves and returns float16, and the Linear after it casts
        // its float16 input to bfloat16.
        const int64_t T = 5, B = 2, I = 8, H = 16;
        MiniGraph m;
        const ValueId x = m.input("x", {T, B, I});
        const ValueId w = m.param("W", {1, 4 * H, I});
        const ValueId r = m.param("R", {1, 4 * H, H});
        const ValueId y =
            m.op("LSTM", {x, w, r}, {T, 1, B, H}, {{"hidden_size", H}},
                 {{{1, B, H}, ir::DataType::Float}, {{1, B, H}, ir::DataType::Float}});
        const ValueId flat = m.op("Reshape", {y, m.constInts("shape", {T * B, H})}, {T * B, H});
        const ValueId out = m.op("MatMul", {flat, m.param("V", {H, 3})}, {T * B, 3});
        const TrainingGraph g = autocast(m, {out}, ops::AutocastDevice::Cuda);
        QCOMPARE(named(g, "/LSTM0_y").dtype, ir::DataType::Float16);
        QCOMPARE(named(g, "/LSTM0_y::gates").dtype, ir::DataType::Float16);
        QCOMPARE(named(g, "/LSTM0_y::cell_in").dtype, ir::DataType::Float16);
        const training::Tensor &wc = named(g, "W::fp16@/LSTM0"); // not bf16's cache
        QCOMPARE(wc.role, TensorRole::WeightCast);
        QCOMPARE(wc.bytes, int64_t(4 * H * I * 2));
        QCOMPARE(named(g, "x::fp16@/LSTM0").bytes, T * B * I * 2);
        QCOMPARE(named(g, "/Reshape1_y::bf16@/MatMul2").dtype, ir::DataType::BFloat16);
        QCOMPARE(named(g, "/MatMul2_y").dtype, ir::DataType::BFloat16);
    }

    void castsAreOnnxCasts()
    {
        // The executors run the casts as ONNX Cast nodes: attribute `to` is the target dtype.
        MiniGraph m;
        const ValueId x = m.input("x", {2, 8});
        const ValueId w = m.param("W", {8, 8});
        const ValueId y = m.op("MatMul", {x, w}, {2, 8});
        const TrainingGraph g = autocast(m, {y}, ops::AutocastDevice::Cuda);
        int seen = 0;
        for (const training::Op &op : g.ops()) {
            if (op.type != "Cast" && op.type != "CastGrad")
                continue;
            QVERIFY(op.fusedNode);
            QCOMPARE(op.fusedNode->opType, std::string("Cast"));
            QCOMPARE(op.fusedNode->attrInt("to", 0), int64_t(ir::DataType::BFloat16));
            ++seen;
        }
        QCOMPARE(seen, 3); // x's and W's casts, W's gradient cast back
        // fp16: the same with float16
        MiniGraph m2;
        const ValueId x2 = m2.input("x", {2, 8});
        const ValueId y2 = m2.op("MatMul", {x2, m2.param("W", {8, 8})}, {2, 8});
        auto g2 = m2.build({y2});
        QVERIFY(g2);
        auto built = training::buildTrainingGraph(*g2);
        QVERIFY(built);
        training::TrainingOptions o;
        o.precision = Precision::Fp16Mixed;
        auto tg = training::applyTrainingOptions(*built, o, &*g2);
        QVERIFY(tg);
        QCOMPARE(named(*tg, "W::fp16").dtype, ir::DataType::Float16);
    }
};

QTEST_GUILESS_MAIN(TstAutocast)
#include "tst_autocast.moc"
