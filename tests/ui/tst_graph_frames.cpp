// Namespace group frames in the explorer, offscreen, on tiny_vit (every group expanded).
// Expected:
// - every expanded group's frame holds all its members' boxes (padding at the sides and bottom,
//   the header band above), holds at least one, overlaps no box or frame outside its own subtree,
//   and the frame item on screen has the layout's rectangle (no stale geometry), with shape
//   arithmetic folded or drawn;
// - at the screenshot framing (scale 0.8 on the top of the graph), shape arithmetic drawn, the
//   encoder frames are wider
//   than the view: their header bands cross the whole view, and each must show its title at the
//   view's left edge (it used to sit off-screen at the frame's own left, leaving a bare band).
#include "common/test_support.h"
#include "ui/graph/graph_items.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/main_window.h"
#include "ui/model_document.h"
#include "ui_test_util.h"

#include <QFileInfo>
#include <QImage>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>

using namespace remat;
using namespace remat::ui;
using remat::tests::openAndWait;
using remat::tests::sharedPath;
namespace layout = remat::core::layout;

namespace {

QString tinyVit() { return sharedPath(QStringLiteral("corpus/with_weights/tiny_vit.onnx")); }

/// True when item `i` lies inside the expanded group item `frame` (at any depth).
bool isInside(const layout::GraphLayout &l, size_t i, size_t frame)
{
    for (int p = l.items[i].parent; p >= 0; p = l.items[size_t(p)].parent)
        if (size_t(p) == frame)
            return true;
    return false;
}

QString describe(const layout::Rect &r)
{
    return QStringLiteral("(%1, %2, %3 x %4)").arg(r.x).arg(r.y).arg(r.width).arg(r.height);
}

} // namespace

class TestGraphFrames : public QObject
{
    Q_OBJECT
private slots:
    void framesHoldExactlyTheirMembers_data()
    {
        QTest::addColumn<int>("depth"); // collapse depth: 0 expands everything
        QTest::addColumn<bool>("fold"); // View > Fold Shape Arithmetic
        QTest::newRow("all expanded") << 0 << false;
        QTest::newRow("depth 3") << 3 << false;
        QTest::newRow("all expanded, folded") << 0 << true;
        QTest::newRow("depth 3, folded") << 3 << true;
    }
    void framesHoldExactlyTheirMembers()
    {
        QFETCH(int, depth);
        QFETCH(bool, fold);
        if (!QFileInfo::exists(tinyVit()))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.setInitialCollapseDepth(depth);
        w.setFoldShapeArithmetic(fold);
        w.resize(1200, 800);
        w.show();
        QVERIFY(openAndWait(w, tinyVit()));
        const layout::GraphLayout &l = *w.document()->layout();
        const layout::GraphLayoutSizes &sizes = w.document()->layouter()->sizes();
        const double eps = 1e-6;
        int frames = 0;
        for (size_t f = 0; f < l.items.size(); ++f) {
            if (l.items[f].kind != layout::ItemKind::ExpandedGroup)
                continue;
            ++frames;
            const layout::Rect &frame = l.items[f].rect;
            const QString name =
                QString::fromStdString(w.document()->graph().ns(l.items[f].ns).path);
            int members = 0;
            for (size_t i = 0; i < l.items.size(); ++i) {
                if (i == f || isInside(l, f, i))
                    continue; // itself, or a frame around it
                const layout::Rect &r = l.items[i].rect;
                if (isInside(l, i, f)) {
                    ++members;
                    QVERIFY2(r.x >= frame.x + sizes.groupPadding - eps &&
                                 r.right() <= frame.right() - sizes.groupPadding + eps &&
                                 r.y >= frame.y + sizes.groupHeader - eps &&
                                 r.bottom() <= frame.bottom() - sizes.groupPadding + eps,
                             qPrintable(name + QStringLiteral(" frame ") + describe(frame) +
                                        QStringLiteral(" does not hold member ") + describe(r)));
                } else {
                    QVERIFY2(!frame.intersects(r),
                             qPrintable(name + QStringLiteral(" frame ") + describe(frame) +
                                        QStringLiteral(" overlaps outsider ") + describe(r)));
                }
            }
            QVERIFY2(members > 0, qPrintable(name + QStringLiteral(": empty frame")));
            // The frame item on screen is the layout's rectangle.
            GroupFrameItem *item = w.graphScene()->frameOf(l.items[f].ns);
            QVERIFY(item);
            QCOMPARE(item->sceneBoundingRect(),
                     QRectF(frame.x, frame.y, frame.width, frame.height));
        }
        QVERIFY(frames >= 3); // enc, layers.0, layers.1 at least
    }

