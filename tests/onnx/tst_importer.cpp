// importModel on the real corpus: every file loads; node and op-type counts equal oracle.json
// (PyTorch's exports) or the file's own; shapes inferred by us at batch 16 without value_info
// equal the file's batch-32 shapes scaled in the batch dim; parameter / buffer classification
// equals corpus_manifest.json and oracle.json's param_bytes.
#include "core/onnx/classify.h"
#include "core/onnx/importer.h"

#include "common/test_support.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <map>
#include <set>

using namespace remat::core;
using namespace remat::tests;

namespace {

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

const char *kGraphOnly[] = {"resnet18",    "resnet50",     "vgg16",
                            "densenet121", "mobilenet_v2", "vit_b_16"};
const char *kWithWeights[] = {"mlp", "tiny_vit", "mobilenet_v2_b2_64"};
const char *kLight[] = {"bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
                        "shufflenet",   "squeezenet",  "vgg19",        "zfnet512"};

// Node counts of the onnx-light files, from their README (ConstantOfShape weights included).
const std::map<std::string, int> kLightNodes = {
    {"resnet50", 415},     {"densenet121", 1746}, {"inception_v1", 237},
    {"inception_v2", 916}, {"shufflenet", 446},   {"squeezenet", 105},
    {"vgg19", 82},         {"zfnet512", 38},      {"bvlc_alexnet", 40}};

std::map<std::string, int> opCounts(const ir::Graph &g)
{
    std::map<std::string, int> m;
    for (const ir::Node &n : g.nodes())
        ++m[n.opType];
    return m;
}

int64_t kindBytes(const ir::Graph &g, ir::ValueKind kind, int *count = nullptr)
{
    int64_t bytes = 0;
    int n = 0;
    for (const ir::Value &v : g.values())
        if (v.kind == kind) {
            bytes += v.bytes().value();
            ++n;
        }
    if (count)
        *count = n;
    return bytes;
}

} // namespace

class TestImporter : public QObject
{
    Q_OBJECT
private slots:
    void layerScaleNamesParameters()
    {
        // Layer scale exported with export_params=False is a graph input beside a computed
        // operand: its name says it is learned (ConvNeXt, CaiT, timm); a rotary table does not.
        QVERIFY(onnx::nameLooksLikeParameter("features.1.0.layer_scale"));
        QVERIFY(onnx::nameLooksLikeParameter("blocks.3.gamma_1"));
        QVERIFY(onnx::nameLooksLikeParameter("blocks.3.ls1.gamma"));
        QVERIFY(!onnx::nameLooksLikeParameter("layers.0.self_attn.cos"));
        QVERIFY(!onnx::nameLooksLikeParameter("input.1"));
    }

    void graphOnlyMatchesOracle_data()
    {
        QTest::addColumn<QString>("name");
        for (const char *n : kGraphOnly)
            QTest::newRow(n) << QString(n);
    }
    void graphOnlyMatchesOracle()
    {
        QFETCH(QString, name);
        const QString path = sharedPath("corpus/graph_only/" + name + ".onnx");
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        const QJsonObject oracle =
            readJson(sharedPath("corpus/oracle.json")).value(name).toObject();
        const QJsonObject manifest = readJson(sharedPath("corpus/corpus_manifest.json"))
                                         .value("tier_a")
                                         .toObject()
                                         .value(name)
                                         .toObject();
        auto g = onnx::importModel(toStd(path));
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(g->info().opsetVersion, int64_t(17));
        QCOMPARE(g->info().producerName, std::string("pytorch"));
        QCOMPARE(g->info().batch, int64_t(32));
        QCOMPARE(QString::fromStdString(g->info().sha256), manifest.value("sha256").toString());
        // Expected: oracle.json onnx_nodes, onnx_op_types (e.g. resnet18: 69 nodes, Conv 20).
        QCOMPARE(int(g->nodeCount()), oracle.value("onnx_nodes").toInt());
        const QJsonObject ops = oracle.value("onnx_op_types").toObject();
        const auto counts = opCounts(*g);
        QCOMPARE(int(counts.size()), int(ops.size()));
        for (auto it = ops.begin(); it != ops.end(); ++it)
            QCOMPARE(counts.count(it.key().toStdString()) ? counts.at(it.key().toStdString()) : 0,
                     it.value().toInt());
        // Classification: manifest param_inputs / buffer_inputs, oracle param_bytes and the
        // BN statistics' bytes (onnx_buffer_input_bytes).
        int params = 0, buffers = 0, inputs = 0;
        const int64_t paramBytes = kindBytes(*g, ir::ValueKind::Parameter, &params);
        const int64_t bufferBytes = kindBytes(*g, ir::ValueKind::Buffer, &buffers);
        kindBytes(*g, ir::ValueKind::Input, &inputs);
        QCOMPARE(params, manifest.value("param_inputs").toInt());
        QCOMPARE(buffers, manifest.value("buffer_inputs").toInt());
        QCOMPARE(inputs, 1);
        QCOMPARE(paramBytes, int64_t(oracle.value("param_bytes").toDouble()));
        QCOMPARE(bufferBytes, int64_t(oracle.value("onnx_buffer_input_bytes").toDouble()));
        // Every node output's bytes, at the file's batch: oracle onnx_node_output_bytes.
        int64_t outBytes = 0;
        int outs = 0;
        for (const ir::Node &n : g->nodes())
            for (ValueId o : n.outputs)
                if (o.valid()) {
                    outBytes += g->value(o).bytes().value();
                    ++outs;
                }
        QCOMPARE(outs, oracle.value("onnx_node_outputs").toInt());
        // Constant nodes keep their node and carry their tensor on the output (shape arithmetic).
        for (const ir::Node &n : g->nodes()) {
            if (n.opType != "Constant")
                continue;
            const ir::Value &v = g->value(n.outputs[0]);
            QCOMPARE(v.kind, ir::ValueKind::Constant);
            QVERIFY(v.initializer && v.initializer->hasData());
            QCOMPARE(v.initializer->shape, v.shape);
            QVERIFY(v.initializer->bytes().hasValue());
        }
        QCOMPARE(outBytes, int64_t(oracle.value("onnx_node_output_bytes").toDouble()));
    }

