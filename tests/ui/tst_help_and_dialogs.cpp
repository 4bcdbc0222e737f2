// Help and the small dialogs of the main window, offscreen, on the bundled tiny_vit. Expected:
// - Help > User Guide (F1) shows the guide from the resources: the four uses (browsing a graph,
//   teaching rematerialization, manual overrides, exporting plans) with every picture loaded;
// - File > Open Recent lists a saved session beside the model, and choosing it reopens the
//   session (its path becomes the window's);
// - File > Export's dialogs are titled without the menu's '&' and "...";
// - Training options: Micro-batches 0 + OK stays open with an error naming the field and the
//   value typed, instead of silently keeping the old value; a valid count then goes through;
// - a collapsed group's box counts the nodes the inspector counts (folded shape arithmetic
//   included);
// - clicking an edge marks every edge of that tensor; clicking a box clears the mark.
#include "common/test_support.h"
#include "ui/graph/graph_items.h"
#include "ui/graph/graph_scene.h"
#include "ui/graph/graph_view.h"
#include "ui/help_dialogs.h"
#include "ui/inspector_panel.h"
#include "ui/main_window.h"
#include "ui/model_document.h"
#include "ui/planner/planner.h"
#include "ui/planner/planner_document.h"
#include "ui/planner/training_options_dialog.h"
#include "ui_test_util.h"

#include "core/layout/graph_layout.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTimer>

using namespace remat;
using namespace remat::ui;

namespace {

QString tinyVit()
{
    return remat::tests::sourceDir() + QStringLiteral("/resources/models/tiny_vit.onnx");
}

QAction *findAction(QWidget *root, const QString &text)
{
    for (QAction *a : root->findChildren<QAction *>())
        if (a->text() == text && !a->menu())
            return a;
    return nullptr;
}

} // namespace

