#include "ui/graph/graph_scene.h"

#include "ui/node_metrics.h"

#include <QElapsedTimer>
#include <QFontMetricsF>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QHash>
#include <QRegularExpression>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace remat::ui {

using namespace core;

namespace {

QFont boldFont(double pt)
{
    QFont f;
    f.setPointSizeF(pt);
    f.setBold(true);
    return f;
}

QFont plainFont(double pt)
{
    QFont f;
    f.setPointSizeF(pt);
    return f;
}

/// Path from the group containing a node down to the node's own namespace ("conv1" for
/// /layer1/layer1.0/conv1/Conv inside group layer1.0); empty when the node sits in the group.
std::string relativeNamespace(const ir::Graph &g, const layout::GraphLayouter &lay, NodeId node)
{
    const ir::Namespace &own = g.ns(g.node(node).ns);
    const ir::Namespace &group = g.ns(lay.groupOfNode(node));
    if (own.id == group.id)
        return {};
    if (group.path.empty())
        return own.path;
    return own.path.size() > group.path.size() + 1 ? own.path.substr(group.path.size() + 1)
                                                   : own.path;
}

QString nodeSubtitle(const ir::Graph &g, const layout::GraphLayouter &lay, NodeId node)
{
    // Path-like names (torch exports) say where the node is: show the part below its group
    // (the op type is already the title). Other names are shown as they are.
    const ir::Node &n = g.node(node);
    if (n.name.find('/') != std::string::npos)
        return QString::fromStdString(relativeNamespace(g, lay, node));
    return n.name == n.opType ? QString() : QString::fromStdString(n.name);
}

/// A shape typed the way people write it ("2x16x128", "2, 16, 128", "2*16*128") in the form the
/// boxes show ("2×16×128"); other text unchanged. Only separators between digits are read, so
/// names such as "max" or "box2" stay as typed.
QString shapeQuery(const QString &text)
{
    static const QRegularExpression separator(
        QStringLiteral("(?<=\\d)\\s*[xX\u00d7,*]\\s*(?=\\d)"));
    QString out = text;
    out.replace(separator, QStringLiteral("\u00d7"));
    return out;
}

/// Nodes of the file under each namespace (its subtree), as the inspector and `remat info` count
/// them: folded shape arithmetic included (it is drawn inside its users, not gone). Children have
/// larger ids than their parents.
std::vector<int> fileNodeCounts(const ir::Graph &g)
{
    std::vector<int> counts(g.namespaces().size(), 0);
    for (size_t i = counts.size(); i-- > 0;) {
        const ir::Namespace &ns = g.namespaces()[i];
        counts[i] += int(ns.nodes.size());
        if (ns.parent.valid())
            counts[ns.parent.index()] += counts[i];
    }
    return counts;
}

} // namespace

GraphScene::GraphScene(ModelDocument *document, QObject *parent)
    : QGraphicsScene(parent), m_document(document)
{
    setBackgroundBrush(QColor(0xfb, 0xfb, 0xfd));
    connect(document, &ModelDocument::changed, this, &GraphScene::onDocumentChanged);
    connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::onSelectionChanged);
}

layout::GraphLayoutSizes GraphScene::measure(const ir::Graph &g, const layout::GraphLayouter &lay)
{
    layout::GraphLayoutSizes s;
    const QFontMetricsF title(boldFont(9)), sub(plainFont(7.5)), groupTitle(boldFont(9.5));
    // Op types and short names repeat a lot; measuring text is the expensive part.
    QHash<QString, double> titleWidth, subWidth;
    auto widthOf = [](QHash<QString, double> &cache, const QFontMetricsF &fm, const QString &text) {
        auto it = cache.find(text);
        if (it == cache.end())
            it = cache.insert(text, fm.horizontalAdvance(text));
        return *it;
    };
    s.node.reserve(g.nodeCount());
    for (const ir::Node &n : g.nodes()) {
        const QString subtitle = nodeSubtitle(g, lay, n.id);
        const double w = std::max(widthOf(titleWidth, title, QString::fromStdString(n.opType)),
                                  widthOf(subWidth, sub, subtitle));
        s.node.push_back({std::clamp(w + 22, 64.0, 230.0), subtitle.isEmpty() ? 30.0 : 40.0});
    }
    s.collapsedGroup.reserve(g.namespaces().size());
    const std::vector<int> counts = fileNodeCounts(g);
    for (const ir::Namespace &ns : g.namespaces()) {
        const QString name = QString::fromStdString(ns.name);
        const QString members = QObject::tr("%1 nodes").arg(counts[ns.id.index()]);
        const double w =
            std::max(groupTitle.horizontalAdvance(name) + 30, sub.horizontalAdvance(members) + 22);
        s.collapsedGroup.push_back({std::clamp(w, 100.0, 260.0), 44});
    }
    s.groupHeader = 24;
    s.groupPadding = 14;
    return s;
}

