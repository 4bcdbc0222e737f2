// feng-huang against a plain reference of the authors' algorithm (feng_huang_reference.h, written
// from ../shared/research/solvers-optimal.md section 1.2, fed the same graph and vertex costs as
// section 1.5 proposes for a side-by-side run).
// Expected:
// - on 150 random training DAGs (random_graphs.h, through fengHuangGraph) and 2000 random plain
//   single-source / single-sink DAGs (parallel edges, zero costs, dense parts that need complicate
//   divisions), solveFengHuang's objective equals the reference's exactly wherever the reference
//   answers, and ours never takes its uncovered-piece fallback there (where the authors' code
//   would raise on an uncovered complicate piece, or crash on an empty max-term set, there is
//   nothing to compare; those cases are counted: none of the first 20000 seeds raises);
// - the registered solver reports that objective as its bound;
// - the same on the training graphs of resnet18, resnet50 and densenet121 (corpus, batch 2);
// - the registered solver finishes with a validated plan on every corpus model and every
//   onnx-light file (batch 1; densenet121 and vit_b_16 included; the search is iterative).
#include "common/costed_model.h"
#include "feng_huang_reference.h"
#include "random_graphs.h"

#include "core/sim/simulator.h"
#include "core/solvers/feng_huang.h"
#include "core/solvers/lowering.h"
#include "core/solvers/registry.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QtTest>

#include <random>

using namespace remat::core;
using namespace remat::core::solvers;
using remat::tests::FengHuangReference;
using remat::tests::RefOutcome;
using remat::tests::RefStatus;

namespace {

/// A random DAG in the authors' form: vertex 0 the source, n-1 the sink, every vertex fed by an
/// earlier one (mostly its predecessor, so chains form), extra inputs (sometimes a parallel
/// edge), and every vertex without a consumer feeding the sink.
FengHuangGraph randomPlainDag(uint32_t seed)
{
    std::mt19937 rng(seed);
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int n = uni(3, 16);
    const int density = uni(0, 3); // 0: nearly a chain .. 3: dense
    FengHuangGraph g;
    g.source = 0;
    g.sink = n - 1;
    for (int v = 0; v < n; ++v) {
        g.cost.push_back(uni(0, 9) == 0 ? 0.0 : double(uni(1, 100)));
        g.tensor.push_back(TensorId());
    }
    std::vector<char> hasOut(n, 0);
    for (int v = 1; v < n; ++v) {
        const int first = uni(0, 3) == 0 ? uni(0, v - 1) : v - 1;
        g.edges.emplace_back(first, v);
        hasOut[first] = 1;
        const int extra = uni(0, 5) < density ? uni(1, density) : 0;
        for (int k = 0; k < extra; ++k) {
            const int u = uni(0, 7) == 0 ? first : uni(0, v - 1); // sometimes a parallel edge
            g.edges.emplace_back(u, v);
            hasOut[u] = 1;
        }
    }
    for (int v = 1; v < n - 1; ++v)
        if (!hasOut[v])
            g.edges.emplace_back(v, n - 1);
    return g;
}

struct Tally
{
    int compared = 0, coverFailed = 0, noTerms = 0, withComplicate = 0;
};

/// Compares solveFengHuang with the reference; false (with a message) on a mismatch.
bool compareOne(const FengHuangGraph &g, const std::string &what, Tally *tally,
                double *ours = nullptr)
{
    FengHuangReference ref(g);
    const RefOutcome o = ref.solve();
    if (o.status == RefStatus::CoverFailed) {
        tally->coverFailed += 1;
        return true;
    }
    if (o.status == RefStatus::NoMaxTerms) {
        tally->noTerms += 1;
        return true;
    }
    auto r = solveFengHuang(g, std::vector<char>(g.cost.size(), 0), StopToken(), 1);
    if (!r) {
        qWarning("%s: %s", what.c_str(), r.status().toString().c_str());
        return false;
    }
    tally->compared += 1;
    tally->withComplicate += o.complicateLevels > 0 ? 1 : 0;
    if (r->coverFallback) { // the reference covered every complicate piece
        qWarning("%s: ours fell back on an uncovered complicate piece", what.c_str());
        return false;
    }
    if (ours)
        *ours = r->best;
    if (r->best != o.best) {
        qWarning("%s: ours %.17g, reference %.17g (m %.17g, %zu GCs, %zu max terms)", what.c_str(),
                 r->best, o.best, o.bestM, o.gcs.size(), o.maxTerms);
        return false;
    }
    return true;
}

} // namespace

