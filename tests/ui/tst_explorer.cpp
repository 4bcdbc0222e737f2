// The graph explorer end to end, offscreen: every corpus model opens and shows one box per node
// (a collapsed group counts as its members), search finds a known node, collapse and expand
// round-trip, the batch spin re-imports, exports write files, and a corrupt file shows an error
// while the window stays usable.
#include "common/test_support.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/graph/search_bar.h"
#include "ui/help_dialogs.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/model_pane.h"
#include "ui/planner/plan_colour_provider.h"
#include "ui/planner/plan_node_colors.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/planner_integration.h"
#include "ui/planner/step_comparison_view.h"
#include "ui_test_util.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QLineEdit>
#include <QMap>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using namespace remat;
using namespace remat::ui;
using remat::tests::openAndWait;
using remat::tests::sharedDir;
using remat::tests::sharedPath;

namespace {

constexpr int kTimeoutMs = 60000;

bool waitForLayout(MainWindow &w, QSignalSpy &spy, int before)
{
    return QTest::qWaitFor([&] { return spy.count() > before && !w.isBusy(); }, kTimeoutMs);
}

int searchMarkedBoxes(MainWindow &w)
{
    int n = 0;
    for (QGraphicsItem *item : w.graphScene()->items())
        if (item->type() == NodeItem::Type &&
            (static_cast<NodeItem *>(item)->highlight() & HighlightSearch))
            ++n;
    return n;
}

core::NamespaceId nsByPath(const core::ir::Graph &g, const std::string &path)
{
    for (const auto &ns : g.namespaces())
        if (ns.path == path)
            return ns.id;
    return {};
}

} // namespace

