#include "ui/planner/rs_matrix_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>

namespace remat::ui {

RsMatrixView::RsMatrixView(Kind kind, QWidget *parent) : QWidget(parent), m_kind(kind)
{
    setToolTip(kind == Recompute
                   ? tr("R: op (column) runs during stage (row). Below the diagonal: recomputes.")
                   : tr("S: output of op (column) is stored into stage (row)."));
}

void RsMatrixView::setAnalysis(const PlanAnalysis &a)
{
    if (a.isEmpty() || a.stageCount() == 0) {
        m_image = QImage();
        updateGeometry();
        update();
        return;
    }
    // Column j is the op first computed in stage j (the order the frontier advances in), so R
    // is lower-triangular with the first computes on the diagonal, as in Checkmate's figures.
    const int rows = a.stageCount();
    const int maxOp = rows;
    QImage img(maxOp, rows, QImage::Format_RGB32);
    img.fill(QColor(0xff, 0xff, 0xff));
    const QRgb on = m_kind == Recompute ? qRgb(0x21, 0x21, 0x21) : qRgb(0x1a, 0x5f, 0xb4);
    const QRgb recompute = qRgb(0xf4, 0x8f, 0x22);
    std::vector<core::OpId> opOfColumn(static_cast<size_t>(maxOp));
    for (int k = 0; k < rows; ++k)
        opOfColumn[size_t(k)] = a.opAtStep(a.stageStartStep(k));
    for (int k = 0; k < rows; ++k) {
        auto *line = reinterpret_cast<QRgb *>(img.scanLine(k));
        for (int j = 0; j < maxOp; ++j) {
            const core::OpId op = opOfColumn[size_t(j)];
            if (m_kind == Recompute) {
                if (a.recomputedInStage(k, op))
                    line[j] = j < k ? recompute : on;
            } else if (a.storedIntoStage(k, op)) {
                line[j] = on;
            }
        }
    }
    m_image = img;
    updateGeometry();
    update();
}

void RsMatrixView::setCurrentStage(int stage)
{
    m_stage = stage;
    update();
}

void RsMatrixView::setZoom(double pixelsPerCell)
{
    m_zoom = std::clamp(pixelsPerCell, 0.05, 32.0);
    updateGeometry();
    resize(sizeHint());
    update();
}

QSize RsMatrixView::sizeHint() const
{
    if (m_image.isNull())
        return {200, 200};
    return {std::max(1, int(m_image.width() * m_zoom)),
            std::max(1, int(m_image.height() * m_zoom))};
}

void RsMatrixView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (m_image.isNull()) {
        p.drawText(rect(), Qt::AlignCenter, tr("No plan"));
        return;
    }
    const QRectF target(0, 0, m_image.width() * m_zoom, m_image.height() * m_zoom);
    // Nearest-neighbour keeps single cells crisp when zoomed in; smooth when shrunk.
    p.setRenderHint(QPainter::SmoothPixmapTransform, m_zoom < 1.0);
    p.drawImage(target, m_image);
    p.setPen(QPen(QColor(0x90, 0x90, 0x90), 0));
    p.drawRect(target.adjusted(0, 0, -1, -1));
    if (m_stage >= 0 && m_stage < m_image.height()) {
        const double y = (m_stage + 0.5) * m_zoom;
        p.setPen(QPen(QColor(0xe5, 0x39, 0x35), std::max(1.0, m_zoom)));
        p.drawLine(QPointF(0, y), QPointF(target.width(), y));
    }
}

void RsMatrixView::wheelEvent(QWheelEvent *event)
{
    if (event->modifiers() & Qt::ControlModifier) {
        setZoom(m_zoom * (event->angleDelta().y() > 0 ? 1.25 : 0.8));
        event->accept();
        return;
    }
    QWidget::wheelEvent(event);
}

void RsMatrixView::mousePressEvent(QMouseEvent *event)
{
    if (m_image.isNull())
        return;
    const int col = int(event->position().x() / m_zoom), row = int(event->position().y() / m_zoom);
    if (row >= 0 && row < m_image.height() && col >= 0 && col < m_image.width())
        emit cellClicked(row, col);
}

} // namespace remat::ui