QString GraphScene::subtitleOf(NodeId node) const
{
    return nodeSubtitle(m_document->graph(), *m_document->layouter(), node);
}

void GraphScene::onDocumentChanged(const DocumentChange &change)
{
    switch (change.kind) {
    case DocumentChangeKind::LayoutChanged: rebuild(); break;
    case DocumentChangeKind::ColourModeChanged: recolour(); break;
    case DocumentChangeKind::SelectionChanged:
        if (!m_syncingSelection) {
            m_syncingSelection = true;
            clearSelection();
            if (NodeItem *item = itemShowing(m_document->selectedNode()))
                item->setSelected(true);
            m_syncingSelection = false;
        }
        applyHighlights();
        break;
    case DocumentChangeKind::ModelReplaced:
        clearItems();
        m_layout.reset();
        m_searchHits.clear();
        break;
    case DocumentChangeKind::CollapseChanged:
    case DocumentChangeKind::TrainingStepChanged: break;
    }
}

GraphScene::~GraphScene() { clearItems(); }

void GraphScene::clearItems()
{
    // Deleting selected items emits selectionChanged: forget the items first, then mute.
    m_boxes.clear();
    m_boxOfLayoutItem.clear();
    m_frameOfLayoutItem.clear();
    m_edges = nullptr;
    m_syncingSelection = true;
    clear();
    m_syncingSelection = false;
}

