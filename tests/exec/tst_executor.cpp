// The executor's contracts on small inputs: npz round trip (our writer, NumPy's reader layout),
// an op without a kernel refused before anything runs (naming the op), the CPU allocator's exact
// byte counts, and the corpus feed read as NumPy wrote it.
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/exec/npz.h"
#include "core/training/training_graph.h"

#include "common/test_support.h"

#include <QTemporaryDir>
#include <QTest>

using namespace remat;
using namespace remat::core;
using exec::HostTensor;

class TestExecutor : public QObject
{
    Q_OBJECT

private slots:
    void npzRoundTrip();
    void npzReadsNumpyFiles();
    void npzRejectsGarbage();
    void prepareRefusesOpWithoutKernel();
    void allocatorCountsRequestedBytes();
};

void TestExecutor::npzRoundTrip()
{
    QTemporaryDir dir;
    const std::string path = tests::toStd(dir.filePath("t.npz"));
    exec::NpzArchive a;
    const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-8f};
    const std::vector<int64_t> i = {1, -2, 3};
    const double loss = -0.826966803;
    a.set("grad:fc1.weight", HostTensor::fromFloats({2, 3}, f));
    a.set("idx", HostTensor::fromInt64s({3}, i));
    a.set("loss", HostTensor::fromDoubles({}, std::span<const double>(&loss, 1)));
    QVERIFY(exec::writeNpz(path, a).isOk());
    auto b = exec::readNpz(path);
    QVERIFY2(b, b.status().toString().c_str());
    // expected: the same three entries, shapes, dtypes and bytes
    QCOMPARE(b->entries().size(), size_t(3));
    for (const auto &[name, t] : a.entries()) {
        const HostTensor *u = b->find(name);
        QVERIFY2(u, name.c_str());
        QCOMPARE(u->dtype, t.dtype);
        QCOMPARE(u->shape, t.shape);
        QCOMPARE(u->data, t.data);
    }
}

void TestExecutor::npzReadsNumpyFiles()
{
    const QString file = tests::sharedPath("corpus/with_weights/mlp.npz");
    if (!QFileInfo::exists(file))
        QSKIP("corpus not found");
    auto a = exec::readNpz(tests::toStd(file));
    QVERIFY2(a, a.status().toString().c_str());
    // expected (corpus README / manifest): input [4,32] float32, R [4,10], loss float64 -0.8269667...
    const HostTensor *input = a->find("input");
    QVERIFY(input);
    QCOMPARE(input->shape, (std::vector<int64_t>{4, 32}));
    QCOMPARE(input->dtype, ir::DataType::Float);
    QCOMPARE(a->find("R")->shape, (std::vector<int64_t>{4, 10}));
    QCOMPARE(a->find("loss")->dtype, ir::DataType::Double);
    QVERIFY(std::abs(a->find("loss")->toDoubles()[0] - (-0.8269667029380798)) < 1e-6);
    QVERIFY(a->find("grad:fc1.weight"));
}

void TestExecutor::npzRejectsGarbage()
{
    auto a = exec::parseNpz(std::string(100, 'x'), "junk.npz");
    QVERIFY(!a);
    QCOMPARE(a.status().code(), StatusCode::ParseError);
    QVERIFY(a.status().message().find("junk.npz") != std::string::npos);
    auto n = exec::parseNpy("\x93NUMPY\x01\x00\x10\x00{'descr': '<c8'}", "x");
    QVERIFY(!n);
}

void TestExecutor::prepareRefusesOpWithoutKernel()
{
    // x (input) -> DeformConv -> y: the CPU backend has no DeformConv kernel.
    std::vector<training::Tensor> tensors(2);
    tensors[0].id = TensorId(int32_t(0));
    tensors[0].name = "x";
    tensors[0].role = training::TensorRole::Input;
    tensors[0].preloaded = true;
    tensors[0].bytes = 16;
    tensors[1].id = TensorId(int32_t(1));
    tensors[1].name = "y";
    tensors[1].bytes = 16;
    training::Op op;
    op.id = OpId(int32_t(0));
    op.name = "/blocks.0/offsets/DeformConv";
    op.type = "DeformConv";
    op.inputs = {TensorId(int32_t(0))};
    op.outputs = {TensorId(int32_t(1))};
    auto tg = training::TrainingGraph::assemble({}, {op}, tensors);
    QVERIFY2(tg, tg.status().toString().c_str());
    auto backend = exec::makeCpuBackend();
    Status s = backend->prepare(*tg, nullptr);
    // expected: Unsupported, naming the op and its type
    QVERIFY(!s.isOk());
    QCOMPARE(s.code(), StatusCode::Unsupported);
    QVERIFY2(s.message().find("/blocks.0/offsets/DeformConv") != std::string::npos,
             s.message().c_str());
    QVERIFY(s.message().find("DeformConv") != std::string::npos);
}

void TestExecutor::allocatorCountsRequestedBytes()
{
    auto be = exec::makeCpuBackend();
    auto a = be->allocate(13);
    auto b = be->allocate(1000);
    QVERIFY(a && b);
    // expected: exactly 13 + 1000 bytes, no rounding
    QCOMPARE(be->memoryStats().bytesInUse, int64_t(1013));
    QVERIFY(be->release(*a).isOk());
    QCOMPARE(be->memoryStats().bytesInUse, int64_t(1000));
    QCOMPARE(be->memoryStats().peakBytes, int64_t(1013));
    be->resetPeak();
    QCOMPARE(be->memoryStats().peakBytes, int64_t(1000));
    QVERIFY(!be->release(*a).isOk()); // twice
    std::vector<std::byte> host(1000, std::byte{7}), back(1000);
    QVERIFY(be->upload(*b, host).isOk());
    QVERIFY(be->download(*b, back).isOk());
    QCOMPARE(back, host);
    QVERIFY(!be->upload(*b, std::span<const std::byte>(host.data(), 10)).isOk()); // wrong size
    QVERIFY(be->release(*b).isOk());
    QCOMPARE(be->memoryStats().bytesInUse, int64_t(0));
    QVERIFY(!be->memoryStats().deviceBytesInUse.has_value());
}

QTEST_GUILESS_MAIN(TestExecutor)
#include "tst_executor.moc"
