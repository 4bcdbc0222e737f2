// Every solver against exhaustive search on 240 random small training graphs (120 DAGs with
// skip connections and multi-input ops, 120 chains), all built with TrainingGraph::assemble.
// Expected, per graph:
// - every plan of every solver validates (the simulator re-checks it);
// - no checkpoint-set solver's simulated peak is below the exhaustive min-peak over all
//   checkpoint sets under the same lowering (min-peak), and none has less recompute than the
//   exhaustive min-time optimum at the same budget (min-time), nor breaks the budget unless it
//   says infeasible;
// - hong-dp's proxy optimum equals the exhaustive optimum of its objective over boundary sets;
// - feng-huang's objective equals the exhaustive optimum of its objective on chains;
// - revolve's table equals Griewank & Walther's closed form.
#include "random_graphs.h"

#include "core/sim/simulator.h"
#include "core/solvers/brute_force.h"
#include "core/solvers/feng_huang.h"
#include "core/solvers/hong.h"
#include "core/solvers/lowering.h"
#include "core/solvers/registry.h"
#include "core/solvers/revolve.h"

#include <QtTest>

#include <map>

using namespace remat::core;
using namespace remat::core::solvers;

namespace {

bool isScheduleSolver(const std::string &id) { return id == "revolve" || id == "rotor"; }

/// Feng & Huang's objective on a path graph: sum of chosen interior vertices + the largest cost
/// strictly between consecutive chosen vertices (source and sink always chosen, not counted).
double fhChainOptimum(const FengHuangGraph &g, bool *isPath)
{
    // Walk the path from the source.
    std::vector<int32_t> next(g.cost.size(), -1);
    std::vector<int> outDeg(g.cost.size(), 0);
    for (auto [a, b] : g.edges) {
        next[a] = b;
        outDeg[a] += 1;
    }
    std::vector<int32_t> path{g.source};
    while (path.back() != g.sink) {
        const int32_t v = path.back();
        if (outDeg[v] != 1) {
            *isPath = false;
            return 0;
        }
        path.push_back(next[v]);
    }
    *isPath = path.size() == g.cost.size();
    const size_t inner = path.size() - 2;
    double best = 1e300;
    for (uint64_t mask = 0; mask < (uint64_t(1) << inner); ++mask) {
        double sum = 0, run = 0, cur = 0;
        for (size_t i = 1; i + 1 < path.size(); ++i) {
            if (mask >> (i - 1) & 1) {
                sum += g.cost[path[i]];
                run = std::max(run, cur);
                cur = 0;
            } else {
                cur += g.cost[path[i]];
            }
        }
        run = std::max(run, cur);
        best = std::min(best, sum + run);
    }
    return best;
}

} // namespace

class TstBruteForceAgreement : public QObject
{
    Q_OBJECT
private slots:
    void revolveBinomial()
    {
        // Expected: the DP table equals t(l, s) = r*l - C(s+r, s+1) for l <= 60, s <= 6.
        RevolveTable t(60, 6);
        for (int s = 1; s <= 6; ++s)
            for (int l = 1; l <= 60; ++l)
                QCOMPARE(t.forwardSteps(l, s), revolveBinomialFormula(l, s));
        QCOMPARE(revolveBinomialFormula(10, 1), int64_t(45)); // l(l-1)/2 with one slot
    }

