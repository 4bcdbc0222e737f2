// Folding shape arithmetic out of the drawn graph (layout::foldableNodes + GraphLayouter's hidden
// nodes) on real exports: tiny_vit's folded set is exactly the nodes whose outputs the importer's
// constant propagation evaluates, no edge touches a folded node, and resnet18 (no shape
// arithmetic) lays out exactly as without folding.
#include "common/test_support.h"
#include "core/layout/graph_layout.h"
#include "core/layout/shape_folding.h"
#include "core/onnx/importer.h"
#include "core/onnx/shape_inference.h"
#include "layout/layout_checks.h"

#include <QFileInfo>
#include <QTest>

#include <map>

using namespace remat::core;
using namespace remat::core::layout;
using remat::tests::sharedPath;

namespace {

std::shared_ptr<const ir::Graph> load(const char *relative)
{
    const QString path = sharedPath(QString::fromUtf8(relative));
    if (!QFileInfo::exists(path))
        return nullptr;
    auto g = onnx::importModel(remat::tests::toStd(path));
    if (!g)
        qFatal("%s", g.status().toString().c_str());
    return std::make_shared<const ir::Graph>(std::move(*g));
}

GraphLayoutSizes sizesOf(const ir::Graph &g)
{
    GraphLayoutSizes s;
    for (const ir::Node &n : g.nodes())
        s.node.push_back(Size{double(40 + 6 * std::min<size_t>(n.opType.size(), 30)), 32});
    return s;
}

/// Nodes whose every output the importer's constant propagation computes a value for, seeded
/// with the graph's constants only (not parameters): the independent reference for the rule.
std::vector<char> propagatedConstantNodes(const ir::Graph &g)
{
    std::vector<onnx::InferredValue> vals(g.valueCount());
    for (const ir::Value &v : g.values()) {
        if (v.kind == ir::ValueKind::Intermediate)
            continue;
        vals[v.id.index()].dtype = v.dtype;
        vals[v.id.index()].shape = v.shape;
        if (v.kind == ir::ValueKind::Constant && v.initializer)
            vals[v.id.index()].constant = onnx::constTensorFrom(*v.initializer);
    }
    const Status s = onnx::inferShapes(g, g.info().opsetVersion, vals);
    if (!s.isOk())
        qFatal("%s", s.toString().c_str());
    std::vector<char> out(g.nodeCount(), 0);
    for (const ir::Node &n : g.nodes()) {
        bool all = true, any = false;
        for (ValueId v : n.outputs) {
            if (!v.valid())
                continue;
            any = true;
            all = all && vals[v.index()].constant && !g.value(v).isGraphOutput;
        }
        out[n.id.index()] = any && all;
    }
    return out;
}

double widestGroup(const GraphLayout &l)
{
    double w = 0;
    for (const LayoutItem &it : l.items)
        if (it.kind == ItemKind::ExpandedGroup)
            w = std::max(w, it.rect.width);
    return w;
}

} // namespace

class TestShapeFolding : public QObject
{
    Q_OBJECT
private slots:
    void tinyVitFoldsExactlyTheConstants()
    {
        auto g = load("corpus/with_weights/tiny_vit.onnx");
        if (!g)
            QSKIP("shared corpus not found");
        const std::vector<char> folded = foldableNodes(*g);
        const std::vector<char> reference = propagatedConstantNodes(*g);
        int count = 0;
        std::map<std::string, int> byOp;
        for (const ir::Node &n : g->nodes()) {
            QVERIFY2(folded[n.id.index()] == reference[n.id.index()],
                     (n.name + " (" + n.opType + ") differs from the propagation").c_str());
            if (folded[n.id.index()]) {
                ++count;
                ++byOp[n.opType];
            }
        }
        // tiny_vit: 139 of its 226 nodes (84 Constant, 28 Unsqueeze, 11 Concat, 6 Mul, 3 Shape,
        // 2 Add, 2 Div, 2 Gather, 1 Slice), as counted by the propagation above.
        std::string ops;
        for (const auto &[op, c] : byOp)
            ops += " " + std::to_string(c) + " " + op;
        qInfo("tiny_vit: %d of %zu nodes fold:%s", count, g->nodeCount(), ops.c_str());
        QCOMPARE(count, kTinyVitFolded);
        QVERIFY(byOp["Constant"] > 0 && byOp["Shape"] > 0 && byOp["Unsqueeze"] > 0 &&
                byOp["Concat"] > 0);
        QCOMPARE(byOp.count("MatMul"), size_t(0)); // real dataflow is never folded
    }

