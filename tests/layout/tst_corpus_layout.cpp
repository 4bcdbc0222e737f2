// GraphLayouter on every real model of the corpus and onnx-light, expanded and collapsed at depths
// 1 and 2: siblings never overlap, children stay inside their group frames, edges run downwards,
// every node is shown by exactly one item, collapse then expand gives the first picture back, and
// frames have no empty band under the header or above the bottom (at most one padding).
#include "common/test_support.h"
#include "core/layout/graph_layout.h"
#include "core/onnx/importer.h"
#include "layout/layout_checks.h"

#include <QDir>
#include <QTest>

using namespace remat::core;
using namespace remat::core::layout;
using remat::tests::sharedDir;
using remat::tests::sharedPath;

class TestCorpusLayout : public QObject
{
    Q_OBJECT
private slots:
    void corpusModels_data()
    {
        QTest::addColumn<QString>("file");
        for (const char *dir : {"corpus/graph_only", "corpus/with_weights", "onnx-light"})
            for (const QString &f :
                 QDir(sharedPath(QString::fromUtf8(dir))).entryList({QStringLiteral("*.onnx")}))
                QTest::newRow(qPrintable(f))
                    << sharedPath(QString::fromUtf8(dir) + QStringLiteral("/") + f);
        // without ../shared, one row that skips (a data function without rows aborts the test)
        if (!QDir(sharedDir()).exists())
            QTest::newRow("no shared data") << QString();
    }
    void corpusModels()
    {
        QFETCH(QString, file);
        if (file.isEmpty())
            QSKIP("shared corpus not found");
        auto g = onnx::importModel(remat::tests::toStd(file));
        QVERIFY2(g.hasValue(), g.status().toString().c_str());
        auto graph = std::make_shared<const ir::Graph>(std::move(*g));
        GraphLayoutSizes sizes;
        for (const ir::Node &n : graph->nodes())
            sizes.node.push_back(Size{double(40 + 6 * std::min<size_t>(n.opType.size(), 30)), 32});
        GraphLayouter lay(graph, sizes);
        std::vector<Rect> firstBoxes;
        for (int depth : {0, 1, 2, 0}) {
            auto l = lay.layout(collapseAtDepth(lay, depth));
            QVERIFY2(l.hasValue(), l.status().toString().c_str());
            // every node is shown by exactly one visible item
            size_t shown = 0;
            for (int item : l->itemOfNode) {
                QVERIFY(item >= 0);
                QVERIFY(l->items[size_t(item)].kind != ItemKind::ExpandedGroup);
                ++shown;
            }
            QCOMPARE(shown, graph->nodeCount());
            std::map<int, std::vector<Rect>> byParent;
            for (const LayoutItem &it : l->items) {
                byParent[it.parent].push_back(it.rect);
                if (it.parent >= 0)
                    QVERIFY2(l->items[size_t(it.parent)].rect.contains(it.rect),
                             "item outside its group");
            }
            for (auto &[parent, rects] : byParent) {
                const std::string overlap = remat::tests::firstOverlap(rects);
                QVERIFY2(overlap.empty(), overlap.c_str());
                if (parent < 0)
                    continue;
                // No empty band inside a frame: the first row at most one padding below the
                // header, the last row one padding above the bottom (the ports' ranks used to
                // leave a whole rank gap, 36 px, at either end).
                const Rect &frame = l->items[size_t(parent)].rect;
                double top = frame.bottom(), bottom = frame.y;
                for (const Rect &r : rects) {
                    top = std::min(top, r.y);
                    bottom = std::max(bottom, r.bottom());
                }
                const double pad = lay.sizes().groupPadding, header = lay.sizes().groupHeader;
                QVERIFY2(
                    top - (frame.y + header) <= pad + 1e-6,
                    qPrintable(QStringLiteral("%1 px under a header").arg(top - frame.y - header)));
                QVERIFY2(std::abs(frame.bottom() - bottom - pad) < 1e-6,
                         qPrintable(QStringLiteral("%1 px above a frame's bottom")
                                        .arg(frame.bottom() - bottom)));
            }
            for (const LayoutEdge &e : l->edges) {
                QVERIFY(e.points.size() >= 2);
                QVERIFY2(l->items[size_t(e.from)].rect.bottom() <= l->items[size_t(e.to)].rect.y,
                         "an edge goes up");
            }
            std::vector<Rect> boxes;
            for (const LayoutItem &it : l->items)
                boxes.push_back(it.rect);
            if (firstBoxes.empty())
                firstBoxes = boxes;
            else if (depth == 0)
                QVERIFY2(boxes == firstBoxes, "expanding again changed the picture");
        }
    }
};

QTEST_GUILESS_MAIN(TestCorpusLayout)
#include "tst_corpus_layout.moc"
