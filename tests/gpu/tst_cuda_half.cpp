// The CUDA backend's half path: float16 / bfloat16 tensors stored in 2 bytes, Cast as CUDA
// kernels, matrix products through cuBLAS's half GEMMs and convolutions through cuDNN's half
// convolutions (float32 accumulation), every other op in float32 on widened copies rounded back.
//
// Without a device (these run wherever the suite is built; CI's machine has none):
// - gpu/kernels/half_convert.h (the __host__ __device__ conversions the kernels use) against
//   core/exec/half.h (the CPU reference's), bit for bit: every float16 / bfloat16 encoding
//   widened; float32 -> half at every rounding boundary (the midpoint between each pair of
//   neighbouring half values and the floats either side of it) and over a sweep of float32 bit
//   patterns, NaNs, infinities, subnormals; double -> half (an int64 cast) for integers across
//   the whole int64 range and random doubles, with one rounding; the in-place write-back rule
//   (a value rewritten only where its rounding changes; NaN over NaN stays).
// - the routing: which kernels read half operands themselves (Cast, the GEMMs, the element-wise
//   table when the dtypes agree, cuDNN convolution, the fused attention) and which get float32
//   copies (Softmax, the norms, reductions, binary gradients, optimizer updates).
// - the op table on the half training graphs of resnet50 and ViT-B/16 (shared corpus) and a
//   GPT-2-style decoder (tests/data/attention) in bf16-mixed, 16-mixed (CUDA autocast),
//   bf16-true and bf16-master: every op accepted (checkCudaSupport) with and without cuDNN;
//   Cast, the matrix products and (with cuDNN) the convolutions take half operands themselves.
// - a Cast between bfloat16 and float64 is refused by op name, with --backend cpu as the way out.
// - the networks of the device check below, each precision: half tensors in the graph, the CPU
//   reference's run at the predicted peak, the CUDA op table takes the graph.
// With a device (QSKIP otherwise): an MLP, a residual conv net and an attention block in
// bf16-mixed, 16-mixed and bf16-true on CUDA and on the CPU reference, same weights and data;
// expected: measured peak == predicted peak on CUDA; the loss and every gradient within 3e-2
// (bfloat16) / 5e-3 (float16) relative (per tensor, of its largest value) of the CPU reference's:
// both compute each op in float32 and round at the same points, only float32 summation orders
// differ, which flips a rounding by one half step (2^-8, 2^-11) here and there and a few layers
// carry it on. The half rounding shows: each differs from the float32 CUDA run by more than 1e-5,
// and by more than from the CPU reference's half run (it rounds where the reference rounds). The
// CPU reference's own half-vs-float32 distance is printed beside (bf16 0.036-0.047, fp16
// 0.0008-0.0046 on these nets), the scale those tolerances sit under.
// (These device checks were compiled, not run, when written: no GPU was lent to that session.)
#include "gpu_test_util.h"

#include "common/test_support.h"
#include "core/cost/roofline.h"
#include "core/exec/half.h"
#include "core/onnx/importer.h"
#include "core/ops/attention.h"
#include "core/sim/simulator.h"
#include "core/training/apply_training_options.h"
#include "gpu/cuda_backend.h"
#include "gpu/kernels/half_convert.h"

#include <QFileInfo>
#include <QTest>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

using namespace remat;
using namespace remat::tests;
using core::ValueId;
using core::ir::DataType;
namespace kernels = remat::gpu::kernels;
namespace training = remat::core::training;

