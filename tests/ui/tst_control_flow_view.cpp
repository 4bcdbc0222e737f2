// If boxes in the explorer, offscreen, on a real file (Silero VAD v4 re-saved by ONNX Runtime,
// tests/data/realworld): opened without the sample rate, its If_25 (16 kHz / 8 kHz models as
// then / else branches) is a group like a namespace: collapsed it is one box; expanded it shows
// the If and its two branch boxes; a branch expands into its nodes; search finds a branch node
// and the inspector shows it; the training blocker still names the If and the value to give.
#include "common/test_support.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/search_bar.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/model_document.h"
#include "ui_test_util.h"

#include <QFileInfo>
#include <QSignalSpy>
#include <QTest>

using namespace remat;
using namespace remat::ui;
using remat::tests::openAndWait;

namespace {

constexpr int kTimeoutMs = 60000;

core::NamespaceId nsByPath(const core::ir::Graph &g, const std::string &path)
{
    for (const auto &ns : g.namespaces())
        if (ns.path == path)
            return ns.id;
    return {};
}

bool waitForLayout(MainWindow &w, QSignalSpy &spy, int before)
{
    return QTest::qWaitFor([&] { return spy.count() > before && !w.isBusy(); }, kTimeoutMs);
}

} // namespace

class TestControlFlowView : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { remat::tests::isolateSettings(); }

    void ifExpandsIntoItsBranches()
    {
        const QString file = remat::tests::sourceDir() +
                             QStringLiteral("/tests/data/realworld/silero_vad_legacy_ort.onnx");
        if (!QFileInfo::exists(file))
            QSKIP("realworld data not found");
        MainWindow w;
        w.resize(1400, 900);
        w.setInitialCollapseDepth(1);
        w.show();
        core::onnx::ImportOptions settings; // batch 1, 512 samples; no sample rate: If undecided
        settings.batch = 1;
        settings.dimValues["sequence"] = 512;
        QSignalSpy shown(&w, &MainWindow::modelShown);
        w.openModel(file, settings);
        QVERIFY(QTest::qWaitFor([&] { return shown.count() > 0 && !w.isBusy(); }, kTimeoutMs));
        const core::ir::Graph &g = w.document()->graph();
        const core::NamespaceId ifGroup = nsByPath(g, "If_25");
        const core::NamespaceId thenGroup = nsByPath(g, "If_25/then_branch");
        const core::NamespaceId elseGroup = nsByPath(g, "If_25/else_branch");
        QVERIFY(ifGroup.valid() && thenGroup.valid() && elseGroup.valid());
        const auto ifNode = g.findNode("If_25/If_25");
        const auto conv8k = g.findNode("If_25/else_branch/Conv_547");
        QVERIFY(ifNode && conv8k);
        QCOMPARE(g.node(*ifNode).opType, std::string("If"));

        // Collapsed at depth 1: the If and both branches are one box.
        QVERIFY(w.document()->collapsed().count(ifGroup));
        NodeItem *box = w.graphScene()->itemShowing(*ifNode);
        QVERIFY(box && box->isGroup());
        QCOMPARE(w.graphScene()->itemShowing(*conv8k), box);

        // Expanded one level: the If's own box, and one collapsed box per branch.
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        int before = laid.count();
        w.toggleGroup(ifGroup);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->frameOf(ifGroup) != nullptr);
        QVERIFY(!w.graphScene()->itemShowing(*ifNode)->isGroup());
        NodeItem *elseBox = w.graphScene()->itemShowing(*conv8k);
        QVERIFY(elseBox && elseBox->isGroup());
        QVERIFY(elseBox != w.graphScene()->itemShowing(*g.findNode("If_25/then_branch/Conv_73")));

        // The else branch expands into its nodes like any group.
        before = laid.count();
        w.toggleGroup(elseGroup);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->frameOf(elseGroup) != nullptr);
        QVERIFY(!w.graphScene()->itemShowing(*conv8k)->isGroup());

        // Search reaches into the other (still collapsed) branch, opens it and selects the node;
        // the inspector shows it.
        const auto hits = w.graphScene()->search(QStringLiteral("then_branch/Conv_73"));
        QCOMPARE(hits.size(), size_t(1));
        w.find();
        before = laid.count();
        w.searchBar()->setQuery(QStringLiteral("then_branch/Conv_73"));
        w.findNext();
        const core::NodeId sel = w.document()->selectedNode();
        QVERIFY(sel.valid());
        QCOMPARE(g.node(sel).name, std::string("If_25/then_branch/Conv_73"));
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->frameOf(thenGroup) != nullptr);
        NodeItem *convItem = w.graphScene()->itemShowing(sel);
        QVERIFY(convItem && !convItem->isGroup());
        QVERIFY2(w.inspector()->html().contains(QStringLiteral("Conv_73")),
                 qPrintable(w.inspector()->html()));
        QVERIFY(w.inspector()->html().contains(QStringLiteral("Conv")));

        // Training stays blocked by the If, in the file's names, with the value to give.
        QVERIFY(!g.info().trainingBlockers.empty());
        const std::string &blocker = g.info().trainingBlockers.front();
        QVERIFY2(blocker.find("'If_25'") != std::string::npos &&
                     blocker.find("--input-value sr=V") != std::string::npos,
                 blocker.c_str());
    }
};

QTEST_MAIN(TestControlFlowView)
#include "tst_control_flow_view.moc"
