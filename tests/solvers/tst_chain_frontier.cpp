// The chain frontier (chain_frontier.h): rotor's DP table read at every memory, each
// breakpoint's plan simulated. Expected, on random small training graphs:
// - every point's schedule re-simulates (validated) to the figures the point carries; peaks
//   strictly ascend and recompute strictly falls; the last point recomputes nothing at no more
//   than store-all's peak; a plain chain is reported as one data op per stage;
// - the activation-memory frontier is non-dominated on the activation peak;
// - pins are refused with a message naming them;
// - stage tape options (addStageOptions, Rockmate's per-block options): option 0 is the whole
//   tape, later ones keep strictly less tape for strictly more recompute; a step that runs every
//   stage's backward with an option validates in the simulator and recomputes exactly what the
//   options say; on ResNet-like blocks the frontier with options reaches a lower activation
//   peak at the same recompute cap than plain rotor's;
// - against exhaustive search over checkpoint sets on plain chains: every set on the exhaustive
//   (peak, recompute) frontier matched or bettered exactly (no slack), and the exact chain DP
//   reports every plan's figures equal to the simulator's. Rotor's DP alone missed 338 of the 425
//   sets on these 60 chains (its memory model is not the simulator's); the exact DP over kept
//   positions (chain_frontier.cpp) closes them.
#include "random_graphs.h"

#include "core/sim/simulator.h"
#include "core/solvers/brute_force.h"
#include "core/solvers/chain_frontier.h"
#include "core/solvers/chain_support.h"
#include "core/solvers/lowering.h"

#include <QtTest>

using namespace remat::core;
using namespace remat::core::solvers;

namespace {

remat::tests::RandomGraph graphFor(uint32_t seed, bool dag)
{
    remat::tests::RandomGraphOptions o;
    o.dag = dag;
    o.forwardOps = 4 + int(seed % 9); // 4..12 forward ops
    o.savedState = dag || seed % 2 == 0;
    return remat::tests::randomTrainingGraph(seed, o);
}

} // namespace

class TstChainFrontier : public QObject
{
    Q_OBJECT
private slots:
    void simulatedAndNonDominated_data()
    {
        QTest::addColumn<bool>("dag");
        QTest::newRow("chains") << false;
        QTest::newRow("dags") << true;
    }
    void simulatedAndNonDominated()
    {
        QFETCH(bool, dag);
        size_t points = 0, breakpoints = 0;
        for (uint32_t seed = 1; seed <= 60; ++seed) {
            auto rg = graphFor(seed, dag);
            SolveRequest r;
            r.graph = &rg.graph;
            r.costs = &rg.costs;
            auto f = chainFrontier(r, {});
            QVERIFY2(f.hasValue(), f.status().toString().c_str());
            QVERIFY(!f->points.empty());
            QVERIFY(f->candidates.size() >= f->points.size());
            QCOMPARE(f->candidates.front().source, std::string("store-all"));
            if (!dag)
                QVERIFY2(f->opChain, ("seed " + std::to_string(seed)).c_str());
            // The exact DP over kept positions and tape options: its decomposition of the peak
            // holds on every plan it returned, blocks (DAGs) included.
            QVERIFY2(f->exactMismatches == 0, ("seed " + std::to_string(seed)).c_str());
            QCOMPARE(f->exactOverCheckpointSets, f->opChain);
            const sim::Timeline &storeAll = f->candidates.front().timeline;
            for (size_t i = 0; i < f->points.size(); ++i) {
                const FrontierPoint &p = f->points[i];
                auto t = sim::simulate(p.schedule, rg.graph, rg.costs, {.recordPoints = false});
                QVERIFY2(t.hasValue(), t.status().toString().c_str());
                QCOMPARE(t->peakBytes, p.timeline.peakBytes);
                QCOMPARE(t->recomputeSeconds, p.timeline.recomputeSeconds);
                if (i > 0) {
                    QVERIFY(p.timeline.peakBytes > f->points[i - 1].timeline.peakBytes);
                    QVERIFY(p.timeline.recomputeSeconds <
                            f->points[i - 1].timeline.recomputeSeconds);
                }
            }
            // No candidate beats a point on both figures.
            for (const FrontierPoint &c : f->candidates)
                for (const FrontierPoint &p : f->points)
                    QVERIFY(!(c.timeline.peakBytes <= p.timeline.peakBytes &&
                              c.timeline.recomputeSeconds < p.timeline.recomputeSeconds * 0.999));
            QCOMPARE(f->points.back().timeline.recomputeSeconds, 0.0);
            QVERIFY(f->points.back().timeline.peakBytes <= storeAll.peakBytes);
            points += f->points.size();
            breakpoints += f->breakpoints;
        }
        qInfo("60 graphs: %zu frontier points from %zu DP breakpoints", points, breakpoints);
    }