namespace {

uint32_t bitsOf(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float floatOf(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

kernels::HalfKind kindOf(DataType t)
{
    return t == DataType::BFloat16 ? kernels::HalfKind::BFloat16 : kernels::HalfKind::Float16;
}

/// First float32 whose rounding differs between the kernels' header and core/exec/half.h; "" when
/// none of `values` does.
std::string firstNarrowMismatch(DataType t, const std::vector<float> &values)
{
    for (float f : values) {
        const uint16_t ours = kernels::floatToHalf(kindOf(t), f);
        const uint16_t ref = core::exec::floatToHalfOf(t, f);
        if (ours != ref)
            return QStringLiteral("%1 (bits 0x%2): 0x%3, reference 0x%4")
                .arg(double(f), 0, 'g', 9)
                .arg(bitsOf(f), 8, 16, QChar('0'))
                .arg(ours, 4, 16, QChar('0'))
                .arg(ref, 4, 16, QChar('0'))
                .toStdString();
    }
    return {};
}

/// The float32 values where rounding to `t` decides: for each pair of neighbouring finite half
/// values of both signs, their midpoint and the floats just below and above it, and the half
/// values themselves.
std::vector<float> roundingBoundaries(DataType t)
{
    std::vector<float> out;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float a = core::exec::halfOfToFloat(t, uint16_t(h));
        const float b = core::exec::halfOfToFloat(t, uint16_t(h + 1));
        if (!std::isfinite(a))
            continue;
        out.push_back(a);
        if (!std::isfinite(b) || (h & 0x7FFF) == 0x7FFF)
            continue;
        const double mid = (double(a) + double(b)) / 2; // exact in float32 (fewer bits)
        const float m = float(mid);
        out.push_back(m);
        out.push_back(std::nextafter(m, -INFINITY));
        out.push_back(std::nextafter(m, INFINITY));
    }
    // beyond the largest finite value: float16 65504 / 65520, bfloat16's last midpoint
    for (float f : {65504.f, 65519.996f, 65520.f, 65536.f, 3.38953139e38f, 3.40282347e38f})
        for (float s : {1.f, -1.f})
            out.push_back(s * f);
    return out;
}

} // namespace

class TestCudaHalf : public QObject
{
    Q_OBJECT

private slots:
    void widenMatchesReference();
    void narrowMatchesReference_data();
    void narrowMatchesReference();
    void doubleRoundsOnce();
    void writeBackRule();
    void halfRouting();
    void halfGraphsAreAccepted_data();
    void halfGraphsAreAccepted();
    void castToDoubleIsRefusedByName();
    void matchesCpuReference_data();
    void matchesCpuReference();
};

void TestCudaHalf::widenMatchesReference()
{
    // every encoding, both types: exactly the reference's float32 (NaN payloads included)
    for (DataType t : {DataType::Float16, DataType::BFloat16})
        for (uint32_t h = 0; h < 0x10000; ++h) {
            const float ours = kernels::halfToFloat(kindOf(t), uint16_t(h));
            const float ref = core::exec::halfOfToFloat(t, uint16_t(h));
            QVERIFY2(bitsOf(ours) == bitsOf(ref),
                     qPrintable(QStringLiteral("%1 0x%2")
                                    .arg(QString::fromStdString(core::ir::dataTypeName(t)))
                                    .arg(h, 4, 16, QChar('0'))));
        }
}

void TestCudaHalf::narrowMatchesReference_data()
{
    QTest::addColumn<int>("type");
    QTest::newRow("float16") << int(DataType::Float16);
    QTest::newRow("bfloat16") << int(DataType::BFloat16);
}

void TestCudaHalf::narrowMatchesReference()
{
    QFETCH(int, type);
    const DataType t = DataType(type);
    std::vector<float> values = roundingBoundaries(t);
    QVERIFY(values.size() > 200000);
    // a sweep of float32 bit patterns (every 4093rd: all exponents, both signs, NaN payloads)
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093)
        values.push_back(floatOf(uint32_t(u)));
    // float32 subnormals, zeros, infinities, NaNs of both signs and several payloads
    for (uint32_t u :
         {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x80400000u, 0x7F800000u, 0xFF800000u,
          0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFF812345u, 0x33000000u, 0x33000001u,
          0x387FFFFFu, 0x38800000u, 0x477FEFFFu, 0x477FF000u, 0x7F7FFFFFu, 0x7F7F8000u})
        values.push_back(floatOf(u));
    const std::string bad = firstNarrowMismatch(t, values);
    QVERIFY2(bad.empty(), bad.c_str());
    std::printf("%s: %zu float32 values round alike\n", QTest::currentDataTag(), values.size());
}

