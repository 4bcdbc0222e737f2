#include "ui/planner/stage_memory_view.h"

#include "core/util/bytes.h"
#include "ui/planner/rs_matrix_view.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace remat::ui {

namespace {
const QColor kCurve(0x42, 0x85, 0xf4);
const QColor kRed(0xe5, 0x39, 0x35);

QString bytesText(int64_t b) { return QString::fromStdString(core::formatBytes(b)); }
} // namespace

StageMemoryView::StageMemoryView(const RsMatrixView *align, QWidget *parent)
    : QWidget(parent), m_align(align)
{
    setObjectName(QStringLiteral("stageMemory"));
    setToolTip(tr("Memory in use per stage (the most any step of the stage needs), aligned with "
                  "the matrix columns above; dashed: the budget; red dot: the peak"));
    connect(align, &RsMatrixView::geometryChanged, this, [this] {
        updateGeometry();
        update();
    });
}

void StageMemoryView::setMemory(const PlanAnalysis &analysis, const core::sim::Timeline &timeline,
                                int64_t budget)
{
    m_bytes.assign(size_t(std::max(0, analysis.stageCount())), 0);
    m_budget = budget;
    m_peakStage = -1;
    const size_t steps = std::min(timeline.points.size(), analysis.stepCount());
    for (size_t i = 0; i < steps; ++i) {
        const int stage = analysis.stageOfStep(int(i));
        if (stage < 0 || size_t(stage) >= m_bytes.size())
            continue;
        const core::sim::TimelinePoint &p = timeline.points[i];
        m_bytes[size_t(stage)] = std::max({m_bytes[size_t(stage)], p.peakDuringStep, p.bytesInUse});
    }
    if (!m_bytes.empty() && steps > 0)
        m_peakStage = int(std::max_element(m_bytes.begin(), m_bytes.end()) - m_bytes.begin());
    updateGeometry();
    update();
}

void StageMemoryView::setCurrentStage(int stage)
{
    m_stage = stage;
    update();
}

QSize StageMemoryView::sizeHint() const { return {m_align->sizeHint().width(), m_height}; }

void StageMemoryView::setStripHeight(int pixels)
{
    pixels = std::clamp(pixels, 36, 72);
    if (pixels == m_height)
        return;
    m_height = pixels;
    updateGeometry();
    update();
}

void StageMemoryView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const int left = m_align->cellOrigin().x();
    const double zoom = m_align->zoom();
    if (m_peakStage < 0) {
        p.setPen(palette().placeholderText().color());
        p.drawText(rect(), Qt::AlignCenter, tr("Memory per stage appears with a plan"));
        return;
    }
    const int64_t top = std::max(m_bytes[size_t(m_peakStage)], m_budget);
    const QRectF plot(left, 14, m_bytes.size() * zoom, height() - 20);
    auto yOf = [&](int64_t b) { return plot.bottom() - plot.height() * double(b) / double(top); };
    auto xOf = [&](size_t stage) { return plot.left() + (double(stage) + 0.5) * zoom; };
    p.setRenderHint(QPainter::Antialiasing);
    QPainterPath area(QPointF(plot.left(), plot.bottom()));
    for (size_t k = 0; k < m_bytes.size(); ++k) {
        area.lineTo(QPointF(plot.left() + k * zoom, yOf(m_bytes[k])));
        area.lineTo(QPointF(plot.left() + (k + 1) * zoom, yOf(m_bytes[k])));
    }
    area.lineTo(QPointF(plot.right(), plot.bottom()));
    QColor fill = kCurve;
    fill.setAlpha(90);
    p.fillPath(area, fill);
    p.setPen(QPen(kCurve, 1.2));
    p.drawPath(area);
    p.setPen(QPen(QColor(0x90, 0x90, 0x90), 0));
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    QFont small = font();
    small.setPointSizeF(7.5);
    p.setFont(small);
    // The peak's label at the top, centred on its stage; the budget's beside the axis or on its
    // line, on the side away from the peak and below the line when it would touch the peak's
    // label (a budget at the peak put both on one line: "budget"/"peak" overlapped).
    const QPointF peak(xOf(size_t(m_peakStage)), yOf(m_bytes[size_t(m_peakStage)]));
    QString peakText =
        tr("peak %1 (stage %2)").arg(bytesText(m_bytes[size_t(m_peakStage)])).arg(m_peakStage + 1);
    // Under a small matrix (a short dock) the stage goes: the label was cut at the edge.
    if (p.fontMetrics().horizontalAdvance(peakText) + 6 > width())
        peakText = tr("peak %1").arg(bytesText(m_bytes[size_t(m_peakStage)]));
    const double w = p.fontMetrics().horizontalAdvance(peakText) + 6;
    const double tx = std::clamp(peak.x() - w / 2, 0.0, std::max(0.0, width() - w));
    const QRectF peakRect(tx, 0, w, 13);
    if (m_budget > 0) {
        p.setPen(QPen(kRed, 1.2, Qt::DashLine));
        const double y = yOf(m_budget);
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
        const QString text = tr("budget %1").arg(bytesText(m_budget));
        const double bw = p.fontMetrics().horizontalAdvance(text) + 4;
        QRectF r;
        Qt::Alignment align;
        if (left > 80) { // beside the axis when the row names leave room
            r = QRectF(0, y - 8, left - 4, 16);
            align = Qt::AlignRight | Qt::AlignVCenter;
        } else {
            const bool peakLeft = peak.x() < plot.center().x();
            r = QRectF(peakLeft ? std::max(plot.left(), plot.right() - bw) : plot.left() + 2,
                       y - 14, bw, 13);
            align = Qt::AlignLeft | Qt::AlignBottom;
        }
        if (r.intersects(peakRect))
            r.moveTop(y + 1);
        // A short strip (a 768 px screen) has no room beside the line: the label goes to the
        // top row beside the peak's, or is left out (the dashed line stays).
        bool show = true;
        if (plot.height() < 40 && left <= 80) {
            align = Qt::AlignLeft | Qt::AlignTop;
            r = QRectF(plot.left() + 2, 0, bw, 13);
            if (r.intersects(peakRect))
                r.moveLeft(std::max(plot.left(), plot.right() - bw));
            show = !r.intersects(peakRect) && r.right() <= width();
        }
        if (show)
            p.drawText(r, align, text);
    }
    p.setPen(Qt::NoPen);
    p.setBrush(kRed);
    p.drawEllipse(peak, 3.5, 3.5);
    p.setPen(palette().windowText().color());
    p.drawText(peakRect, Qt::AlignCenter, peakText);
    if (left > 30)
        p.drawText(QRectF(0, plot.bottom() - 12, left - 4, 12), Qt::AlignRight | Qt::AlignBottom,
                   tr("memory"));
    if (m_stage >= 0 && size_t(m_stage) < m_bytes.size()) {
        p.setPen(QPen(kRed, std::max(1.0, zoom * 0.6)));
        p.drawLine(QPointF(xOf(size_t(m_stage)), plot.top()),
                   QPointF(xOf(size_t(m_stage)), plot.bottom()));
    }
}

} // namespace remat::ui