class TestExplorer : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { remat::tests::isolateSettings(); }

    void defaultLayoutGivesTheInspectorRoom()
    {
        // Expected: with no saved window state, at 1600x1000 the right column runs down to the
        // status bar and the inspector is its tallest dock (at least 300 px; it had 75 px, three
        // lines of the model's facts, when the planner docks split the column above the bottom
        // docks), while the graph view keeps more height than the bottom docks.
        MainWindow w;
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto *inspector = w.findChild<QDockWidget *>(QStringLiteral("inspectorDock"));
        auto *plans = w.findChild<QDockWidget *>(QStringLiteral("plannerPlansDock"));
        QVERIFY(inspector && plans);
        QCOMPARE(w.dockWidgetArea(inspector), Qt::RightDockWidgetArea);
        QVERIFY2(inspector->height() >= 300, qPrintable(QString::number(inspector->height())));
        for (const char *name : {"overviewDock", "plannerSolverDock", "plannerPinsDock"}) {
            auto *dock = w.findChild<QDockWidget *>(QLatin1String(name));
            QVERIFY2(dock, name);
            QVERIFY2(dock->height() < inspector->height(), name);
        }
        QVERIFY(w.centralWidget()->height() > plans->height());
        // The right column is not cut short by the bottom docks.
        QVERIFY(inspector->geometry().right() >= plans->geometry().right());
        auto *pins = w.findChild<QDockWidget *>(QStringLiteral("plannerPinsDock"));
        QVERIFY(pins->geometry().bottom() >= plans->geometry().bottom() - 2);
    }

    void opensCorpusModels_data()
    {
        QTest::addColumn<QString>("file");
        for (const char *dir : {"corpus/graph_only", "corpus/with_weights"})
            for (const QString &f :
                 QDir(sharedPath(QString::fromUtf8(dir))).entryList({QStringLiteral("*.onnx")}))
                QTest::newRow(qPrintable(f))
                    << sharedPath(QString::fromUtf8(dir) + QStringLiteral("/") + f);
        // without ../shared, one row that skips (a data function without rows aborts the test)
        if (!QDir(sharedDir()).exists())
            QTest::newRow("no shared data") << QString();
    }
    void opensCorpusModels()
    {
        QFETCH(QString, file);
        if (file.isEmpty() || !QFileInfo::exists(file))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QVERIFY2(openAndWait(w, file), qPrintable(file));
        const auto &g = w.document()->graph();
        // Every node is shown exactly once: by its own box or inside a collapsed group's count,
        // unless it is folded shape arithmetic (View > Fold Shape Arithmetic, on by default).
        QCOMPARE(w.graphScene()->nodeItemCount() + w.document()->layouter()->hiddenCount(),
                 int(g.nodeCount()));
        QVERIFY(w.graphScene()->boxCount() > 0);
        QVERIFY(
            w.statusSummary().contains(QString::number(g.nodeCount()) + QStringLiteral(" nodes")));
        // The layout has no overlapping boxes among siblings (checked on the boxes themselves).
        const auto &items = w.document()->layout()->items;
        for (size_t i = 0; i < items.size() && i < 400; ++i)
            for (size_t j = i + 1; j < items.size() && j < 400; ++j)
                if (items[i].parent == items[j].parent)
                    QVERIFY(!items[i].rect.intersects(items[j].rect));
    }

    void searchFindsKnownNodeAndInspectorShowsIt()
    {
        MainWindow w;
        w.setInitialCollapseDepth(1); // the hit is inside a collapsed group: search must open it
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        w.find();
        QVERIFY(w.searchBar()->isVisible());
        const int before = laid.count();
        w.searchBar()->setQuery(QStringLiteral("layer2.1/conv2"));
        w.findNext();
        const core::NodeId sel = w.document()->selectedNode();
        QVERIFY(sel.valid());
        QVERIFY(w.document()->graph().node(sel).name.find("layer2.1/conv2") != std::string::npos);
        QVERIFY(waitForLayout(w, laid, before)); // the group holding it was expanded
        NodeItem *item = w.graphScene()->itemShowing(sel);
        QVERIFY(item);
        QVERIFY(!item->isGroup());
        QVERIFY(item->highlight() & HighlightCurrent);
        QVERIFY(w.inspector()->html().contains(QStringLiteral("Conv")));
        // the training graph says what the convolution's backward keeps: its input X
        // (32x128x28x28 float32 = 12.25 MiB at the file's batch)
        QVERIFY2(w.inspector()->html().contains(QStringLiteral("Backward")),
                 qPrintable(w.inspector()->html()));
        QVERIFY(w.inspector()->html().contains(QStringLiteral("12.25 MiB")));
        // by shape: resnet18's 7x7 maps (32x512x7x7 at the file's batch)
        w.searchBar()->setQuery(QStringLiteral("512\u00d77\u00d77"));
        w.findNext();
        QVERIFY(w.document()->selectedNode().valid());
        // by op type, and a miss
        QVERIFY(!w.graphScene()->search(QStringLiteral("GlobalAveragePool")).empty());
        QVERIFY(w.graphScene()->search(QStringLiteral("no-such-node-xyz")).empty());
    }

    void selectionHighlightsInputsAndOutputs()
    {
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        const auto &g = w.document()->graph();
        const core::NodeId relu = *g.findNode("/layer1/layer1.0/relu/Relu");
        w.document()->setSelectedNode(relu);
        const core::NodeId producer = g.value(g.node(relu).inputs[0]).producer;
        const core::NodeId consumer = g.value(g.node(relu).outputs[0]).consumers.front();
        QVERIFY(w.graphScene()->itemShowing(producer)->highlight() & HighlightInput);
        QVERIFY(w.graphScene()->itemShowing(consumer)->highlight() & HighlightOutput);
        QVERIFY(w.graphScene()->itemShowing(relu)->isSelected());
    }

    void collapseAndExpandRoundTrip()
    {
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        const int nodes = int(w.document()->graph().nodeCount());
        QCOMPARE(w.graphScene()->boxCount(), nodes);
        QCOMPARE(w.graphScene()->collapsedGroupCount(), 0);
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        int before = laid.count();
        w.collapseToDepth(1);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->boxCount() < nodes);
        QVERIFY(w.graphScene()->collapsedGroupCount() > 0);
        QCOMPARE(w.graphScene()->nodeItemCount(), nodes);
        // expand one group by "double-click" (the scene's toggle), it shows its children
        const core::NamespaceId layer1 = nsByPath(w.document()->graph(), "layer1");
        QVERIFY(layer1.valid());
        const int collapsedBoxes = w.graphScene()->boxCount();
        before = laid.count();
        w.toggleGroup(layer1);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->boxCount() > collapsedBoxes);
        QVERIFY(w.graphScene()->frameOf(layer1) != nullptr);
        QCOMPARE(w.graphScene()->nodeItemCount(), nodes);
        before = laid.count();
        w.collapseToDepth(0);
        QVERIFY(waitForLayout(w, laid, before));
        QCOMPARE(w.graphScene()->boxCount(), nodes);
        QCOMPARE(w.graphScene()->collapsedGroupCount(), 0);
    }

    void closedFindBarKeepsHitsCleared()
    {
        // Bug: after Escape, a reload (F5), a batch change or any re-layout marked the old hits
        // again, with the find bar hidden. Expected: Escape clears the marks for good; Ctrl+F
        // brings the text and its hits back.
        MainWindow w;
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        w.find();
        w.searchBar()->setQuery(QStringLiteral("Conv"));
        QVERIFY(searchMarkedBoxes(w) > 0);
        auto *edit = w.searchBar()->findChild<QLineEdit *>(QStringLiteral("searchEdit"));
        QVERIFY(edit);
        QTest::keyClick(edit, Qt::Key_Escape);
        QVERIFY(w.searchBar()->isHidden());
        QCOMPARE(searchMarkedBoxes(w), 0);
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        int before = laid.count();
        w.reload();
        QVERIFY(waitForLayout(w, laid, before));
        QCOMPARE(searchMarkedBoxes(w), 0);
        before = laid.count();
        w.setBatch(3);
        QVERIFY(waitForLayout(w, laid, before));
        QCOMPARE(searchMarkedBoxes(w), 0);
        before = laid.count();
        w.collapseToDepth(1);
        QVERIFY(waitForLayout(w, laid, before));
        QCOMPARE(searchMarkedBoxes(w), 0);
        w.find(); // the query is still there and marks its hits again
        QCOMPARE(w.searchBar()->query(), QStringLiteral("Conv"));
        QVERIFY(searchMarkedBoxes(w) > 0);
        QSettings().remove(QStringLiteral("batch"));
    }

    void escapeLeavesTheBatchAlone()
    {
        // Bug: Escape in the find bar handed focus to the toolbar's Batch box, and the next Up
        // key changed the batch and re-imported the model. Expected: focus returns to the graph;
        // an arrow key there changes no batch; the spin boxes take focus only from a click.
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        auto *batch = w.findChild<QSpinBox *>(QStringLiteral("batchSpin"));
        QVERIFY(batch);
        const int batchBefore = batch->value();
        w.find();
        auto *edit = w.searchBar()->findChild<QLineEdit *>(QStringLiteral("searchEdit"));
        QTRY_VERIFY(edit->hasFocus());
        QTest::keyClick(edit, Qt::Key_Escape);
        QWidget *focus = QApplication::focusWidget();
        QVERIFY(focus);
        QVERIFY2(focus != batch && !batch->isAncestorOf(focus),
                 qPrintable(focus->metaObject()->className()));
        QVERIFY(focus == w.graphView() || w.graphView()->isAncestorOf(focus));
        QTest::keyClick(focus, Qt::Key_Up);
        QTest::qWait(600); // longer than the batch box's debounce
        QCOMPARE(batch->value(), batchBefore);
        QVERIFY(!w.isBusy());
        QCOMPARE(batch->focusPolicy(), Qt::ClickFocus);
    }

    void shapeSearchAcceptsEverySpelling()
    {
        // Bug: "512×7×7" and "512,7,7" found resnet18's 7x7 maps, "512x7x7" found nothing.
        // Expected: x, ×, comma, * and spaces around them all find the same nodes; a name with
        // an x in it is still searched as typed.
        MainWindow w;
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        GraphScene *scene = w.graphScene();
        const auto reference = scene->search(QStringLiteral("512\u00d77\u00d77"));
        QVERIFY(!reference.empty());
        for (const char *spelling : {"512x7x7", "512X7X7", "512,7,7", "512 x 7 x 7", "512*7*7"})
            QVERIFY2(scene->search(QString::fromLatin1(spelling)) == reference, spelling);
        QVERIFY(!scene->search(QStringLiteral("maxpool")).empty());
        QVERIFY(scene->search(QStringLiteral("512x7x8")).empty());
    }

    // Two models side by side (File > Open Beside...): the second graph is browsable in its own
    // pane (a real double-click expands a group there, not in the first), follows the window's
    // colour mode, and a table lines up the two models' figures with core's numbers.
    void twoModelsSideBySide()
    {
        const QString left = sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"));
        const QString right = sharedPath(QStringLiteral("corpus/graph_only/mobilenet_v2.onnx"));
        if (!QFileInfo::exists(left) || !QFileInfo::exists(right))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.resize(1500, 900);
        w.setInitialCollapseDepth(1);
        w.show();
        QVERIFY(openAndWait(w, left));
        ModelPane *pane = w.openBeside(right);
        QVERIFY(pane && w.besidePane() == pane);
        QSignalSpy shown(pane, &ModelPane::modelShown);
        QVERIFY(shown.count() > 0 || shown.wait(kTimeoutMs));
        QVERIFY(QTest::qWaitFor([&] { return !pane->isBusy(); }, kTimeoutMs));
        QVERIFY(pane->isVisible() && w.graphView()->isVisible());
        QVERIFY(pane->graphView()->width() > 300 && w.graphView()->width() > 300);
        const auto &a = w.document()->model();
        const auto &b = pane->document()->model();
        QCOMPARE(b.path, right);
        // Compared at the left model's batch.
        QCOMPARE(b.graph->info().batch, a.graph->info().batch);
        QVERIFY(pane->graphScene()->nodeItemCount() > 0);
        QVERIFY(pane->headerText().contains(QStringLiteral("mobilenet_v2.onnx")));

        const auto &rows = pane->rows();
        QVERIFY(rows.size() >= 8); // both train: the store-all rows are there too
        QCOMPARE(pane->comparisonTable()->rowCount(), int(rows.size()));
        QCOMPARE(rows[0].what, std::string("nodes"));
        QCOMPARE(rows[0].a, double(a.metrics->summary.nodes));
        QCOMPARE(rows[0].b, double(b.metrics->summary.nodes));
        QCOMPARE(rows[1].b, double(b.metrics->summary.parameters));
        QCOMPARE(rows[2].a, double(a.metrics->summary.parameterBytes));
        for (const auto &r : rows)
            if (r.what == "training step peak (store-all)") {
                QCOMPARE(r.a, double(a.problem->storeAll.timeline.peakBytes));
                QCOMPARE(r.b, double(b.problem->storeAll.timeline.peakBytes));
            }
        QCOMPARE(pane->comparisonTable()->item(0, 3)->text(),
                 figureText(core::pipeline::FigureUnit::Count, rows[0].delta(), true));

        // A group collapsed in the pane, then a real double-click on its box expands it again;
        // the left graph is untouched.
        const auto &g = pane->document()->graph();
        QSignalSpy laid(pane, &ModelPane::layoutFinished);
        const core::NamespaceId group = pane->document()->layouter()->groups().front();
        if (!pane->document()->collapsed().count(group)) {
            pane->toggleGroup(group);
            QVERIFY(laid.wait(kTimeoutMs));
        }
        QVERIFY(pane->document()->collapsed().count(group));
        QVERIFY(group.valid());
        NodeItem *box = nullptr;
        for (QGraphicsItem *item : pane->graphScene()->items())
            if (item->type() == NodeItem::Type && static_cast<NodeItem *>(item)->isGroup() &&
                static_cast<NodeItem *>(item)->toolTip().startsWith(
                    QString::fromStdString(g.ns(group).path)))
                box = static_cast<NodeItem *>(item);
        QVERIFY(box);
        const auto leftCollapsed = w.document()->collapsed();
        pane->graphView()->centerOn(box);
        QTest::mouseDClick(pane->graphView()->viewport(), Qt::LeftButton, {},
                           pane->graphView()->mapFromScene(box->rect().center()));
        QVERIFY(laid.wait(kTimeoutMs));
        QVERIFY(!pane->document()->collapsed().count(group));
        QVERIFY(w.document()->collapsed() == leftCollapsed);

        // The window's colour mode reaches the pane; Close removes it.
        w.setColourMode(ColourMode::Flops);
        QCOMPARE(pane->document()->colourMode(), ColourMode::Flops);
        QSignalSpy closed(pane, &QObject::destroyed);
        w.closeBeside();
        QVERIFY(w.besidePane() == nullptr);
        QVERIFY(closed.wait(5000));
    }

    // Keyboard users open a menu item by its underlined letter: within a menu no two items may
    // share one (Planner had P, a and o twice).
    void menuMnemonicsAreUnique()
    {
        MainWindow w;
        QList<QMenu *> menus;
        for (QAction *top : w.menuBar()->actions())
            if (QMenu *m = top->menu())
                menus << m;
        for (qsizetype i = 0; i < menus.size(); ++i) // submenus too
            for (QAction *a : menus[i]->actions())
                if (a->menu() && !menus.contains(a->menu()))
                    menus << a->menu();
        QVERIFY(menus.size() >= 5);
        QVERIFY(std::any_of(menus.begin(), menus.end(),
                            [](QMenu *m) { return m->title() == QStringLiteral("&Planner"); }));
        for (QMenu *menu : menus) {
            QMap<QChar, QString> seen;
            for (QAction *a : menu->actions()) {
                if (a->isSeparator() || !a->isVisible())
                    continue;
                const QString text = a->text();
                const qsizetype at = text.indexOf(QLatin1Char('&'));
                if (at < 0 || at + 1 >= text.size() || text[at + 1] == QLatin1Char('&'))
                    continue;
                const QChar key = text[at + 1].toLower();
                QVERIFY2(!seen.contains(key),
                         qPrintable(QStringLiteral("%1: '%2' and '%3'")
                                        .arg(menu->title(), seen.value(key), text)));
                seen.insert(key, text);
            }
        }
    }

    void doubleClickExpandsOneLevel()
    {
        // Bug: expanding a collapsed group opened all of its subgroups at once. Expected: its
        // own subgroups come up collapsed (Model Explorer's one level at a time), the view
        // re-fits, and every box is still shown exactly once.
        MainWindow w;
        w.resize(1200, 800);
        w.setInitialCollapseDepth(1);
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        const auto &g = w.document()->graph();
        const core::NamespaceId layer1 = nsByPath(g, "layer1");
        const core::NamespaceId block0 = nsByPath(g, "layer1/layer1.0");
        const core::NamespaceId block1 = nsByPath(g, "layer1/layer1.1");
        QVERIFY(layer1.valid() && block0.valid() && block1.valid());
        QVERIFY(w.document()->collapsed().count(layer1));
        QVERIFY(!w.document()->collapsed().count(block0)); // depth 1 leaves depth 2 open
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        const int before = laid.count();
        // A real double-click on the group's box, through the view.
        NodeItem *box = w.graphScene()->itemShowing(*g.findNode("/layer1/layer1.0/conv1/Conv"));
        QVERIFY(box && box->isGroup());
        w.graphView()->centerOn(box);
        const QPoint at = w.graphView()->mapFromScene(box->rect().center());
        QTest::mouseDClick(w.graphView()->viewport(), Qt::LeftButton, {}, at);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->frameOf(layer1) != nullptr);
        QVERIFY(w.graphScene()->frameOf(block0) == nullptr);
        QVERIFY(w.graphScene()->frameOf(block1) == nullptr);
        QVERIFY(w.document()->collapsed().count(block0) && w.document()->collapsed().count(block1));
        QVERIFY(w.graphScene()->itemShowing(*g.findNode("/layer1/layer1.0/conv1/Conv"))->isGroup());
        QCOMPARE(w.graphScene()->nodeItemCount(), int(g.nodeCount()));
        // The picture follows: far-zoom painting matches the new box count, and the box under
        // the cursor is the one its tooltip names.
        QCOMPARE(w.graphScene()->overview(),
                 w.graphView()->scale() < 0.12 && w.graphScene()->boxCount() > 1500);
        NodeItem *block = w.graphScene()->itemShowing(*g.findNode("/layer1/layer1.0/conv1/Conv"));
        w.graphView()->centerOn(block);
        const QPoint p = w.graphView()->mapFromScene(block->rect().center());
        QGraphicsItem *under = w.graphView()->itemAt(p);
        QVERIFY(under && under->type() == NodeItem::Type);
        QVERIFY(under->toolTip().startsWith(QStringLiteral("layer1/layer1.0")));
    }

    void solvedPlanColoursTheGraph()
    {
        // Expectation: after a solve the graph shows the plan. It went white: every solve reset
        // the teaching view to step 0, and the graph then showed what is resident at that step
        // (almost nothing) even with the Schedule tab hidden. Expected: with the Memory tab up,
        // every box with a decision wears its decision's colour, some are recomputed, and a
        // collapsed group carries a keep / recompute summary of its members; raising the
        // Schedule tab switches to the step's residency, leaving it switches back.
        MainWindow w;
        w.resize(1400, 900);
        w.setInitialCollapseDepth(0);
        w.show();
        const QString model =
            remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx");
        QVERIFY(QFileInfo::exists(model));
        QVERIFY(openAndWait(w, model));
        Planner *planner = w.planner();
        QVERIFY(QTest::qWaitFor([&] { return planner->problem() && !planner->isLoading(); },
                                kTimeoutMs));
        planner->raiseView(QStringLiteral("memory"));
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QVERIFY(planner->document()->currentPlan());
        auto *integration = w.findChild<PlannerIntegration *>();
        QVERIFY(integration && integration->colourByPlan());
        QVERIFY(!integration->showsStep());
        auto countColours = [&](int *decided, int *matching, int *recomputed) {
            *decided = *matching = *recomputed = 0;
            const auto &g = w.document()->graph();
            for (QGraphicsItem *item : w.graphScene()->items()) {
                if (item->type() != NodeItem::Type)
                    continue;
                auto *box = static_cast<NodeItem *>(item);
                if (box->isGroup())
                    continue;
                const auto node = w.document()->layout()->items[size_t(box->layoutIndex())].node;
                const PlanDecision d =
                    planner->nodeColors()->decision(QString::fromStdString(g.node(node).name));
                if (d == PlanDecision::None)
                    continue;
                ++*decided;
                *matching += box->fill() == PlanNodeColors::colorFor(d);
                *recomputed += d == PlanDecision::Recompute;
            }
        };
        int decided = 0, matching = 0, recomputed = 0;
        countColours(&decided, &matching, &recomputed);
        QVERIFY(decided > 10);
        QCOMPARE(matching, decided);
        QVERIFY(recomputed > 0);
        // The Schedule tab shows the step: boxes not resident there fade.
        planner->raiseView(QStringLiteral("schedule"));
        QTRY_VERIFY(integration->showsStep());
        countColours(&decided, &matching, &recomputed);
        QVERIFY(matching < decided);
        planner->raiseView(QStringLiteral("memory"));
        QTRY_VERIFY(!integration->showsStep());
        countColours(&decided, &matching, &recomputed);
        QCOMPARE(matching, decided);
        // Collapsed groups summarise their members' decisions.
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        const int before = laid.count();
        w.collapseToDepth(1);
        QVERIFY(waitForLayout(w, laid, before));
        int summarised = 0;
        for (QGraphicsItem *item : w.graphScene()->items()) {
            if (item->type() != NodeItem::Type || !static_cast<NodeItem *>(item)->isGroup())
                continue;
            auto *box = static_cast<NodeItem *>(item);
            int total = 0;
            for (const auto &part : box->breakdown())
                total += part.second;
            QVERIFY(total <= box->memberCount());
            if (total > 0) {
                ++summarised;
                QVERIFY2(box->toolTip().contains(QStringLiteral("keep:")) ||
                             box->toolTip().contains(QStringLiteral("recompute:")),
                         qPrintable(box->toolTip()));
            }
        }
        QVERIFY(summarised > 0);
        // The toolbar's "Colour by" says so, and switching it back to op types leaves the plan.
        auto *combo = w.findChild<QComboBox *>(QStringLiteral("colourModeCombo"));
        QVERIFY(combo);
        QCOMPARE(combo->currentText(), QStringLiteral("Plan decision"));
        combo->setCurrentIndex(combo->findData(int(ColourMode::OpType)));
        QVERIFY(!integration->colourByPlan());
        combo->setCurrentIndex(combo->findText(QStringLiteral("Plan decision")));
        QVERIFY(integration->colourByPlan());
    }

    // Expectation 9 (rest): a session keeps the graph's colour mode and its selected node; a
    // fresh window opening it shows both again (the node selected once its model is on screen).
    void sessionKeepsColourModeAndSelection()
    {
        const QString model =
            remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx");
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("view.rematproj"));
        std::string selected;
        {
            MainWindow w;
            w.resize(1400, 900);
            w.show();
            QVERIFY(openAndWait(w, model));
            Planner *planner = w.planner();
            QVERIFY(QTest::qWaitFor([&] { return planner->problem() && !planner->isLoading(); },
                                    kTimeoutMs));
            planner->document()->setObjective(core::solvers::Objective::MinPeak);
            planner->solve(QStringLiteral("chen-sqrtn"));
            planner->waitForIdle();
            auto *integration = w.findChild<PlannerIntegration *>();
            QVERIFY(integration && integration->colourByPlan()); // the first plan is shown
            auto *combo = w.findChild<QComboBox *>(QStringLiteral("colourModeCombo"));
            combo->setCurrentIndex(combo->findData(int(ColourMode::Flops)));
            QVERIFY(!integration->colourByPlan());
            const auto &g = w.document()->graph();
            const core::NodeId node{g.nodeCount() / 2};
            selected = g.node(node).name;
            w.revealNode(node);
            QCOMPARE(w.document()->selectedNode(), node);
            QVERIFY(planner->saveSession(path).isOk());
        }
        // The window's own remembered choice is op types: only the session can say FLOPs.
        QSettings().setValue(QStringLiteral("view/colourMode"), 0);
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QSignalSpy opened(w.planner(), &Planner::sessionOpened);
        QVERIFY(w.planner()->openSession(path).isOk());
        QVERIFY(opened.wait(kTimeoutMs));
        QVERIFY(opened.first().at(0).toBool());
        QVERIFY(QTest::qWaitFor(
            [&] {
                return w.document()->hasModel() && w.document()->selectedNode().valid() &&
                       !w.planner()->isLoading();
            },
            kTimeoutMs));
        QCOMPARE(w.document()->graph().node(w.document()->selectedNode()).name, selected);
        QTest::qWait(200); // late signals (the first layout, plan updates) must not undo it
        auto *integration = w.findChild<PlannerIntegration *>();
        QVERIFY(!integration->colourByPlan());
        QVERIFY(w.document()->colourMode() == ColourMode::Flops);
        auto *combo = w.findChild<QComboBox *>(QStringLiteral("colourModeCombo"));
        QCOMPARE(combo->currentData().toInt(), int(ColourMode::Flops));
        QVERIFY(w.planner()->document()->currentPlan());
    }

    void largeModelOpensReadable()
    {
        // Expectation: a large model (vit_b_16, ~1800 nodes) opens collapsed to a depth whose
        // boxes fit the window, framed Netron-like at the graph's top at a legible zoom, and
        // stays legible after an expand (re-fit, or the same zoom on the opened group).
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/vit_b_16.onnx"))))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/vit_b_16.onnx"))));
        QVERIFY(w.graphScene()->collapsedGroupCount() > 0);
        QVERIFY2(w.graphScene()->boxCount() <= 150,
                 qPrintable(QString::number(w.graphScene()->boxCount())));
        QVERIFY2(w.graphView()->scale() >= 0.45,
                 qPrintable(QString::number(w.graphView()->scale())));
        const QRectF visible =
            w.graphView()->mapToScene(w.graphView()->viewport()->rect()).boundingRect();
        QVERIFY(visible.top() <= w.graphScene()->sceneRect().top() + 1);
        // Expand the first collapsed group: one level opens and the zoom stays legible.
        core::NamespaceId first;
        for (const auto &it : w.document()->layout()->items)
            if (it.kind == core::layout::ItemKind::CollapsedGroup) {
                first = it.ns;
                break;
            }
        QVERIFY(first.valid());
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        const int before = laid.count();
        w.toggleGroup(first);
        QVERIFY(waitForLayout(w, laid, before));
        QVERIFY(w.graphScene()->frameOf(first));
        QVERIFY(w.graphView()->scale() >= 0.45);
        const QRectF frame = w.graphScene()->frameOf(first)->boundingRect();
        const QRectF now =
            w.graphView()->mapToScene(w.graphView()->viewport()->rect()).boundingRect();
        QVERIFY(now.intersects(frame)); // the opened group is on screen
    }

    void sessionSavedFromTheFileMenu()
    {
        // Expectation: File > Save Session (Ctrl+S) and Save As, the title names the file with an
        // unsaved marker, the status bar confirms "Saved", export dialogs suggest a name in the
        // folder last saved to, and Apply in PyTorch is under File > Export.
        MainWindow w;
        w.show();
        const QString model =
            remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx");
        QVERIFY(openAndWait(w, model));
        QVERIFY(w.windowTitle().startsWith(QStringLiteral("tiny_vit.onnx[*]")));
        QVERIFY(!w.isWindowModified());
        auto *save = w.findChild<QAction *>(QStringLiteral("saveSessionAction"));
        QVERIFY(save);
        QCOMPARE(save->shortcut(), QKeySequence(QKeySequence::Save));
        QVERIFY(w.findChild<QAction *>(QStringLiteral("saveSessionAsAction")));
        auto *exportMenu = w.findChild<QMenu *>(QStringLiteral("exportMenu"));
        QVERIFY(exportMenu);
        QVERIFY(exportMenu->actions().contains(
            w.findChild<QAction *>(QStringLiteral("fileApplyInPyTorch"))));
        Planner *planner = w.planner();
        QVERIFY(QTest::qWaitFor([&] { return planner->problem() && !planner->isLoading(); },
                                kTimeoutMs));
        planner->document()->setObjective(core::solvers::Objective::MinPeak);
        planner->solve(QStringLiteral("chen-sqrtn"));
        planner->waitForIdle();
        QTRY_VERIFY(w.isWindowModified()); // a plan the session file does not have yet
        QTemporaryDir dir;
        const QString session = dir.filePath(QStringLiteral("study.rematproj"));
        QVERIFY(w.saveSessionTo(session));
        QVERIFY(QFileInfo::exists(session));
        QVERIFY(!w.isWindowModified());
        QVERIFY2(w.windowTitle().startsWith(QStringLiteral("study.rematproj (tiny_vit.onnx)")),
                 qPrintable(w.windowTitle()));
        QVERIFY(w.statusBar()->currentMessage().startsWith(QStringLiteral("Saved ")));
        // Ctrl+S now saves to the same file without asking.
        QFile::remove(session);
        QVERIFY(w.saveSession());
        QVERIFY(QFileInfo::exists(session));
        QCOMPARE(w.suggestedPath(QStringLiteral("plan"), QStringLiteral("json")),
                 QDir(dir.path()).filePath(QStringLiteral("tiny_vit_plan.json")));
        QCOMPARE(w.suggestedPath(QString(), QStringLiteral("png")),
                 QDir(dir.path()).filePath(QStringLiteral("tiny_vit.png")));
        QSettings().remove(QStringLiteral("lastSaveDir"));
    }

    void helpAndPanelsMenus()
    {
        // Expectation: View > Panels brings back a closed dock; Help lists the shortcuts (read
        // from the menus) and names the library versions in an About box.
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto *panels = w.findChild<QMenu *>(QStringLiteral("panelsMenu"));
        QVERIFY(panels);
        auto *inspector = w.findChild<QDockWidget *>(QStringLiteral("inspectorDock"));
        auto *memory = w.findChild<QDockWidget *>(QStringLiteral("plannerMemoryDock"));
        QVERIFY(inspector && memory);
        QVERIFY(panels->actions().contains(inspector->toggleViewAction()));
        QVERIFY(panels->actions().contains(memory->toggleViewAction()));
        inspector->close();
        QVERIFY(!inspector->isVisible());
        inspector->toggleViewAction()->trigger();
        QVERIFY(inspector->isVisible());

        ShortcutsDialog shortcuts(w.menuBar());
        QTableWidget *table = shortcuts.table();
        QStringList rows;
        for (int r = 0; r < table->rowCount(); ++r)
            rows << table->item(r, 1)->text() + QStringLiteral("=") + table->item(r, 2)->text();
        const QString all = rows.join(QLatin1Char('\n'));
        for (const QKeySequence &k :
             {QKeySequence(QKeySequence::Save), QKeySequence(QKeySequence::Find),
              QKeySequence(QKeySequence::Open), QKeySequence(Qt::Key_F5)})
            QVERIFY2(all.contains(k.toString(QKeySequence::NativeText)), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("Save Session=")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("Solve=")), qPrintable(all)); // the Planner menu

        const QString about = aboutText({QStringLiteral("CUDA test line")});
        QVERIFY(about.contains(QString::fromLatin1(qVersion())));
        QVERIFY(about.contains(QStringLiteral("protobuf 3")));
        QVERIFY(about.contains(QStringLiteral("ONNX 1.")));
        QVERIFY(about.contains(QStringLiteral("CBC")));
        QVERIFY(about.contains(QStringLiteral("CUDA test line")));
    }

    void mainJobScreenshotShowsASolvedPlan()
    {
        // Expectation: the main job's screenshot (scripts/run.sh without a display) shows the
        // bundled model with a solved plan: the graph in the plan's colours, the plan table and
        // its memory chart, not an empty planner.
#ifndef REMAT_STUDIO_BINARY
        QSKIP("remat-studio is not built");
#else
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("main-window.png"));
        QProcess studio;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.path()); // no user settings
        studio.setProcessEnvironment(env);
        studio.start(QStringLiteral(REMAT_STUDIO_BINARY),
                     {remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx"),
                      QStringLiteral("--solve"), QStringLiteral("hong-dp"),
                      QStringLiteral("--collapse-depth"), QStringLiteral("3"),
                      QStringLiteral("--screenshot"), png});
        QVERIFY(studio.waitForFinished(120000));
        QVERIFY2(studio.exitCode() == 0, studio.readAllStandardError().constData());
        const QImage image(png);
        QVERIFY(!image.isNull());
        // Pixels in the recompute and keep fills: boxes wear the plan, the legend says so, and
        // the memory chart's recompute band is orange too.
        const QRgb recompute = PlanNodeColors::colorFor(PlanDecision::Recompute).rgb();
        const QRgb keep = PlanNodeColors::colorFor(PlanDecision::Keep).rgb();
        int orange = 0, blue = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) {
                const QRgb p = image.pixel(x, y) | 0xff000000u;
                orange += p == recompute;
                blue += p == keep;
            }
        QVERIFY2(orange > 3000, qPrintable(QString::number(orange)));
        QVERIFY2(blue > 300, qPrintable(QString::number(blue)));
        // An unknown solver is refused with the usable ones named.
        studio.start(QStringLiteral(REMAT_STUDIO_BINARY),
                     {remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx"),
                      QStringLiteral("--solve"), QStringLiteral("no-such-solver"),
                      QStringLiteral("--screenshot"), png});
        QVERIFY(studio.waitForFinished(120000));
        QCOMPARE(studio.exitCode(), 2);
        QVERIFY(studio.readAllStandardError().contains("hong-dp"));
