#pragma once
// Checkmate's R (what runs in each stage) or S (what is stored into each stage) matrix as a
// heat-map image: rows = stages, columns = ops in training-graph order, both named on the axes
// (every name once a cell is big enough to hold text, else the first and last). Hovering a cell
// says what it means; zoom with Ctrl+wheel or setZoom(); the current stage is a red row.
//   RsMatrixView r(RsMatrixView::Recompute);  r.setAnalysis(analysis);  r.setCurrentStage(k);
//   QImage img = r.image();   // one pixel per cell;  r.cellText(k, j);  // the hover text
// The image has a pixel per stage and op (tens of millions for an 8B decoder's plan): it is
// drawn when first needed (painted, image(), a cell's text), not on every new plan, so a plan
// re-solved while the budget slider moves costs nothing here while the Schedule tab is hidden.

#include "ui/planner/plan_analysis.h"

#include <QImage>
#include <QStringList>
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
    /// A zoom the user asked for (buttons, Ctrl+wheel): setZoom and zoomedByUser().
    void zoomBy(double factor);
    double zoom() const { return m_zoom; }
    const QImage &image() const
    {
        drawImage();
        return m_image;
    }
    QSize sizeHint() const override;
    /// The op that opens each stage (column j is the op first computed in stage j): forward ONNX
    /// node names, "∂ name" for backward ops.
    const QStringList &opNames() const { return m_names; }
    /// Where the cells start inside the widget (after the axis labels).
    QPoint cellOrigin() const { return {m_left, m_top}; }
    /// What the cell at (stage, column) means, as the hover tooltip says it.
    QString cellText(int stage, int column) const;
    /// The cell under a widget position: (stage, column), or (-1, -1) outside the cells.
    QPoint cellAt(const QPointF &pos) const;

signals:
    /// The user clicked a cell: the stage (row) and the op (column).
    void cellClicked(int stage, int op);
    /// The horizontal extent of the cells changed (zoom, labels): views aligned under it follow.
    void geometryChanged();
    /// The user zoomed: the teaching view stops fitting the matrix to its pane.
    void zoomedByUser();

protected:
    void paintEvent(QPaintEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    bool event(QEvent *event) override;

private:
    void updateMargins();
    /// Draws m_image from m_analysis when a new analysis came since.
    void drawImage() const;

    Kind m_kind;
    PlanAnalysis m_analysis;
    std::vector<core::OpId> m_opOfColumn; ///< column j: the op first computed in stage j
    int m_rows = 0;                       ///< stages (and columns); 0 without a plan
    mutable QImage m_image;
    mutable bool m_imageStale = false;
    QStringList m_names;
    std::vector<char> m_backwardStage;
    double m_zoom = 1.0;
    int m_stage = -1;
    int m_left = 0, m_top = 0;
};

} // namespace remat::ui