class TstFengHuangReference : public QObject
{
    Q_OBJECT
private slots:
    void randomTrainingDags()
    {
        const auto registry = makeRegistry();
        Tally tally;
        int bounds = 0;
        for (uint32_t seed = 1; seed <= 150; ++seed) {
            remat::tests::RandomGraphOptions o;
            o.dag = true;
            o.forwardOps = 4 + int(seed % 11); // 4..14 forward ops
            auto rg = remat::tests::randomTrainingGraph(seed * 7919u, o);
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            const FengHuangGraph g = fengHuangGraph(*facts);
            double ours = -1;
            const std::string what = "training DAG seed " + std::to_string(seed);
            QVERIFY2(compareOne(g, what, &tally, &ours), what.c_str());
            if (ours >= 0) {
                // The registered solver states the same objective as its bound.
                SolveRequest r;
                r.graph = &rg.graph;
                r.costs = &rg.costs;
                r.settings["post-check"] =
                    "off"; // the search's own objective, not the guard's answer
                auto p = registry.find("feng-huang")->solve(r);
                QVERIFY2(p.hasValue(), what.c_str());
                QCOMPARE(p->bound, ours);
                QVERIFY(sim::simulate(p->schedule, rg.graph, rg.costs).hasValue());
                ++bounds;
            }
        }
        qInfo("training DAGs: %d compared (%d with complicate pieces), %d cover failures, %d "
              "without max terms; bound checked on %d",
              tally.compared, tally.withComplicate, tally.coverFailed, tally.noTerms, bounds);
        QVERIFY(tally.compared >= 100);
    }

    void randomPlainDags()
    {
        Tally tally;
        for (uint32_t seed = 1; seed <= 2000; ++seed) {
            const FengHuangGraph g = randomPlainDag(seed);
            const std::string what = "plain DAG seed " + std::to_string(seed);
            QVERIFY2(compareOne(g, what, &tally), what.c_str());
        }
        qInfo("plain DAGs: %d compared (%d with complicate pieces), %d cover failures, %d "
              "without max terms",
              tally.compared, tally.withComplicate, tally.coverFailed, tally.noTerms);
        QVERIFY(tally.compared >= 1900);
        QVERIFY(tally.withComplicate >= 300); // the complicate division is really exercised
    }

    void corpusModels()
    {
        Tally tally;
        for (const char *name : {"resnet18", "resnet50", "densenet121"}) {
            const QString path =
                remat::tests::sharedPath(QString("corpus/graph_only/%1.onnx").arg(name));
            if (!QFileInfo::exists(path))
                QSKIP("corpus not found");
            auto m = remat::tests::loadCostedModel(path, 2);
            QVERIFY2(m.hasValue(), m.status().toString().c_str());
            auto facts = GraphFacts::build(m->graph);
            QVERIFY(facts.hasValue());
            const FengHuangGraph g = fengHuangGraph(*facts);
            QElapsedTimer timer;
            timer.start();
            double ours = -1;
            QVERIFY2(compareOne(g, name, &tally, &ours), name);
            QVERIFY2(ours > 0, name); // compared, not skipped
            qInfo("%s b2: %zu vertices, %zu edges, objective %.0f bytes (%lld ms)", name,
                  g.cost.size(), g.edges.size(), ours, static_cast<long long>(timer.elapsed()));
        }
    }

    void finishesEverywhere()
    {
        // Expected: a plan, validated by the simulator, for every corpus and onnx-light model.
        QStringList files;
        for (const char *dir : {"corpus/graph_only", "onnx-light"}) {
            QDir d(remat::tests::sharedPath(dir));
            for (const QString &f : d.entryList({"*.onnx"}, QDir::Files, QDir::Name))
                files << d.filePath(f);
        }
        if (files.isEmpty())
            QSKIP("shared models not found");
        const auto registry = makeRegistry();
        for (const QString &f : files) {
            auto m = remat::tests::loadCostedModel(f, 1);
            QVERIFY2(m.hasValue(),
                     qPrintable(f + ": " + QString::fromStdString(m.status().toString())));
            const training::TrainingGraph *tg = &m->graph;
            const cost::Costs &costs = m->costs;
            SolveRequest r;
            r.graph = tg;
            r.costs = &costs;
            QElapsedTimer timer;
            timer.start();
            auto p = registry.find("feng-huang")->solve(r);
            QVERIFY2(p.hasValue(),
                     qPrintable(f + ": " + QString::fromStdString(p.status().toString())));
            QVERIFY2(p->status == SolveStatus::Feasible || p->status == SolveStatus::Optimal,
                     qPrintable(f));
            QVERIFY2(sim::simulate(p->schedule, *tg, costs).hasValue(), qPrintable(f));
            QVERIFY(p->timeline.activationPeakBytes > 0);
            qInfo("%s: %d forward ops, %lld ms, bound %.0f", qPrintable(QFileInfo(f).fileName()),
                  int(tg->forwardOpCount()), static_cast<long long>(timer.elapsed()), p->bound);
        }
    }
};

QTEST_GUILESS_MAIN(TstFengHuangReference)
#include "tst_feng_huang_reference.moc"