    void activationFrontier()
    {
        // Expected: ascending activation peak, strictly falling recompute.
        for (uint32_t seed = 1; seed <= 30; ++seed) {
            auto rg = graphFor(seed, false);
            SolveRequest r;
            r.graph = &rg.graph;
            r.costs = &rg.costs;
            auto f = chainFrontier(r, {.memory = FrontierMemory::Activation});
            QVERIFY(f.hasValue());
            for (size_t i = 1; i < f->points.size(); ++i) {
                QVERIFY(f->points[i].timeline.activationPeakBytes >
                        f->points[i - 1].timeline.activationPeakBytes);
                QVERIFY(f->points[i].timeline.recomputeSeconds <
                        f->points[i - 1].timeline.recomputeSeconds);
            }
        }
    }

    void tapeOptions()
    {
        int stagesWithOptions = 0;
        for (uint32_t seed = 1; seed <= 60; ++seed) {
            remat::tests::RandomGraphOptions o;
            o.forwardOps = 8 + int(seed % 17);
            auto rg = remat::tests::randomTrainingGraph(seed, o);
            auto facts = GraphFacts::build(rg.graph);
            QVERIFY(facts.hasValue());
            const ChainView view = facts->chainView(&rg.costs);
            StageOps ops = stageOps(view, *facts);
            addStageOptions(ops, view, *facts, &rg.costs, 8);
            QCOMPARE(ops.options.size(), view.stageCount());
            for (size_t k = 0; k < view.stageCount(); ++k) {
                const auto &opts = ops.options[k];
                QVERIFY(!opts.empty() && opts.size() <= 8);
                QCOMPARE(opts[0].tapeBytes, view.tapeBytes[k]);
                QVERIFY(opts[0].recompute.empty());
                QCOMPARE(opts[0].backward, ops.backward[k]);
                for (size_t i = 1; i < opts.size(); ++i) {
                    QVERIFY(opts[i].tapeBytes < opts[i - 1].tapeBytes);
                    QVERIFY(opts[i].recomputeSeconds > opts[i - 1].recomputeSeconds);
                    QVERIFY(!opts[i].recompute.empty());
                }
                stagesWithOptions += opts.size() > 1 ? 1 : 0;
            }
            // Forward once, then every stage's backward with its option `pick` (or its last).
            for (size_t pick = 0; pick < 8; ++pick) {
                std::vector<OpId> seq;
                bool lossDone = false;
                double expected = 0;
                for (size_t k = 0; k < view.stageCount(); ++k)
                    appendForward(ops, k, &seq, &lossDone);
                for (size_t k = view.stageCount(); k-- > 0;) {
                    const size_t use = std::min(pick, ops.options[k].size() - 1);
                    appendBackward(ops, k, &seq, int(use));
                    expected += ops.options[k][use].recomputeSeconds;
                }
                auto sched = scheduleFromSequence(rg.graph, seq);
                QVERIFY2(sched.hasValue(), sched.status().toString().c_str());
                auto t = sim::simulate(*sched, rg.graph, rg.costs, {.recordPoints = false});
                QVERIFY2(t.hasValue(),
                         ("seed " + std::to_string(seed) + ": " + t.status().toString()).c_str());
                QVERIFY(std::abs(t->recomputeSeconds - expected) <= 1e-9 * (1 + expected));
            }
        }
        qInfo("%d stages with more than the whole-tape option", stagesWithOptions);
        QVERIFY(stagesWithOptions > 50);
    }

