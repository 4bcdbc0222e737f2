#pragma once
// The zoomable, pannable view of the graph scene, and its minimap.
//   GraphView view(&scene);  view.fitAll();  view.zoomBy(1.25);  view.centreOn(item);
//   Minimap map(&view);      // overview of the same scene with the visible rectangle

#include <QGraphicsView>
#include <QPixmap>

class QTimer;

namespace remat::ui {

class GraphView : public QGraphicsView
{
    Q_OBJECT
public:
    explicit GraphView(QGraphicsScene *scene, QWidget *parent = nullptr);

    void zoomBy(double factor);
    void fitAll();
    void resetZoom();
    /// Scrolls to show `item`, zooming in to a legible scale if the view is far out.
    void reveal(const QGraphicsItem *item);
    double scale() const { return transform().m11(); }
    /// Re-evaluates the far-zoom overview painting after any transform change.
    void updateOverview();

signals:
    void viewportChanged();

protected:
    void wheelEvent(QWheelEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;
    void resizeEvent(QResizeEvent *event) override;
};

/// Overview of the whole scene, rendered once into a pixmap per change (never item by item
/// while panning), with the main view's visible area drawn on top; click or drag to move there.
class Minimap : public QWidget
{
    Q_OBJECT
public:
    explicit Minimap(GraphView *main, QWidget *parent = nullptr);
    /// Renders the scene again (after a new layout or new colours).
    void refit();

protected:
    void paintEvent(QPaintEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    QPointF toScene(const QPointF &widgetPos) const;
    GraphView *m_main;
    QPixmap m_pixmap;
    QTransform m_sceneToWidget;
    QTimer *m_refresh;
};

} // namespace remat::ui
