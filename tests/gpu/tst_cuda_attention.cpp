// --attention sdpa on the CUDA backend: the fused ScaledDotProductAttention (gpu/ops_attention.cpp,
// gpu/kernels/attention.cu) in GPT-2-style and LLaMA-style (grouped-query) networks, in the
// exporters' spellings and onnxruntime's / ONNX's attention nodes (tests/data/attention).
// Expected: the same loss (1e-5 relative) and every gradient (1e-4 relative, max-wise) as the CPU
// reference's sdpa run with the same inputs, whose gradients tst_attention_execution shows equal
// to the unfused graph's; the allocator's measured peak equals the simulator's to the byte, store
// all and with a checkpointing plan (chen-sqrtn, recomputing the fused op), whose gradients equal
// store-all's; attention dropout is refused by name with the way out. Without a CUDA device every
// test QSKIPs (the tiled algorithm itself is checked on the CPU by tests/exec/tst_attention_tiles).
#include "gpu_test_util.h"

#include "exec/exec_test_util.h"

#include "core/ops/attention.h"
#include "core/solvers/registry.h"

#include <QTest>

#include <cstdio>

using namespace remat;
using namespace remat::tests;

namespace {

std::string dataPath(const std::string &file)
{
    return toStd(sourceDir()) + "/tests/data/attention/" + file;
}

core::Expected<core::training::TrainingGraph> sdpaGraph(const core::ir::Graph &g)
{
    core::training::BuildOptions o;
    o.attention = core::training::Attention::Sdpa;
    o.inputGradients = false;
    return core::training::buildTrainingGraph(g, o);
}

int64_t predictedPeak(const core::training::TrainingGraph &tg, const core::schedule::Schedule &s)
{
    const core::cost::Costs costs = core::cost::rooflineCosts(tg);
    auto t = core::sim::simulate(s, tg, costs);
    return t ? t->peakBytes : -1;
}

} // namespace

class TestCudaAttention : public QObject
{
    Q_OBJECT

private slots:
    void sameAsCpuReference_data()
    {
        QTest::addColumn<QString>("file");
        for (const char *f : {"gpt2_style.onnx", "llama_style.onnx", "gpt2_dynamo.onnx",
                              "gpt2_tf2onnx.onnx", "gpt2_ort.onnx", "gpt2_onnx23.onnx",
                              "llama_dynamo.onnx", "llama_ort.onnx", "llama_onnx23.onnx"})
            QTest::newRow(f) << f;
    }

    void sameAsCpuReference()
    {
        QFETCH(QString, file);
        if (!haveCudaDevice())
            QSKIP("no CUDA device");
        auto g = core::onnx::importModel(dataPath(toStd(file)));
        QVERIFY2(g, g.status().toString().c_str());
        auto tg = sdpaGraph(*g);
        QVERIFY2(tg, tg.status().toString().c_str());
        int fused = 0;
        for (const core::training::Op &op : tg->ops())
            fused += op.type == core::ops::kAttentionOp;
        QVERIFY(fused > 0);
        const core::schedule::Schedule storeAll = core::schedule::storeAllSchedule(*tg);
        const core::exec::NpzArchive feed = randomFeed(*g);
        auto cpu = core::exec::makeCpuBackend();
        auto ref = runStep(*cpu, *tg, *g, storeAll, &feed);
        QVERIFY2(ref, ref.status().toString().c_str());
        auto be = gpu::makeCudaBackend(0);
        QVERIFY2(be, be.status().toString().c_str());
        auto run = runStep(**be, *tg, *g, storeAll, &feed);
        QVERIFY2(run, run.status().toString().c_str());

        const double lossDiff =
            std::abs(run->loss - ref->loss) / std::max(1.0, std::abs(ref->loss));
        double worst = 0;
        std::string worstName;
        int compared = 0;
        for (const auto &[name, want] : ref->gradients.entries()) {
            const core::exec::HostTensor *got = run->gradients.find(name);
            QVERIFY2(got, name.c_str());
            const double d = relDiff(*got, want);
            if (d > worst || std::isnan(d)) {
                worst = std::isnan(d) ? INFINITY : d;
                worstName = name;
            }
            ++compared;
        }
        const int64_t predicted = predictedPeak(*tg, storeAll);
        std::printf("%s: %d fused attention ops; loss cpu %.8g cuda %.8g; %d gradients, max rel "
                    "diff %.2e (%s); peak measured %lld B, predicted %lld B\n",
                    toStd(file).c_str(), fused, ref->loss, run->loss, compared, worst,
                    worstName.c_str(), (long long)run->measuredPeakBytes, (long long)predicted);
        QVERIFY2(lossDiff <= 1e-5, qPrintable(QString("loss differs by %1").arg(lossDiff)));
        QVERIFY(compared > 10);
        QVERIFY2(worst <= 1e-4, worstName.c_str());
        QCOMPARE(run->measuredPeakBytes, predicted);

        // a checkpointing plan recomputes the fused op's forward: same gradients, its own peak
        const core::cost::Costs costs = core::cost::rooflineCosts(*tg);
        const core::solvers::SolverRegistry reg = core::solvers::makeRegistry();
        const core::solvers::Solver *solver = reg.find("chen-sqrtn");
        QVERIFY(solver);
        core::solvers::SolveRequest req;
        req.graph = &*tg;
        req.costs = &costs;
        req.objective = core::solvers::Objective::MinPeak;
        auto plan = solver->solve(req);
        QVERIFY2(plan, plan.status().toString().c_str());
        auto planRun = runStep(**be, *tg, *g, plan->schedule, &feed);
        QVERIFY2(planRun, planRun.status().toString().c_str());
        auto cmp = core::exec::compareGradients(planRun->gradients, run->gradients);
        QVERIFY2(cmp, cmp.status().toString().c_str());
        std::printf("%s chen-sqrtn: %zu recomputes, peak measured %lld B, predicted %lld B, vs "
                    "store-all max rel %.2e\n",
                    toStd(file).c_str(), plan->timeline.recomputeSteps,
                    (long long)planRun->measuredPeakBytes, (long long)plan->timeline.peakBytes,
                    cmp->maxRelativeError);
        // dQ, dK, dV, dBias are added atomically in an order that varies from run to run
        QVERIFY2(cmp->maxRelativeError <= 1e-5, cmp->worstEntry.c_str());
        QCOMPARE(planRun->measuredPeakBytes, plan->timeline.peakBytes);
    }

    /// Attention dropout is the one --attention sdpa case the CUDA kernels refuse: by name, with
    /// the way out, before anything runs.
    void dropoutIsRefusedByName()
    {
        if (!haveCudaDevice())
            QSKIP("no CUDA device");
        auto g = core::onnx::importModel(dataPath("gpt2_style_dropout.onnx"));
        QVERIFY2(g, g.status().toString().c_str());
        auto tg = sdpaGraph(*g);
        QVERIFY2(tg, tg.status().toString().c_str());
        auto be = gpu::makeCudaBackend(0);
        QVERIFY2(be, be.status().toString().c_str());
        auto run = runStep(**be, *tg, *g, core::schedule::storeAllSchedule(*tg));
        QVERIFY(!run);
        const std::string msg = run.status().message();
        QVERIFY2(msg.find("dropout") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("--attention eager") != std::string::npos, msg.c_str());
    }
};

QTEST_MAIN(TestCudaAttention)
#include "tst_cuda_attention.moc"
