// The built `remat info --json` on resnet18: its stable keys carry oracle.json's figures
// (69 nodes, op-type histogram, param_bytes 46758048, node-output bytes 1053592064 at batch 32);
// --batch 16 halves the input; a missing file prints the Status and exits non-zero.
#include "common/test_support.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace remat::tests;

namespace {

QString rematBinary() { return binaryDir() + "/app/remat"; }

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

} // namespace

class TestInfoCli : public QObject
{
    Q_OBJECT
private slots:
    void jsonMatchesOracle()
    {
        const QString model = sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(rematBinary()) || !QFileInfo::exists(model))
            QSKIP("remat binary or shared corpus not found");
        QProcess p;
        p.start(rematBinary(), {"info", model, "--json"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QJsonObject j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        const QJsonObject oracle =
            readJson(sharedPath("corpus/oracle.json")).value("resnet18").toObject();
        QCOMPARE(j.value("nodes").toInt(), oracle.value("onnx_nodes").toInt());
        QCOMPARE(j.value("op_types").toObject(), oracle.value("onnx_op_types").toObject());
        QCOMPARE(j.value("param_bytes").toDouble(), oracle.value("param_bytes").toDouble());
        QCOMPARE(j.value("activation_bytes").toDouble(),
                 oracle.value("onnx_node_output_bytes").toDouble());
        QCOMPARE(j.value("params").toInt(), 62);
        QCOMPARE(j.value("opset").toInt(), 17);
        QCOMPARE(j.value("producer").toString(), QString("pytorch"));
        QCOMPARE(j.value("batch").toInt(), 32);
        QCOMPARE(j.value("namespace_depth").toInt(),
                 4); // /layer1/layer1.0/downsample/downsample.0/Conv
        QVERIFY(j.value("values").toInt() > 0);
        const QJsonObject in = j.value("inputs").toArray().at(0).toObject();
        QCOMPARE(in.value("name").toString(), QString("input"));
        QCOMPARE(in.value("shape").toArray(), QJsonArray({32, 3, 224, 224}));
        QCOMPARE(in.value("dtype").toString(), QString("float32"));
        QCOMPARE(j.value("outputs").toArray().at(0).toObject().value("shape").toArray(),
                 QJsonArray({32, 1000}));

        p.start(rematBinary(), {"info", model, "--json", "--batch", "16"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QJsonObject j16 = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        QCOMPARE(j16.value("inputs").toArray().at(0).toObject().value("shape").toArray(),
                 QJsonArray({16, 3, 224, 224}));
        QCOMPARE(j16.value("param_bytes").toDouble(), oracle.value("param_bytes").toDouble());
    }

    /// onnxruntime's attention nodes are fused in either mode: listed without --attention sdpa;
    /// a file without them lists nothing in eager mode, and its patterns and near misses with
    /// sdpa (tests/data/attention, tests/python/attention_spellings.py).
    void attentionListed()
    {
        if (!QFileInfo::exists(rematBinary()))
            QSKIP("remat binary not found");
        const QString dir = sourceDir() + "/tests/data/attention/";
        const auto info = [&](const QString &file, const QStringList &extra) {
            QProcess p;
            p.start(rematBinary(), QStringList{"info", dir + file, "--json"} + extra);
            if (!p.waitForFinished(60000) || p.exitCode() != 0)
                return QJsonObject();
            return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        };
        const QJsonObject gqa = info("llama_ort.onnx", {});
        QCOMPARE(gqa.value("attention_fused").toArray().size(), 2);
        QVERIFY(gqa.value("attention_fused")
                    .toArray()
                    .at(0)
                    .toString()
                    .contains("com.microsoft.GroupQueryAttention"));
        QVERIFY(!info("llama_ref.onnx", {}).contains("attention_fused"));
        QCOMPARE(info("llama_ref.onnx", {"--attention", "sdpa"})
                     .value("attention_fused")
                     .toArray()
                     .size(),
                 2);
        const QJsonArray miss = info("gpt2_tf2onnx_mulmask.onnx", {"--attention", "sdpa"})
                                    .value("attention_not_fused")
                                    .toArray();
        QCOMPARE(miss.size(), 2);
        QVERIFY(miss.at(0).toString().contains("multiplied by"));
    }

    void errorExitsNonZero()
    {
        if (!QFileInfo::exists(rematBinary()))
            QSKIP("remat binary not found");
        QProcess p;
        p.start(rematBinary(), {"info", "/no/such/model.onnx"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY(p.exitCode() != 0);
        QVERIFY(QString(p.readAllStandardError()).contains("/no/such/model.onnx"));
    }
    void importSettingsOnTheCommandLine()
    {
        // Real files from other exporters (tests/data/realworld/README.md): free dims, a scalar
        // sample rate an If branches on, weights in Constant nodes, inference BatchNormalization.
        const QString rw = sourceDir() + "/tests/data/realworld/";
        if (!QFileInfo::exists(rematBinary()) ||
            !QFileInfo::exists(rw + "ppocr_mobile_v2_cls.onnx"))
            QSKIP("remat binary or realworld data not found");
        auto run = [&](const QStringList &args, int &code) {
            QProcess p;
            p.start(rematBinary(), args);
            p.waitForFinished(120000);
            code = p.exitCode();
            return QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
        };
        int code = -1;
        // Without sizes: info still summarises the file (exit 0) and says what blocks training,
        // naming the dims and the option that sets them.
        QString out = run({"info", rw + "ppocr_mobile_v2_cls.onnx"}, code);
        QCOMPARE(code, 0);
        QVERIFY2(out.contains("training     blocked:") &&
                     out.contains("--dim p2o.DynamicDimension.1="),
                 qPrintable(out));
        // train-graph needs them: exit 1 with the same advice.
        out = run({"train-graph", rw + "ppocr_mobile_v2_cls.onnx"}, code);
        QCOMPARE(code, 1);
        QVERIFY2(out.contains("--dim p2o.DynamicDimension.1="), qPrintable(out));
        // With them: parameters from the Constant nodes, BN modelled in training mode, said so.
        out = run(
            {"info", rw + "ppocr_mobile_v2_cls.onnx", "--json", "--input-shape", "x=1x3x48x192"},
            code);
        QCOMPARE(code, 0);
        const QJsonObject j = QJsonDocument::fromJson(out.toUtf8()).object();
        QVERIFY2(j.value("params").toInt() > 100, qPrintable(out.left(400)));
        QCOMPARE(j.value("semantics").toString(), QString("training"));
        QVERIFY(j.value("import_notes")
                    .toArray()
                    .at(0)
                    .toString()
                    .contains("35 BatchNormalization nodes"));
        // The If on the sample rate: decided by --input-value.
        out = run({"info", rw + "silero_vad_op18_ifless.onnx", "--dim", "batch=1", "--dim",
                   "sequence=576"},
                  code);
        QCOMPARE(code, 0);
        QVERIFY2(out.contains("--input-value sr="), qPrintable(out));
        out = run({"info", rw + "silero_vad_op18_ifless.onnx", "--dim", "batch=1", "--dim",
                   "sequence=576", "--input-value", "sr=16000"},
                  code);
        QVERIFY2(code == 0, qPrintable(out));
        QVERIFY(!out.contains(QRegularExpression("\\bIf\\b")));
        QVERIFY(!out.contains("blocked"));
        // torchvision's Swin-T: its shifted-window padding is Mod / Sub arithmetic on constants,
        // folded at import, so the training step is derived (it stopped at a Pad of unknown shape).
        out = run({"train-graph", rw + "swin_t_torch113.onnx"}, code);
        QVERIFY2(code == 0, qPrintable(out.right(600)));
        // ... and executed: its shifted-window mask slices shapes down to empty tensors, which
        // kernels took for missing operands ("Slice_9: missing operand: output").
        out = run({"run", rw + "swin_t_torch113.onnx", "--iters", "1"}, code);
        QVERIFY2(code == 0 && out.contains("= predicted"), qPrintable(out.right(600)));
        // Bad settings: a dim twice, a zero dim, a name that is no input, a value for a tensor input.
        for (const QStringList &bad :
             {QStringList{"--dim", "batch=1", "--dim", "batch=2"}, QStringList{"--dim", "batch=0"},
              QStringList{"--input-shape", "audio=1x576"},
              QStringList{"--input-value", "input=3"}}) {
            out = run(QStringList{"info", rw + "silero_vad_op18_ifless.onnx"} + bad, code);
            QVERIFY2(code != 0, qPrintable(bad.join(' ')));
            QVERIFY2(out.contains("error"), qPrintable(out));
        }
    }

    void recurrentAndTransposedConvModelsTrain()
    {
        // LSTM (Silero VAD, inside an If on the sample rate), a bidirectional GRU and paddle's
        // ConvTranspose: each derives its training step and runs it; a plan that recomputes the
        // GRU gives store-all's gradients bit for bit, and measured peak = predicted.
        const QString rw = sourceDir() + "/tests/data/realworld/";
        if (!QFileInfo::exists(rematBinary()) ||
            !QFileInfo::exists(rw + "gru_classifier_torch113.onnx"))
            QSKIP("remat binary or realworld data not found");
        auto run = [&](const QStringList &args, int &code) {
            QProcess p;
            p.start(rematBinary(), args);
            p.waitForFinished(300000);
            code = p.exitCode();
            return QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
        };
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString plan = tmp.filePath("gru_revolve.json");
        const QStringList gru = {rw + "gru_classifier_torch113.onnx", "--batch", "2", "--dim",
                                 "frames=50"};
        int code = -1;
        QString out = run(
            QStringList{"solve"} + gru + QStringList{"--solver", "revolve", "--out", plan}, code);
        QVERIFY2(code == 0, qPrintable(out.right(600)));
        out = run(QStringList{"run"} + gru + QStringList{"--plan", plan, "--check"}, code);
        QVERIFY2(code == 0 && out.contains("= predicted") &&
                     out.contains("match store-all (bitwise"),
                 qPrintable(out.right(600)));
        out = run({"run", rw + "silero_vad_half.onnx", "--batch", "1", "--dim", "sequence=576",
                   "--check"},
                  code);
        QVERIFY2(code == 0 && out.contains("= predicted") && out.contains("match store-all"),
                 qPrintable(out.right(600)));
        out =
            run({"run", rw + "ppocrv4_det.onnx", "--input-shape", "x=1x3x64x64", "--check"}, code);
        QVERIFY2(code == 0 && out.contains("= predicted") && out.contains("match store-all"),
                 qPrintable(out.right(600)));
    }
};

QTEST_GUILESS_MAIN(TestInfoCli)
#include "tst_info_cli.moc"
