// Node-link benchmark graphs: both published schemas import with the published reference peaks,
// and our own export reads back to the same graph.
#include "common/test_support.h"

#include "core/io/node_link.h"

#include <QtTest>

using namespace remat::core;

namespace {

/// The file's links: op inputs other than the network input the importer adds.
size_t links(const training::TrainingGraph &g)
{
    size_t n = 0;
    for (const training::Op &op : g.ops())
        for (TensorId t : op.inputs)
            n += g.tensor(t).role == training::TensorRole::Input ? 0 : 1;
    return n;
}

bool readsNetworkInput(const training::TrainingGraph &g, OpId op)
{
    for (TensorId t : g.op(op).inputs)
        if (g.tensor(t).role == training::TensorRole::Input && g.tensor(t).preloaded &&
            g.tensor(t).bytes == 0)
            return true;
    return false;
}

} // namespace

class TstNodeLink : public QObject
{
    Q_OBJECT
private slots:
    void checkmateSchema()
    {
        // Input: Checkmate's VGG16 training graph (45 nodes, 87 links, "Loss" at id 22).
        // Expected: 22 forward ops, 1 loss, 22 backward; the in-order peak 15825108992 B
        // (0.9 x peak = 14242598093 B is the budget the published tables use).
        const QString path =
            remat::tests::sharedPath("benchmarks/remat-graphs/VGG16_256_224x224_train.json");
        if (!QFileInfo::exists(path))
            QSKIP("shared benchmark graphs not found");
        auto g = io::readNodeLinkGraph(remat::tests::toStd(path));
        QVERIFY2(g.hasValue(), g.status().toString().c_str());
        QCOMPARE(g->graph.opCount(), size_t(45));
        QCOMPARE(g->graph.forwardOpCount(), size_t(22));
        QCOMPARE(g->graph.backwardOpCount(), size_t(22));
        QCOMPARE(g->graph.op(OpId(22)).phase, training::Phase::Loss);
        QCOMPARE(links(g->graph), size_t(87));
        // The importer adds the network input (0 bytes: the file has no node for it), so the
        // first layer reads data, not nothing (solvers took an op without inputs for a constant).
        QVERIFY(readsNetworkInput(g->graph, OpId(0)));
        QCOMPARE(g->referencePeakBytes, int64_t(15825108992));
        QCOMPARE(g->costs.opSeconds[0], 385.0);
        QCOMPARE(g->graph.tensor(g->graph.op(OpId(0)).outputs[0]).bytes, int64_t(3288334336));
        // fc2_backward differentiates fc2.
        QCOMPARE(g->graph.op(OpId(24)).forwardOf, OpId(20));
    }

    void randomLayeredSchema()
    {
        // Input: Moccasin's random layered graph n=250 (944 links; node 1 is the sink, so ids
        // are not a topological order: graph.order is).
        // Expected: 250 forward ops in graph.order, the sink last, in-order peak 146840
        // (Moccasin's budget 132156 = 0.9 x this).
        const QString path = remat::tests::sharedPath(
            "benchmarks/remat-graphs/random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json");
        if (!QFileInfo::exists(path))
            QSKIP("shared benchmark graphs not found");
        auto g = io::readNodeLinkGraph(remat::tests::toStd(path));
        QVERIFY2(g.hasValue(), g.status().toString().c_str());
        QCOMPARE(g->graph.opCount(), size_t(250));
        QCOMPARE(g->graph.forwardOpCount(), size_t(250));
        QCOMPARE(g->nodeIds.front(), int64_t(0));
        QCOMPARE(g->nodeIds.back(), int64_t(1));
        QCOMPARE(links(g->graph), size_t(944));
        QVERIFY(readsNetworkInput(g->graph, OpId(0)));
        QCOMPARE(g->referencePeakBytes, int64_t(146840));
    }

    void roundTrip()
    {
        // Expected: write then read gives the same ops, phases, edges, bytes and costs.
        const QString path =
            remat::tests::sharedPath("benchmarks/remat-graphs/fcn_8_vgg_32_416x608_train.json");
        if (!QFileInfo::exists(path))
            QSKIP("shared benchmark graphs not found");
        auto a = io::readNodeLinkGraph(remat::tests::toStd(path));
        QVERIFY(a.hasValue());
        const std::string text = io::formatNodeLinkGraph(a->graph, a->costs, a->name);
        auto b = io::parseNodeLinkGraph(text, "round trip");
        QVERIFY2(b.hasValue(), b.status().toString().c_str());
        QCOMPARE(b->name, a->name);
        QCOMPARE(b->graph.opCount(), a->graph.opCount());
        QCOMPARE(b->referencePeakBytes, a->referencePeakBytes);
        for (size_t i = 0; i < a->graph.opCount(); ++i) {
            const training::Op &x = a->graph.op(OpId(i)), &y = b->graph.op(OpId(i));
            QCOMPARE(y.name, x.name);
            QCOMPARE(y.phase, x.phase);
            QCOMPARE(y.inputs, x.inputs);
            QCOMPARE(b->graph.tensor(y.outputs[0]).bytes, a->graph.tensor(x.outputs[0]).bytes);
            QCOMPARE(b->costs.opSeconds[i], a->costs.opSeconds[i]);
        }
    }

    void errors()
    {
        // Expected: clear errors for malformed input, never a crash.
        QCOMPARE(io::parseNodeLinkGraph("{", "x").status().code(), StatusCode::ParseError);
        QCOMPARE(io::parseNodeLinkGraph("{\"nodes\":[]}", "x").status().code(),
                 StatusCode::ParseError);
        const char *cycle =
            R"({"nodes":[{"id":0,"cost_cpu":1,"cost_ram":1},{"id":1,"cost_cpu":1,"cost_ram":1}],
                              "links":[{"source":0,"target":1},{"source":1,"target":0}]})";
        QCOMPARE(io::parseNodeLinkGraph(cycle, "x").status().code(), StatusCode::ParseError);
        const char *dangling =
            R"({"nodes":[{"id":0,"cost_cpu":1,"cost_ram":1}],"links":[{"source":0,"target":5}]})";
        QCOMPARE(io::parseNodeLinkGraph(dangling, "x").status().code(), StatusCode::ParseError);
        QCOMPARE(io::readNodeLinkGraph("/nonexistent/graph.json").status().code(),
                 StatusCode::NotFound);
    }
};

QTEST_GUILESS_MAIN(TstNodeLink)
#include "tst_node_link.moc"
