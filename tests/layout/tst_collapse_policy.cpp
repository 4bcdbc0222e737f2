// The explorer's opening collapse depth (core/layout/collapse_policy.h) on a hand-built model:
//   /bK/sJ/Relu and /bK/sJ/Relu_1 for K = 0..3, J = 0..1: 16 Relu nodes in one chain, 8 groups
//   of depth 2 (/bK/sJ, two nodes each) inside 4 groups of depth 1 (/bK, four nodes each).
// Boxes drawn: depth 0 (expanded): 16 nodes; depth 2: the 8 depth-2 groups; depth 1: the 4 /bK.
// Expected depth for (expandedNodeLimit, boxLimit):
//   defaults (600, 400) -> 0      (16, 4) -> 0 (16 nodes fit expanded)
//   (15, 8) -> 2 (8 boxes fit)    (15, 7) -> 1 (depth 2 shows 8 > 7; depth 1 shows 4)
//   (15, 3) -> 1 (nothing fits: the top level)
// boxesAtDepth agrees with what GraphLayouter draws at collapseAtDepth (nodes + collapsed groups).
#include "core/layout/collapse_policy.h"

#include <QTest>

#include <algorithm>

using namespace remat::core;
using namespace remat::core::layout;

namespace {

std::shared_ptr<const ir::Graph> makeModel()
{
    std::vector<ir::Value> values;
    std::vector<ir::Node> nodes;
    auto value = [&](const std::string &name, ir::ValueKind kind) {
        ir::Value v;
        v.name = name;
        v.kind = kind;
        v.dtype = ir::DataType::Float;
        v.shape = ir::Shape::fromStatic({1, 8});
        values.push_back(v);
        return ValueId(int32_t(values.size() - 1));
    };
    ValueId prev = value("x", ir::ValueKind::Input);
    const ValueId input = prev;
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 2; ++j)
            for (const char *op : {"Relu", "Relu_1"}) {
                ir::Node n;
                n.name = "/b" + std::to_string(k) + "/s" + std::to_string(j) + "/" + op;
                n.opType = "Relu";
                n.inputs.push_back(prev);
                prev = value(n.name + "_output_0", ir::ValueKind::Intermediate);
                n.outputs.push_back(prev);
                nodes.push_back(n);
            }
    auto g = ir::Graph::build({}, nodes, values, {input}, {prev});
    if (!g)
        qFatal("%s", g.status().toString().c_str());
    return std::make_shared<const ir::Graph>(std::move(*g));
}

} // namespace

class TstCollapsePolicy : public QObject
{
    Q_OBJECT
private slots:
    void boxesPerDepth()
    {
        GraphLayouter lay(makeModel(), GraphLayoutSizes{});
        QCOMPARE(boxesAtDepth(lay, 0), 16);
        QCOMPARE(boxesAtDepth(lay, 1), 4);
        QCOMPARE(boxesAtDepth(lay, 2), 8);
        for (int depth : {0, 1, 2}) {
            auto l = lay.layout(collapseAtDepth(lay, depth));
            QVERIFY2(l, l.status().toString().c_str());
            const int drawn =
                int(std::count_if(l->items.begin(), l->items.end(), [](const LayoutItem &it) {
                    return it.kind == ItemKind::Node || it.kind == ItemKind::CollapsedGroup;
                }));
            QCOMPARE(drawn, boxesAtDepth(lay, depth));
        }
    }

    void openingDepth_data()
    {
        QTest::addColumn<int>("expandedNodeLimit");
        QTest::addColumn<int>("boxLimit");
        QTest::addColumn<int>("depth");
        QTest::newRow("defaults") << 600 << 400 << 0;
        QTest::newRow("fits expanded") << 16 << 4 << 0;
        QTest::newRow("depth 2 fits") << 15 << 8 << 2;
        QTest::newRow("depth 1 fits") << 15 << 7 << 1;
        QTest::newRow("nothing fits") << 15 << 3 << 1;
    }
    void openingDepth()
    {
        QFETCH(int, expandedNodeLimit);
        QFETCH(int, boxLimit);
        QFETCH(int, depth);
        GraphLayouter lay(makeModel(), GraphLayoutSizes{});
        QCOMPARE(autoCollapseDepth(lay, CollapsePolicy{expandedNodeLimit, boxLimit}), depth);
    }
};

QTEST_GUILESS_MAIN(TstCollapsePolicy)
#include "tst_collapse_policy.moc"
