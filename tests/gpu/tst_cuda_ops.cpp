// The CUDA kernels against the CPU reference, op by op (ggml's test-backend-ops idea): each row
// builds a tiny forward graph around one op, derives its training step, runs it store-all on both
// backends with the same seeded data, and compares the output and every gradient.
// Expected: max relative difference <= 2e-4 per tensor (float32 both sides, no TF32; only the
// summation order differs), equal loss, equal allocator peaks (both count requested bytes).
// Without a CUDA device the comparisons QSKIP; the coverage, no-device and index-space checks run.
#include "cuda_op_cases.h"
#include "gpu_test_util.h"

#include "core/exec/cpu/kernel.h"
#include "gpu/kernels/nd.h"

#include <QTest>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

using namespace remat;
using namespace remat::tests;
using core::ValueId;
using core::ir::DataType;

class TestCudaOps : public QObject
{
    Q_OBJECT

private slots:
    void noDeviceIsAClearError();
    void coversTheCpuOps();
    void indexSpacesMerge();
    void opMatchesCpu_data();
    void opMatchesCpu();
};

void TestCudaOps::noDeviceIsAClearError()
{
    auto be = gpu::makeCudaBackend(0);
    if (!haveCudaDevice()) {
        // expected: Unsupported "no CUDA device: ..." (the CPU backend remains), no abort
        QVERIFY(!be);
        QCOMPARE(be.status().code(), core::StatusCode::Unsupported);
        QVERIFY(be.status().message().find("no CUDA device") != std::string::npos);
        return;
    }
    QVERIFY2(be, be.status().toString().c_str());
    QCOMPARE((*be)->id(), std::string("cuda"));
    // expected: a device that does not exist is refused by index
    auto bad = gpu::makeCudaBackend(1000);
    QVERIFY(!bad);
    QCOMPARE(bad.status().code(), core::StatusCode::InvalidArgument);
}

void TestCudaOps::coversTheCpuOps()
{
    const std::vector<std::string> cuda = gpu::cudaKernelTypes();
    auto has = [&](const std::string &t) {
        return std::binary_search(cuda.begin(), cuda.end(), t);
    };
    // 1. Every op type the corpus models train with (forward and gradient) has a CUDA kernel.
    //    Expected: none missing.
    for (const char *t : {"Conv",
                          "BatchNormalization",
                          "Relu",
                          "Add",
                          "MaxPool",
                          "GlobalAveragePool",
                          "Flatten",
                          "Gemm",
                          "Dropout",
                          "AveragePool",
                          "Concat",
                          "Pad",
                          "Clip",
                          "Unsqueeze",
                          "Transpose",
                          "Reshape",
                          "Mul",
                          "MatMul",
                          "Div",
                          "Slice",
                          "LayerNormalization",
                          "Gather",
                          "Softmax",
                          "Erf",
                          "Gelu",
                          "Where",
                          "Expand",
                          "Sub",
                          "Sqrt",
                          "Pow"}) {
        QVERIFY2(has(t), (std::string("no CUDA kernel for ") + t).c_str());
        QVERIFY2(has(std::string(t) + "Grad"),
                 (std::string("no CUDA gradient kernel for ") + t).c_str());
    }
    QVERIFY(has("Loss") && has("Accumulate"));
    // 2. The CPU reference's other op types: either a CUDA kernel, host shape arithmetic, or a
    //    clean refusal in prepare() naming the op (checked on a device). Listed, not failed, so
    //    the CPU reference can grow first.
    std::string gap;
    for (const std::string &t : core::exec::cpu::cpuKernelTypes())
        if (!has(t))
            gap += t + " ";
    std::printf("CUDA kernels: %zu op types; CPU-only (host shape arithmetic or refused): %s\n",
                cuda.size(), gap.c_str());
    if (!haveCudaDevice())
        return;
    // a training step with an op the CUDA backend has no kernel for is refused before anything
    // runs, naming it (an op type no backend knows stands in for whatever the CPU grows first)
    MiniGraph g;
    const ValueId y = g.op("Relu", {g.input("x", {4, 4})}, {4, 4});
    auto graph = g.build({y});
    QVERIFY2(graph, graph.status().toString().c_str());
    auto tg = core::training::buildTrainingGraph(*graph);
    QVERIFY2(tg, tg.status().toString().c_str());
    std::vector<core::training::Op> ops = tg->ops();
    bool renamed = false;
    for (auto &op : ops)
        if (op.type == "Relu") {
            op.type = "NoSuchKernelOp";
            renamed = true;
        }
    QVERIFY(renamed);
    auto unknown = core::training::TrainingGraph::assemble(tg->info(), ops, tg->tensors());
    QVERIFY2(unknown, unknown.status().toString().c_str());
    auto be = gpu::makeCudaBackend(0);
    QVERIFY2(be, be.status().toString().c_str());
    const core::Status st = (*be)->prepare(*unknown, &*graph);
    QCOMPARE(st.code(), core::StatusCode::Unsupported);
    QVERIFY(st.message().find("NoSuchKernelOp") != std::string::npos);
}

