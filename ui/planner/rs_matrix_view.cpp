#include "ui/planner/rs_matrix_view.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>

namespace remat::ui {

namespace {
/// Below this cell size names do not fit beside every row and column: only the ends are named.
constexpr double kNamedCell = 9.0;
constexpr int kAxisBand = 16;  ///< the band holding an axis caption
constexpr int kMaxLabel = 150; ///< the longest name drawn, in pixels (elided past it)

QFont labelFont(double zoom)
{
    QFont f;
    f.setPointSizeF(std::clamp(zoom * 0.62, 6.5, 9.0));
    return f;
}
} // namespace

RsMatrixView::RsMatrixView(Kind kind, QWidget *parent) : QWidget(parent), m_kind(kind)
{
    setMouseTracking(true); // tooltips per cell
    updateMargins();
}

void RsMatrixView::setAnalysis(const PlanAnalysis &a)
{
    m_names.clear();
    m_backwardStage.clear();
    m_opOfColumn.clear();
    m_image = QImage();
    m_imageStale = false;
    m_rows = 0;
    m_analysis = PlanAnalysis();
    if (a.isEmpty() || a.stageCount() == 0) {
        updateMargins();
        updateGeometry();
        update();
        return;
    }
    // Column j is the op first computed in stage j (the order the frontier advances in), so R
    // is lower-triangular with the first computes on the diagonal, as in Checkmate's figures.
    m_rows = a.stageCount();
    m_opOfColumn.resize(size_t(m_rows));
    for (int k = 0; k < m_rows; ++k) {
        const int step = a.stageStartStep(k);
        m_opOfColumn[size_t(k)] = a.opAtStep(step);
        const bool backward = a.backwardBeginStep() >= 0 && step > a.backwardBeginStep();
        m_backwardStage.push_back(backward);
        const QString node = a.nodeAtStep(step);
        m_names << (backward ? QStringLiteral("\u2202 ") + node : node);
    }
    m_analysis = a;
    m_imageStale = true;
    updateMargins();
    updateGeometry();
    update();
}

void RsMatrixView::drawImage() const
{
    if (!m_imageStale)
        return;
    m_imageStale = false;
    const int rows = m_rows;
    QImage img(rows, rows, QImage::Format_RGB32);
    img.fill(QColor(0xff, 0xff, 0xff));
    const QRgb on = m_kind == Recompute ? qRgb(0x21, 0x21, 0x21) : qRgb(0x1a, 0x5f, 0xb4);
    const QRgb recompute = qRgb(0xf4, 0x8f, 0x22);
    for (int k = 0; k < rows; ++k) {
        auto *line = reinterpret_cast<QRgb *>(img.scanLine(k));
        for (int j = 0; j < rows; ++j) {
            const core::OpId op = m_opOfColumn[size_t(j)];
            if (m_kind == Recompute) {
                if (m_analysis.recomputedInStage(k, op))
                    line[j] = j < k ? recompute : on;
            } else if (m_analysis.storedIntoStage(k, op)) {
                line[j] = on;
            }
        }
    }
    m_image = std::move(img);
}

void RsMatrixView::updateMargins()
{
    if (m_rows == 0 || m_zoom < kNamedCell) {
        m_left = m_top = kAxisBand; // captions only
    } else {
        const QFontMetrics fm(labelFont(m_zoom));
        int widest = 0;
        for (const QString &n : m_names)
            widest = std::max(widest, fm.horizontalAdvance(n));
        m_left = m_top = std::min(widest, kMaxLabel) + 8;
    }
    emit geometryChanged();
}

QPoint RsMatrixView::cellAt(const QPointF &pos) const
{
    if (m_rows == 0)
        return {-1, -1};
    const double x = (pos.x() - m_left) / m_zoom, y = (pos.y() - m_top) / m_zoom;
    if (x < 0 || y < 0 || x >= m_rows || y >= m_rows)
        return {-1, -1};
    return {int(y), int(x)}; // (stage, column)
}

QString RsMatrixView::cellText(int stage, int column) const
{
    if (stage < 0 || column < 0 || stage >= m_names.size() || column >= m_names.size())
        return {};
    drawImage();
    const QRgb c = m_image.pixel(column, stage);
    const bool set = c != qRgb(0xff, 0xff, 0xff);
    QString what;
    if (m_kind == Recompute)
        what = !set             ? tr("does not run in this stage")
               : column < stage ? tr("runs again here: a recompute (orange)")
                                : tr("runs here for the first time");
    else
        what = set ? tr("its output is held in memory through this stage")
                   : tr("its output is not held in this stage");
    return tr("%1 matrix, stage %2 (opened by %3)\nop %4: %5\n%6")
        .arg(m_kind == Recompute ? QStringLiteral("R") : QStringLiteral("S"))
        .arg(stage + 1)
        .arg(m_names[stage], QString::number(column + 1) + QStringLiteral(" ") + m_names[column],
             what, m_backwardStage[size_t(stage)] ? tr("backward pass") : tr("forward pass"));
}

bool RsMatrixView::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(e);
        const QPoint cell = cellAt(help->pos());
        if (cell.x() >= 0)
            QToolTip::showText(help->globalPos(), cellText(cell.x(), cell.y()), this);
        else
            QToolTip::showText(help->globalPos(),
                               m_kind == Recompute
                                   ? tr("R: op (column) runs during stage (row). Left of the "
                                        "diagonal, in orange: recomputes.")
                                   : tr("S: the output of op (column) is held in memory during "
                                        "stage (row)."),
                               this);
        return true;
    }
    return QWidget::event(e);
}