    void wideFramesNameThemselvesInView()
    {
        if (!QFileInfo::exists(tinyVit()))
            QSKIP("shared corpus not found");
        MainWindow w;
        w.setInitialCollapseDepth(0);
        w.setFoldShapeArithmetic(false); // the unfolded frames are the ones wider than the view
        w.resize(1600, 1000);
        w.show();
        QVERIFY(openAndWait(w, tinyVit()));
        w.frameForScreenshot();
        QTest::qWait(50);
        GraphView *view = w.graphView();
        const QRectF visible = view->mapToScene(view->viewport()->rect()).boundingRect();
        const QImage shot = view->viewport()->grab().toImage();
        int checked = 0;
        for (QGraphicsItem *gi : w.graphScene()->items()) {
            if (gi->type() != GroupFrameItem::Type)
                continue;
            auto *frame = static_cast<GroupFrameItem *>(gi);
            const QRectF r = frame->sceneBoundingRect();
            // Only frames whose header band crosses the view's left edge: wider than the view.
            const QRectF band(r.x(), r.y() + 4, r.width(), 14);
            if (!(r.left() < visible.left() && r.right() > visible.right() &&
                  visible.top() <= band.top() && band.bottom() <= visible.bottom()))
                continue;
            ++checked;
            // The title's text pixels in the band, within 150 px of the view's left edge.
            const QRect px = view->mapFromScene(band).boundingRect().intersected(
                QRect(0, 0, 150, shot.height()));
            int ink = 0;
            for (int y = px.top(); y <= px.bottom(); ++y)
                for (int x = std::max(0, px.left()); x <= px.right(); ++x)
                    ink += qGray(shot.pixel(x, y)) < 110;
            QVERIFY2(ink > 15,
                     qPrintable(frame->title() +
                                QStringLiteral(
                                    ": header band crosses the view with no title (%1 dark pixels)")
                                    .arg(ink)));
            const QRectF title = frame->titleRect(visible);
            QVERIFY(title.left() >= visible.left() && title.left() < visible.left() + 20);
            QVERIFY(title.top() >= r.top() && title.bottom() <= r.top() + 24);
        }
        QVERIFY2(checked >= 2,
                 qPrintable(QStringLiteral(
                                "expected the enc and layers.0 frames to cross the view, found %1")
                                .arg(checked)));

        // After a sideways scroll the title is at the new left edge, not `shift` px to the right.
        // (grab() paints the whole view afresh, so this cannot see on-screen pixel reuse; the
        // view repaints on sideways scrolls for that.)
        GroupFrameItem *enc = nullptr;
        for (QGraphicsItem *gi : w.graphScene()->items())
            if (gi->type() == GroupFrameItem::Type &&
                static_cast<GroupFrameItem *>(gi)->title() == QLatin1String("enc"))
                enc = static_cast<GroupFrameItem *>(gi);
        QVERIFY(enc);
        QScrollBar *bar = view->horizontalScrollBar();
        const int shift = std::min(300, bar->value() - bar->minimum() - 20);
        QVERIFY(shift >= 200);
        bar->setValue(bar->value() - shift);
        QTest::qWait(50);
        const QImage after = view->viewport()->grab().toImage();
        const QRectF band(enc->sceneBoundingRect().x(), enc->sceneBoundingRect().y() + 4,
                          enc->sceneBoundingRect().width(), 14);
        const QRect row = view->mapFromScene(band).boundingRect();
        auto inkIn = [&](int x0, int x1) {
            int ink = 0;
            for (int y = std::max(0, row.top()); y <= std::min(after.height() - 1, row.bottom());
                 ++y)
                for (int x = x0; x <= x1; ++x)
                    ink += qGray(after.pixel(x, y)) < 110;
            return ink;
        };
        QVERIFY2(inkIn(0, 150) > 15, "no title at the left edge after scrolling");
        QCOMPARE(inkIn(shift, shift + 150), 0);
    }
};

QTEST_MAIN(TestGraphFrames)
#include "tst_graph_frames.moc"
