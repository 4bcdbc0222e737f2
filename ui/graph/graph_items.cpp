#include "ui/graph/graph_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <algorithm>
#include <cmath>

namespace remat::ui {

namespace {

const QColor kBorder(0x4a, 0x4f, 0x5a);
const QColor kInputColour(0xe0, 0x6c, 0x00);  // orange: what flows in
const QColor kOutputColour(0x1f, 0x6f, 0xd0); // blue: what flows out
const QColor kSearchColour(0xd0, 0x2a, 0x8a);

QFont titleFont()
{
    QFont f;
    f.setPointSizeF(9);
    f.setBold(true);
    return f;
}

QFont subtitleFont()
{
    QFont f;
    f.setPointSizeF(7.5);
    return f;
}

} // namespace

NodeItem::NodeItem(int layoutIndex, const QRectF &rect, QString title, QString subtitle,
                   QColor fill, int memberCount)
    : m_layoutIndex(layoutIndex), m_rect(rect), m_title(std::move(title)),
      m_subtitle(std::move(subtitle)), m_fill(fill), m_memberCount(memberCount)
{
    setFlag(ItemIsSelectable);
    setZValue(memberCount > 0 ? 2 : 3);
    setToolTip(m_subtitle.isEmpty() ? m_title : m_title + QStringLiteral("\n") + m_subtitle);
}

QRectF NodeItem::boundingRect() const { return m_rect.adjusted(-4, -4, 4, 4); }

QPainterPath NodeItem::shape() const
{
    QPainterPath p;
    p.addRect(m_rect);
    return p;
}

void NodeItem::setFill(const QColor &fill)
{
    m_fill = fill;
    update();
}

void NodeItem::setBreakdown(std::vector<std::pair<QColor, int>> parts)
{
    if (parts == m_breakdown)
        return;
    m_breakdown = std::move(parts);
    update();
}

void NodeItem::setHighlight(unsigned flags)
{
    if (flags == m_highlight)
        return;
    m_highlight = flags;
    update();
}

void NodeItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
    QColor outline = kBorder;
    qreal width = 1;
    if (m_highlight & HighlightInput)
        outline = kInputColour, width = 2.5;
    if (m_highlight & HighlightOutput)
        outline = kOutputColour, width = 2.5;
    if (m_highlight & HighlightSearch)
        outline = kSearchColour, width = 2.5;
    if (m_highlight & HighlightCurrent)
        outline = kSearchColour, width = 4;
    if (isSelected())
        outline = QColor(0x10, 0x10, 0x10), width = 3.5;

    if (lod < 0.12) {
        // Far away: a filled rectangle is all that can be seen.
        painter->fillRect(m_rect, (m_highlight || isSelected()) ? outline : m_fill);
        return;
    }
    QPen pen(outline, width);
    pen.setCosmetic(lod < 0.5);
    painter->setPen(pen);
    painter->setBrush(m_fill);
    if (isGroup()) {
        // A stacked look says "there is more inside".
        painter->drawRoundedRect(m_rect.translated(3, 3), 5, 5);
    }
    painter->drawRoundedRect(m_rect, 5, 5);
    if (!m_breakdown.empty()) {
        // The group's summary: one band per category, as wide as its share of the members.
        int total = 0;
        for (const auto &[colour, count] : m_breakdown)
            total += count;
        const QRectF bar(m_rect.x() + 4, m_rect.bottom() - 8, m_rect.width() - 8, 5);
        double x = bar.x();
        for (const auto &[colour, count] : m_breakdown) {
            const double w = total > 0 ? bar.width() * count / total : 0;
            painter->fillRect(QRectF(x, bar.y(), w, bar.height()), colour);
            x += w;
        }
        painter->setPen(QPen(kBorder, 0));
        painter->setBrush(Qt::NoBrush);
        painter->drawRect(bar);
    }
    if (lod < 0.4)
        return;
    painter->setPen(QColor(0x15, 0x18, 0x1f));
    const QRectF inner = m_rect.adjusted(6, 3, -6, -3);
    QFont tf = titleFont();
    painter->setFont(tf);
    const QFontMetricsF tm(tf);
    if (m_subtitle.isEmpty()) {
        painter->drawText(inner, Qt::AlignCenter,
                          tm.elidedText(m_title, Qt::ElideMiddle, inner.width()));
        return;
    }
    const QRectF top(inner.x(), inner.y(), inner.width(), inner.height() * 0.55);
    const QRectF bottom(inner.x(), top.bottom(), inner.width(), inner.height() - top.height());
    painter->drawText(top, Qt::AlignHCenter | Qt::AlignBottom,
                      tm.elidedText(m_title, Qt::ElideMiddle, inner.width()));
    QFont sf = subtitleFont();
    painter->setFont(sf);
    painter->setPen(QColor(0x33, 0x38, 0x44));
    painter->drawText(bottom, Qt::AlignHCenter | Qt::AlignTop,
                      QFontMetricsF(sf).elidedText(m_subtitle, Qt::ElideMiddle, inner.width()));
}

