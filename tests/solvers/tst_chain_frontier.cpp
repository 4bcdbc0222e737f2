// The chain frontier (chain_frontier.h): rotor's DP table read at every memory, each
// breakpoint's plan simulated. Expected, on random small training graphs:
// - every point's schedule re-simulates (validated) to the figures the point carries; peaks
//   strictly ascend and recompute strictly falls; the last point recomputes nothing at no more
//   than store-all's peak; a plain chain is reported as one data op per stage;
// - the activation-memory frontier is non-dominated on the activation peak;
// - pins are refused with a message naming them;
// - against exhaustive search over checkpoint sets on plain chains: every set on the exhaustive
//   (peak, recompute) frontier matched or bettered within two memory slots. This does NOT hold
//   today and is marked an expected failure: rotor's memory model (stage inputs, tapes, and a
//   transient of twice the largest tensor; gradients not counted) differs from the simulator's,
//   so the DP's optimum at a memory is not the simulated optimum (measured: 340 of 425 sets on
//   60 chains are not matched; the worst miss is 276 slots, 36% of store-all's peak).
#include "random_graphs.h"

#include "core/sim/simulator.h"
#include "core/solvers/brute_force.h"
#include "core/solvers/chain_frontier.h"

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
                unmatched += miss > 2 * f->slotBytes ? 1 : 0;
            }
        }
        qInfo("%d exhaustive frontier sets on 60 chains, %d not matched within two slots; worst "
              "miss %.0f slots, %.1f%% of store-all's peak",
              checked, unmatched, worstSlots, 100 * worstShare);
        QEXPECT_FAIL("", "rotor's memory model is not the simulator's (see the top of this file)",
                     Abort);
        QCOMPARE(unmatched, 0);
    }
};

QTEST_GUILESS_MAIN(TstChainFrontier)
#include "tst_chain_frontier.moc"