void TestCudaHalf::doubleRoundsOnce()
{
    std::vector<double> values;
    // integers across the int64 range (an int64 -> half Cast goes through double)
    for (int e = 0; e < 63; ++e)
        for (int64_t d : {-1, 0, 1, 3, 4097, 1 << 20}) {
            const double v = std::ldexp(1.0, e) + double(d);
            values.push_back(v);
            values.push_back(-v);
        }
    values.push_back(double(std::numeric_limits<int64_t>::max()));
    values.push_back(double(std::numeric_limits<int64_t>::min()));
    // doubles just off the float16 / bfloat16 midpoints (where rounding through float32 to
    // nearest would round twice), beyond the float range, tiny, non-finite
    for (double v : {2049.0000001, 2050.9999999, 1.00048828125 + 1e-12, 1.00048828125 - 1e-12,
                     1.0019531250000002, 65519.9999999, 65520.0000001, 1e300, -1e300, 1e-300,
                     3.4028235677973366e38, 3.4028235677973362e38, 0.0, -0.0})
        values.push_back(v);
    values.push_back(std::numeric_limits<double>::infinity());
    values.push_back(-std::numeric_limits<double>::infinity());
    values.push_back(std::numeric_limits<double>::quiet_NaN());
    std::mt19937_64 rng(32);
    std::uniform_real_distribution<double> unit(-1, 1);
    for (int i = 0; i < 200000; ++i)
        values.push_back(std::ldexp(unit(rng), int(rng() % 80) - 40));
    for (double v : values) {
        const float odd = kernels::doubleToFloatOdd(v),
                    refOdd = core::exec::doubleToFloatRoundOdd(v);
        QVERIFY2(bitsOf(odd) == bitsOf(refOdd) || (std::isnan(odd) && std::isnan(refOdd)),
                 qPrintable(QString::number(v, 'g', 17)));
        for (DataType t : {DataType::Float16, DataType::BFloat16})
            QVERIFY2(kernels::doubleToHalf(kindOf(t), v) == core::exec::doubleToHalfOf(t, v),
                     qPrintable(QString::number(v, 'g', 17)));
    }
}

void TestCudaHalf::writeBackRule()
{
    // the device's narrowHalfChanged writes element i where halfChanges(...) says so; on the
    // host, the same rule applied element by element must give narrowChangedFromFloat's result
    std::mt19937 rng(5);
    for (DataType t : {DataType::Float16, DataType::BFloat16}) {
        std::vector<uint16_t> stored(4096);
        std::vector<float> values(stored.size());
        for (size_t i = 0; i < stored.size(); ++i) {
            stored[i] = uint16_t(rng());
            const float v = core::exec::halfOfToFloat(t, stored[i]);
            switch (i % 4) {
            case 0: values[i] = v; break;                                       // unchanged
            case 1: values[i] = std::isfinite(v) ? v * 1.5f + 1 : v; break;     // updated
            case 2: values[i] = std::numeric_limits<float>::quiet_NaN(); break; // NaN
            default: values[i] = -v; break;
            }
        }
        std::vector<uint16_t> ours = stored, ref = stored;
        for (size_t i = 0; i < ours.size(); ++i) {
            const uint16_t b = kernels::floatToHalf(kindOf(t), values[i]);
            if (kernels::halfChanges(kindOf(t), b, ours[i], values[i]))
                ours[i] = b;
        }
        core::exec::narrowChangedFromFloat(t, values.data(), ref.data(), int64_t(ref.size()));
        QVERIFY(ours == ref);
        QVERIFY(ours != stored); // the rule did write
    }
}

