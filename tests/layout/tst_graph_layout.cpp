// GraphLayouter on a hand-built model with namespaces:
//   /in/Conv -> /a/x/Relu -> /a/y/Relu -> /b/p/Relu -> /b/q/Relu -> /out/Add  (+ skip /a/y -> /out)
// Groups: a (2 nodes), b (2 nodes); /in, /out and the one-node namespaces are transparent.
// Checks: item counts expanded and collapsed, frames enclose their children, siblings never
// overlap, edges go down, the per-group cache re-lays out only what changed, determinism.
#include "core/layout/graph_layout.h"
#include "layout/layout_checks.h"

#include <QTest>

using namespace remat::core;
using namespace remat::core::layout;

namespace {

std::shared_ptr<const ir::Graph> makeModel()
{
    std::vector<ir::Value> values;
    auto value = [&](const std::string &name, ir::ValueKind kind = ir::ValueKind::Intermediate) {
        ir::Value v;
        v.name = name;
        v.kind = kind;
        v.dtype = ir::DataType::Float;
        v.shape = ir::Shape::fromStatic({1, 8});
        values.push_back(v);
        return int(values.size()) - 1;
    };
    std::vector<ir::Node> nodes;
    auto node = [&](const std::string &name, const std::string &op, std::vector<int> in, int out) {
        ir::Node n;
        n.name = name;
        n.opType = op;
        for (int i : in)
            n.inputs.push_back(ValueId(int32_t(i)));
        n.outputs.push_back(ValueId(int32_t(out)));
        nodes.push_back(n);
    };
    const int x = value("x", ir::ValueKind::Input);
    const int c = value("c"), ax = value("ax"), ay = value("ay"), bp = value("bp"),
              bq = value("bq"), o = value("o");
    node("/in/Conv", "Conv", {x}, c);
    node("/a/x/Relu", "Relu", {c}, ax);
    node("/a/y/Relu", "Relu", {ax}, ay);
    node("/b/p/Relu", "Relu", {ay}, bp);
    node("/b/q/Relu", "Relu", {bp}, bq);
    node("/out/Add", "Add", {bq, ay}, o);
    auto g = ir::Graph::build({}, nodes, values, {ValueId(int32_t(x))}, {ValueId(int32_t(o))});
    if (!g)
        qFatal("%s", g.status().toString().c_str());
    return std::make_shared<const ir::Graph>(std::move(*g));
}

NamespaceId nsByPath(const ir::Graph &g, const std::string &path)
{
    for (const ir::Namespace &ns : g.namespaces())
        if (ns.path == path)
            return ns.id;
    return NamespaceId();
}

int countKind(const GraphLayout &l, ItemKind k)
{
    return int(std::count_if(l.items.begin(), l.items.end(),
                             [&](const LayoutItem &i) { return i.kind == k; }));
}

void checkGeometry(const GraphLayout &l)
{
    // siblings (same parent) never overlap; children lie inside their parent's frame
    std::map<int, std::vector<Rect>> byParent;
    for (const LayoutItem &it : l.items) {
        byParent[it.parent].push_back(it.rect);
        if (it.parent >= 0)
            QVERIFY2(l.items[it.parent].rect.contains(it.rect), "child outside its group frame");
    }
    for (auto &[parent, rects] : byParent) {
        const std::string overlap = remat::tests::firstOverlap(rects);
        QVERIFY2(overlap.empty(), overlap.c_str());
    }
    for (const LayoutEdge &e : l.edges) {
        QVERIFY(e.points.size() >= 2);
        QVERIFY2(l.items[e.from].rect.center().y < l.items[e.to].rect.center().y, "edge goes up");
        QCOMPARE(e.points.front().y, l.items[e.from].rect.bottom());
        QCOMPARE(e.points.back().y, l.items[e.to].rect.y);
    }
}

} // namespace

