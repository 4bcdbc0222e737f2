// Trainable / frozen / buffer in the GUI: the inspector says a weight's kind and changes it (the
// window re-imports with a --classify override), the Training dialog takes --freeze /
// --trainable patterns and refuses an invalid one, and the graph colours by what weights a node
// reads. The bundled tiny ViT (resources/models) is the model.
#include "ui/colour_mode.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/planner/training_options_dialog.h"

#include "common/test_support.h"
#include "ui_test_util.h"

#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>
#include <QTextBrowser>
#include <QUrl>

using namespace remat;
using namespace remat::core;

namespace {

QString tinyVit() { return tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx"); }

} // namespace

class TstTrainabilityUi : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase() { tests::isolateSettings(); }

    void inspectorShowsAndChangesTheKind()
    {
        ui::MainWindow w;
        QVERIFY(tests::openAndWait(w, tinyVit()));
        const auto id = w.document()->graph().findValue("patch.weight");
        QVERIFY(id);
        ui::InspectorPanel *inspector = w.inspector();
        inspector->showValue(*id);
        QVERIFY(inspector->html().contains("trainable"));
        QVERIFY(inspector->html().contains("make it"));
        // The "frozen" link: the window re-imports with patch.weight=frozen.
        QSignalSpy asked(inspector, &ui::InspectorPanel::kindChangeRequested);
        auto *browser = inspector->findChild<QTextBrowser *>();
        QVERIFY(browser);
        emit browser->anchorClicked(QUrl(QStringLiteral("remat-kind:frozen/patch.weight")));
        QCOMPARE(asked.count(), 1);
        // (a reload of the same file: the document's model is replaced, no modelShown)
        const auto frozenNow = [&] {
            const ir::Graph &graph = w.document()->graph();
            auto v = graph.findValue("patch.weight");
            return v && graph.value(*v).kind == ir::ValueKind::Frozen;
        };
        QVERIFY(QTest::qWaitFor(frozenNow, 60000));
        const ir::Graph &g = w.document()->graph();
        QCOMPARE(g.value(*g.findValue("patch.weight")).kind, ir::ValueKind::Frozen);
        QCOMPARE(w.document()->model().settings.kindOverrides.at("patch.weight"),
                 ir::ValueKind::Frozen);
        inspector->showValue(*g.findValue("patch.weight"));
        QVERIFY(inspector->html().contains("frozen"));
        QVERIFY(inspector->html().contains("--classify"));

        // Coloured by the weights each node reads.
        auto provider =
            ui::makeColourProvider(ui::ColourMode::Trainability, w.document()->model().graph,
                                   w.document()->model().metrics);
        const ui::Legend legend = provider->legend();
        QCOMPARE(legend.entries.size(), 4);
        NodeId patchConv;
        for (const ir::Node &n : g.nodes())
            for (ValueId in : n.inputs)
                if (in.valid() && g.value(in).name == "patch.weight")
                    patchConv = n.id;
        QVERIFY(patchConv.valid());
        // its bias still trains: "reads a trainable weight"; a Softmax reads none
        QCOMPARE(provider->nodeColour(patchConv), legend.entries[0].colour);
        for (const ir::Node &n : g.nodes())
            if (n.opType == "Softmax")
                QCOMPARE(provider->nodeColour(n.id), legend.entries[3].colour);
        QCOMPARE(ui::colourModeFromId(QStringLiteral("trainable")),
                 std::optional<ui::ColourMode>(ui::ColourMode::Trainability));
    }

    void trainingDialogTakesPatterns()
    {
        ui::TrainingOptionsDialog d;
        d.setPatterns({"^enc\\."}, {"lora_", "^head"});
        QCOMPARE(d.freezeEdit()->text(), QString("^enc\\."));
        QCOMPARE(d.trainablePatterns(), (std::vector<std::string>{"lora_", "^head"}));
        // An invalid expression: the dialog stays open and says why.
        d.show();
        d.freezeEdit()->setText(QStringLiteral("enc.(w"));
        d.accept();
        QVERIFY(d.isVisible());
        QCOMPARE(d.result(), int(QDialog::Rejected));
        bool said = false;
        for (QLabel *l : d.findChildren<QLabel *>())
            said = said || (l->isVisible() && l->text().contains("not a valid regular expression"));
        QVERIFY(said);
        d.freezeEdit()->setText(QStringLiteral("^enc\\."));
        d.accept();
        QCOMPARE(d.result(), int(QDialog::Accepted));
        QCOMPARE(d.freezePatterns(), std::vector<std::string>{"^enc\\."});
    }
};

QTEST_MAIN(TstTrainabilityUi)
#include "tst_trainability_ui.moc"