GroupFrameItem::GroupFrameItem(int layoutIndex, const QRectF &rect, QString title, int depth,
                               double headerHeight)
    : m_layoutIndex(layoutIndex), m_rect(rect), m_title(std::move(title)), m_depth(depth),
      m_header(headerHeight)
{
    setZValue(-100 + depth);
    setToolTip(QObject::tr("%1 (double-click the header to collapse)").arg(m_title));
}

QPainterPath GroupFrameItem::shape() const
{
    QPainterPath p;
    p.addRect(QRectF(m_rect.x(), m_rect.y(), m_rect.width(), m_header));
    return p;
}

void GroupFrameItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *option,
                           QWidget *widget)
{
    const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
    // Nested groups get slightly darker backgrounds so their borders read without strong lines.
    const int shade = std::max(200, 246 - 9 * m_depth);
    const QColor bg(shade, shade + 2 > 255 ? 255 : shade + 2, std::min(255, shade + 6));
    QPen pen(QColor(0x9a, 0xa3, 0xb5), 1);
    pen.setCosmetic(true);
    painter->setPen(pen);
    painter->setBrush(bg);
    painter->drawRoundedRect(m_rect, 8, 8);
    if (lod < 0.3)
        return;
    QFont f;
    f.setPointSizeF(8.5);
    f.setBold(true);
    painter->setFont(f);
    painter->setPen(QColor(0x40, 0x48, 0x5c));
    // The view's scene rectangle: the title follows it when the frame's left edge is off-screen.
    QRectF visible = m_rect;
    if (widget)
        visible = painter->worldTransform().inverted().mapRect(QRectF(widget->rect()));
    const QRectF header = titleRect(visible);
    painter->drawText(header, Qt::AlignLeft | Qt::AlignVCenter,
                      QFontMetricsF(f).elidedText(QStringLiteral("\u25be ") + m_title,
                                                  Qt::ElideMiddle, header.width()));
}

QRectF GroupFrameItem::titleRect(const QRectF &visible) const
{
    const double left = std::max(m_rect.x(), visible.x()) + 10;
    return QRectF(left, m_rect.y() + 2, std::max(0.0, m_rect.right() - 10 - left), m_header - 4);
}

EdgeLayerItem::EdgeLayerItem(std::vector<Edge> edges) : m_edges(std::move(edges))
{
    for (const Edge &e : m_edges)
        m_bounds = m_bounds.united(e.bounds);
    m_bounds.adjust(-20, -20, 120, 20);
    setZValue(0);
    // Without this, exposedRect is the whole bounding rect and every edge is painted each frame.
    setFlag(ItemUsesExtendedStyleOption);
    setAcceptedMouseButtons(Qt::NoButton);
}

void EdgeLayerItem::setOverview(bool on, std::vector<const NodeItem *> boxes)
{
    m_overview = on;
    m_boxes = on ? std::move(boxes) : std::vector<const NodeItem *>{};
    setZValue(on ? 10 : 0);
    update();
}

void EdgeLayerItem::setHighlighted(std::vector<int> inputs, std::vector<int> outputs)
{
    m_inputs = std::move(inputs);
    m_outputs = std::move(outputs);
    update();
}

void EdgeLayerItem::setSelectedEdges(std::vector<int> edges)
{
    if (edges == m_selected)
        return;
    m_selected = std::move(edges);
    update();
}

int EdgeLayerItem::edgeAt(const QPointF &p, double tolerance) const
{
    int best = -1;
    double bestD = tolerance;
    for (size_t i = 0; i < m_edges.size(); ++i) {
        const Edge &e = m_edges[i];
        if (!e.bounds.adjusted(-tolerance, -tolerance, tolerance, tolerance).contains(p))
            continue;
        for (int k = 0; k + 1 < e.polyline.size(); ++k) {
            const QPointF a = e.polyline[k], b = e.polyline[k + 1];
            const QPointF ab = b - a;
            const double len2 = ab.x() * ab.x() + ab.y() * ab.y();
            double t = len2 > 0 ? ((p - a).x() * ab.x() + (p - a).y() * ab.y()) / len2 : 0;
            t = std::clamp(t, 0.0, 1.0);
            const QPointF q = a + t * ab;
            const double d = std::hypot(p.x() - q.x(), p.y() - q.y());
            if (d < bestD) {
                bestD = d;
                best = int(i);
            }
        }
    }
    return best;
}

void EdgeLayerItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
    // Paint only what the device shows: exposedRect alone is the whole layer in some paths
    // (QGraphicsView::render, exports).
    QRectF exposed = option->exposedRect.isEmpty() ? m_bounds : option->exposedRect;
    if (painter->device()) {
        const QRectF device(0, 0, painter->device()->width(), painter->device()->height());
        exposed = exposed.intersected(
            painter->worldTransform().inverted().mapRect(device).adjusted(-10, -10, 10, 10));
    }
    QPen pen(QColor(0x7d, 0x85, 0x96), lod < 0.3 ? 0 : 1.2);
    pen.setCosmetic(lod < 0.3);
    painter->setPen(pen);
    painter->setBrush(Qt::NoBrush);
    const bool detailed = lod >= 0.3;
    const bool arrows = lod >= 0.45;
    const bool labels = lod >= 0.7;
    auto arrowHead = [&](const Edge &e, const QColor &c) {
        if (e.polyline.size() < 2)
            return;
        const QPointF tip = e.polyline.back();
        QPolygonF head;
        head << tip << tip + QPointF(-3.5, -7) << tip + QPointF(3.5, -7);
        painter->save();
        painter->setPen(Qt::NoPen);
        painter->setBrush(c);
        painter->drawPolygon(head);
        painter->restore();
    };
    if (detailed) {
        for (const Edge &e : m_edges) {
            if (!e.bounds.intersects(exposed))
                continue;
            painter->drawPath(e.path);
            if (arrows)
                arrowHead(e, pen.color());
        }
    } else {
        // Zoomed out: straight segments in one batched call; edges shorter than a pixel skipped.
        const double minExtent = 1.0 / std::max(lod, 1e-6);
        QVector<QLineF> lines;
        for (const Edge &e : m_edges) {
            if (!e.bounds.intersects(exposed) ||
                (e.bounds.width() < minExtent && e.bounds.height() < minExtent))
                continue;
            for (int k = 0; k + 1 < e.polyline.size(); ++k)
                lines.append(QLineF(e.polyline[k], e.polyline[k + 1]));
        }
        painter->drawLines(lines);
    }
    if (labels) {
        QFont f;
        f.setPointSizeF(7);
        painter->setFont(f);
        painter->setPen(QColor(0x50, 0x56, 0x64));
        for (const Edge &e : m_edges) {
            if (!e.drawLabel || e.label.isEmpty() || e.polyline.isEmpty() ||
                !e.bounds.intersects(exposed))
                continue;
            const QPointF start = e.polyline.front();
            painter->drawText(QPointF(start.x() + 4, start.y() + 11), e.label);
        }
    }
    if (m_overview) {
        for (const NodeItem *box : m_boxes) {
            if (!box->rect().intersects(exposed))
                continue;
            const bool marked = box->highlight() != HighlightNone || box->isSelected();
            painter->fillRect(box->rect(), marked ? QColor(0xd0, 0x2a, 0x8a) : box->fill());
        }
    }
    auto emphasise = [&](const std::vector<int> &list, const QColor &c) {
        QPen hp(c, lod < 0.3 ? 2 : 2.4);
        hp.setCosmetic(lod < 0.3);
        painter->setPen(hp);
        painter->setBrush(Qt::NoBrush);
        for (int i : list) {
            const Edge &e = m_edges[size_t(i)];
            if (!e.bounds.intersects(exposed))
                continue;
            painter->drawPath(e.path);
            arrowHead(e, c);
        }
    };
    emphasise(m_inputs, QColor(0xe0, 0x6c, 0x00));
    emphasise(m_outputs, QColor(0x1f, 0x6f, 0xd0));
    // A clicked tensor: wider, in the selected box's colour, over everything else.
    if (!m_selected.empty()) {
        QPen sp(QColor(0xd0, 0x2a, 0x8a), lod < 0.3 ? 3 : 3.6);
        sp.setCosmetic(lod < 0.3);
        painter->setPen(sp);
        painter->setBrush(Qt::NoBrush);
        for (int i : m_selected) {
            const Edge &e = m_edges[size_t(i)];
            if (!e.bounds.intersects(exposed))
                continue;
            painter->drawPath(e.path);
            arrowHead(e, QColor(0xd0, 0x2a, 0x8a));
        }
    }
}

} // namespace remat::ui
