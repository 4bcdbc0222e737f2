// Opening a file that leaves its input sizes open (paddle2onnx's PP-OCR classifier: x[N,3,H,W]
// with named free dims), offscreen: the Model Inputs dialog asks for them, the model opens with
// them, they are remembered for the file, the toolbar shows them, a scripted run reports the
// error instead of waiting, and a session keeps them.
#include "common/test_support.h"
#include "ui_test_util.h"

#include "ui/import_settings.h"
#include "ui/input_settings_dialog.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/planner/planner.h"
#include "ui/planner/session_file.h"

#include <QAction>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
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
    QTest::qWaitFor([&] { return (d = w.findChild<InputSettingsDialog *>()) != nullptr; }, 30000);
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
        // Shown on the toolbar, remembered for the file.
        auto *label = w.findChild<QLabel *>(QStringLiteral("inputsLabel"));
        QVERIFY(label && label->text().contains(QStringLiteral("=48")));
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

    // Issue #37 item 14: sizes the names do not suggest come from where the dim sits (H and W
    // of [N, 3, H, W] start at 224, not 1), and Import with an open size at 1 warns once.
    void imageSizesProposedAndOneByOneWarned()
    {
        QSettings().clear();
        MainWindow w;
        w.openModel(clsModel());
        InputSettingsDialog *d = waitForDialog(w);
        QVERIFY(d);
        QCOMPARE(d->dimField(QString::fromLatin1(kH))->value(), 224);
        QCOMPARE(d->dimField(QString::fromLatin1(kW))->value(), 224);
        QCOMPARE(d->dimField(QString::fromLatin1(kN))->value(), 1);
        d->dimField(QString::fromLatin1(kH))->setValue(1);
        d->dimField(QString::fromLatin1(kW))->setValue(1);
        d->accept();
        QVERIFY(d->isVisible() || d->result() != QDialog::Accepted);
        auto *error = d->findChild<QLabel *>(QStringLiteral("inputSettingsError"));
        QVERIFY(error && error->text().contains(QStringLiteral("degenerate")));
        QVERIFY2(error->text().contains(QStringLiteral("1x3x1x1")), qPrintable(error->text()));
        QSignalSpy finished(d, &QDialog::finished);
        d->accept(); // the second Import keeps 1x1
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.front().front().toInt(), int(QDialog::Accepted));
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