void GraphScene::rebuild()
{
    clearItems();
    m_layout = m_document->layout();
    if (!m_layout || !m_document->hasModel())
        return;
    const ir::Graph &g = m_document->graph();
    const layout::GraphLayouter &lay = *m_document->layouter();
    const layout::GraphLayout &l = *m_layout;
    const NodeColourProvider &colours = m_document->colours();
    m_boxOfLayoutItem.assign(l.items.size(), nullptr);
    m_frameOfLayoutItem.assign(l.items.size(), nullptr);
    auto toQ = [](const layout::Rect &r) { return QRectF(r.x, r.y, r.width, r.height); };
    const std::vector<int> fileCounts = fileNodeCounts(g);
    // Members of every collapsed group, for colours and counts.
    std::vector<std::vector<NodeId>> members(l.items.size());
    for (size_t n = 0; n < l.itemOfNode.size(); ++n)
        if (l.itemOfNode[n] >= 0 &&
            l.items[size_t(l.itemOfNode[n])].kind == layout::ItemKind::CollapsedGroup)
            members[size_t(l.itemOfNode[n])].push_back(NodeId(n));
    for (size_t i = 0; i < l.items.size(); ++i) {
        const layout::LayoutItem &it = l.items[i];
        switch (it.kind) {
        case layout::ItemKind::Node: {
            auto *box =
                new NodeItem(int(i), toQ(it.rect), QString::fromStdString(g.node(it.node).opType),
                             subtitleOf(it.node), colours.nodeColour(it.node));
            addItem(box);
            m_boxes.push_back(box);
            m_boxOfLayoutItem[i] = box;
            break;
        }
        case layout::ItemKind::CollapsedGroup: {
            const ir::Namespace &ns = g.ns(it.ns);
            // The count is the file's (the inspector's); members are the boxes drawn inside.
            auto *box = new NodeItem(int(i), toQ(it.rect), QString::fromStdString(ns.name),
                                     tr("%1 nodes").arg(fileCounts[it.ns.index()]),
                                     colours.groupColour(members[i]), int(members[i].size()));
            describeGroup(box, it.ns, members[i]);
            addItem(box);
            m_boxes.push_back(box);
            m_boxOfLayoutItem[i] = box;
            break;
        }
        case layout::ItemKind::ExpandedGroup: {
            auto *frame =
                new GroupFrameItem(int(i), toQ(it.rect), QString::fromStdString(g.ns(it.ns).name),
                                   it.depth, lay.sizes().groupHeader);
            addItem(frame);
            m_frameOfLayoutItem[i] = frame;
            break;
        }
        }
    }
    std::vector<EdgeLayerItem::Edge> edges;
    edges.reserve(l.edges.size());
    std::set<std::pair<int, int32_t>> labelled;
    for (size_t ei = 0; ei < l.edges.size(); ++ei) {
        const layout::LayoutEdge &e = l.edges[ei];
        EdgeLayerItem::Edge out;
        out.layoutEdge = int(ei);
        out.from = e.from;
        out.to = e.to;
        for (const layout::Point &p : e.points)
            out.polyline << QPointF(p.x, p.y);
        if (out.polyline.isEmpty())
            continue;
        // Smooth: vertical runs stay straight, slanted runs become S-curves with vertical tangents.
        QPainterPath path(out.polyline.front());
        for (int k = 1; k < out.polyline.size(); ++k) {
            const QPointF a = out.polyline[k - 1], b = out.polyline[k];
            if (std::abs(a.x() - b.x()) < 0.5 || b.y() <= a.y()) {
                path.lineTo(b);
            } else {
                const double my = (a.y() + b.y()) / 2;
                path.cubicTo(QPointF(a.x(), my), QPointF(b.x(), my), b);
            }
        }
        out.path = path;
        out.bounds = out.polyline.boundingRect().adjusted(-2, -2, 2, 2);
        out.label = QString::fromStdString(shapeLabel(g.value(e.value).shape));
        out.drawLabel = labelled.insert({e.from, e.value.value}).second;
        edges.push_back(std::move(out));
    }
    m_edges = new EdgeLayerItem(std::move(edges));
    addItem(m_edges);
    if (m_overview) {
        m_overview = false;
        setOverview(true);
    }
    const QRectF bounds(l.bounds.x, l.bounds.y, l.bounds.width, l.bounds.height);
    setSceneRect(bounds.adjusted(-60, -60, 60, 60));
    // Restore the selection and highlights on the new items.
    m_syncingSelection = true;
    if (NodeItem *item = itemShowing(m_document->selectedNode()))
        item->setSelected(true);
    m_syncingSelection = false;
    applyHighlights();
}

void GraphScene::recolour()
{
    if (!m_layout)
        return;
    const NodeColourProvider &colours = m_document->colours();
    std::vector<std::vector<NodeId>> members(m_layout->items.size());
    for (size_t n = 0; n < m_layout->itemOfNode.size(); ++n)
        if (m_layout->itemOfNode[n] >= 0)
            members[size_t(m_layout->itemOfNode[n])].push_back(NodeId(n));
    for (NodeItem *box : m_boxes) {
        const layout::LayoutItem &it = m_layout->items[size_t(box->layoutIndex())];
        if (it.kind == layout::ItemKind::Node) {
            box->setFill(colours.nodeColour(it.node));
        } else {
            box->setFill(colours.groupColour(members[size_t(box->layoutIndex())]));
            describeGroup(box, it.ns, members[size_t(box->layoutIndex())]);
        }
    }
}

void GraphScene::describeGroup(NodeItem *box, NamespaceId ns, const std::vector<NodeId> &members)
{
    const std::vector<GroupShare> shares = m_document->colours().groupBreakdown(members);
    std::vector<std::pair<QColor, int>> bar;
    QString tip = tr("%1\n%2 nodes (double-click to expand)")
                      .arg(QString::fromStdString(m_document->graph().ns(ns).path))
                      .arg(members.size());
    for (const GroupShare &s : shares) {
        bar.emplace_back(s.colour, s.count);
        tip += QStringLiteral("\n  %1: %2").arg(s.label).arg(s.count);
    }
    box->setBreakdown(std::move(bar));
    box->setToolTip(tip);
}