class TestHelpAndDialogs : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { remat::tests::isolateSettings(); }

    void userGuideShowsTheFourUses()
    {
        UserGuideDialog d;
        QTextBrowser *b = d.browser();
        const QString text = b->document()->toPlainText();
        for (const char *section : {"Browsing a graph", "Teaching rematerialization",
                                    "Manual overrides", "Exporting plans"})
            QVERIFY2(text.contains(QLatin1String(section)), section);
        // Every picture is there (from the resources, not a broken-image box).
        int images = 0;
        for (QTextBlock block = b->document()->begin(); block.isValid(); block = block.next())
            for (auto it = block.begin(); !it.atEnd(); ++it) {
                const QTextCharFormat f = it.fragment().charFormat();
                if (!f.isImageFormat())
                    continue;
                const QString name = f.toImageFormat().name();
                const QVariant res =
                    b->document()->resource(QTextDocument::ImageResource, QUrl(name));
                const QImage img = res.value<QImage>().isNull() ? res.value<QPixmap>().toImage()
                                                                : res.value<QImage>();
                QVERIFY2(!img.isNull() && img.width() > 300, qPrintable(name));
                ++images;
            }
        QVERIFY2(images >= 4, QByteArray::number(images).constData());

        // In the Help menu, on F1.
        MainWindow w;
        QAction *guide = w.findChild<QAction *>(QStringLiteral("userGuideAction"));
        QVERIFY(guide);
        QCOMPARE(guide->shortcut(), QKeySequence(QKeySequence::HelpContents));
        guide->trigger();
        QTRY_VERIFY(w.findChild<UserGuideDialog *>());
    }

    void recentFilesListSessions()
    {
        QTemporaryDir dir;
        const QString session = dir.filePath(QStringLiteral("a.rematproj"));
        {
            MainWindow w;
            QVERIFY(remat::tests::openAndWait(w, tinyVit()));
            Planner *planner = w.planner();
            QVERIFY(QTest::qWaitFor([&] { return planner->problem() && !planner->isLoading(); },
                                    60000));
            QVERIFY(w.saveSessionTo(session));
            QCOMPARE(w.recentFiles().value(0), session);
            QVERIFY(w.recentFiles().contains(tinyVit()) ||
                    w.recentFiles().contains(QFileInfo(tinyVit()).absoluteFilePath()));
        }
        // A new window's File > Open Recent has the session first; choosing it opens it.
        MainWindow w;
        auto *recent = w.findChild<QMenu *>(QStringLiteral("recentMenu"));
        QVERIFY(recent && recent->isEnabled());
        QAction *first = recent->actions().value(0);
        QVERIFY(first);
        QVERIFY2(first->text().startsWith(QStringLiteral("a.rematproj")),
                 qPrintable(first->text()));
        QSignalSpy opened(w.planner(), &Planner::sessionOpened);
        first->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() > 0, 60000);
        QCOMPARE(opened.at(0).at(0).toBool(), true);
        QCOMPARE(w.planner()->sessionPath(), session);
        QVERIFY(w.windowTitle().startsWith(QStringLiteral("a.rematproj")));
        QCOMPARE(w.recentFiles().value(0), session); // still first after opening
    }

    void exportDialogTitlesHaveNoMnemonic()
    {
        MainWindow w;
        QVERIFY(remat::tests::openAndWait(w, tinyVit()));
        QAction *planJson = findAction(&w, QStringLiteral("Plan &JSON..."));
        QVERIFY(planJson);
        QString title;
        // The (Qt, non-native offscreen) file dialog runs its own loop: read its title, close it.
        QTimer poll;
        poll.setInterval(20);
        connect(&poll, &QTimer::timeout, this, [&] {
            if (auto *d = qobject_cast<QFileDialog *>(QApplication::activeModalWidget())) {
                title = d->windowTitle();
                d->reject();
            }
        });
        poll.start();
        planJson->trigger();
        poll.stop();
        QCOMPARE(title, QStringLiteral("Export Plan JSON"));
    }

    void microBatchesZeroIsAnError()
    {
        TrainingOptionsDialog d;
        core::training::TrainingOptions o;
        o.microBatches = 4;
        d.setOptions(o);
        d.show();
        QVERIFY(QTest::qWaitForWindowExposed(&d));
        d.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&d));
        QSpinBox *micro = d.form()->microBatchesBox();
        micro->setFocus();
        micro->selectAll();
        QTest::keyClicks(micro, QStringLiteral("0"));
        QCOMPARE(micro->cleanText(), QStringLiteral("0"));
        QVERIFY(!micro->hasAcceptableInput());
        QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
        // A click on OK moves the focus first (the box reverts to 4), then accepts.
        QTest::mouseClick(ok, Qt::LeftButton);
        QVERIFY(d.isVisible());
        QVERIFY(d.result() != QDialog::Accepted);
        auto *error = d.findChild<QLabel *>(QStringLiteral("trainingOptionsError"));
        QVERIFY(error && !error->isHidden());
        QVERIFY2(error->text().contains(QStringLiteral("Micro-batches: '0'")),
                 qPrintable(error->text()));
        // Enter with the text still in the box: the same.
        micro->setFocus();
        micro->selectAll();
        QTest::keyClicks(micro, QStringLiteral("0"));
        QTest::keyClick(micro, Qt::Key_Return);
        QVERIFY(d.isVisible());
        // A valid count goes through.
        micro->setFocus();
        micro->selectAll();
        QTest::keyClicks(micro, QStringLiteral("2"));
        QTest::mouseClick(ok, Qt::LeftButton);
        QCOMPARE(d.result(), int(QDialog::Accepted));
        QCOMPARE(d.options().microBatches, int64_t(2));
    }

    void groupCountsMatchTheInspector()
    {
        MainWindow w;
        w.resize(1400, 900);
        w.setInitialCollapseDepth(1);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(remat::tests::openAndWait(w, tinyVit()));
        const core::ir::Graph &g = w.document()->graph();
        const auto &layout = *w.document()->layout();
        int groups = 0, differFromDrawn = 0;
        for (QGraphicsItem *item : w.graphScene()->items()) {
            auto *box = qgraphicsitem_cast<NodeItem *>(item);
            if (!box || !box->isGroup())
                continue;
            const core::NamespaceId ns = layout.items[size_t(box->layoutIndex())].ns;
            w.inspector()->showGroup(ns);
            QString text = w.inspector()->html();
            text.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("\\bnodes\\s*(\\d+)")).match(text);
            QVERIFY2(m.hasMatch(), qPrintable(w.inspector()->html().left(600)));
            QCOMPARE(box->subtitle(), QStringLiteral("%1 nodes").arg(m.captured(1)));
            differFromDrawn +=
                m.captured(1).toInt() != w.document()->layouter()->subtreeNodeCount(ns);
            ++groups;
        }
        QVERIFY(groups > 0);
        qInfo("%d collapsed groups, %d with folded shape arithmetic", groups, differFromDrawn);
        Q_UNUSED(g);
    }

    void clickedEdgeIsMarked()
    {
        MainWindow w;
        w.resize(1400, 900);
        w.setInitialCollapseDepth(0);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(remat::tests::openAndWait(w, tinyVit()));
        GraphScene *scene = w.graphScene();
        GraphView *view = w.graphView();
        EdgeLayerItem *edges = scene->edgeLayer();
        QVERIFY(edges && !edges->edges().empty());
        // An edge's midpoint on screen, away from any box.
        view->resetZoom();
        int picked = -1;
        QPoint at;
        for (size_t i = 0; i < edges->edges().size() && picked < 0; ++i) {
            const QPainterPath &p = edges->edges()[i].path;
            const QPointF mid = p.pointAtPercent(0.5);
            if (!scene->items(mid).isEmpty() &&
                std::any_of(scene->items(mid).begin(), scene->items(mid).end(),
                            [](QGraphicsItem *it) { return it->type() == NodeItem::Type; }))
                continue;
            view->centerOn(mid);
            at = view->mapFromScene(mid);
            if (view->viewport()->rect().contains(at) && edges->edgeAt(mid, 2) == int(i))
                picked = int(i);
        }
        QVERIFY(picked >= 0);
        QSignalSpy clicked(scene, &GraphScene::valueClicked);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
        QCOMPARE(clicked.count(), 1);
        QVERIFY(std::find(edges->selectedEdges().begin(), edges->selectedEdges().end(), picked) !=
                edges->selectedEdges().end());
        // Clicking empty space far from everything clears it.
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, QPoint(2, 2));
        QTRY_VERIFY(edges->selectedEdges().empty() ||
                    edges->edgeAt(view->mapToScene(2, 2), 2) >= 0);
    }
};

QTEST_MAIN(TestHelpAndDialogs)
#include "tst_help_and_dialogs.moc"
