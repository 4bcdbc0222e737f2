// layeredLayout on small hand-built graphs with the expected ranks written beside them, and on
// random layered DAGs checked for the invariants: no two boxes overlap, every edge goes down
// rank-wise and its route never climbs, the result is deterministic.
#include "core/layout/layered_layout.h"
#include "layout/layout_checks.h"

#include <QTest>

#include <random>

using namespace remat::core;
using namespace remat::core::layout;

namespace {

LayeredInput boxes(int n, std::vector<std::pair<int, int>> edges)
{
    LayeredInput in;
    in.sizes.assign(size_t(n), Size{80, 30});
    in.edges = std::move(edges);
    return in;
}

/// Random DAG in `layers` layers of up to `width` nodes; each node takes 1-3 inputs from the layer
/// above, and about 3% of nodes also take a long edge from 2-20 layers above.
LayeredInput randomLayeredDag(int layers, int width, unsigned seed)
{
    std::mt19937 rng(seed);
    LayeredInput in;
    std::vector<std::vector<int>> byLayer;
    int next = 0;
    for (int l = 0; l < layers; ++l) {
        const int w = 1 + int(rng() % unsigned(width));
        byLayer.emplace_back();
        for (int i = 0; i < w; ++i) {
            const int v = next++;
            byLayer.back().push_back(v);
            in.sizes.push_back(Size{double(40 + rng() % 80), double(20 + rng() % 20)});
            if (l == 0)
                continue;
            const auto &above = byLayer[size_t(l - 1)];
            const int k = 1 + int(rng() % 3);
            for (int j = 0; j < k; ++j)
                in.edges.push_back({above[rng() % above.size()], v});
            if (rng() % 100 < 3 && l >= 2) {
                const int back = 2 + int(rng() % 19);
                const auto &far = byLayer[size_t(std::max(0, l - back))];
                in.edges.push_back({far[rng() % far.size()], v});
            }
        }
    }
    return in;
}

void checkInvariants(const LayeredInput &in, const LayeredResult &r, bool acyclic)
{
    QCOMPARE(r.nodes.size(), in.sizes.size());
    QCOMPARE(r.edges.size(), in.edges.size());
    const std::string overlap = remat::tests::firstOverlap(r.nodes);
    QVERIFY2(overlap.empty(), overlap.c_str());
    for (size_t i = 0; i < in.sizes.size(); ++i) {
        QCOMPARE(r.nodes[i].width, in.sizes[i].width);
        QVERIFY(r.bounds.contains(r.nodes[i]));
    }
    for (size_t e = 0; e < in.edges.size(); ++e) {
        auto [a, b] = in.edges[e];
        if (a == b)
            continue;
        if (acyclic) {
            QVERIFY2(r.ranks[a] < r.ranks[b],
                     ("edge " + std::to_string(e) + " does not go down").c_str());
            const auto &pts = r.edges[e];
            QVERIFY(pts.size() >= 2);
            QCOMPARE(pts.front().y, r.nodes[a].bottom());
            QCOMPARE(pts.back().y, r.nodes[b].y);
            for (size_t k = 1; k < pts.size(); ++k)
                QVERIFY2(pts[k].y >= pts[k - 1].y, "route climbs");
        }
    }
}

} // namespace

