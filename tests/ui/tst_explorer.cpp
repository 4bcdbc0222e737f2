// The graph explorer end to end, offscreen: every corpus model opens and shows one box per node
// (a collapsed group counts as its members), search finds a known node, collapse and expand
// round-trip, the batch spin re-imports, exports write files, and a corrupt file shows an error
// while the window stays usable.
#include "common/test_support.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/graph/search_bar.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui_test_util.h"

#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
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
