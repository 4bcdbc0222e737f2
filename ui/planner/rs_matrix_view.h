#pragma once
// Checkmate's R (what runs in each stage) or S (what is stored into each stage) matrix as a
// heat-map image: rows = stages, columns = ops in training-graph order. Zoom with Ctrl+wheel or
// setZoom(); the current stage is marked by a red row.
//   RsMatrixView r(RsMatrixView::Recompute);  r.setAnalysis(analysis);  r.setCurrentStage(k);
//   QImage img = r.image();   // one pixel per cell

#include "ui/planner/plan_analysis.h"

#include <QImage>
#include <QWidget>

namespace remat::ui {

class RsMatrixView : public QWidget
{
    Q_OBJECT
public:
    enum Kind { Recompute, Store };
    explicit RsMatrixView(Kind kind, QWidget *parent = nullptr);

    void setAnalysis(const PlanAnalysis &analysis);
    void setCurrentStage(int stage);
    void setZoom(double pixelsPerCell);
    double zoom() const { return m_zoom; }
    const QImage &image() const { return m_image; }
    QSize sizeHint() const override;

signals:
    /// The user clicked a cell: the stage (row) and the op (column).
    void cellClicked(int stage, int op);

protected:
    void paintEvent(QPaintEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;

private:
    Kind m_kind;
    QImage m_image;
    double m_zoom = 1.0;
    int m_stage = -1;
};

} // namespace remat::ui