class TestLayeredLayout : public QObject
{
    Q_OBJECT
private slots:
    void chainIsStraight()
    {
        // 0 -> 1 -> 2: ranks 0, 1, 2, one column.
        auto in = boxes(3, {{0, 1}, {1, 2}});
        auto r = layeredLayout(in);
        QVERIFY2(r.hasValue(), r.status().toString().c_str());
        QCOMPARE(r->ranks, (std::vector<int>{0, 1, 2}));
        QCOMPARE(r->nodes[0].x, r->nodes[1].x);
        QCOMPARE(r->nodes[1].x, r->nodes[2].x);
        QCOMPARE(r->dummyCount, size_t(0));
        QCOMPARE(r->crossings, int64_t(0));
        checkInvariants(in, *r, true);
    }
    void residualGetsDummyAndStraightSpine()
    {
        // 0 -> 1 -> 2 -> 3 and the skip 0 -> 3: ranks 0..3, two bends on the skip edge, the
        // spine stays one column.
        auto in = boxes(4, {{0, 1}, {1, 2}, {2, 3}, {0, 3}});
        auto r = layeredLayout(in);
        QVERIFY(r.hasValue());
        QCOMPARE(r->ranks, (std::vector<int>{0, 1, 2, 3}));
        QCOMPARE(r->dummyCount, size_t(2));
        QVERIFY(std::abs(r->nodes[1].center().x - r->nodes[2].center().x) < 2); // within 2 px
        QVERIFY(r->edges[3].size() >= 4); // source, two bends (top and bottom of each), target
        checkInvariants(in, *r, true);
    }
    void constantsMoveNextToConsumer()
    {
        // 0 -> 1 -> 2 -> 3; constant 4 feeds only 3: longest path puts 4 on rank 0, the pull-down
        // moves it to rank 2, right above its consumer.
        auto in = boxes(5, {{0, 1}, {1, 2}, {2, 3}, {4, 3}});
        auto r = layeredLayout(in);
        QVERIFY(r.hasValue());
        QCOMPARE(r->ranks, (std::vector<int>{0, 1, 2, 3, 2}));
        QCOMPARE(r->dummyCount, size_t(0));
        checkInvariants(in, *r, true);
    }
    void bundledLongEdgesShareBends()
    {
        // 0 feeds 1..4 chain members at ranks 1..4 plus a chain 1->2->3->4: edges 0->3 and 0->4
        // share one bend chain, so bends = ranks 1..3 = 3 (not 2 + 3 = 5).
        auto in = boxes(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 3}, {0, 4}});
        auto r = layeredLayout(in);
        QVERIFY(r.hasValue());
        QCOMPARE(r->dummyCount, size_t(3));
        LayeredOptions separate;
        separate.bundleEdges = false;
        auto r2 = layeredLayout(in, separate);
        QVERIFY(r2.hasValue());
        QCOMPARE(r2->dummyCount, size_t(5));
        checkInvariants(in, *r, true);
        checkInvariants(in, *r2, true);
    }
    void crossingCount()
    {
        // upper 0 1, lower 2 3, edges 0->3 and 1->2 cross once; 0->2, 1->3 do not.
        QCOMPARE(countCrossings({{0, 1}, {2, 3}}, {{0, 3}, {1, 2}}), int64_t(1));
        QCOMPARE(countCrossings({{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}), int64_t(0));
        // complete bipartite K(2,2): 1 crossing whatever the order
        QCOMPARE(countCrossings({{0, 1}, {2, 3}}, {{0, 2}, {0, 3}, {1, 2}, {1, 3}}), int64_t(1));
    }
    void orderRemovesAvoidableCrossings()
    {
        // 0 -> 3, 1 -> 2 listed crosswise: the sweep uncrosses them.
        auto in = boxes(4, {{0, 3}, {1, 2}});
        auto r = layeredLayout(in);
        QVERIFY(r.hasValue());
        QCOMPARE(r->crossings, int64_t(0));
        QVERIFY((r->nodes[0].x < r->nodes[1].x) == (r->nodes[3].x < r->nodes[2].x));
    }
    void pinsForcePortRanks()
    {
        // port 0 (First) -> 1 -> 2 -> port 3 (Last); node 4 -> 1. Port 3 ends below everything.
        auto in = boxes(5, {{0, 1}, {1, 2}, {2, 3}, {4, 1}});
        in.pins = {RankPin::First, RankPin::Free, RankPin::Free, RankPin::Last, RankPin::Free};
        in.sizes[0] = in.sizes[3] = Size{0, 0};
        auto r = layeredLayout(in);
        QVERIFY(r.hasValue());
        QCOMPARE(r->ranks[0], 0);
        QCOMPARE(r->ranks[3], 3);
        checkInvariants(in, *r, true);
    }
    void cyclesAreBroken()
    {
        // 0 -> 1 -> 2 -> 0 and a self-loop on 1: laid out, no overlaps, self-loop unrouted.
        auto in = boxes(3, {{0, 1}, {1, 2}, {2, 0}, {1, 1}});
        auto r = layeredLayout(in);
        QVERIFY2(r.hasValue(), r.status().toString().c_str());
        QVERIFY(r->edges[3].empty());
        QVERIFY(r->edges[2].size() >= 2);
        checkInvariants(in, *r, false);
    }
    void badEdgeIsAnError()
    {
        auto r = layeredLayout(boxes(2, {{0, 5}}));
        QVERIFY(!r.hasValue());
        QCOMPARE(r.status().code(), StatusCode::InvalidArgument);
    }
    void cancelled()
    {
        StopSource src;
        src.requestStop();
        LayeredOptions opt;
        opt.stop = src.token();
        auto r = layeredLayout(randomLayeredDag(50, 10, 1), opt);
        QVERIFY(!r.hasValue());
        QCOMPARE(r.status().code(), StatusCode::Cancelled);
    }
    void randomDagsKeepInvariants_data()
    {
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("width");
        QTest::addColumn<unsigned>("seed");
        QTest::newRow("narrow") << 200 << 3 << 1u;
        QTest::newRow("wide") << 60 << 30 << 2u;
        QTest::newRow("medium") << 150 << 12 << 3u;
    }
    void randomDagsKeepInvariants()
    {
        QFETCH(int, layers);
        QFETCH(int, width);
        QFETCH(unsigned, seed);
        const LayeredInput in = randomLayeredDag(layers, width, seed);
        auto r = layeredLayout(in);
        QVERIFY2(r.hasValue(), r.status().toString().c_str());
        checkInvariants(in, *r, true);
        // deterministic: a second run gives identical boxes and routes
        auto again = layeredLayout(in);
        QVERIFY(again.hasValue());
        QVERIFY(r->nodes == again->nodes);
        QVERIFY(r->edges == again->edges);
    }
};

QTEST_GUILESS_MAIN(TestLayeredLayout)
#include "tst_layered_layout.moc"
