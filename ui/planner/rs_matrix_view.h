#pragma once
// Checkmate's R (what runs in each stage) or S (what is stored into each stage) matrix as a
// heat-map image: rows = stages, columns = ops in training-graph order, both named on the axes
// (every name once a cell is big enough to hold text, else the first and last). Hovering a cell
// says what it means; zoom with Ctrl+wheel or setZoom(); the current stage is a red row.
//   RsMatrixView r(RsMatrixView::Recompute);  r.setAnalysis(analysis);  r.setCurrentStage(k);
//   QImage img = r.image();   // one pixel per cell;  r.cellText(k, j);  // the hover text
// At an 8B decoder's size (about 5,000 stages: 25 million cells) nothing here is per cell: the
// rows are bitsets in column order, and a paint draws only the cells on screen, at most one
// image pixel per screen pixel (a pixel is coloured when any cell under it is), cached until the
// plan, zoom or scroll changes. A new plan costs nothing until it is painted, so while the
// budget slider re-solves, only the last plan of a burst is drawn (Schedule tab on top or not).
// image() (one pixel per cell) is drawn only when asked for (tests).

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
    /// The whole matrix, one pixel per cell (drawn on first call per plan; the widget paints
    /// from a downsampled one).
    const QImage &image() const;
    /// The image the last paint drew (at most one pixel per screen pixel) and the cells it
    /// covers: for tests and benchmarks.
    const QImage &paintedImage() const { return m_shown; }
    QRect paintedCells() const { return m_shownCells; }
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
    /// Fills m_bits (each stage's row in column order) from m_analysis, once per plan.
    void prepareRows() const;
    /// Cells [row0, row1) x [col0, col1) as a width x height image (each pixel a block of
    /// cells, coloured when any of them is set).
    QImage render(int row0, int row1, int col0, int col1, int width, int height) const;

    Kind m_kind;
    PlanAnalysis m_analysis;
    std::vector<core::OpId> m_opOfColumn; ///< column j: the op first computed in stage j
    int m_rows = 0;                       ///< stages (and columns); 0 without a plan
    int m_words = 0;                      ///< 64-bit words per row of m_bits
    /// Row k of the matrix in column order (R: recomputes only, the diagonal is implied).
    mutable std::vector<uint64_t> m_bits;
    mutable bool m_rowsStale = false;
    mutable QImage m_image; ///< image(): one pixel per cell
    mutable bool m_imageStale = false;
    QImage m_shown;     ///< what paintEvent drew last
    QRect m_shownCells; ///< the cells m_shown covers (x: columns, y: stages)
    quint64 m_generation = 0, m_shownGeneration = ~quint64(0);
    QStringList m_names;
    std::vector<char> m_backwardStage;
    double m_zoom = 1.0;
    int m_stage = -1;
    int m_left = 0, m_top = 0;
};

} // namespace remat::ui