void TestCudaHalf::halfRouting()
{
    // which kernels read half operands themselves (the rest get float32 copies)
    for (const char *t : {"Cast", "CastGrad", "MatMul", "MatMulGrad", "Gemm", "GemmGrad"})
        for (bool cudnn : {true, false})
            for (bool mixed : {true, false})
                QVERIFY2(gpu::takesHalfOperands(t, cudnn, mixed), t);
    for (const char *t : {"Relu", "ReluGrad", "Gelu", "GeluGrad", "Tanh", "Add", "Mul", "Div"}) {
        QVERIFY2(gpu::takesHalfOperands(t, false, false), t);
        QVERIFY2(!gpu::takesHalfOperands(t, false, true), t); // mixed dtypes: widened
    }
    QVERIFY(gpu::takesHalfOperands("Conv", true, false));
    QVERIFY(gpu::takesHalfOperands("ConvGrad", true, false));
    QVERIFY(!gpu::takesHalfOperands("Conv", false, false)); // im2col runs float32
    QVERIFY(!gpu::takesHalfOperands("Conv", true, true));
    QVERIFY(gpu::takesHalfOperands(core::ops::kAttentionOp, false, true));
    for (const char *t : {"AddGrad", "MulGrad", "Softmax", "SoftmaxGrad", "LayerNormalization",
                          "BatchNormalization", "ReduceMean", "SgdUpdate", "AdamUpdate"})
        QVERIFY2(!gpu::takesHalfOperands(t, true, false), t);
}

void TestCudaHalf::halfGraphsAreAccepted_data()
{
    QTest::addColumn<QString>("model"); // corpus/graph_only name, or tests/data path
    QTest::addColumn<bool>("convolutions");
    QTest::addColumn<bool>("sdpa"); // --attention sdpa: the fused attention's own half kernels
    QTest::newRow("resnet50") << "corpus:resnet50" << true << false;
    QTest::newRow("vit_b_16") << "corpus:vit_b_16" << true << false;
    QTest::newRow("gpt2_style") << "data:attention/gpt2_style.onnx" << false << false;
    QTest::newRow("gpt2_style sdpa") << "data:attention/gpt2_style.onnx" << false << true;
}

void TestCudaHalf::halfGraphsAreAccepted()
{
    QFETCH(QString, model);
    QFETCH(bool, convolutions);
    QFETCH(bool, sdpa);
    QString path;
    if (model.startsWith("corpus:")) {
        path = sharedPath("corpus/graph_only/" + model.mid(7) + ".onnx");
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
    } else {
        path = sourceDir() + "/tests/data/" + model.mid(5);
    }
    auto g = core::onnx::importModel(toStd(path));
    QVERIFY2(g, g.status().toString().c_str());
    training::BuildOptions bo;
    bo.attention = sdpa ? training::Attention::Sdpa : training::Attention::Eager;
    auto built = training::buildTrainingGraph(*g, bo);
    QVERIFY2(built, built.status().toString().c_str());
    int fused = 0;
    for (const training::Op &op : built->ops())
        fused += op.type.rfind(core::ops::kAttentionOp, 0) == 0;
    QCOMPARE(fused > 0, sdpa);
    for (const char *name : {"bf16-mixed", "16-mixed", "bf16-true", "bf16-master"}) {
        auto p = training::parsePrecision(name);
        QVERIFY2(p, name);
        training::TrainingOptions o;
        o.optimizer = training::Optimizer::Adam;
        o.precision = *p;
        o.autocastDevice = training::AutocastDevice::Cuda;
        auto tg = training::applyTrainingOptions(*built, o, &*g);
        QVERIFY2(tg, tg.status().toString().c_str());
        for (bool cudnn : {true, false}) {
            gpu::CudaSupportSummary s;
            const core::Status st = gpu::checkCudaSupport(*tg, &*g, cudnn, &s);
            QVERIFY2(st.isOk(), (std::string(name) + ": " + st.toString()).c_str());
            std::printf("%s %s%s: %lld float32 ops, %lld on half operands in place, %lld widened "
                        "to float32, %lld on the host\n",
                        QTest::currentDataTag(), name, cudnn ? "" : " (no cuDNN)",
                        (long long)s.deviceOps, (long long)s.halfNativeOps,
                        (long long)s.halfWidenedOps, (long long)s.hostOps);
            // half operands reach the device: the products (and casts) read them in place
            QVERIFY(s.halfNativeOps > 0);
            QVERIFY(s.halfWidenedOps > 0);
            if (convolutions && !cudnn) {
                // without cuDNN the convolutions are widened: fewer ops take half in place. (A
                // convolution of operands of two dtypes is widened either way: bf16-true's first
                // one, whose input image stays float32; ViT-B/16 has no other.)
                gpu::CudaSupportSummary withCudnn;
                QVERIFY(gpu::checkCudaSupport(*tg, &*g, true, &withCudnn).isOk());
                const bool onlyFirstConv = model.contains("vit") && !training::isAutocast(*p);
                if (onlyFirstConv)
                    QCOMPARE(withCudnn.halfNativeOps, s.halfNativeOps);
                else
                    QVERIFY(withCudnn.halfNativeOps > s.halfNativeOps);
            }
        }
    }
}

