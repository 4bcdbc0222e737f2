#include "ui/planner/pareto_legend.h"

#include <QFontMetricsF>
#include <QGraphicsSceneHoverEvent>
#include <QPainter>
#include <QPolygonF>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace remat::ui {

namespace {
constexpr qreal kMarker = 10;    ///< a marker's box
constexpr qreal kMarkerGap = 5;  ///< between a marker and its text
constexpr qreal kRowGap = 3;     ///< between two entries of a column
constexpr qreal kColumnGap = 12; ///< between two columns
constexpr int kTextFlags = Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap;

/// A regular star (`points` tips) or polygon inscribed in `box`.
QPolygonF starIn(const QRectF &box, int points, qreal inner)
{
    QPolygonF poly;
    const QPointF c = box.center();
    const qreal r = box.width() / 2;
    const int corners = inner > 0 ? 2 * points : points;
    for (int i = 0; i < corners; ++i) {
        const qreal rr = (inner > 0 && i % 2) ? r * inner : r;
        const qreal a = -std::numbers::pi / 2 + i * 2 * std::numbers::pi / corners;
        poly << c + QPointF(rr * std::cos(a), rr * std::sin(a));
    }
    return poly;
}
} // namespace

ParetoLegend::ParetoLegend(QGraphicsItem *parent) : QGraphicsObject(parent)
{
    setAcceptHoverEvents(true);
}

void ParetoLegend::setEntries(const QList<ParetoLegendEntry> &entries) { m_entries = entries; }

void ParetoLegend::setFont(const QFont &font) { m_font = font; }

QSizeF ParetoLegend::layout(qreal height, qreal maxTextWidth)
{
    prepareGeometryChange();
    m_rects.clear();
    m_textWidth = maxTextWidth;
    const QFontMetricsF fm(m_font);
    // Column by column, top to bottom: an entry goes to the next column when it would end
    // below `height` (a column holds one entry at least, however tall).
    qreal x = 0, y = 0, columnWidth = 0, bottom = 0;
    for (const ParetoLegendEntry &e : std::as_const(m_entries)) {
        const QRectF text = fm.boundingRect(QRectF(0, 0, maxTextWidth, 1e6), kTextFlags, e.text);
        const QSizeF size(kMarker + kMarkerGap + std::ceil(text.width()),
                          std::max(kMarker, std::ceil(text.height())));
        if (y > 0 && y + size.height() > height) {
            x += columnWidth + kColumnGap;
            y = 0;
            columnWidth = 0;
        }
        m_rects.append(QRectF(QPointF(x, y), size));
        columnWidth = std::max(columnWidth, size.width());
        bottom = std::max(bottom, y + size.height());
        y += size.height() + kRowGap;
    }
    m_size = m_rects.isEmpty() ? QSizeF() : QSizeF(x + columnWidth, bottom);
    update();
    return m_size;
}

QList<QRectF> ParetoLegend::entryRects() const
{
    QList<QRectF> out;
    for (const QRectF &r : m_rects)
        out.append(mapRectToScene(r));
    return out;
}

QRectF ParetoLegend::boundingRect() const { return QRectF(QPointF(0, 0), m_size); }

void ParetoLegend::paint(QPainter *painter, const QStyleOptionGraphicsItem *, QWidget *)
{
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setFont(m_font);
    const QFontMetricsF fm(m_font);
    for (qsizetype i = 0; i < m_entries.size() && i < m_rects.size(); ++i) {
        const ParetoLegendEntry &e = m_entries[i];
        const QRectF &r = m_rects[i];
        // The marker centred on the first line of the text.
        const qreal line = std::max(kMarker, fm.height());
        const QRectF box(r.left(), r.top() + (line - kMarker) / 2, kMarker, kMarker);
        painter->setPen(e.pen);
        painter->setBrush(e.brush);
        switch (e.marker) {
        case ParetoLegendEntry::Marker::Circle:
            painter->drawEllipse(box.adjusted(1, 1, -1, -1));
            break;
        case ParetoLegendEntry::Marker::Rectangle:
            painter->drawRect(box.adjusted(1, 1, -1, -1));
            break;
        case ParetoLegendEntry::Marker::Star: painter->drawPolygon(starIn(box, 5, 0.45)); break;
        case ParetoLegendEntry::Marker::Triangle: painter->drawPolygon(starIn(box, 3, 0)); break;
        case ParetoLegendEntry::Marker::Line: {
            QPen pen = e.pen;
            pen.setWidthF(std::max<qreal>(2, pen.widthF()));
            painter->setPen(pen);
            painter->drawLine(QPointF(box.left(), box.center().y()),
                              QPointF(box.right(), box.center().y()));
            break;
        }
        }
        painter->setPen(QColor(0x21, 0x21, 0x21));
        painter->drawText(QRectF(r.left() + kMarker + kMarkerGap, r.top(), m_textWidth, r.height()),
                          kTextFlags, e.text);
    }
}

void ParetoLegend::hoverMoveEvent(QGraphicsSceneHoverEvent *event)
{
    for (qsizetype i = 0; i < m_rects.size() && i < m_entries.size(); ++i)
        if (m_rects[i].contains(event->pos())) {
            const ParetoLegendEntry &e = m_entries[i];
            setToolTip(e.toolTip.isEmpty() ? e.text : e.toolTip);
            return;
        }
    setToolTip(QString());
}

} // namespace remat::ui
