#include "ui/planner/rs_matrix_view.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <bit>
#include <cmath>

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
    m_bits.clear();
    m_image = QImage();
    m_imageStale = false;
    m_rowsStale = false;
    m_shown = QImage();
    ++m_generation;
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
    m_words = (m_rows + 63) / 64;
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
    m_rowsStale = true;
    m_imageStale = true;
    updateMargins();
    updateGeometry();
    update();
}

void RsMatrixView::prepareRows() const
{
    if (!m_rowsStale)
        return;
    m_rowsStale = false;
    // The analysis keeps rows over op indices; the matrix's columns are in first-compute order.
    // Only set bits are visited: a few per stage for R, the resident outputs for S.
    size_t ops = 0;
    for (core::OpId op : m_opOfColumn)
        if (op.valid())
            ops = std::max(ops, size_t(op.index()) + 1);
    std::vector<int> columnOfOp(ops, -1);
    for (int j = 0; j < m_rows; ++j)
        if (m_opOfColumn[size_t(j)].valid())
            columnOfOp[m_opOfColumn[size_t(j)].index()] = j;
    m_bits.assign(size_t(m_rows) * size_t(m_words), 0);
    for (int k = 0; k < m_rows; ++k) {
        const std::vector<uint64_t> &in =
            m_kind == Recompute ? m_analysis.recomputeBits(k) : m_analysis.storeBits(k);
        uint64_t *out = m_bits.data() + size_t(k) * size_t(m_words);
        for (size_t w = 0; w < in.size(); ++w)
            for (uint64_t word = in[w]; word; word &= word - 1) {
                const size_t op = w * 64 + size_t(std::countr_zero(word));
                const int j = op < ops ? columnOfOp[op] : -1;
                // R's diagonal (the first computes) is implied; its set cells are recomputes.
                if (j >= 0 && (m_kind == Store || j < k))
                    out[size_t(j) / 64] |= uint64_t(1) << (size_t(j) % 64);
            }
    }
}

QImage RsMatrixView::render(int row0, int row1, int col0, int col1, int width, int height) const
{
    prepareRows();
    QImage img(width, height, QImage::Format_RGB32);
    img.fill(QColor(0xff, 0xff, 0xff));
    if (width <= 0 || height <= 0 || row1 <= row0 || col1 <= col0)
        return img;
    const QRgb on = m_kind == Recompute ? qRgb(0x21, 0x21, 0x21) : qRgb(0x1a, 0x5f, 0xb4);
    const QRgb recompute = qRgb(0xf4, 0x8f, 0x22);
    const int64_t rows = row1 - row0, cols = col1 - col0;
    std::vector<char> set(static_cast<size_t>(width), 0), diagonal(static_cast<size_t>(width), 0);
    int y = -1;
    auto flush = [&] {
        if (y < 0)
            return;
        auto *line = reinterpret_cast<QRgb *>(img.scanLine(y));
        for (int x = 0; x < width; ++x)
            if (set[size_t(x)])
                line[x] = m_kind == Recompute ? recompute : on;
            else if (diagonal[size_t(x)])
                line[x] = on;
        std::fill(set.begin(), set.end(), 0);
        std::fill(diagonal.begin(), diagonal.end(), 0);
    };
    const size_t firstWord = size_t(col0) / 64, lastWord = size_t(col1 - 1) / 64;
    for (int k = row0; k < row1; ++k) {
        const int ky = int(int64_t(k - row0) * height / rows);
        if (ky != y) {
            flush();
            y = ky;
        }
        if (m_kind == Recompute && k >= col0 && k < col1)
            diagonal[size_t(int64_t(k - col0) * width / cols)] = 1;
        const uint64_t *row = m_bits.data() + size_t(k) * size_t(m_words);
        for (size_t w = firstWord; w <= lastWord; ++w) {
            uint64_t word = row[w];
            if (w == firstWord)
                word &= ~uint64_t(0) << (size_t(col0) % 64);
            if (w == lastWord && size_t(col1) % 64)
                word &= ~(~uint64_t(0) << (size_t(col1) % 64));
            for (; word; word &= word - 1) {
                const int64_t j = int64_t(w * 64) + std::countr_zero(word);
                set[size_t((j - col0) * width / cols)] = 1;
            }
        }
    }
    flush();
    return img;
}

const QImage &RsMatrixView::image() const
{
    if (m_imageStale) {
        m_imageStale = false;
        m_image = render(0, m_rows, 0, m_rows, m_rows, m_rows);
    }
    return m_image;
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
    const core::OpId op = m_opOfColumn[size_t(column)];
    const bool set = m_kind == Recompute ? m_analysis.recomputedInStage(stage, op)
                                         : m_analysis.storedIntoStage(stage, op);
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
    // Down to 100 cells a pixel: an 8B decoder's 5,000 stages fit a 150 px pane.
    m_zoom = std::clamp(pixelsPerCell, 0.01, 32.0);
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
    const QRectF target(m_left, m_top, m_rows * m_zoom, m_rows * m_zoom);
    // Only the cells on screen (the widget sits in a scroll area), at most a pixel per screen
    // pixel: the image is kept until the plan, the zoom or the scroll position changes (a new
    // step only moves the red row).
    const QRectF seen = QRectF(visibleRegion().boundingRect()).intersected(target);
    if (!seen.isEmpty()) {
        const int col0 = std::clamp(int((seen.left() - m_left) / m_zoom), 0, m_rows - 1);
        const int col1 =
            std::clamp(int(std::ceil((seen.right() - m_left) / m_zoom)), col0 + 1, m_rows);
        const int row0 = std::clamp(int((seen.top() - m_top) / m_zoom), 0, m_rows - 1);
        const int row1 =
            std::clamp(int(std::ceil((seen.bottom() - m_top) / m_zoom)), row0 + 1, m_rows);
        const QRect cells(col0, row0, col1 - col0, row1 - row0);
        const QSize pixels(
            std::max(1, int(std::min<double>(cells.width(), std::ceil(cells.width() * m_zoom)))),
            std::max(1, int(std::min<double>(cells.height(), std::ceil(cells.height() * m_zoom)))));
        if (m_shownGeneration != m_generation || m_shownCells != cells ||
            m_shown.size() != pixels) {
            m_shown = render(row0, row1, col0, col1, pixels.width(), pixels.height());
            m_shownCells = cells;
            m_shownGeneration = m_generation;
        }
        // Nearest-neighbour keeps single cells crisp when zoomed in.
        p.drawImage(QRectF(m_left + col0 * m_zoom, m_top + row0 * m_zoom, cells.width() * m_zoom,
                           cells.height() * m_zoom),
                    m_shown);
    }
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
    if (m_stage >= 0 && m_stage < m_rows) {
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