    void withWeightsLoads_data()
    {
        QTest::addColumn<QString>("name");
        for (const char *n : kWithWeights)
            QTest::newRow(n) << QString(n);
    }
    void withWeightsLoads()
    {
        QFETCH(QString, name);
        const QString path = sharedPath("corpus/with_weights/" + name + ".onnx");
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        auto g = onnx::importModel(toStd(path));
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        // Expected, from corpus_manifest.json tier_b: node and op-type counts; the parameters
        // are exactly the initializers PyTorch's parameters map to (param_to_initializer), the
        // buffers exactly initializers_that_are_buffers, the rest initializers_other.
        const QJsonObject m = readJson(sharedPath("corpus/corpus_manifest.json"))
                                  .value("tier_b")
                                  .toObject()
                                  .value(name)
                                  .toObject();
        QCOMPARE(int(g->nodeCount()), m.value("nodes").toInt());
        const QJsonObject ops = m.value("op_types").toObject();
        const auto counts = opCounts(*g);
        QCOMPARE(int(counts.size()), int(ops.size()));
        for (auto it = ops.begin(); it != ops.end(); ++it)
            QCOMPARE(counts.at(it.key().toStdString()), it.value().toInt());
        std::set<std::string> expectParams, expectBuffers, expectOther, gotParams, gotBuffers,
            gotOther;
        const QJsonObject p2i = m.value("param_to_initializer").toObject();
        for (auto it = p2i.begin(); it != p2i.end(); ++it)
            expectParams.insert(it.value().toString().toStdString());
        for (const auto &b : m.value("initializers_that_are_buffers").toArray())
            expectBuffers.insert(b.toString().toStdString());
        for (const auto &o : m.value("initializers_other").toArray())
            expectOther.insert(o.toString().toStdString());
        for (const ir::Value &v : g->values()) {
            if (!v.initializer || v.producer.valid())
                continue; // Constant node outputs are not initializers
            (v.kind == ir::ValueKind::Parameter ? gotParams
             : v.kind == ir::ValueKind::Buffer  ? gotBuffers
                                                : gotOther)
                .insert(v.name);
        }
        QCOMPARE(gotParams, expectParams);
        QCOMPARE(gotBuffers, expectBuffers);
        QCOMPARE(gotOther, expectOther);
        QCOMPARE(int(gotParams.size()), m.value("initializers_that_are_params").toInt());
        // Every parameter is an initializer with data whose bytes load lazily and match.
        int params = 0;
        for (const ir::Value &v : g->values()) {
            if (v.kind != ir::ValueKind::Parameter)
                continue;
            ++params;
            QVERIFY(v.initializer && v.initializer->hasData());
            auto b = v.initializer->bytes();
            QVERIFY2(b.hasValue(), b.status().message().c_str());
            QCOMPARE(int64_t(b->size()), v.bytes().value());
        }
        QVERIFY(params > 0);
    }

    void lightLoads_data()
    {
        QTest::addColumn<QString>("name");
        for (const char *n : kLight)
            QTest::newRow(n) << QString(n);
    }
    void lightLoads()
    {
        QFETCH(QString, name);
        const QString path = sharedPath("onnx-light/light_" + name + ".onnx");
        if (!QFileInfo::exists(path))
            QSKIP("onnx-light not found");
        auto g = onnx::importModel(toStd(path));
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(g->info().opsetVersion, int64_t(9));
        // Weight ConstantOfShape nodes are folded into parameters; the rest are kept.
        int folded = 0;
        for (const ir::Value &v : g->values())
            if (!v.producer.valid() && v.initializer && v.initializer->data &&
                v.initializer->data->describe() == "constant fill")
                ++folded;
        QCOMPARE(int(g->nodeCount()) + folded, kLightNodes.at(name.toStdString()));
        int params = 0;
        const int64_t paramBytes = kindBytes(*g, ir::ValueKind::Parameter, &params);
        QVERIFY(paramBytes > 0);
        // Published parameter counts of these networks (float32: 4 bytes each).
        const std::map<std::string, int64_t> known = {{"resnet50", 25557032},
                                                      {"bvlc_alexnet", 60965224},
                                                      {"vgg19", 143667240},
                                                      {"squeezenet", 1235496}};
        if (known.count(name.toStdString()))
            QCOMPARE(paramBytes, 4 * known.at(name.toStdString()));
        int inputs = 0;
        kindBytes(*g, ir::ValueKind::Input, &inputs);
        QCOMPARE(inputs, 1);
    }
};

QTEST_GUILESS_MAIN(TestImporter)
#include "tst_importer.moc"
