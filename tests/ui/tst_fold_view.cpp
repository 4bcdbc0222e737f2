// View > Fold Shape Arithmetic, offscreen. Expected:
// - tiny_vit: the nodes without a box are exactly those the training builder constant-folds
//   (its forward graph has no op for them; GELU fusion off, Identity / Dropout aside): 139 of 226; no
//   edge touches them; the boxes shown plus the folded nodes are the model's nodes;
// - a Reshape lists its folded target in the inspector ("shape = [..]" equal to its output dims);
// - search finds a folded Unsqueeze, selects it (the inspector says where it is folded) and marks
//   and selects the box it is folded into;
// - switching folding off shows every node again (and on again folds the same set);
// - tiny_vit's and vit_b_16's widest groups (attention blocks) shrink below 60% of their width;
// - at another batch than the file's (vit_b_16 at 4) every folded value is still evaluated;
// - resnet18 has no shape arithmetic: the layout is the same either way.
#include "common/test_support.h"
#include "core/layout/shape_folding.h"
#include "core/onnx/importer.h"
#include "core/training/builder.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/search_bar.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/model_document.h"
#include "ui_test_util.h"

#include <QFileInfo>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

using namespace remat;
using namespace remat::ui;
using remat::tests::openAndWait;
using remat::tests::sharedPath;
namespace layout = remat::core::layout;
namespace ir = remat::core::ir;

namespace {

constexpr int kTimeoutMs = 60000;
// tiny_vit folds 139 of its 226 nodes (84 Constant, 28 Unsqueeze, 11 Concat, ...): see the header comment (checked against the training
// builder node by node below, so a change in either shows here).
constexpr int kTinyVitNodes = 226;
constexpr int kTinyVitFolded = 139;

QString tinyVit() { return sharedPath(QStringLiteral("corpus/with_weights/tiny_vit.onnx")); }
QString resnet18() { return sharedPath(QStringLiteral("corpus/graph_only/resnet18.onnx")); }

bool relayout(MainWindow &w, bool fold)
{
    QSignalSpy laid(&w, &MainWindow::layoutFinished);
    w.setFoldShapeArithmetic(fold);
    return QTest::qWaitFor([&] { return laid.count() > 0 && !w.isBusy(); }, kTimeoutMs);
}

double widestGroup(const layout::GraphLayout &l)
{
    double width = 0;
    for (const layout::LayoutItem &it : l.items)
        if (it.kind == layout::ItemKind::ExpandedGroup)
            width = std::max(width, it.rect.width);
    return width;
}

} // namespace