class TestGraphLayout : public QObject
{
    Q_OBJECT
private slots:
    void groupsAndTransparentNamespaces()
    {
        auto g = makeModel();
        GraphLayouter lay(g, {});
        // a and b hold two nodes each; in, out and a/x, a/y, b/p, b/q hold one: not groups.
        QCOMPARE(int(lay.groups().size()), 2);
        QVERIFY(lay.isGroup(nsByPath(*g, "a")));
        QVERIFY(!lay.isGroup(nsByPath(*g, "a/x")));
        QCOMPARE(lay.groupDepth(nsByPath(*g, "b")), 1);
        QCOMPARE(lay.groupOfNode(*g->findNode("/a/y/Relu")), nsByPath(*g, "a"));
    }
    void expandedShowsEveryNode()
    {
        auto g = makeModel();
        GraphLayouter lay(g, {});
        auto l = lay.layout({});
        QVERIFY2(l.hasValue(), l.status().toString().c_str());
        // 6 nodes + 2 group frames; edges: c->ax, ax->ay, ay->bp, bp->bq, bq->o, ay->o = 6
        QCOMPARE(countKind(*l, ItemKind::Node), 6);
        QCOMPARE(countKind(*l, ItemKind::ExpandedGroup), 2);
        QCOMPARE(int(l->edges.size()), 6);
        for (int item : l->itemOfNode)
            QCOMPARE(l->items[item].kind, ItemKind::Node);
        checkGeometry(*l);
        QCOMPARE(l->groupsLaidOut, 3); // root, a, b
    }
    void collapseAndExpandRoundTrip()
    {
        auto g = makeModel();
        GraphLayouter lay(g, {});
        auto full = lay.layout({});
        QVERIFY(full.hasValue());
        const NamespaceId a = nsByPath(*g, "a");
        auto collapsed = lay.layout({a});
        QVERIFY(collapsed.hasValue());
        // a's two nodes become one box: 4 nodes + 1 collapsed + 1 expanded (b)
        QCOMPARE(countKind(*collapsed, ItemKind::Node), 4);
        QCOMPARE(countKind(*collapsed, ItemKind::CollapsedGroup), 1);
        QCOMPARE(countKind(*collapsed, ItemKind::ExpandedGroup), 1);
        // ax -> ay is hidden inside a: 5 edges
        QCOMPARE(int(collapsed->edges.size()), 5);
        const int box = collapsed->itemOfNode[g->findNode("/a/x/Relu")->index()];
        QCOMPARE(collapsed->itemOfNode[g->findNode("/a/y/Relu")->index()], box);
        checkGeometry(*collapsed);
        // only the root is laid out again; b comes from the cache
        QCOMPARE(collapsed->groupsLaidOut, 1);
        QCOMPARE(collapsed->groupsReused, 1);
        // expanding again reuses a's and b's interiors, recomputes the root, and gives the same
        // picture as the first layout
        auto again = lay.layout({});
        QVERIFY(again.hasValue());
        QCOMPARE(again->groupsLaidOut, 1);
        QCOMPARE(again->groupsReused, 2);
        QCOMPARE(again->items.size(), full->items.size());
        for (size_t i = 0; i < full->items.size(); ++i)
            QVERIFY(again->items[i].rect == full->items[i].rect);
    }
    void collapseAtDepthCollapsesTopGroups()
    {
        auto g = makeModel();
        GraphLayouter lay(g, {});
        const CollapseSet d1 = collapseAtDepth(lay, 1);
        QCOMPARE(int(d1.size()), 2);
        auto l = lay.layout(d1);
        QVERIFY(l.hasValue());
        // in/Conv, out/Add, boxes a and b
        QCOMPARE(countKind(*l, ItemKind::Node), 2);
        QCOMPARE(countKind(*l, ItemKind::CollapsedGroup), 2);
        // c->a, a->b, b->Add, a->Add
        QCOMPARE(int(l->edges.size()), 4);
        checkGeometry(*l);
        QVERIFY(collapseAtDepth(lay, 0).empty());
    }
    void deterministic()
    {
        auto g = makeModel();
        auto l1 = GraphLayouter(g, {}).layout({});
        auto l2 = GraphLayouter(g, {}).layout({});
        QVERIFY(l1.hasValue() && l2.hasValue());
        for (size_t i = 0; i < l1->edges.size(); ++i)
            QVERIFY(l1->edges[i].points == l2->edges[i].points);
    }
};

QTEST_GUILESS_MAIN(TestGraphLayout)
#include "tst_graph_layout.moc"
