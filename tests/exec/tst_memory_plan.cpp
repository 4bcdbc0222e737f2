// Static memory planning (core/exec/memory_plan.h).
// Expected: on random lifetimes, buffers alive at the same time never share an address, offsets
// are aligned and the arena is at least the most bytes alive at once; on the allocation traces of
// real training steps (every corpus model with weights, store-all and a chen-sqrtn plan, recorded
// from the CPU executor) the arena is within 10% of that lower bound.
#include "exec_test_util.h"

#include "core/exec/memory_plan.h"
#include "core/solvers/registry.h"

#include <QTest>

#include <cstdio>
#include <map>
#include <random>

using namespace remat;
using namespace remat::tests;
using core::exec::BlockLifetime;
using core::exec::MemoryPlan;

namespace {

/// Empty when no two blocks alive together overlap in the arena, else the first pair.
std::string firstOverlap(const std::vector<BlockLifetime> &blocks, const MemoryPlan &plan,
                         int64_t alignment)
{
    for (size_t i = 0; i < blocks.size(); ++i) {
        if (plan.offsets[i] % alignment != 0 || plan.offsets[i] < 0)
            return "misaligned block " + std::to_string(i);
        if (plan.offsets[i] + blocks[i].bytes > plan.arenaBytes)
            return "block " + std::to_string(i) + " outside the arena";
        for (size_t j = i + 1; j < blocks.size(); ++j) {
            const bool together =
                blocks[i].begin < blocks[j].end && blocks[j].begin < blocks[i].end;
            const bool share =
                plan.offsets[i] < plan.offsets[j] + std::max<int64_t>(1, blocks[j].bytes) &&
                plan.offsets[j] < plan.offsets[i] + std::max<int64_t>(1, blocks[i].bytes);
            if (together && share)
                return "blocks " + std::to_string(i) + " and " + std::to_string(j);
        }
    }
    return {};
}

/// The CPU backend, recording every allocation's lifetime in event order.
class RecordingBackend final : public core::exec::Backend
{
public:
    explicit RecordingBackend(std::unique_ptr<core::exec::Backend> inner)
        : m_inner(std::move(inner))
    {
    }

    std::vector<BlockLifetime> blocks;
    bool recording = false;

    std::string id() const override { return m_inner->id(); }
    std::string description() const override { return m_inner->description(); }
    core::Status prepare(const core::training::TrainingGraph &g, const core::ir::Graph *f) override
    {
        return m_inner->prepare(g, f);
    }
    core::Expected<core::exec::Buffer> allocate(int64_t bytes) override
    {
        auto b = m_inner->allocate(bytes);
        if (b && recording) {
            m_open[b->id] = blocks.size();
            blocks.push_back({bytes, m_event++, -1});
        }
        return b;
    }
    core::Status release(core::exec::Buffer buffer) override
    {
        if (auto it = m_open.find(buffer.id); recording && it != m_open.end()) {
            blocks[it->second].end = m_event++;
            m_open.erase(it);
        }
        return m_inner->release(buffer);
    }
    core::Status upload(core::exec::Buffer b, std::span<const std::byte> h) override
    {
        return m_inner->upload(b, h);
    }
    core::Status download(core::exec::Buffer b, std::span<std::byte> h) override
    {
        return m_inner->download(b, h);
    }
    core::Status run(const core::exec::OpCall &call) override { return m_inner->run(call); }
    core::exec::MemoryStats memoryStats() const override { return m_inner->memoryStats(); }
    void resetPeak() override { m_inner->resetPeak(); }
    core::Status zero(core::exec::Buffer b) override { return m_inner->zero(b); }

    /// Closes what the step left allocated (the gradients it hands back).
    void finish()
    {
        for (const auto &[id, index] : m_open)
            blocks[index].end = m_event;
        m_open.clear();
    }

private:
    std::unique_ptr<core::exec::Backend> m_inner;
    std::map<uint64_t, size_t> m_open;
    int64_t m_event = 0;
};

} // namespace

