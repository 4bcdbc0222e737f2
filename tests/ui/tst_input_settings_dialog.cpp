// Opening a file that leaves its input sizes open (paddle2onnx's PP-OCR classifier: x[N,3,H,W]
// with named free dims), offscreen: the Model Inputs dialog asks for them, the model opens with
// them, they are remembered for the file, the toolbar shows them, a scripted run reports the
// error instead of waiting, and a session keeps them. The dialog proposes real sizes where the
// file's names say nothing (paddle2onnx's p2o.DynamicDimension.N, spox's unnamed '?', tf2onnx's
// unk__N): an image's height and width 224, an audio input's length 16000, never 1 besides the
// batch; a size left at 1 is warned about and Import asks once more.
#include "common/test_support.h"
#include "ui_test_util.h"

#include "ui/import_settings.h"
#include "ui/input_settings_dialog.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/planner/planner.h"
#include "ui/planner/session_file.h"

#include "core/onnx/input_spec.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

using namespace remat;
using namespace remat::ui;
using namespace remat::tests;

namespace {

QString clsModel()
{
    return sourceDir() + QStringLiteral("/tests/data/realworld/ppocr_mobile_v2_cls.onnx");
}

const char *kH = "p2o.DynamicDimension.1";
const char *kW = "p2o.DynamicDimension.2";
const char *kN = "p2o.DynamicDimension.0";

InputSettingsDialog *waitForDialog(MainWindow &w)
{
    InputSettingsDialog *d = nullptr;
    (void)QTest::qWaitFor([&] { return (d = w.findChild<InputSettingsDialog *>()) != nullptr; },
                          30000);
    return d;
}

} // namespace