    void optionsLowerTheActivationFrontier()
    {
        // Blocks of conv -> bn -> relu -> conv -> bn -> add(skip) -> relu, the cheap ops
        // (bn, relu) a tenth of a conv's time: keeping the convs' outputs and recomputing the
        // rest is what rotor alone cannot express.
        auto rg = remat::tests::residualBlocks(12);
        SolveRequest r;
        r.graph = &rg.graph;
        r.costs = &rg.costs;
        auto best = [&](int tapeOptions) {
            auto f = chainFrontier(r, {.memory = FrontierMemory::Activation,
                                       .tapeOptions = tapeOptions,
                                       .linearized = false});
            int64_t lowest = -1;
            if (!f)
                return lowest;
            for (const FrontierPoint &p : f->points)
                if (p.timeline.tdiPercent() <= 35.0 &&
                    (lowest < 0 || p.timeline.activationPeakBytes < lowest))
                    lowest = p.timeline.activationPeakBytes;
            return lowest;
        };
        const int64_t plain = best(1), withOptions = best(8);
        qInfo("lowest activation peak at <= 35%% recompute: %lld B plain rotor, %lld B with "
              "tape options",
              (long long)plain, (long long)withOptions);
        QVERIFY(plain > 0 && withOptions > 0);
        QVERIFY(withOptions < plain);
    }

    void pinsRefused()
    {
        auto rg = graphFor(3, false);
        SolveRequest r;
        r.graph = &rg.graph;
        r.costs = &rg.costs;
        r.pins.push_back({TensorId(1), PinKind::Keep});
        auto f = chainFrontier(r, {});
        QVERIFY(!f.hasValue());
        QCOMPARE(f.status().code(), StatusCode::Unsupported);
        QVERIFY(f.status().message().find("pins") != std::string::npos);
    }

    void againstBruteForceOnChains()
    {
        int unmatched = 0, checked = 0;
        double worstSlots = 0, worstShare = 0;
        for (uint32_t seed = 1; seed <= 60; ++seed) {
            auto rg = graphFor(seed, false);
            BruteForceOptions bo;
            bo.frontier = true;
            auto bf = bruteForceCheckpoints(rg.graph, rg.costs, bo);
            QVERIFY2(bf.hasValue(), bf.status().toString().c_str());
            SolveRequest r;
            r.graph = &rg.graph;
            r.costs = &rg.costs;
            auto f = chainFrontier(r, {});
            QVERIFY(f.hasValue());
            QVERIFY2(f->exactOverCheckpointSets && f->exactMismatches == 0,
                     ("seed " + std::to_string(seed) +
                      ": the exact DP's figures differ from "
                      "the simulator's")
                         .c_str());
            const double storeAll = double(f->candidates.front().timeline.peakBytes);
            for (const BruteForceBest &b : bf->frontier) {
                ++checked;
                // The lowest frontier peak with no more recompute than the set's.
                int64_t best = -1;
                for (const FrontierPoint &p : f->points)
                    if (p.timeline.recomputeSeconds <=
                            b.timeline.recomputeSeconds * (1 + 1e-9) + 1e-15 &&
                        (best < 0 || p.timeline.peakBytes < best))
                        best = p.timeline.peakBytes;
                const double miss = double(best - b.timeline.peakBytes);
                worstSlots = std::max(worstSlots, miss / f->slotBytes);
                worstShare = std::max(worstShare, miss / storeAll);
                unmatched += miss > 0 ? 1 : 0;
            }
        }
        qInfo("%d exhaustive frontier sets on 60 chains, %d not matched; worst miss %.0f slots, "
              "%.1f%% of store-all's peak",
              checked, unmatched, worstSlots, 100 * worstShare);
        QCOMPARE(unmatched, 0);
    }
};

QTEST_GUILESS_MAIN(TstChainFrontier)
#include "tst_chain_frontier.moc"