class TestMemoryPlan : public QObject
{
    Q_OBJECT

private slots:
    void randomLifetimes();
    void trainingSteps_data();
    void trainingSteps();
};

void TestMemoryPlan::randomLifetimes()
{
    std::mt19937_64 rng(7);
    double worst = 1;
    for (int trial = 0; trial < 60; ++trial) {
        const int n = 5 + int(rng() % 120);
        std::vector<BlockLifetime> blocks(static_cast<size_t>(n));
        for (BlockLifetime &b : blocks) {
            b.begin = int64_t(rng() % 200);
            b.end = b.begin + 1 + int64_t(rng() % 60);
            b.bytes =
                int64_t(rng() % 5) == 0 ? 0 : int64_t(1 + rng() % (trial % 2 ? 100000 : 3000));
        }
        const MemoryPlan plan = core::exec::planOffsets(blocks, 256);
        const std::string overlap = firstOverlap(blocks, plan, 256);
        QVERIFY2(overlap.empty(), (std::to_string(trial) + ": " + overlap).c_str());
        QVERIFY(plan.arenaBytes >= plan.liveBytesPeak);
        worst = std::max(worst, double(plan.arenaBytes) / double(plan.liveBytesPeak));
    }
    std::printf("random lifetimes: worst arena / live peak %.3f\n", worst);
}

void TestMemoryPlan::trainingSteps_data()
{
    QTest::addColumn<QString>("model");
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("tiny_vit") << "tiny_vit";
    QTest::newRow("mobilenet_v2_b2_64") << "mobilenet_v2_b2_64";
}

void TestMemoryPlan::trainingSteps()
{
    QFETCH(QString, model);
    auto m = loadCorpusModel(toStd(model));
    REMAT_REQUIRE_CORPUS_MODEL(m);
    const core::cost::Costs costs = core::cost::rooflineCosts((*m)->training);
    const core::solvers::SolverRegistry reg = core::solvers::makeRegistry();
    core::solvers::SolveRequest req;
    req.graph = &(*m)->training;
    req.costs = &costs;
    req.objective = core::solvers::Objective::MinPeak;
    auto plan = reg.find("chen-sqrtn")->solve(req);
    QVERIFY2(plan, plan.status().toString().c_str());

    for (const auto &[name, schedule] :
         {std::pair{"store-all", core::schedule::storeAllSchedule((*m)->training)},
          std::pair{"chen-sqrtn", plan->schedule}}) {
        RecordingBackend backend(core::exec::makeCpuBackend());
        core::exec::Executor ex(backend, (*m)->training, (*m)->graph);
        core::exec::ExecInputs in;
        in.feed = (*m)->feed;
        QVERIFY(ex.prepare(in).isOk());
        backend.recording = true;
        auto r = ex.run(schedule);
        QVERIFY2(r, r.status().toString().c_str());
        backend.finish();
        const MemoryPlan mp = core::exec::planOffsets(backend.blocks, 256);
        const std::string overlap = firstOverlap(backend.blocks, mp, 256);
        QVERIFY2(overlap.empty(), overlap.c_str());
        const double ratio = double(mp.arenaBytes) / double(mp.liveBytesPeak);
        std::printf("%s %s: %zu buffers, measured peak %lld B, live aligned peak %lld B, arena "
                    "%lld B (%.3f)\n",
                    toStd(model).c_str(), name, backend.blocks.size(),
                    (long long)r->measuredPeakBytes, (long long)mp.liveBytesPeak,
                    (long long)mp.arenaBytes, ratio);
        QVERIFY(mp.liveBytesPeak >= r->measuredPeakBytes - r->timeline.weightBytes);
        QVERIFY2(ratio <= 1.10, "arena more than 10% above the live peak");
    }
}

QTEST_GUILESS_MAIN(TestMemoryPlan)
#include "tst_memory_plan.moc"