void RsMatrixView::setCurrentStage(int stage)
{
    m_stage = stage;
    update();
}

void RsMatrixView::setZoom(double pixelsPerCell)
{
    m_zoom = std::clamp(pixelsPerCell, 0.05, 32.0);
    updateMargins();
    updateGeometry();
    resize(sizeHint());
    update();
}

void RsMatrixView::zoomBy(double factor)
{
    setZoom(m_zoom * factor);
    emit zoomedByUser();
}

QSize RsMatrixView::sizeHint() const
{
    if (m_rows == 0)
        return {200, 200};
    return {m_left + std::max(1, int(m_rows * m_zoom)) + 2,
            m_top + std::max(1, int(m_rows * m_zoom)) + 2};
}

void RsMatrixView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (m_rows == 0) {
        p.drawText(rect(), Qt::AlignCenter, tr("No plan"));
        return;
    }
    drawImage();
    const QRectF target(m_left, m_top, m_image.width() * m_zoom, m_image.height() * m_zoom);
    // Nearest-neighbour keeps single cells crisp when zoomed in; smooth when shrunk.
    p.setRenderHint(QPainter::SmoothPixmapTransform, m_zoom < 1.0);
    p.drawImage(target, m_image);
    p.setPen(QPen(QColor(0x90, 0x90, 0x90), 0));
    p.drawRect(target.adjusted(0, 0, -1, -1));
    // Axes: rows are stages (each opened by the op of the same column), columns are ops.
    p.setPen(palette().windowText().color());
    const QFont font = labelFont(m_zoom);
    p.setFont(font);
    const QFontMetrics fm(font);
    if (m_zoom >= kNamedCell) {
        for (int k = 0; k < m_names.size(); ++k) {
            const QString name = fm.elidedText(m_names[k], Qt::ElideLeft, kMaxLabel);
            p.drawText(QRectF(0, m_top + k * m_zoom, m_left - 4, m_zoom),
                       Qt::AlignRight | Qt::AlignVCenter, name);
            p.save();
            p.translate(m_left + (k + 0.5) * m_zoom, m_top - 4);
            p.rotate(-90);
            p.drawText(QRectF(0, -m_zoom / 2, m_top - 4, m_zoom), Qt::AlignLeft | Qt::AlignVCenter,
                       name);
            p.restore();
        }
    } else if (!m_names.isEmpty()) {
        // Too small for every name: captions with the first and last op.
        const QString first = fm.elidedText(m_names.front(), Qt::ElideLeft, 120);
        const QString last = fm.elidedText(m_names.back(), Qt::ElideLeft, 120);
        p.drawText(QRectF(m_left, 0, target.width(), kAxisBand), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("op \u2192  %1 \u2026 %2").arg(first, last));
        p.save();
        p.translate(0, m_top + target.height());
        p.rotate(-90);
        p.drawText(QRectF(0, 0, target.height(), kAxisBand), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("stage \u2192"));
        p.restore();
    }
    if (m_stage >= 0 && m_stage < m_image.height()) {
        const double y = m_top + (m_stage + 0.5) * m_zoom;
        p.setPen(QPen(QColor(0xe5, 0x39, 0x35), std::max(1.0, m_zoom)));
        p.drawLine(QPointF(m_left, y), QPointF(target.right(), y));
    }
}

void RsMatrixView::wheelEvent(QWheelEvent *event)
{
    if (event->modifiers() & Qt::ControlModifier) {
        zoomBy(event->angleDelta().y() > 0 ? 1.25 : 0.8);
        event->accept();
        return;
    }
    QWidget::wheelEvent(event);
}

void RsMatrixView::mousePressEvent(QMouseEvent *event)
{
    if (m_rows == 0)
        return;
    const QPoint cell = cellAt(event->position());
    if (cell.x() >= 0)
        emit cellClicked(cell.x(), cell.y());
}

} // namespace remat::ui