#endif
    }

    void batchSpinReimports()
    {
        MainWindow w;
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        QSignalSpy laid(&w, &MainWindow::layoutFinished);
        const int before = laid.count();
        w.setBatch(4);
        QVERIFY(waitForLayout(w, laid, before));
        QCOMPARE(w.document()->graph().info().batch, int64_t(4));
        // conv1's output at batch 4: 4 x 64 x 112 x 112 float32 = 12845056 bytes
        const auto conv1 = *w.document()->graph().findNode("/conv1/Conv");
        QCOMPARE(w.document()->model().metrics->nodeOutputBytes[conv1.index()],
                 int64_t(4 * 64 * 112 * 112 * 4));
        QVERIFY(w.statusSummary().contains(QStringLiteral("batch 4")));
        QSettings().remove(QStringLiteral("batch"));
    }

    void exportsPngAndSvg()
    {
        MainWindow w;
        w.show();
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("g.png")),
                      svg = dir.filePath(QStringLiteral("g.svg"));
        QVERIFY(w.exportImage(png));
        QVERIFY(w.exportImage(svg));
        QImage image(png);
        QVERIFY(!image.isNull());
        QVERIFY(image.width() > 100 && image.height() > 100);
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("Conv"));
    }

    void corruptFileShowsErrorAndWindowStaysUsable()
    {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("corrupt.onnx"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("\x0a\xff\xff\xff\xff\x0f this is not a protobuf", 30));
        f.close();
        MainWindow w;
        w.show();
        QSignalSpy errors(&w, &MainWindow::errorOccurred);
        w.openModel(bad);
        QVERIFY(QTest::qWaitFor([&] { return errors.count() > 0; }, kTimeoutMs));
        const QString message = errors.front().front().toString();
        QVERIFY2(message.contains(QStringLiteral("corrupt.onnx")), qPrintable(message));
        auto *box = w.findChild<QMessageBox *>(QStringLiteral("errorBox"));
        QVERIFY(box);
        QVERIFY(box->isVisible());
        box->close();
        QVERIFY(!w.document()->hasModel());
        // a missing file is reported too
        w.openModel(dir.filePath(QStringLiteral("missing.onnx")));
        QCOMPARE(errors.count(), 2);
        // still usable
        if (!QFileInfo::exists(sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))))
            QSKIP("shared corpus not found");
        QVERIFY(openAndWait(w, sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx"))));
        QCOMPARE(w.graphScene()->nodeItemCount(), int(w.document()->graph().nodeCount()));
        QVERIFY(w.recentFiles().front().endsWith(QStringLiteral("resnet18.onnx")));
    }
};

QTEST_MAIN(TestExplorer)
#include "tst_explorer.moc"