void TestCudaOps::indexSpacesMerge()
{
    using namespace gpu::kernels;
    // [2,3,4] contiguous copy: one dim of 24
    NdIter it;
    QVERIFY(buildIter({2, 3, 4}, {contiguousStrides({2, 3, 4}), contiguousStrides({2, 3, 4})}, it));
    QCOMPARE(it.rank, 1);
    QCOMPARE(it.dims[0], int64_t(24));
    // broadcasting [3,1] against [2,3,4]: strides 0 on dims 0 and 2
    const std::vector<int64_t> bs = broadcastStrides({3, 1}, {2, 3, 4});
    QCOMPARE(bs, (std::vector<int64_t>{0, 1, 0}));
    // a transpose [2,3,4] -> perm (0,2,1) cannot merge: three dims stay
    QVERIFY(buildIter({2, 4, 3}, {contiguousStrides({2, 4, 3}), {12, 1, 4}}, it));
    QCOMPARE(it.rank, 3);
    // size-1 dims drop out
    QVERIFY(buildIter({1, 5, 1}, {{5, 1, 1}}, it));
    QCOMPARE(it.rank, 1);
    QCOMPARE(it.count(), int64_t(5));
    std::vector<int64_t> out;
    QVERIFY(broadcastShapes({2, 1, 4}, {3, 1}, out));
    QCOMPARE(out, (std::vector<int64_t>{2, 3, 4}));
    QVERIFY(!broadcastShapes({2, 3}, {4}, out));
}

void TestCudaOps::opMatchesCpu_data()
{
    QTest::addColumn<int>("index");
    int i = 0;
    for (const auto &c : cudaOpCases())
        QTest::newRow(c.first) << i++;
}

void TestCudaOps::opMatchesCpu()
{
    QFETCH(int, index);
    const auto all = cudaOpCases();
    MiniGraph g;
    const ValueId out = all[size_t(index)].second(g);
    auto graph = g.build({out});
    QVERIFY2(graph, graph.status().toString().c_str());
    if (!haveCudaDevice()) {
        // REMAT_GPU_TEST_CHECK_CPU=1 checks the test graphs on the CPU reference alone (for
        // editing these cases on a machine without a GPU).
        if (qEnvironmentVariableIsSet("REMAT_GPU_TEST_CHECK_CPU")) {
            core::training::BuildOptions opt;
            opt.inputGradients = true;
            auto tg = core::training::buildTrainingGraph(*graph, opt);
            QVERIFY2(tg, tg.status().toString().c_str());
            auto cpu = core::exec::makeCpuBackend();
            const core::exec::NpzArchive feed = randomFeed(*graph);
            auto r = runStep(*cpu, *tg, *graph, core::schedule::storeAllSchedule(*tg), &feed);
            QVERIFY2(r, r.status().toString().c_str());
            std::printf("%-28s cpu: %zu entries, loss %.6g\n", all[size_t(index)].first,
                        r->gradients.entries().size(), r->loss);
        }
        QSKIP("no CUDA device");
    }
    const bool asymmetric = std::string(all[size_t(index)].first) == "conv_1d_asymmetric_pads";
    auto cmp = compareBackends(*graph, true,
                               asymmetric ? gpu::CudaBackendOptions{0, true, false}
                                          : gpu::CudaBackendOptions{});
    QVERIFY2(cmp, cmp.status().toString().c_str());
    std::printf("%-28s %2d tensors, max rel diff %.2e (%s), loss cpu %.6g cuda %.6g\n",
                all[size_t(index)].first, cmp->entries, cmp->worst, cmp->worstEntry.c_str(),
                cmp->lossCpu, cmp->lossCuda);
    QVERIFY(cmp->entries >= 2); // the output and at least one gradient
    QVERIFY2(cmp->worst <= 2e-4, ("differs from the CPU reference: " + cmp->worstEntry).c_str());
    QVERIFY(std::abs(cmp->lossCuda - cmp->lossCpu) <= 1e-4 * std::abs(cmp->lossCpu) + 1e-5);
    QCOMPARE(cmp->peakCuda, cmp->peakCpu);

    if (asymmetric) {
        // expected: Unsupported at prepare(), naming the op, when cuDNN would run it
        auto tg = core::training::buildTrainingGraph(*graph);
        QVERIFY2(tg, tg.status().toString().c_str());
        auto be = gpu::makeCudaBackend(0);
        QVERIFY2(be, be.status().toString().c_str());
        const core::Status st = (*be)->prepare(*tg, &*graph);
        if ((*be)->description().find("cuDNN") != std::string::npos) {
            QCOMPARE(st.code(), core::StatusCode::Unsupported);
            QVERIFY(st.message().find("asymmetric") != std::string::npos);
        }
    }

    // Convolutions also through the im2col + cuBLAS path (the one a build without cuDNN uses).
    if (std::string(all[size_t(index)].first).rfind("conv", 0) == 0) {
        gpu::CudaBackendOptions o;
        o.useCudnn = false;
        auto im2col = compareBackends(*graph, true, o);
        if (std::string(all[size_t(index)].first).find("3d") != std::string::npos) {
            // expected: the im2col path is 1-D and 2-D only, and says so naming the op
            QVERIFY(!im2col);
            QCOMPARE(im2col.status().code(), core::StatusCode::Unsupported);
            QVERIFY(im2col.status().message().find("1-D and 2-D") != std::string::npos);
            return;
        }
        QVERIFY2(im2col, im2col.status().toString().c_str());
        std::printf("%-28s im2col path: max rel diff %.2e (%s)\n", all[size_t(index)].first,
                    im2col->worst, im2col->worstEntry.c_str());
        QVERIFY2(im2col->worst <= 2e-4, ("im2col path differs: " + im2col->worstEntry).c_str());
    }
}

QTEST_GUILESS_MAIN(TestCudaOps)
#include "tst_cuda_ops.moc"
