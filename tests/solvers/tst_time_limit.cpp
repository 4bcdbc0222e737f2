// The search solvers honour their time limit within a second: checkmate-lp on a graph whose LP
// relaxation takes longer than the limit (a random 160-op DAG written here), checkmate-milp and
// offload beside it, and the published ResNet50 and 250-node random graphs when ../shared is beside the clone.
// Compare all relies on it (issue 37, item 20): checkmate-lp at a 3 s limit took 35.6 s on the
// corpus's resnet50 at batch 2 (`remat solve --budget-ratio 0.85`, a loaded machine): Clp's own
// limit is CPU time read at its checkpoints (at least 1 s a LP), the roundings did not look at
// the clock, the greedy fallback had 10 s of its own, and the registered-solver fallback got at
// least half a second more after the limit. Now 3.2 s.
// Expected: each returns a plan (status timed out or better, never an error) no later than
// limit + 1 s, and checkmate-lp says it stopped at the limit when its LP did not finish.
#include "common/test_support.h"
#include "random_graphs.h"

#include "core/io/node_link.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"

#include <QtTest>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

using namespace remat::core;
using namespace remat::core::solvers;

namespace {

struct Case
{
    const training::TrainingGraph *graph = nullptr;
    const cost::Costs *costs = nullptr;
};

/// Solves with `id` at 70% of store-all's peak (min-time) within `limit`; the wall time.
double timedSolve(const Case &c, const std::string &id, double limit, Expected<Plan> &out)
{
    auto ref = sim::simulate(schedule::storeAllSchedule(*c.graph), *c.graph, *c.costs,
                             {.recordPoints = false});
    if (!ref)
        return -1;
    const auto registry = makeRegistry();
    const Solver *s = registry.find(id);
    if (!s)
        return -1;
    SolveRequest r;
    r.graph = c.graph;
    r.costs = c.costs;
    r.objective = Objective::MinTime;
    const int64_t weights = ref->peakBytes - ref->activationPeakBytes;
    r.budgetBytes = weights + int64_t(0.7 * double(ref->activationPeakBytes));
    r.timeLimitSeconds = limit;
    const auto begin = std::chrono::steady_clock::now();
    out = s->solve(r);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

} // namespace

class TstTimeLimit : public QObject
{
    Q_OBJECT
private:
    void check(const Case &c, const char *what, double limit)
    {
        const auto ids = makeRegistry().ids();
        for (const char *id : {"checkmate-lp", "checkmate-milp", "offload"}) {
            if (std::find(ids.begin(), ids.end(), id) == ids.end())
                continue; // built without CBC
            Expected<Plan> plan = makeError(StatusCode::Internal, "not run");
            const double wall = timedSolve(c, id, limit, plan);
            const std::string line =
                fmt::format("{} on {} within {} s: {:.2f} s wall, {}", id, what, limit, wall,
                            plan ? std::string(solveStatusName(plan->status)) + "; " + plan->note
                                 : plan.status().toString());
            qInfo("%s", line.c_str());
            QVERIFY2(wall >= 0, line.c_str());
            QVERIFY2(wall <= limit + 1.0, line.c_str());
            QVERIFY2(plan.hasValue(), line.c_str());
        }
    }

private slots:
    // A 160-op random DAG: Checkmate's LP has ~1.8e5 columns, seconds of simplex; the limit is
    // a second, so the LP is cut short and the answer says it stopped there.
    void randomDagLpLongerThanTheLimit()
    {
        remat::tests::RandomGraphOptions o;
        o.forwardOps = 160;
        o.dag = true;
        const remat::tests::RandomGraph rg = remat::tests::randomTrainingGraph(7, o);
        const Case c{&rg.graph, &rg.costs};
        check(c, "a random 160-op DAG", 1.0);
        Expected<Plan> plan = makeError(StatusCode::Internal, "not run");
        timedSolve(c, "checkmate-lp", 1.0, plan);
        QVERIFY(plan.hasValue());
        // The LP (about 1.8e5 columns) did not finish in the second (else this graph tests
        // nothing): the answer is a fallback plan, marked as stopped at the limit.
        QVERIFY2(plan->status == SolveStatus::TimedOut, plan->note.c_str());
    }

    // The published ResNet50 training graph (353 nodes) and the 250-node random layered graph
    // from ../shared/benchmarks, at Compare all's 3 s limit (resnet50 from the corpus at batch 2
    // is timed in tests/bench/compare_all.md: this suite links no ONNX pipeline).
    void benchmarkGraphs_data()
    {
        QTest::addColumn<QString>("graph");
        QTest::newRow("ResNet50") << "benchmarks/remat-graphs/ResNet50_256_224x224_train.json";
        QTest::newRow("random n250")
            << "benchmarks/remat-graphs/random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json";
    }
    void benchmarkGraphs()
    {
        QFETCH(QString, graph);
        const QString path = remat::tests::sharedPath(graph);
        if (!QFileInfo::exists(path))
            QSKIP("benchmark graphs not found (../shared/benchmarks)");
        auto g = io::readNodeLinkGraph(remat::tests::toStd(path));
        QVERIFY2(g.hasValue(), g.hasValue() ? "" : g.status().toString().c_str());
        check(Case{&g->graph, &g->costs}, qPrintable(graph), 3.0);
    }
};

QTEST_GUILESS_MAIN(TstTimeLimit)
#include "tst_time_limit.moc"