void TestCudaHalf::castToDoubleIsRefusedByName()
{
    MiniGraph m;
    const ValueId x = m.input("x", {4, 8});
    const ValueId w = m.param("w", {8, 8});
    const ValueId h = m.op("MatMul", {x, w}, {4, 8});
    const ValueId d = m.opOfType("Cast", {h}, {4, 8}, DataType::Double, {attrInt("to", 11)});
    const ValueId y = m.op("Cast", {d}, {4, 8}, {attrInt("to", 1)});
    auto g = m.build({y});
    QVERIFY2(g, g.status().toString().c_str());
    auto built = training::buildTrainingGraph(*g, {});
    QVERIFY2(built, built.status().toString().c_str());
    training::TrainingOptions o;
    o.precision = training::Precision::Bf16True;
    auto tg = training::applyTrainingOptions(*built, o, &*g);
    QVERIFY2(tg, tg.status().toString().c_str());
    bool halfToDouble = false;
    for (const training::Op &op : tg->ops())
        if (op.type == "Cast")
            for (core::TensorId in : op.inputs)
                halfToDouble = halfToDouble || tg->tensor(in).dtype == DataType::BFloat16;
    if (!halfToDouble)
        QSKIP("bf16-true keeps this Cast's input float32: nothing to refuse");
    const core::Status st = gpu::checkCudaSupport(*tg, &*g, true);
    QVERIFY(!st.isOk());
    const QString msg = QString::fromStdString(st.message());
    QVERIFY2(msg.contains("Cast") && msg.contains("--backend cpu") && msg.contains("float64"),
             qPrintable(msg));
}

void TestCudaHalf::matchesCpuReference_data()
{
    QTest::addColumn<QString>("net");
    QTest::addColumn<QString>("precision");
    for (const char *net : {"mlp", "resnet_block", "attention"})
        for (const char *p : {"bf16-mixed", "16-mixed", "bf16-true"})
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(net, p))) << net << p;
}