    void foldedNodesHaveNoItemsOrEdges()
    {
        auto g = load("corpus/with_weights/tiny_vit.onnx");
        if (!g)
            QSKIP("shared corpus not found");
        const std::vector<char> folded = foldableNodes(*g);
        GraphLayouter full(g, sizesOf(*g));
        GraphLayouter lay(g, sizesOf(*g), {}, folded);
        QCOMPARE(lay.hiddenCount(), kTinyVitFolded);
        auto l = lay.layout({});
        QVERIFY2(l.hasValue(), l.status().toString().c_str());
        for (const ir::Node &n : g->nodes()) {
            const int item = l->itemOfNode[n.id.index()];
            if (folded[n.id.index()]) {
                QCOMPARE(item, -1);
                // folded into a drawn node that reads it, directly or through other folded nodes
                const NodeId host = lay.hostOf(n.id);
                QVERIFY(host.valid());
                QVERIFY(!folded[host.index()]);
                QVERIFY(l->itemOfNode[host.index()] >= 0);
                QVERIFY(g->topoPosition(host) > g->topoPosition(n.id));
            } else {
                QVERIFY(item >= 0);
                QVERIFY(!lay.hostOf(n.id).valid());
            }
        }
        const std::vector<char> foldedValue = foldedValues(*g, folded);
        size_t drawnEdges = 0;
        for (const LayoutEdge &e : l->edges) {
            QVERIFY(!foldedValue[e.value.index()]);
            QVERIFY(l->items[size_t(e.from)].kind == ItemKind::Node);
            QVERIFY(!folded[l->items[size_t(e.from)].node.index()]);
            QVERIFY(!folded[l->items[size_t(e.to)].node.index()]);
            ++drawnEdges;
        }
        // every producer -> consumer pair between drawn nodes is drawn, and nothing else
        size_t expected = 0;
        for (const ir::Node &n : g->nodes()) {
            if (folded[n.id.index()])
                continue;
            std::set<std::pair<int32_t, int32_t>> seen;
            for (ValueId v : n.inputs)
                if (v.valid() && g->value(v).producer.valid() &&
                    !folded[g->value(v).producer.index()] &&
                    seen.insert({g->value(v).producer.value, v.value}).second)
                    ++expected;
        }
        QCOMPARE(drawnEdges, expected);
        for (const LayoutItem &it : l->items)
            if (it.parent >= 0)
                QVERIFY(l->items[size_t(it.parent)].rect.contains(it.rect));

        // Without folding every node is back, and the groups are much narrower with it.
        auto all = full.layout({});
        QVERIFY(all.hasValue());
        for (int item : all->itemOfNode)
            QVERIFY(item >= 0);
        QCOMPARE(full.hiddenCount(), 0);
        qInfo("tiny_vit: %zu nodes drawn -> %zu; widest group %.0f -> %.0f (test sizes)",
              g->nodeCount(), g->nodeCount() - size_t(kTinyVitFolded), widestGroup(*all),
              widestGroup(*l));
        QVERIFY(widestGroup(*l) < 0.6 * widestGroup(*all));
    }

    void resnet18LaysOutAsWithoutFolding()
    {
        auto g = load("corpus/graph_only/resnet18.onnx");
        if (!g)
            QSKIP("shared corpus not found");
        const std::vector<char> folded = foldableNodes(*g);
        QCOMPARE(std::count(folded.begin(), folded.end(), 1), 0L); // no shape arithmetic
        GraphLayouter plain(g, sizesOf(*g));
        GraphLayouter withFold(g, sizesOf(*g), {}, folded);
        for (int depth : {0, 1}) {
            auto a = plain.layout(collapseAtDepth(plain, depth));
            auto b = withFold.layout(collapseAtDepth(withFold, depth));
            QVERIFY(a.hasValue() && b.hasValue());
            QCOMPARE(a->items.size(), b->items.size());
            for (size_t i = 0; i < a->items.size(); ++i) {
                QCOMPARE(a->items[i].rect.x, b->items[i].rect.x);
                QCOMPARE(a->items[i].rect.y, b->items[i].rect.y);
                QCOMPARE(a->items[i].rect.width, b->items[i].rect.width);
                QCOMPARE(a->items[i].rect.height, b->items[i].rect.height);
            }
            QCOMPARE(a->edges.size(), b->edges.size());
            for (size_t i = 0; i < a->edges.size(); ++i) {
                QCOMPARE(a->edges[i].points.size(), b->edges[i].points.size());
                for (size_t k = 0; k < a->edges[i].points.size(); ++k) {
                    QCOMPARE(a->edges[i].points[k].x, b->edges[i].points[k].x);
                    QCOMPARE(a->edges[i].points[k].y, b->edges[i].points[k].y);
                }
            }
        }
    }

private:
    static constexpr int kTinyVitFolded = 139;
};

QTEST_GUILESS_MAIN(TestShapeFolding)
#include "tst_shape_folding.moc"
