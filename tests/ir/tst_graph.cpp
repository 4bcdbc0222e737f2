// ir::Graph::build on tiny hand-built graphs: topological order, consumers, namespaces, and the
// structural errors (a value used but never produced, a cycle, a value produced twice).
#include "core/ir/graph.h"

#include <QTest>

using namespace remat::core;
using namespace remat::core::ir;

namespace {

Value makeValue(const std::string &name, ValueKind kind = ValueKind::Intermediate)
{
    Value v;
    v.name = name;
    v.kind = kind;
    v.dtype = DataType::Float;
    v.shape = Shape::fromStatic({2, 3});
    return v;
}

Node makeNode(const std::string &name, const std::string &op, std::vector<int> in,
              std::vector<int> out)
{
    Node n;
    n.name = name;
    n.opType = op;
    for (int i : in)
        n.inputs.push_back(ValueId(int32_t(i)));
    for (int o : out)
        n.outputs.push_back(ValueId(int32_t(o)));
    return n;
}

} // namespace

class TestGraph : public QObject
{
    Q_OBJECT
private slots:
    // The inspector and `remat info` printed ", opset 9" (paddle2onnx names no producer) and
    // "spox , opset 16" (no version).
    void producerLabelLeavesNoGaps()
    {
        ir::ModelInfo info;
        QCOMPARE(ir::producerLabel(info), std::string("not named"));
        info.producerName = "spox";
        QCOMPARE(ir::producerLabel(info), std::string("spox"));
        info.producerVersion = "0.9";
        QCOMPARE(ir::producerLabel(info), std::string("spox 0.9"));
        info.producerName = " ";
        QCOMPARE(ir::producerLabel(info), std::string("0.9"));
    }

    void buildsOrderAndNamespaces()
    {
        // x -> /layer1/conv/Conv -> a -> /layer1/relu/Relu -> b ; nodes listed in reverse order.
        std::vector<Value> values = {makeValue("x", ValueKind::Input), makeValue("a"),
                                     makeValue("b")};
        std::vector<Node> nodes = {makeNode("/layer1/relu/Relu", "Relu", {1}, {2}),
                                   makeNode("/layer1/conv/Conv", "Conv", {0}, {1})};
        auto g = Graph::build({}, nodes, values, {ValueId(int32_t(0))}, {ValueId(int32_t(2))});
        QVERIFY2(g.hasValue(), g.status().toString().c_str());
        QCOMPARE(g->topologicalOrder().size(), size_t(2));
        QCOMPARE(g->node(g->topologicalOrder()[0]).opType, std::string("Conv"));
        QCOMPARE(g->value(ValueId(int32_t(1))).consumers.size(), size_t(1));
        QVERIFY(g->value(ValueId(int32_t(2))).isGraphOutput);
        // root > layer1 > {conv, relu}
        QCOMPARE(g->namespaceDepth(), 2);
        QCOMPARE(g->namespaces().size(), size_t(4));
        const Namespace &conv = g->ns(g->node(NodeId(int32_t(1))).ns);
        QCOMPARE(conv.path, std::string("layer1/conv"));
        QCOMPARE(conv.name, std::string("conv"));
    }
    void namespacePath()
    {
        auto p = namespacePathOf("/layer1/layer1.0/conv1/Conv");
        QCOMPARE(p.size(), size_t(3));
        QCOMPARE(p[0], std::string("layer1"));
        QCOMPARE(p[2], std::string("conv1"));
        QVERIFY(namespacePathOf("Conv_0").empty());
    }
    void rejectsUnproducedValue()
    {
        std::vector<Value> values = {makeValue("x", ValueKind::Input), makeValue("ghost"),
                                     makeValue("y")};
        std::vector<Node> nodes = {makeNode("add", "Add", {0, 1}, {2})};
        auto g = Graph::build({}, nodes, values, {ValueId(int32_t(0))}, {ValueId(int32_t(2))});
        QVERIFY(!g);
        QVERIFY2(g.status().message().find("'ghost'") != std::string::npos,
                 g.status().toString().c_str());
        QVERIFY(g.status().message().find("no node produces") != std::string::npos);
    }
    void rejectsCycle()
    {
        std::vector<Value> values = {makeValue("a"), makeValue("b")};
        std::vector<Node> nodes = {makeNode("n1", "Relu", {1}, {0}),
                                   makeNode("n2", "Relu", {0}, {1})};
        auto g = Graph::build({}, nodes, values, {}, {ValueId(int32_t(1))});
        QVERIFY(!g);
        QVERIFY2(g.status().message().find("cycle") != std::string::npos,
                 g.status().toString().c_str());
    }
    void rejectsDoubleProducer()
    {
        std::vector<Value> values = {makeValue("x", ValueKind::Input), makeValue("y")};
        std::vector<Node> nodes = {makeNode("n1", "Relu", {0}, {1}),
                                   makeNode("n2", "Relu", {0}, {1})};
        auto g = Graph::build({}, nodes, values, {ValueId(int32_t(0))}, {ValueId(int32_t(1))});
        QVERIFY(!g);
        QVERIFY(g.status().message().find("produced by two nodes") != std::string::npos);
    }
    void overflowingShape()
    {
        Value v = makeValue("huge");
        v.shape = Shape::fromStatic({int64_t(1) << 40, int64_t(1) << 40});
        auto b = v.bytes();
        QVERIFY(!b);
        QCOMPARE(b.status().code(), StatusCode::OutOfRange);
    }
};

QTEST_GUILESS_MAIN(TestGraph)
#include "tst_graph.moc"
