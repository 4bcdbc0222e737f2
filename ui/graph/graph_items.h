#pragma once
// The graph view's items: node boxes (nodes and collapsed groups), expanded-group frames, and one
// layer item painting every edge. All paint with level of detail: boxes only when zoomed out,
// labels once they would be legible.
//   auto *n = new NodeItem(index, rect, "Conv", "conv1", fill);  scene->addItem(n);
//   auto *edges = new EdgeLayerItem(std::move(paths));  scene->addItem(edges);

#include <QGraphicsItem>
#include <QPainterPath>

#include <vector>

namespace remat::ui {

/// Highlight states a box can carry at once.
enum NodeHighlight : unsigned {
    HighlightNone = 0,
    HighlightInput = 1,   ///< feeds the selected node
    HighlightOutput = 2,  ///< consumes the selected node's output
    HighlightSearch = 4,  ///< matches the current search
    HighlightCurrent = 8, ///< the search hit being shown
};

class NodeItem : public QGraphicsItem
{
public:
    enum { Type = UserType + 1 };
    /// `layoutIndex`: index of this item in the GraphLayout; `memberCount` > 0 for collapsed groups.
    NodeItem(int layoutIndex, const QRectF &rect, QString title, QString subtitle, QColor fill,
             int memberCount = 0);

    int type() const override { return Type; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

    int layoutIndex() const { return m_layoutIndex; }
    bool isGroup() const { return m_memberCount > 0; }
    int memberCount() const { return m_memberCount; }
    const QString &title() const { return m_title; }
    const QString &subtitle() const { return m_subtitle; }
    const QRectF &rect() const { return m_rect; }
    void setFill(const QColor &fill);
    const QColor &fill() const { return m_fill; }
    void setHighlight(unsigned flags);
    unsigned highlight() const { return m_highlight; }
    /// A collapsed group's members by category (colour, count), drawn as a stacked bar along
    /// the bottom of the box; empty: no bar.
    void setBreakdown(std::vector<std::pair<QColor, int>> parts);
    const std::vector<std::pair<QColor, int>> &breakdown() const { return m_breakdown; }

private:
    int m_layoutIndex;
    QRectF m_rect;
    QString m_title, m_subtitle;
    QColor m_fill;
    int m_memberCount;
    unsigned m_highlight = HighlightNone;
    std::vector<std::pair<QColor, int>> m_breakdown;
};

/// The frame behind an expanded group's interior, with its name in a header band.
class GroupFrameItem : public QGraphicsItem
{
public:
    enum { Type = UserType + 2 };
    GroupFrameItem(int layoutIndex, const QRectF &rect, QString title, int depth,
                   double headerHeight);

    int type() const override { return Type; }
    QRectF boundingRect() const override { return m_rect; }
    /// Only the header band takes clicks, so clicks inside reach the nodes and the background.
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;
    int layoutIndex() const { return m_layoutIndex; }
    const QString &title() const { return m_title; }
    /// Where the title is drawn when `visible` (scene coordinates) is on screen: at the frame's
    /// left, or at the left edge of the view when the frame starts off-screen, so a frame wider
    /// than the view still names itself instead of crossing it as a bare band.
    QRectF titleRect(const QRectF &visible) const;

private:
    int m_layoutIndex;
    QRectF m_rect;
    QString m_title;
    int m_depth;
    double m_header;
};

/// Every edge in one item that paints only what intersects the exposed area (Tiled's layer-item
/// idea): tens of thousands of edges cost one item in the BSP index.
class EdgeLayerItem : public QGraphicsItem
{
public:
    struct Edge
    {
        QPainterPath path;  ///< smooth route
        QPolygonF polyline; ///< raw route, drawn when zoomed out
        QRectF bounds;
        QString label;          ///< tensor shape, drawn near the source once legible
        bool drawLabel = true;  ///< false for all but one edge per (source, value)
        int from = -1, to = -1; ///< layout item indices
        int layoutEdge = -1;    ///< index in GraphLayout::edges
    };
    enum { Type = UserType + 3 };
    explicit EdgeLayerItem(std::vector<Edge> edges);

    int type() const override { return Type; }
    QRectF boundingRect() const override { return m_bounds; }
    QPainterPath shape() const override { return {}; } // never hit: edges are picked by the scene
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

    const std::vector<Edge> &edges() const { return m_edges; }
    /// Edges drawn emphasised: into the selection (inputs) and out of it (outputs).
    void setHighlighted(std::vector<int> inputs, std::vector<int> outputs);
    /// The edges of a tensor the user clicked, drawn on top in the selection's colour (empty:
    /// none).
    void setSelectedEdges(std::vector<int> edges);
    const std::vector<int> &selectedEdges() const { return m_selected; }
    /// The edge nearest to `p` within `tolerance`, or -1.
    int edgeAt(const QPointF &p, double tolerance) const;
    /// Far zoomed out the scene hides its boxes and this layer paints them in one pass instead:
    /// tens of thousands of separately painted items cost too much per frame.
    void setOverview(bool on, std::vector<const NodeItem *> boxes);
    bool overview() const { return m_overview; }

private:
    std::vector<Edge> m_edges;
    bool m_overview = false;
    std::vector<const NodeItem *> m_boxes;
    QRectF m_bounds;
    std::vector<int> m_inputs, m_outputs, m_selected;
};

} // namespace remat::ui
