// Our shape inference, checked against the shapes the corpus files carry in value_info (which
// PyTorch's exporter and a full ONNX pass wrote at batch 32): with value_info dropped we must
// find the same shapes at batch 32, and at batch 16 the same shapes with the batch dim halved
// (vit_b_16's Reshapes included, whose targets come from Shape -> Gather -> Concat arithmetic).
#include "core/onnx/importer.h"
#include "core/onnx/shape_inference.h"

#include "common/test_support.h"

#include <QFileInfo>
#include <QTest>

#include <map>

using namespace remat::core;
using namespace remat::tests;

namespace {

QStringList corpusFiles()
{
    return {"corpus/graph_only/resnet18.onnx",
            "corpus/graph_only/resnet50.onnx",
            "corpus/graph_only/vgg16.onnx",
            "corpus/graph_only/densenet121.onnx",
            "corpus/graph_only/mobilenet_v2.onnx",
            "corpus/graph_only/vit_b_16.onnx",
            "corpus/with_weights/mlp.onnx",
            "corpus/with_weights/tiny_vit.onnx",
            "corpus/with_weights/mobilenet_v2_b2_64.onnx"};
}

} // namespace

class TestShapeInference : public QObject
{
    Q_OBJECT
private slots:
    void sameShapesAsFile_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString &f : corpusFiles())
            QTest::newRow(qPrintable(QFileInfo(f).baseName())) << f;
    }
    void sameShapesAsFile()
    {
        QFETCH(QString, file);
        const QString path = sharedPath(file);
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        auto withInfo = onnx::importModel(toStd(path));
        QVERIFY2(withInfo.hasValue(), withInfo.status().message().c_str());
        onnx::ImportOptions opt;
        opt.ignoreFileValueInfo = true;
        auto ours = onnx::importModel(toStd(path), opt);
        QVERIFY2(ours.hasValue(), ours.status().message().c_str());
        QCOMPARE(ours->valueCount(), withInfo->valueCount());
        for (const ir::Value &v : withInfo->values()) {
            const ir::Value &o = ours->value(v.id);
            QCOMPARE(o.name, v.name);
            if (!(o.shape == v.shape) || o.dtype != v.dtype)
                QFAIL(qPrintable(
                    QString::fromStdString("value '" + v.name + "': ours " + o.shape.toString() +
                                           " " + ir::dataTypeName(o.dtype) + ", file " +
                                           v.shape.toString() + " " + ir::dataTypeName(v.dtype))));
        }
    }

    void batchScales_data() { sameShapesAsFile_data(); }
    void batchScales()
    {
        QFETCH(QString, file);
        const QString path = sharedPath(file);
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        auto atFile = onnx::importModel(toStd(path));
        QVERIFY2(atFile.hasValue(), atFile.status().message().c_str());
        const int64_t fileBatch = atFile->info().batch;
        const int64_t batch = fileBatch == 16 ? 8 : 16;
        onnx::ImportOptions opt;
        opt.ignoreFileValueInfo = true;
        opt.batch = batch;
        auto g = onnx::importModel(toStd(path), opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(g->info().batch, batch);
        // Values the batch flows into through data edges (not through Shape) must scale.
        std::vector<bool> dataReach(g->valueCount(), false);
        for (ValueId in : g->inputs())
            if (g->value(in).kind == ir::ValueKind::Input)
                dataReach[in.index()] = true;
        for (NodeId nid : g->topologicalOrder()) {
            const ir::Node &n = g->node(nid);
            if (n.opType == "Shape" || n.opType == "Size")
                continue;
            bool any = false;
            for (ValueId in : n.inputs)
                any = any || (in.valid() && dataReach[in.index()]);
            // BatchNormalization's running statistics are per channel.
            const size_t scaling = n.opType == "BatchNormalization" ? 1 : n.outputs.size();
            for (size_t k = 0; k < scaling; ++k)
                if (n.outputs[k].valid())
                    dataReach[n.outputs[k].index()] = any;
        }
        int scaled = 0, mustScale = 0;
        for (const ir::Value &v : atFile->values()) {
            const ir::Value &o = g->value(v.id);
            QVERIFY2(o.shape.isStatic(), o.name.c_str());
            QCOMPARE(o.shape.rank(), v.shape.rank());
            int differing = 0;
            for (size_t i = 0; i < v.shape.rank(); ++i) {
                const int64_t f = v.shape.dims[i].value, b = o.shape.dims[i].value;
                if (f == b)
                    continue;
                ++differing;
                // Expected: the file's dim is fileBatch/batch times ours ([32,...] -> [16,...],
                // vit's head-split [197,384,64] -> [197,192,64]).
                if (f * batch != b * fileBatch)
                    QFAIL(qPrintable(QString::fromStdString(
                        "value '" + v.name + "': file " + v.shape.toString() + " at batch " +
                        std::to_string(fileBatch) + ", ours " + o.shape.toString() + " at batch " +
                        std::to_string(batch))));
            }
            QVERIFY2(differing <= 1, v.name.c_str());
            scaled += differing;
            if (dataReach[v.id.index()]) {
                ++mustScale;
                QVERIFY2(differing == 1,
                         ("value '" + v.name + "' did not follow the batch: " + o.shape.toString())
                             .c_str());
            }
        }
        QVERIFY(mustScale > 0);
        QVERIFY(scaled >= mustScale);
        for (ValueId out : g->outputs())
            QCOMPARE(g->value(out).shape.dims[0].value, batch);
    }

    void lightShapesMatchOnnxOnesAtOtherBatch()
    {
        // onnx-light files have no value_info: their shapes come from our inference alone.
        // Expected: ResNet-50's output [1,1000] at batch 1 and [8,1000] at batch 8.
        const QString path = sharedPath("onnx-light/light_resnet50.onnx");
        if (!QFileInfo::exists(path))
            QSKIP("onnx-light not found");
        onnx::ImportOptions opt;
        auto g1 = onnx::importModel(toStd(path), opt);
        QVERIFY2(g1.hasValue(), g1.status().message().c_str());
        QCOMPARE(g1->value(g1->outputs()[0]).shape, ir::Shape::fromStatic({1, 1000}));
        opt.batch = 8;
        auto g8 = onnx::importModel(toStd(path), opt);
        QVERIFY2(g8.hasValue(), g8.status().message().c_str());
        QCOMPARE(g8->value(g8->outputs()[0]).shape, ir::Shape::fromStatic({8, 1000}));
    }
};

QTEST_GUILESS_MAIN(TestShapeInference)
#include "tst_shape_inference.moc"
