// The CUDA backend on the corpus models with weights (mlp, tiny_vit, mobilenet_v2 with BN in
// training mode): a store-all step and a checkpointed step (chen-sqrtn, min-peak) against the CPU
// reference and against each other, plus the out-of-memory path.
// Expected: every gradient within 1e-3 relative of the CPU reference (BN-noise zero gradients by
// an absolute tolerance, as in tests/exec), the plan's gradients equal to store-all's (same
// deterministic kernels: <= 1e-6), and the allocator's peak equal to the simulator's to the byte.
// Without a CUDA device every test QSKIPs.
#include "gpu_test_util.h"

#include "exec/exec_test_util.h"

#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/solvers/registry.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;

namespace {

core::Expected<core::exec::ExecResult> runCuda(core::exec::Backend &be, const CorpusModel &m,
                                               const core::schedule::Schedule &s)
{
    return runStep(be, m.training, m.graph, s, &m.feed);
}

/// Worst relative difference over the reference entries; exact-zero gradients by absolute
/// tolerance relative to the largest gradient.
double worstGradientDiff(const core::exec::NpzArchive &ours, const core::exec::NpzArchive &ref,
                         std::string &worstName, std::string &missing)
{
    double largest = 0;
    for (const auto &[name, t] : ref.entries())
        if (name.rfind("grad", 0) == 0)
            for (double v : t.toDoubles())
                largest = std::max(largest, std::abs(v));
    double worst = 0;
    for (const auto &[name, t] : ref.entries()) {
        if (name.rfind("grad", 0) != 0)
            continue;
        const core::exec::HostTensor *o = ours.find(name);
        if (!o) {
            missing = name;
            return INFINITY;
        }
        double diff = 0, refMax = 0;
        const double rel = relativeError(*o, t, &diff, &refMax);
        // zero-gradient tensors pass while |diff| <= 1e-4 x the largest gradient
        const double score = refMax <= 1e-6 * largest ? diff / (1e-4 * largest) * 1e-3 : rel;
        if (score > worst) {
            worst = score;
            worstName = name;
        }
    }
    return worst;
}

} // namespace

class TestCudaModels : public QObject
{
    Q_OBJECT

private slots:
    void storeAllAndPlanMatchCpu_data();
    void storeAllAndPlanMatchCpu();
    void outOfMemoryIsReportedAndRecoverable();
};

void TestCudaModels::storeAllAndPlanMatchCpu_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("tiny_vit") << "tiny_vit";
    QTest::newRow("mobilenet_v2_b2_64") << "mobilenet_v2_b2_64";
}

void TestCudaModels::storeAllAndPlanMatchCpu()
{
    QFETCH(QString, model);
    if (!haveCudaDevice())
        QSKIP("no CUDA device");
    auto m = loadCorpusModel(toStd(model));
    if (!m && m.status().code() == core::StatusCode::NotFound)
        QSKIP("corpus not found");
    QVERIFY2(m, m.status().toString().c_str());
    const core::schedule::Schedule storeAll = core::schedule::storeAllSchedule((*m)->training);
    auto cpu = runOnCpu(**m, storeAll);
    QVERIFY2(cpu, cpu.status().toString().c_str());

    auto be = gpu::makeCudaBackend(0);
    QVERIFY2(be, be.status().toString().c_str());
    auto gpuRun = runCuda(**be, **m, storeAll);
    QVERIFY2(gpuRun, gpuRun.status().toString().c_str());

    std::string worstName, missing;
    const double d = worstGradientDiff(gpuRun->gradients, cpu->result.gradients, worstName, missing);
    QVERIFY2(missing.empty(), ("cuda run lacks " + missing).c_str());
    std::printf("%s store-all: max rel diff vs CPU %.2e (%s); loss cpu %.8g cuda %.8g; step %.4f s\n",
                toStd(model).c_str(), d, worstName.c_str(), cpu->result.loss, gpuRun->loss, gpuRun->stepSeconds);
    QVERIFY2(d <= 1e-3, ("gradient differs from the CPU reference: " + worstName).c_str());
    QVERIFY(std::abs(gpuRun->loss - cpu->result.loss) <= 1e-4 * std::abs(cpu->result.loss) + 1e-5);
    // memory: the exact byte count equals the simulator's peak
    std::printf("%s store-all: measured peak %lld B, simulated %lld B, device peak %lld B\n",
                toStd(model).c_str(), (long long)gpuRun->measuredPeakBytes, (long long)cpu->predictedPeak,
                (long long)gpuRun->devicePeakBytes.value_or(-1));
    QCOMPARE(gpuRun->measuredPeakBytes, cpu->predictedPeak);
    QVERIFY(gpuRun->devicePeakBytes.has_value());

    // a checkpointed plan: recomputes replay the same kernels, so gradients match store-all
    const core::cost::Costs costs = core::cost::rooflineCosts((*m)->training);
    const core::solvers::SolverRegistry reg = core::solvers::makeRegistry();
    const core::solvers::Solver *solver = reg.find("chen-sqrtn");
    QVERIFY(solver);
    core::solvers::SolveRequest req;
    req.graph = &(*m)->training;
    req.costs = &costs;
    req.objective = core::solvers::Objective::MinPeak;
    auto plan = solver->solve(req);
    QVERIFY2(plan, plan.status().toString().c_str());
    auto planRun = runCuda(**be, **m, plan->schedule);
    QVERIFY2(planRun, planRun.status().toString().c_str());
    auto cmp = core::exec::compareGradients(planRun->gradients, gpuRun->gradients);
    QVERIFY2(cmp, cmp.status().toString().c_str());
    std::printf("%s chen-sqrtn: %zu recomputes, peak %lld B (simulated %lld B), vs store-all max rel %.2e%s\n",
                toStd(model).c_str(), plan->timeline.recomputeSteps, (long long)planRun->measuredPeakBytes,
                (long long)plan->timeline.peakBytes, cmp->maxRelativeError, cmp->bitwiseEqual ? " (bitwise)" : "");
    QVERIFY2(cmp->maxRelativeError <= 1e-6, ("plan gradient differs: " + cmp->worstEntry).c_str());
    QCOMPARE(planRun->measuredPeakBytes, plan->timeline.peakBytes);
    const gpu::CudaRunFigures *fig = gpu::cudaRunFigures(**be);
    QVERIFY(fig);
    std::printf("%s: %lld ops, %.4f s device time, pool reserved peak %lld B, largest scratch %lld B\n",
                toStd(model).c_str(), (long long)fig->runs, fig->totalOpSeconds, (long long)fig->poolReservedPeak,
                (long long)fig->scratchPeakBytes);
}

