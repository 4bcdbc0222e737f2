#include "ui/graph/graph_view.h"

#include "ui/graph/graph_scene.h"

#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QWheelEvent>

#include <cmath>

namespace remat::ui {

GraphView::GraphView(QGraphicsScene *scene, QWidget *parent) : QGraphicsView(scene, parent)
{
    setRenderHint(QPainter::Antialiasing, true);
    setRenderHint(QPainter::TextAntialiasing, true);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setOptimizationFlags(QGraphicsView::DontSavePainterState |
                         QGraphicsView::DontAdjustForAntialiasing);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setBackgroundBrush(QColor(0xfb, 0xfb, 0xfd));
    setFrameShape(QFrame::NoFrame);
}

void GraphView::zoomBy(double factor)
{
    const double s = scale() * factor;
    if (s < 0.005 || s > 6)
        return;
    QGraphicsView::scale(factor, factor);
    updateOverview();
    emit viewportChanged();
}

void GraphView::fitAll()
{
    if (!scene())
        return;
    fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
    if (scale() > 1.0)
        resetZoom();
    updateOverview();
    emit viewportChanged();
}

void GraphView::resetZoom()
{
    setTransform(QTransform());
    updateOverview();
    emit viewportChanged();
}

void GraphView::reveal(const QGraphicsItem *item)
{
    if (!item)
        return;
    if (scale() < 0.6)
        setTransform(QTransform::fromScale(0.9, 0.9));
    updateOverview();
    centerOn(item);
    emit viewportChanged();
}

void GraphView::wheelEvent(QWheelEvent *event)
{
    // Wheel zooms around the cursor; with Shift or Alt it scrolls (trackpads, long graphs).
    if (event->modifiers() & (Qt::ShiftModifier | Qt::AltModifier)) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0)
        zoomBy(std::pow(1.2, steps));
    event->accept();
}

void GraphView::updateOverview()
{
    // Below this scale boxes are plain rectangles anyway (see NodeItem::paint); painting them
    // from one item keeps big graphs smooth.
    if (auto *gs = qobject_cast<GraphScene *>(scene()))
        gs->setOverview(scale() < 0.12 && gs->boxCount() > 1500);
}

void GraphView::scrollContentsBy(int dx, int dy)
{
    QGraphicsView::scrollContentsBy(dx, dy);
    // Group titles stay at the view's left edge (GroupFrameItem::titleRect): a sideways scroll
    // moves them relative to the scene, so the shifted pixels cannot be reused.
    if (dx != 0)
        viewport()->update();
    emit viewportChanged();
}

void GraphView::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    emit viewportChanged();
}

Minimap::Minimap(GraphView *main, QWidget *parent) : QWidget(parent), m_main(main)
{
    // The right column's minimums add up to the window's: 160 made it 724 px tall at least, 100
    // still 664 (with a window frame, the status bar ran off a 700 px screen). The dock gets
    // 150 px by default; this is only how far it gives way.
    setMinimumSize(140, 50);
    m_refresh = new QTimer(this);
    m_refresh->setSingleShot(true);
    m_refresh->setInterval(200);
    connect(m_refresh, &QTimer::timeout, this, &Minimap::refit);
    connect(main, &GraphView::viewportChanged, this, qOverload<>(&QWidget::update));
    // Highlights and colours change the scene: redraw the overview once things settle.
    connect(main->scene(), &QGraphicsScene::changed, m_refresh, qOverload<>(&QTimer::start));
    connect(main->scene(), &QGraphicsScene::sceneRectChanged, m_refresh,
            qOverload<>(&QTimer::start));
}

void Minimap::refit()
{
    QGraphicsScene *scene = m_main->scene();
    const QRectF source = scene ? scene->sceneRect() : QRectF();
    m_pixmap = QPixmap();
    if (!scene || source.isEmpty() || width() < 4 || height() < 4) {
        update();
        return;
    }
    const double s = std::min((width() - 4) / source.width(), (height() - 4) / source.height());
    const QSizeF size = source.size() * s;
    const QPointF offset((width() - size.width()) / 2, (height() - size.height()) / 2);
    m_sceneToWidget = QTransform::fromTranslate(-source.x(), -source.y()) *
                      QTransform::fromScale(s, s) *
                      QTransform::fromTranslate(offset.x(), offset.y());
    m_pixmap = QPixmap(this->size() * devicePixelRatioF());
    m_pixmap.setDevicePixelRatio(devicePixelRatioF());
    m_pixmap.fill(QColor(0xf1, 0xf2, 0xf5));
    QPainter painter(&m_pixmap);
    scene->render(&painter, QRectF(offset, size), source);
    update();
}

QPointF Minimap::toScene(const QPointF &widgetPos) const
{
    return m_sceneToWidget.inverted().map(widgetPos);
}

void Minimap::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.fillRect(rect(), QColor(0xf1, 0xf2, 0xf5));
    if (m_pixmap.isNull())
        return;
    painter.drawPixmap(0, 0, m_pixmap);
    const QPolygonF visible = m_sceneToWidget.map(m_main->mapToScene(m_main->viewport()->rect()));
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setBrush(QColor(0x1f, 0x6f, 0xd0, 40));
    painter.setPen(QPen(QColor(0x1f, 0x6f, 0xd0), 2));
    painter.drawPolygon(visible);
}

void Minimap::mousePressEvent(QMouseEvent *event)
{
    m_main->centerOn(toScene(event->position()));
    emit m_main->viewportChanged();
}

void Minimap::mouseMoveEvent(QMouseEvent *event)
{
    if (event->buttons() & Qt::LeftButton) {
        m_main->centerOn(toScene(event->position()));
        emit m_main->viewportChanged();
    }
}

void Minimap::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    refit();
}

} // namespace remat::ui
