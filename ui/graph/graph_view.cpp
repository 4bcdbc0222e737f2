#include "ui/graph/graph_view.h"

#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include <cmath>

namespace remat::ui {

GraphView::GraphView(QGraphicsScene *scene, QWidget *parent) : QGraphicsView(scene, parent)
{
    setRenderHint(QPainter::Antialiasing, true);
    setRenderHint(QPainter::TextAntialiasing, true);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
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
    emit viewportChanged();
}

void GraphView::fitAll()
{
    if (!scene())
        return;
    fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
    if (scale() > 1.0)
        resetZoom();
    emit viewportChanged();
}

void GraphView::resetZoom()
{
    setTransform(QTransform());
    emit viewportChanged();
}

void GraphView::reveal(const QGraphicsItem *item)
{
    if (!item)
        return;
    if (scale() < 0.6)
        setTransform(QTransform::fromScale(0.9, 0.9));
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

void GraphView::scrollContentsBy(int dx, int dy)
{
    QGraphicsView::scrollContentsBy(dx, dy);
    emit viewportChanged();
}

void GraphView::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    emit viewportChanged();
}

Minimap::Minimap(GraphView *main, QWidget *parent) : QGraphicsView(main->scene(), parent), m_main(main)
{
    setInteractive(false);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setRenderHint(QPainter::Antialiasing, false);
    setBackgroundBrush(QColor(0xf1, 0xf2, 0xf5));
    setMinimumSize(140, 160);
    connect(main, &GraphView::viewportChanged, this, [this] { viewport()->update(); });
    connect(main->scene(), &QGraphicsScene::sceneRectChanged, this, [this] { refit(); });
}

void Minimap::refit()
{
    if (scene())
        fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
    viewport()->update();
}

void Minimap::drawForeground(QPainter *painter, const QRectF &)
{
    const QPolygonF visible = m_main->mapToScene(m_main->viewport()->rect());
    painter->setBrush(QColor(0x1f, 0x6f, 0xd0, 40));
    QPen pen(QColor(0x1f, 0x6f, 0xd0), 0);
    pen.setCosmetic(true);
    pen.setWidth(2);
    painter->setPen(pen);
    painter->drawPolygon(visible);
}

void Minimap::mousePressEvent(QMouseEvent *event)
{
    m_main->centerOn(mapToScene(event->position().toPoint()));
    emit m_main->viewportChanged();
}

void Minimap::mouseMoveEvent(QMouseEvent *event)
{
    if (event->buttons() & Qt::LeftButton) {
        m_main->centerOn(mapToScene(event->position().toPoint()));
        emit m_main->viewportChanged();
    }
}

void Minimap::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    refit();
}

void Minimap::wheelEvent(QWheelEvent *event)
{
    event->ignore();
}

} // namespace remat::ui