void TestCudaModels::outOfMemoryIsReportedAndRecoverable()
{
    if (!haveCudaDevice())
        QSKIP("no CUDA device");
    const std::vector<gpu::DeviceInfo> devices = gpu::listDevices();
    auto be = gpu::makeCudaBackend(0);
    QVERIFY2(be, be.status().toString().c_str());

    // 1. a single allocation larger than the device: ResourceExhausted, nothing held afterwards
    auto big = (*be)->allocate(devices[0].totalBytes + (int64_t(1) << 30));
    QVERIFY(!big);
    QCOMPARE(big.status().code(), core::StatusCode::ResourceExhausted);
    QCOMPARE((*be)->memoryStats().bytesInUse, int64_t(0));

    // 2. a training step whose store-all peak exceeds the device: resnet50 at a batch sized from
    //    the simulator (1.5x the device's memory; the peak is affine in the batch). The executor
    //    stops at the step that ran out, naming it, and frees what the step allocated.
    const std::string path = toStd(sharedPath("corpus/graph_only/resnet50.onnx"));
    auto peakAt = [&](int64_t batch) -> core::Expected<int64_t> {
        core::onnx::ImportOptions io;
        io.batch = batch;
        REMAT_ASSIGN_OR_RETURN(core::ir::Graph g, core::onnx::importModel(path, io));
        REMAT_ASSIGN_OR_RETURN(core::training::TrainingGraph t, core::training::buildTrainingGraph(g));
        REMAT_ASSIGN_OR_RETURN(core::sim::Timeline tl,
                               core::sim::simulate(core::schedule::storeAllSchedule(t), t,
                                                   core::cost::rooflineCosts(t), {.recordPoints = false}));
        return tl.peakBytes;
    };
    auto p8 = peakAt(8), p16 = peakAt(16);
    if (!p8 && p8.status().code() == core::StatusCode::NotFound)
        QSKIP("corpus not found");
    QVERIFY2(p8 && p16, (p8 ? p16 : p8).status().toString().c_str());
    const int64_t perSample = std::max<int64_t>(1, (*p16 - *p8) / 8);
    core::onnx::ImportOptions io;
    io.batch = (3 * devices[0].totalBytes / 2 - *p8) / perSample + 8;
    auto graph = core::onnx::importModel(path, io);
    QVERIFY2(graph, graph.status().toString().c_str());
    auto tg = core::training::buildTrainingGraph(*graph);
    QVERIFY2(tg, tg.status().toString().c_str());
    const core::schedule::Schedule s = core::schedule::storeAllSchedule(*tg);
    {
        auto r = runStep(**be, *tg, *graph, s);
        QVERIFY(!r);
        std::printf("batch %lld: %s\n", (long long)io.batch, r.status().toString().c_str());
        QCOMPARE(r.status().code(), core::StatusCode::ResourceExhausted);
    }

    // 3. the same backend still runs a model afterwards, with the right result
    auto m = loadCorpusModel("mlp");
    QVERIFY2(m, m.status().toString().c_str());
    const core::schedule::Schedule small = core::schedule::storeAllSchedule((*m)->training);
    auto cpu = runOnCpu(**m, small);
    QVERIFY2(cpu, cpu.status().toString().c_str());
    auto again = runCuda(**be, **m, small);
    QVERIFY2(again, again.status().toString().c_str());
    QVERIFY(std::abs(again->loss - cpu->result.loss) <= 1e-4 * std::abs(cpu->result.loss) + 1e-5);
}

QTEST_GUILESS_MAIN(TestCudaModels)
#include "tst_cuda_models.moc"