namespace {

/// The forward graphs of matchesCpuReference.
core::Expected<core::ir::Graph> smallNet(const QString &net)
{
    MiniGraph g;
    if (net == "mlp") { // linear layers as torch exports them: MatMul, then the bias Add
        const ValueId x = g.input("x", {16, 32});
        ValueId h = g.op("MatMul", {x, g.param("w1", {32, 64})}, {16, 64});
        h = g.op("Add", {h, g.param("b1", {64})}, {16, 64});
        h = g.op("Relu", {h}, {16, 64});
        h = g.op("Gemm", {h, g.param("w2", {10, 64}), g.param("b2", {10})}, {16, 10},
                 {attrInt("transB", 1)});
        return g.build({g.op("Tanh", {h}, {16, 10})});
    }
    if (net == "resnet_block") { // conv, BN, relu, conv, residual add, pool, linear head
        const ValueId x = g.input("x", {2, 8, 12, 12});
        const std::vector<core::ir::Attribute> conv{attrInts("pads", {1, 1, 1, 1}),
                                                    attrInts("kernel_shape", {3, 3})};
        // (no bias before the BN, as torchvision's: its gradient is zero up to rounding noise)
        ValueId h = g.op("Conv", {x, g.param("c1.w", {8, 8, 3, 3})}, {2, 8, 12, 12}, conv);
        h = g.op("BatchNormalization",
                 {h, g.param("bn.w", {8}), g.param("bn.b", {8}),
                  g.value("bn.mean", {8}, core::ir::ValueKind::Buffer),
                  g.value("bn.var", {8}, core::ir::ValueKind::Buffer)},
                 {2, 8, 12, 12}, {attrInt("training_mode", 1)},
                 {{{8}, DataType::Float}, {{8}, DataType::Float}});
        h = g.op("Relu", {h}, {2, 8, 12, 12});
        h = g.op("Conv", {h, g.param("c2.w", {8, 8, 3, 3}), g.param("c2.b", {8})}, {2, 8, 12, 12},
                 conv);
        h = g.op("Add", {h, x}, {2, 8, 12, 12});
        h = g.op("GlobalAveragePool", {h}, {2, 8, 1, 1});
        h = g.op("Flatten", {h}, {2, 8}, {attrInt("axis", 1)});
        return g.build({g.op("Gemm", {h, g.param("fc.w", {5, 8}), g.param("fc.b", {5})}, {2, 5},
                             {attrInt("transB", 1)})});
    }
    // attention: projections, scaled scores, softmax, weighted values, layer norm, residual
    const ValueId x = g.input("x", {2, 8, 16});
    const ValueId q = g.op("MatMul", {x, g.param("wq", {16, 16})}, {2, 8, 16});
    const ValueId k = g.op("MatMul", {x, g.param("wk", {16, 16})}, {2, 8, 16});
    const ValueId v = g.op("MatMul", {x, g.param("wv", {16, 16})}, {2, 8, 16});
    const ValueId kt = g.op("Transpose", {k}, {2, 16, 8}, {attrInts("perm", {0, 2, 1})});
    ValueId s = g.op("MatMul", {q, kt}, {2, 8, 8});
    s = g.op("Mul", {s, g.constFloats("scale", {0.25f})}, {2, 8, 8});
    s = g.op("Softmax", {s}, {2, 8, 8}, {attrInt("axis", -1)});
    ValueId o = g.op("MatMul", {s, v}, {2, 8, 16});
    o = g.op("Add", {o, x}, {2, 8, 16});
    o = g.op("LayerNormalization", {o, g.param("ln.w", {16}), g.param("ln.b", {16})}, {2, 8, 16},
             {attrInt("axis", -1)});
    return g.build({o});
}

/// One network in one precision: the training graph, its store-all schedule and prediction, the
/// seeded data, and the CPU reference's run of it.
struct HalfCase
{
    training::TrainingGraph built, tg;
    core::schedule::Schedule schedule, schedule32;
    int64_t predicted = 0;
    core::exec::NpzArchive feed;
    core::exec::ExecResult cpu, cpu32; ///< the CPU reference in this precision and in float32
};

core::Expected<HalfCase> prepareCase(const core::ir::Graph &graph, training::Precision precision)
{
    HalfCase h;
    training::BuildOptions bo;
    bo.inputGradients = true;
    REMAT_ASSIGN_OR_RETURN(h.built, training::buildTrainingGraph(graph, bo));
    training::TrainingOptions o;
    o.precision = precision;
    o.autocastDevice = training::AutocastDevice::Cuda;
    REMAT_ASSIGN_OR_RETURN(h.tg, training::applyTrainingOptions(h.built, o, &graph));
    h.schedule = core::schedule::storeAllSchedule(h.tg);
    h.schedule32 = core::schedule::storeAllSchedule(h.built);
    REMAT_ASSIGN_OR_RETURN(core::sim::Timeline predicted,
                           core::sim::simulate(h.schedule, h.tg, core::cost::rooflineCosts(h.tg)));
    h.predicted = predicted.peakBytes;
    h.feed = randomFeed(graph);
    auto cpu = core::exec::makeCpuBackend();
    REMAT_ASSIGN_OR_RETURN(h.cpu, runStep(*cpu, h.tg, graph, h.schedule, &h.feed));
    auto cpu32 = core::exec::makeCpuBackend();
    REMAT_ASSIGN_OR_RETURN(h.cpu32, runStep(*cpu32, h.built, graph, h.schedule32, &h.feed));
    return h;
}

} // namespace