int GraphScene::nodeItemCount() const
{
    int n = 0;
    for (NodeItem *box : m_boxes)
        n += box->isGroup() ? box->memberCount() : 1;
    return n;
}

int GraphScene::collapsedGroupCount() const
{
    return int(
        std::count_if(m_boxes.begin(), m_boxes.end(), [](NodeItem *b) { return b->isGroup(); }));
}

NodeItem *GraphScene::itemShowing(NodeId node) const
{
    if (!m_layout || !node.valid() || node.index() >= m_layout->itemOfNode.size())
        return nullptr;
    int i = m_layout->itemOfNode[node.index()];
    if (i < 0 && m_document->layouter() && m_document->layouter()->isHidden(node)) {
        const NodeId host = m_document->layouter()->hostOf(node);
        i = host.valid() ? m_layout->itemOfNode[host.index()] : -1;
    }
    return i >= 0 ? m_boxOfLayoutItem[size_t(i)] : nullptr;
}

GroupFrameItem *GraphScene::frameOf(NamespaceId ns) const
{
    if (!m_layout)
        return nullptr;
    for (size_t i = 0; i < m_layout->items.size(); ++i)
        if (m_frameOfLayoutItem[i] && m_layout->items[i].ns == ns)
            return m_frameOfLayoutItem[i];
    return nullptr;
}

void GraphScene::onSelectionChanged()
{
    if (m_syncingSelection || !m_layout)
        return;
    const QList<QGraphicsItem *> sel = selectedItems();
    if (!sel.isEmpty() && m_edges)
        m_edges->setSelectedEdges({}); // a box selected: the clicked tensor is no longer
    NodeId node;
    if (!sel.isEmpty() && sel.front()->type() == NodeItem::Type) {
        const auto *box = static_cast<NodeItem *>(sel.front());
        const layout::LayoutItem &it = m_layout->items[size_t(box->layoutIndex())];
        if (it.kind == layout::ItemKind::Node) {
            node = it.node;
        } else {
            // a collapsed group: select its first member, so the inspector can name the group
            for (size_t n = 0; n < m_layout->itemOfNode.size(); ++n)
                if (m_layout->itemOfNode[n] == box->layoutIndex()) {
                    node = NodeId(n);
                    break;
                }
        }
    }
    m_syncingSelection = true;
    m_document->setSelectedNode(node);
    m_syncingSelection = false;
    applyHighlights();
}

void GraphScene::applyHighlights()
{
    if (!m_layout)
        return;
    const std::set<int32_t> hits = [&] {
        std::set<int32_t> s;
        for (NodeId n : m_searchHits) // a folded hit marks the box it is folded into
            if (const NodeItem *box = itemShowing(n))
                s.insert(box->layoutIndex());
        return s;
    }();
    const NodeItem *selected = itemShowing(m_document->selectedNode());
    const int sel = selected ? selected->layoutIndex() : -1;
    std::vector<int> inEdges, outEdges;
    std::set<int> inputs, outputs;
    if (m_edges && sel >= 0) {
        const auto &edges = m_edges->edges();
        for (size_t i = 0; i < edges.size(); ++i) {
            if (edges[i].to == sel) {
                inEdges.push_back(int(i));
                inputs.insert(edges[i].from);
            }
            if (edges[i].from == sel) {
                outEdges.push_back(int(i));
                outputs.insert(edges[i].to);
            }
        }
    }
    if (m_edges)
        m_edges->setHighlighted(inEdges, outEdges);
    const NodeItem *currentBox = itemShowing(m_currentHit);
    const int current = currentBox ? currentBox->layoutIndex() : -1;
    for (NodeItem *box : m_boxes) {
        const int i = box->layoutIndex();
        unsigned flags = HighlightNone;
        if (inputs.count(i))
            flags |= HighlightInput;
        if (outputs.count(i))
            flags |= HighlightOutput;
        if (hits.count(i))
            flags |= HighlightSearch;
        if (i == current)
            flags |= HighlightCurrent;
        box->setHighlight(flags);
    }
}