    void agreement()
    {
        const auto registry = makeRegistry();
        std::map<std::string, int> equalMinPeak, ran;
        int graphs = 0, rotorBelow = 0, fhChains = 0, hongChains = 0;
        for (uint32_t seed = 1; seed <= 240; ++seed) {
            const bool dag = seed <= 120;
            remat::tests::RandomGraphOptions o;
            o.dag = dag;
            o.forwardOps = 4 + int(seed % 9); // 4..12 forward ops
            o.savedState = dag || seed % 2 == 0;
            auto rg = remat::tests::randomTrainingGraph(seed, o);
            ++graphs;
            auto bf = bruteForceCheckpoints(rg.graph, rg.costs, {});
            QVERIFY2(bf.hasValue(), bf.status().toString().c_str());
            const int64_t optPeak = bf->minPeak.timeline.peakBytes;
            const int64_t budget = optPeak + (bf->minPeak.timeline.peakBytes / 10);
            BruteForceOptions bo;
            bo.budgetBytes = budget;
            auto bfTime = bruteForceCheckpoints(rg.graph, rg.costs, bo);
            QVERIFY(bfTime.hasValue() && bfTime->minTime.found);
            for (const auto &s : registry.solvers()) {
                if (!remat::tests::isCheckpointSolver(s->id()))
                    continue;
                for (Objective obj : {Objective::MinPeak, Objective::MinTime}) {
                    SolveRequest r;
                    r.graph = &rg.graph;
                    r.costs = &rg.costs;
                    r.objective = obj;
                    r.budgetBytes = budget;
                    auto p = s->solve(r);
                    const std::string what =
                        s->id() + " seed " + std::to_string(seed) + " " + objectiveName(obj);
                    QVERIFY2(p.hasValue(), (what + ": " + p.status().toString()).c_str());
                    QVERIFY2(sim::simulate(p->schedule, rg.graph, rg.costs).hasValue(),
                             what.c_str());
                    ran[s->id()] += 1;
                    if (obj == Objective::MinPeak) {
                        if (isScheduleSolver(s->id())) {
                            rotorBelow += p->timeline.peakBytes < optPeak ? 1 : 0;
                            equalMinPeak[s->id() + " (<=)"] +=
                                p->timeline.peakBytes <= optPeak ? 1 : 0;
                            continue; // multi-level schedules are outside the set space
                        }
                        QVERIFY2(p->timeline.peakBytes >= optPeak,
                                 (what + " beats the exhaustive optimum").c_str());
                        equalMinPeak[s->id()] += p->timeline.peakBytes == optPeak ? 1 : 0;
                    } else {
                        if (p->status == SolveStatus::Infeasible) {
                            QVERIFY2(!p->note.empty(), what.c_str());
                            continue;
                        }
                        QVERIFY2(p->timeline.peakBytes <= budget,
                                 (what + " breaks the budget").c_str());
                        if (!isScheduleSolver(s->id()))
                            QVERIFY2(p->timeline.recomputeSeconds >=
                                         bfTime->minTime.timeline.recomputeSeconds - 1e-9,
                                     (what + " beats the exhaustive min-time optimum").c_str());
                    }
                }
            }
            // hong-dp: its objective's optimum over every boundary subset.
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            const ChainView view = facts->chainView(&rg.costs);
            const size_t n = view.boundaryCount();
            if (n <= 14) {
                double best = 1e300;
                for (uint64_t mask = 0; mask < (uint64_t(1) << n); ++mask) {
                    std::vector<int> chosen;
                    for (size_t k = 0; k < n; ++k)
                        if (mask >> k & 1)
                            chosen.push_back(int(k));
                    best = std::min(best, hongRunObjective(view, chosen));
                }
                SolveRequest r;
                r.graph = &rg.graph;
                r.costs = &rg.costs;
                r.settings["post-check"] =
                    "off"; // the search's own objective, not the guard's answer
                auto p = registry.find("hong-dp")->solve(r);
                QVERIFY(p.hasValue());
                QCOMPARE(p->bound, best);
                ++hongChains;
            }
            // feng-huang: exact on chains for its own objective.
            const FengHuangGraph fg = fengHuangGraph(*facts);
            bool path = false;
            const double fhBest = fhChainOptimum(fg, &path);
            if (path) {
                auto r = solveFengHuang(fg, std::vector<char>(fg.cost.size(), 0), StopToken(), 1);
                QVERIFY(r.hasValue());
                QCOMPARE(r->best, fhBest);
                ++fhChains;
            }
        }
        qInfo("graphs: %d; hong-dp objective checked on %d, feng-huang objective on %d chains; "
              "schedule solvers below the set optimum: %d",
              graphs, hongChains, fhChains, rotorBelow);
        for (const auto &[id, count] : equalMinPeak)
            qInfo("%-12s equals the exhaustive min-peak on %d of %d graphs", id.c_str(), count,
                  graphs);
        QVERIFY(hongChains >= 200);
        QVERIFY(fhChains >= 60);
    }
};

QTEST_GUILESS_MAIN(TstBruteForceAgreement)
#include "tst_brute_force_agreement.moc"