class TestInputSettingsDialog : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        isolateSettings();
        if (!QFileInfo::exists(clsModel()))
            QSKIP("tests/data/realworld not found");
    }

    void dialogAsksForFreeDimsAndRemembersThem()
    {
        MainWindow w;
        QSignalSpy shown(&w, &MainWindow::modelShown);
        w.openModel(clsModel());
        InputSettingsDialog *d = waitForDialog(w);
        QVERIFY2(d, "no Model Inputs dialog for a file with free dims");
        QVERIFY(d->dimField(QString::fromLatin1(kN)) && d->dimField(QString::fromLatin1(kH)) &&
                d->dimField(QString::fromLatin1(kW)));
        // A typo stays in the dialog with its message (the CLI's own parser).
        d->dimField(QString::fromLatin1(kN))->setValue(1);
        d->dimField(QString::fromLatin1(kH))->setValue(48);
        d->dimField(QString::fromLatin1(kW))->setValue(192);
        d->accept();
        // The file was shown at once (browsable, shapes unknown); now it is re-imported with the sizes.
        QVERIFY(QTest::qWaitFor(
            [&] {
                return w.document()->hasModel() && w.document()->model().training && !w.isBusy();
            },
            60000));
        QVERIFY(shown.count() > 0);
        // The planner follows the re-import: its problem is the model at these sizes.
        QVERIFY(QTest::qWaitFor([&] { return w.planner()->problem() && !w.planner()->isLoading(); },
                                60000));
        QCOMPARE(w.planner()->problem()->training->info().batch, int64_t(1));
        QVERIFY(sameImportSettings(w.planner()->document()->importSettings(), w.importSettings()));
        const core::ir::Graph &g = w.document()->graph();
        const core::ir::Value &x = g.value(g.inputs()[0]);
        QCOMPARE(x.shape, core::ir::Shape::fromStatic({1, 3, 48, 192}));
        // The weights paddle2onnx stores as Constant nodes are parameters.
        int params = 0;
        for (const core::ir::Value &v : g.values())
            params += v.kind == core::ir::ValueKind::Parameter;
        QVERIFY2(params > 100, QByteArray::number(params).constData());
        // The inspector says how the inference export is studied (as `remat info` does).
        w.document()->setSelectedNode(core::NodeId());
        QVERIFY2(w.inspector()->html().contains(
                     QStringLiteral("35 BatchNormalization nodes were exported for inference")),
                 qPrintable(w.inspector()->html().left(2000)));
        // Shown on the toolbar (whole in its tooltip), remembered for the file.
        auto *label = w.findChild<QLabel *>(QStringLiteral("inputsLabel"));
        QVERIFY(label && label->toolTip().contains(QStringLiteral("=48")));
        const auto remembered = rememberedImportSettings(QFileInfo(clsModel()).absoluteFilePath());
        QCOMPARE(remembered.dimValues.at(kH), int64_t(48));
        QCOMPARE(remembered.dimValues.at(kW), int64_t(192));
    }

    void secondOpenUsesTheRememberedValues()
    {
        MainWindow w;
        QVERIFY(openAndWait(w, clsModel())); // no dialog this time
        QVERIFY(!w.findChild<InputSettingsDialog *>());
        QCOMPARE(w.importSettings().dimValues.at(kW), int64_t(192));
        // The toolbar's Inputs... action edits them: W = 96 re-imports.
        auto *action = w.findChild<QAction *>(QStringLiteral("inputsAction"));
        QVERIFY(action && action->isEnabled());
        QSignalSpy shown(&w, &MainWindow::modelShown);
        QSignalSpy laidOut(&w, &MainWindow::layoutFinished);
        action->trigger();
        InputSettingsDialog *d = waitForDialog(w);
        QVERIFY(d);
        QCOMPARE(d->dimField(QString::fromLatin1(kW))->value(), 192);
        d->dimField(QString::fromLatin1(kW))->setValue(96);
        d->accept();
        QVERIFY(QTest::qWaitFor(
            [&] {
                const core::ir::Graph &g = w.document()->graph();
                return g.value(g.inputs()[0]).shape == core::ir::Shape::fromStatic({1, 3, 48, 96});
            },
            60000));
    }

    void scriptedRunsBrowseWithoutAsking()
    {
        // Without sizes the graph is still shown (unknown shapes) and no dialog waits; the
        // inspector's model facts say what blocks the training step.
        QSettings().clear();
        MainWindow w;
        w.setInteractive(false);
        QSignalSpy failed(&w, &MainWindow::errorOccurred);
        QVERIFY(openAndWait(w, clsModel()));
        QCOMPARE(failed.count(), 0);
        QVERIFY(!w.findChild<InputSettingsDialog *>());
        QVERIFY(!w.document()->model().training);
        // Said in the window's terms (the dialog's field), not as the CLI's --dim flag.
        QVERIFY2(w.document()->model().trainingError.contains(QStringLiteral(
                     "p2o.DynamicDimension.1 and p2o.DynamicDimension.2 in Inputs...")),
                 qPrintable(w.document()->model().trainingError));
        QVERIFY(!w.document()->model().trainingError.contains(QStringLiteral("--dim")));
        QVERIFY(w.document()->graph().nodeCount() > 100);
    }

    void proposesSizesFromNamesAndPlaces()
    {
        namespace ox = core::onnx;
        using core::ir::Dim;
        using core::ir::Shape;
        auto free = [] { return Dim(); };
        // The PP-OCR classifier: x[p2o.0, 3, p2o.1, p2o.2] -> 1x3x224x224 (was 1x3x1x1).
        auto cls = ox::readModelSignature(clsModel().toStdString());
        QVERIFY(cls.hasValue());
        QCOMPARE(ox::suggestNamedDim(*cls, kN), int64_t(1));
        QCOMPARE(ox::suggestNamedDim(*cls, kH), int64_t(224));
        QCOMPARE(ox::suggestNamedDim(*cls, kW), int64_t(224));
        // Silero VAD from spox: input[?, ?] with a scalar `sr` is audio, and with a recurrent
        // `state` a streaming model fed 512-sample chunks: 1x512 (was 1x1; it trains at 512, not
        // at 16000, where its LSTM's shape is unknown); state[2, ?, 128] keeps '?' as the batch.
        const QString silero =
            sourceDir() + QStringLiteral("/tests/data/realworld/silero_vad_v5_spox.onnx");
        auto vad = ox::readModelSignature(silero.toStdString());
        QVERIFY(vad.hasValue());
        for (const ox::DeclaredInput &in : vad->inputs) {
            if (in.name == "input")
                QCOMPARE(ox::suggestInputShape(*vad, in), (std::vector<int64_t>{1, 512}));
            if (in.name == "state")
                QCOMPARE(ox::suggestInputShape(*vad, in), (std::vector<int64_t>{2, 1, 128}));
        }
        // Made-up signatures of the other layouts: NHWC with unnamed dims, token ids, video,
        // a tf2onnx batch, a sequence of features, a text line 48 high.
        ox::ModelSignature sig;
        sig.inputs.push_back(
            {"image", core::ir::DataType::Float, Shape({free(), free(), free(), Dim(3)})});
        sig.inputs.push_back({"input_ids", core::ir::DataType::Int64, Shape({free(), free()})});
        sig.inputs.push_back(
            {"clip", core::ir::DataType::Float, Shape({free(), Dim(3), free(), free(), free()})});
        sig.inputs.push_back({"input_1", core::ir::DataType::Float,
                              Shape({Dim::symbolic("unk__314"), Dim(76), Dim(32), Dim(1)})});
        sig.inputs.push_back(
            {"features", core::ir::DataType::Float, Shape({free(), Dim::symbolic("s1"), Dim(40)})});
        sig.inputs.push_back(
            {"line", core::ir::DataType::Float, Shape({free(), Dim(3), Dim(48), free()})});
        const std::vector<std::vector<int64_t>> want = {{1, 224, 224, 3},     {1, 128},
                                                        {1, 3, 16, 224, 224}, {1, 76, 32, 1},
                                                        {1, 128, 40},         {1, 3, 48, 224}};
        for (size_t i = 0; i < want.size(); ++i)
            QVERIFY2(ox::suggestInputShape(sig, sig.inputs[i]) == want[i],
                     ox::formatDims(ox::suggestInputShape(sig, sig.inputs[i])).c_str());
        QCOMPARE(ox::suggestNamedDim(sig, "s1"), int64_t(128));
        // A clip (no recurrent state): one second at 16 kHz.
        ox::ModelSignature clip;
        clip.inputs.push_back({"waveform", core::ir::DataType::Float, Shape({free(), free()})});
        QCOMPARE(ox::suggestInputShape(clip, clip.inputs[0]), (std::vector<int64_t>{1, 16000}));
        QCOMPARE(ox::suggestNamedDim(sig, "unk__314"), int64_t(1));
        // Names that say something still win.
        QCOMPARE(ox::suggestDimValue("height"), int64_t(224));
    }

    void dialogProposesAndWarnsOnOnes()
    {
        namespace ox = core::onnx;
        auto cls = ox::readModelSignature(clsModel().toStdString());
        QVERIFY(cls.hasValue());
        InputSettingsDialog d(*cls, {}, QString());
        QCOMPARE(d.dimField(QString::fromLatin1(kH))->value(), 224);
        QCOMPARE(d.dimField(QString::fromLatin1(kW))->value(), 224);
        QCOMPARE(d.dimField(QString::fromLatin1(kN))->value(), 1);
        auto *warning = d.findChild<QLabel *>(QStringLiteral("inputSettingsWarning"));
        QVERIFY(warning);
        QVERIFY(d.degenerateInputs().isEmpty());
        QVERIFY(warning->isHidden());
        // W = 1: said at once, naming the input, its shape and the dim.
        d.dimField(QString::fromLatin1(kW))->setValue(1);
        QCOMPARE(d.degenerateInputs().size(), 1);
        QVERIFY2(d.degenerateInputs()[0].contains(QStringLiteral("x would be 1x3x224x1")),
                 qPrintable(d.degenerateInputs()[0]));
        QVERIFY(!warning->isHidden());
        QVERIFY(warning->text().contains(QStringLiteral("degenerate")));
        // Import asks once more, then imports what was typed.
        d.show();
        d.accept();
        QVERIFY(d.isVisible());
        QVERIFY(d.result() != QDialog::Accepted);
        auto *import = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
        QCOMPARE(import->text(), QStringLiteral("Import anyway"));
        d.accept();
        QCOMPARE(d.result(), int(QDialog::Accepted));
        QCOMPARE(d.settings().dimValues.at(kW), int64_t(1));
        // The batch at 1 is no warning; an unnamed audio length at 1 is.
        const QString silero =
            sourceDir() + QStringLiteral("/tests/data/realworld/silero_vad_v5_spox.onnx");
        auto vad = ox::readModelSignature(silero.toStdString());
        QVERIFY(vad.hasValue());
        InputSettingsDialog a(*vad, {}, QString());
        QVERIFY(a.shapeField(QStringLiteral("input")));
        QCOMPARE(a.shapeField(QStringLiteral("input"))->text(), QStringLiteral("1x512"));
        QVERIFY(a.degenerateInputs().isEmpty());
        a.shapeField(QStringLiteral("input"))->setText(QStringLiteral("1x1"));
        QCOMPARE(a.degenerateInputs().size(), 1);
        QVERIFY(a.degenerateInputs()[0].contains(QStringLiteral("input would be 1x1")));
    }

    void sessionsKeepTheSettings()
    {
        QSettings().clear();
        core::onnx::ImportOptions s;
        s.dimValues = {{kN, 1}, {kH, 32}, {kW, 64}};
        s.semantics = core::onnx::Semantics::AsExported;
        SessionData data;
        data.modelPath = QFileInfo(clsModel()).absoluteFilePath();
        data.batch = 1;
        data.importSettings = s;
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("cls.rematproj"));
        QVERIFY(writeSessionFile(file, data, nullptr).isOk());
        auto back = readSessionFile(file);
        QVERIFY2(back.hasValue(), back.status().message().c_str());
        QVERIFY(sameImportSettings(back->importSettings, s));
        // A session whose import settings are malformed is refused by name.
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QString text = QString::fromUtf8(f.readAll());
        f.close();
        const QRegularExpressionMatch m =
            QRegularExpression(QStringLiteral("\"p2o\\.DynamicDimension\\.1\"\\s*:\\s*(32)"))
                .match(text);
        QVERIFY(m.hasMatch());
        text.replace(m.capturedStart(1), m.capturedLength(1), QStringLiteral("0"));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(text.toUtf8());
        f.close();
        auto broken = readSessionFile(file);
        QVERIFY(!broken.hasValue());
        QVERIFY2(broken.status().message().find("p2o.DynamicDimension.1") != std::string::npos,
                 broken.status().message().c_str());
    }
};

QTEST_MAIN(TestInputSettingsDialog)
#include "tst_input_settings_dialog.moc"