class TestFoldView : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { remat::tests::isolateSettings(); }

    void tinyVitFoldsWhatTrainingFolds()
    {
        if (!QFileInfo::exists(tinyVit()))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.foldShapeArithmetic()); // the default
        QVERIFY(openAndWait(w, tinyVit()));
        const ir::Graph &g = w.document()->graph();
        const layout::GraphLayouter &lay = *w.document()->layouter();
        QCOMPARE(int(g.nodeCount()), kTinyVitNodes);
        // The reference: nodes the training builder turns into no forward op (without the GELU
        // fusion, whose inner nodes would also have none).
        core::training::BuildOptions options;
        options.fuseGelu = false;
        auto tg = core::training::buildTrainingGraph(g, options);
        QVERIFY2(tg.hasValue(), tg.status().toString().c_str());
        std::vector<char> hasForwardOp(g.nodeCount(), 0);
        for (const core::training::Op &op : tg->ops())
            if (op.phase == core::training::Phase::Forward && op.source.valid())
                hasForwardOp[op.source.index()] = 1;
        int folded = 0;
        for (const ir::Node &n : g.nodes()) {
            const bool removed = n.opType == "Identity" || n.opType == "Dropout";
            const bool trainingFolds = !hasForwardOp[n.id.index()] && !removed;
            std::string inputs;
            for (core::ValueId v : n.inputs)
                inputs +=
                    " " + g.value(v).name + ":" + ir::valueKindName(g.value(v).kind) +
                    (g.value(v).producer.valid() ? "<-" + g.node(g.value(v).producer).opType : "");
            QVERIFY2(lay.isHidden(n.id) == trainingFolds,
                     (n.name + " (" + n.opType + "): folded " + std::to_string(lay.isHidden(n.id)) +
                      ", inputs" + inputs)
                         .c_str());
            folded += lay.isHidden(n.id) ? 1 : 0;
        }
        QCOMPARE(folded, kTinyVitFolded);
        QCOMPARE(lay.hiddenCount(), kTinyVitFolded);
        QCOMPARE(w.graphScene()->nodeItemCount(), kTinyVitNodes - kTinyVitFolded);
        QCOMPARE(w.graphScene()->boxCount(), kTinyVitNodes - kTinyVitFolded); // all expanded
        const layout::GraphLayout &l = *w.document()->layout();
        for (const layout::LayoutEdge &e : l.edges) {
            QVERIFY(!lay.isHidden(g.value(e.value).producer));
            QVERIFY(!lay.isHidden(l.items[size_t(e.from)].node));
            QVERIFY(!lay.isHidden(l.items[size_t(e.to)].node));
        }
        const size_t foldedEdges = l.edges.size();
        const double foldedWidth = widestGroup(l);

        // A Reshape whose target is folded: the inspector shows the value, equal to its output dims.
        int reshapes = 0;
        for (const ir::Node &n : g.nodes()) {
            if (n.opType != "Reshape" || n.inputs.size() < 2 ||
                !lay.isHidden(g.value(n.inputs[1]).producer))
                continue;
            const auto dims = g.value(n.outputs[0]).shape.sizes();
            const auto *target = w.document()->foldedConstants().value(n.inputs[1]);
            QVERIFY(target);
            if (target->ints != dims)
                continue; // a -1 or 0 in the target
            QString list;
            for (size_t k = 0; k < dims.size(); ++k)
                list += (k ? QStringLiteral(", ") : QString()) + QString::number(dims[k]);
            w.document()->setSelectedNode(n.id);
            QVERIFY2(w.inspector()->html().contains(QStringLiteral("shape = [") + list +
                                                    QStringLiteral("]")),
                     qPrintable(w.inspector()->html()));
            ++reshapes;
        }
        QVERIFY(reshapes > 0);

        // Search finds a folded Unsqueeze: it is selected, its consumer's box is marked and selected.
        w.find();
        w.searchBar()->setQuery(QStringLiteral("Unsqueeze"));
        // the first hit that is an Unsqueeze itself (others read an Unsqueeze's output)
        for (int k = 0; k < 50; ++k) {
            w.findNext();
            if (g.node(w.document()->selectedNode()).opType == "Unsqueeze")
                break;
        }
        const core::NodeId hit = w.document()->selectedNode();
        QVERIFY(hit.valid());
        QCOMPARE(g.node(hit).opType, std::string("Unsqueeze"));
        QVERIFY(lay.isHidden(hit));
        const core::NodeId host = lay.hostOf(hit);
        QVERIFY(host.valid() && !lay.isHidden(host));
        NodeItem *box = w.graphScene()->itemShowing(hit);
        QVERIFY(box);
        QCOMPARE(box, w.graphScene()->itemShowing(host));
        QVERIFY(box->isSelected());
        QVERIFY(box->highlight() & HighlightCurrent);
        QVERIFY(w.inspector()->html().contains(QStringLiteral("folded into")));

        // Off: every node has its box again, with the shape arithmetic's edges.
        QVERIFY(relayout(w, false));
        const layout::GraphLayouter &full = *w.document()->layouter();
        QCOMPARE(full.hiddenCount(), 0);
        QCOMPARE(w.graphScene()->nodeItemCount(), kTinyVitNodes);
        QCOMPARE(w.graphScene()->boxCount(), kTinyVitNodes);
        QVERIFY(w.document()->layout()->edges.size() > foldedEdges);
        NodeItem *own = w.graphScene()->itemShowing(hit);
        QVERIFY(own && own != w.graphScene()->itemShowing(host));
        const double fullWidth = widestGroup(*w.document()->layout());
        qInfo("tiny_vit: %d boxes -> %d with folding; widest group %.0f px -> %.0f px",
              kTinyVitNodes, kTinyVitNodes - kTinyVitFolded, fullWidth, foldedWidth);
        QVERIFY(foldedWidth < 0.6 * fullWidth);
        // On again: the same fold.
        QVERIFY(relayout(w, true));
        QCOMPARE(w.document()->layouter()->hiddenCount(), kTinyVitFolded);
        QCOMPARE(w.graphScene()->boxCount(), kTinyVitNodes - kTinyVitFolded);
        QCOMPARE(w.document()->layout()->edges.size(), foldedEdges);
    }

    void transformerGroupsNarrow_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("tiny_vit") << tinyVit();
        QTest::newRow("vit_b_16") << sharedPath(QStringLiteral("corpus/graph_only/vit_b_16.onnx"));
    }
    void transformerGroupsNarrow()
    {
        // Every group expanded, at the app's box sizes: folding must at least shrink the widest
        // group (an attention block, whose shape arithmetic spread it sideways) below 60%.
        QFETCH(QString, file);
        if (!QFileInfo::exists(file))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.show();
        QVERIFY(openAndWait(w, file));
        const int nodes = int(w.document()->graph().nodeCount());
        const int folded = w.document()->layouter()->hiddenCount();
        const int boxes = w.graphScene()->boxCount();
        const double narrow = widestGroup(*w.document()->layout());
        const double height = w.document()->layout()->bounds.height;
        QCOMPARE(boxes, nodes - folded);
        QVERIFY(relayout(w, false));
        QCOMPARE(w.graphScene()->boxCount(), nodes);
        const double wide = widestGroup(*w.document()->layout());
        qInfo("%s: %d nodes, %d drawn with folding; widest group %.0f px -> %.0f px; graph height "
              "%.0f px -> %.0f px",
              qPrintable(QFileInfo(file).fileName()), nodes, boxes, wide, narrow,
              w.document()->layout()->bounds.height, height);
        QVERIFY(folded > 0);
        QVERIFY(narrow < 0.6 * wide);
    }

    void valuesAtAnotherBatch()
    {
        // vit_b_16 bakes batch 32 into its Reshape targets; imported at batch 4 the folded values
        // must still all be known (propagation over the folded nodes alone never meets the
        // Reshape that the importer had to rewrite).
        const QString file = sharedPath(QStringLiteral("corpus/graph_only/vit_b_16.onnx"));
        if (!QFileInfo::exists(file))
            QSKIP("shared corpus not found");
        remat::core::onnx::ImportOptions options;
        options.batch = 4;
        auto g = remat::core::onnx::importModel(remat::tests::toStd(file), options);
        QVERIFY2(g.hasValue(), g.status().toString().c_str());
        const FoldedConstants k(*g);
        QVERIFY2(k.problem().empty(), k.problem().c_str());
        const std::vector<char> folded = layout::foldableNodes(*g);
        int outputs = 0;
        for (const ir::Node &n : g->nodes())
            for (core::ValueId v : n.outputs)
                if (folded[n.id.index()] && v.valid()) {
                    QVERIFY2(k.value(v), g->value(v).name.c_str());
                    ++outputs;
                }
        QCOMPARE(k.evaluatedCount() >= outputs, true);
        QVERIFY(outputs > 800); // 822 folded nodes, one output each
    }

    void resnet18Unaffected()
    {
        if (!QFileInfo::exists(resnet18()))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.show();
        QVERIFY(openAndWait(w, resnet18()));
        QCOMPARE(w.document()->layouter()->hiddenCount(), 0);
        const layout::GraphLayout on = *w.document()->layout();
        QVERIFY(relayout(w, false));
        const layout::GraphLayout &off = *w.document()->layout();
        QCOMPARE(off.items.size(), on.items.size());
        for (size_t i = 0; i < on.items.size(); ++i)
            QVERIFY(on.items[i].rect.x == off.items[i].rect.x &&
                    on.items[i].rect.y == off.items[i].rect.y &&
                    on.items[i].rect.width == off.items[i].rect.width &&
                    on.items[i].rect.height == off.items[i].rect.height);
        QCOMPARE(off.edges.size(), on.edges.size());
        QCOMPARE(off.bounds.width, on.bounds.width);
        QCOMPARE(off.bounds.height, on.bounds.height);
    }
};

QTEST_MAIN(TestFoldView)
#include "tst_fold_view.moc"