std::vector<NodeId> GraphScene::search(const QString &text)
{
    m_searchHits.clear();
    m_currentHit = NodeId();
    const QString needle = text.trimmed();
    if (!needle.isEmpty() && m_document->hasModel()) {
        const ir::Graph &g = m_document->graph();
        const std::string lower = needle.toLower().toStdString();
        const std::string shape = shapeQuery(needle).toLower().toStdString();
        auto contains = [&](std::string hay) {
            std::transform(hay.begin(), hay.end(), hay.begin(),
                           [](unsigned char c) { return char(std::tolower(c)); });
            return hay.find(lower) != std::string::npos ||
                   (shape != lower && hay.find(shape) != std::string::npos);
        };
        for (NodeId n : g.topologicalOrder()) {
            const ir::Node &node = g.node(n);
            bool hit = contains(node.name) || contains(node.opType);
            for (size_t k = 0; !hit && k < node.outputs.size(); ++k) {
                if (!node.outputs[k].valid())
                    continue;
                const ir::Value &v = g.value(node.outputs[k]);
                hit = contains(v.name) || contains(shapeLabel(v.shape)) ||
                      contains(v.shape.toString());
            }
            if (hit)
                m_searchHits.push_back(n);
        }
    }
    applyHighlights();
    return m_searchHits;
}

void GraphScene::setOverview(bool on)
{
    if (on == m_overview || !m_edges) {
        m_overview = on;
        return;
    }
    m_overview = on;
    std::vector<const NodeItem *> boxes(m_boxes.begin(), m_boxes.end());
    for (QGraphicsItem *item : items())
        if (item != m_edges)
            item->setVisible(!on);
    m_edges->setOverview(on, std::move(boxes));
}

void GraphScene::setCurrentSearchHit(NodeId node)
{
    m_currentHit = node;
    applyHighlights();
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent *event)
{
    const QTransform t = views().isEmpty() ? QTransform() : views().front()->transform();
    for (QGraphicsItem *item :
         items(event->scenePos(), Qt::IntersectsItemShape, Qt::DescendingOrder, t)) {
        if (item->type() == NodeItem::Type) {
            auto *box = static_cast<NodeItem *>(item);
            if (box->isGroup()) {
                emit groupToggled(m_layout->items[size_t(box->layoutIndex())].ns);
                event->accept();
                return;
            }
        } else if (item->type() == GroupFrameItem::Type) {
            emit groupToggled(
                m_layout->items[size_t(static_cast<GroupFrameItem *>(item)->layoutIndex())].ns);
            event->accept();
            return;
        }
    }
    QGraphicsScene::mouseDoubleClickEvent(event);
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent *event)
{
    QGraphicsScene::mousePressEvent(event);
    if (event->button() != Qt::LeftButton || !m_edges || !m_layout)
        return;
    const QTransform t = views().isEmpty() ? QTransform() : views().front()->transform();
    for (QGraphicsItem *item :
         items(event->scenePos(), Qt::IntersectsItemShape, Qt::DescendingOrder, t))
        if (item->type() == NodeItem::Type || item->type() == GroupFrameItem::Type) {
            m_edges->setSelectedEdges({});
            return;
        }
    const double scale = t.m11() > 0 ? t.m11() : 1;
    const int e = m_edges->edgeAt(event->scenePos(), 5 / scale);
    if (e < 0) {
        m_edges->setSelectedEdges({});
        return;
    }
    // The clicked tensor is marked on every edge that carries it (one per consumer).
    const ValueId value = m_layout->edges[size_t(m_edges->edges()[size_t(e)].layoutEdge)].value;
    std::vector<int> same;
    for (size_t i = 0; i < m_edges->edges().size(); ++i)
        if (m_layout->edges[size_t(m_edges->edges()[i].layoutEdge)].value == value)
            same.push_back(int(i));
    m_edges->setSelectedEdges(std::move(same));
    emit valueClicked(value);
}

} // namespace remat::ui