void TestCudaHalf::matchesCpuReference()
{
    QFETCH(QString, net);
    QFETCH(QString, precision);
    auto graph = smallNet(net);
    QVERIFY2(graph, graph.status().toString().c_str());
    auto p = training::parsePrecision(precision.toStdString());
    QVERIFY2(p, p.status().toString().c_str());
    // Without a device this much still runs: the case is well formed, half, the CPU reference
    // runs it at the predicted peak, and the CUDA backend's op table takes it.
    auto h = prepareCase(*graph, *p);
    QVERIFY2(h, h.status().toString().c_str());
    int64_t halfTensors = 0;
    for (const training::Tensor &t : h->tg.tensors())
        halfTensors += core::exec::isHalfType(t.dtype);
    QVERIFY(halfTensors > 0);
    QCOMPARE(h->cpu.measuredPeakBytes, h->predicted);
    gpu::CudaSupportSummary support;
    const core::Status st = gpu::checkCudaSupport(h->tg, &*graph, true, &support);
    QVERIFY2(st.isOk(), st.toString().c_str());
    QVERIFY(support.halfNativeOps > 0);
    // how far the half rounding moves the gradients (the scale the CUDA tolerance sits under)
    double halfVs32 = 0;
    for (const auto &[name, g32] : h->cpu32.gradients.entries())
        if (const core::exec::HostTensor *g = h->cpu.gradients.find(name))
            halfVs32 = std::max(halfVs32, relDiff(*g, g32));
    std::printf("%s: CPU reference peak %lld B = predicted; its gradients %.3g from float32's; "
                "%lld ops on half operands in place on CUDA, %lld widened\n",
                QTest::currentDataTag(), (long long)h->cpu.measuredPeakBytes, halfVs32,
                (long long)support.halfNativeOps, (long long)support.halfWidenedOps);
    QVERIFY(halfVs32 > 1e-5);
    if (!haveCudaDevice())
        QSKIP("no CUDA device (the graph, the CPU reference's run and the op table were checked)");

    auto cuda = gpu::makeCudaBackend(0);
    QVERIFY2(cuda, cuda.status().toString().c_str());
    auto r = runStep(**cuda, h->tg, *graph, h->schedule, &h->feed);
    QVERIFY2(r, r.status().toString().c_str());
    auto cuda32 = gpu::makeCudaBackend(0);
    QVERIFY2(cuda32, cuda32.status().toString().c_str());
    auto r32 = runStep(**cuda32, h->built, *graph, h->schedule32, &h->feed);
    QVERIFY2(r32, r32.status().toString().c_str());
    // expected: the CUDA run's allocator peak is the simulator's, the 2-byte tensors counted so
    QCOMPARE(r->measuredPeakBytes, h->predicted);
    const bool bf16 = precision.startsWith("bf16");
    const double tol = bf16 ? 3e-2 : 5e-3;
    double worst = 0;
    std::string worstName;
    int compared = 0;
    for (const auto &[name, ref] : h->cpu.gradients.entries()) {
        const core::exec::HostTensor *ours = r->gradients.find(name);
        QVERIFY2(ours, ("the cuda run lacks " + name).c_str());
        const double d = relDiff(*ours, ref);
        QVERIFY2(!std::isnan(d), name.c_str());
        if (d > worst) {
            worst = d;
            worstName = name;
        }
        ++compared;
    }
    const double lossDiff =
        std::abs(r->loss - h->cpu.loss) / std::max(1e-30, std::abs(h->cpu.loss));
    std::printf("%s: peak %lld B = predicted, %d gradients, worst %.3g (%s) vs the CPU "
                "reference, loss %.3g\n",
                QTest::currentDataTag(), (long long)r->measuredPeakBytes, compared, worst,
                worstName.c_str(), lossDiff);
    QVERIFY(compared >= 4);
    QVERIFY2(worst <= tol, worstName.c_str());
    QVERIFY(lossDiff <= tol);
    // the run is not the float32 one in disguise
    double apart = 0;
    for (const auto &[name, g32] : r32->gradients.entries())
        if (const core::exec::HostTensor *ours = r->gradients.find(name))
            apart = std::max(apart, relDiff(*ours, g32));
    QVERIFY2(apart > 1e-5, "the half run equals the float32 run");
    // and it rounds where the CPU reference rounds: nearer to it than to the float32 run
    std::printf("  (%.3g from the float32 CUDA run)\n", apart);
    QVERIFY2(worst < apart, "nearer the float32 run than the CPU reference's half run");
}

QTEST_GUILESS_MAIN(TestCudaHalf)
#include "tst_cuda_half.moc"
