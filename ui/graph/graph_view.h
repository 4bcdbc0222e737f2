#pragma once
// The zoomable, pannable view of the graph scene, and its minimap.
//   GraphView view(&scene);  view.fitAll();  view.zoomBy(1.25);  view.centreOn(item);
//   Minimap map(&view);      // overview of the same scene with the visible rectangle

#include <QGraphicsView>

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

signals:
    void viewportChanged();

protected:
    void wheelEvent(QWheelEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;
    void resizeEvent(QResizeEvent *event) override;
};

class Minimap : public QGraphicsView
{
    Q_OBJECT
public:
    explicit Minimap(GraphView *main, QWidget *parent = nullptr);
    void refit();

protected:
    void drawForeground(QPainter *painter, const QRectF &rect) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;

private:
    GraphView *m_main;
};

} // namespace remat::ui
