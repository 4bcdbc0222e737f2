#pragma once
// The scene of the graph explorer: builds items from the document's layout, colours them by the
// document's colour mode, highlights the selection's inputs and outputs and search hits.
//   GraphScene scene(&document);   // rebuilds itself on every LayoutChanged
//   scene.search("conv");  scene.nodeItemCount();  scene.itemShowing(nodeId);

#include "core/layout/graph_layout.h"
#include "ui/graph/graph_items.h"
#include "ui/model_document.h"

#include <QGraphicsScene>

#include <vector>

namespace remat::ui {

class GraphScene : public QGraphicsScene
{
    Q_OBJECT
public:
    explicit GraphScene(ModelDocument *document, QObject *parent = nullptr);
    ~GraphScene() override;

    /// Measures node and group boxes for the current model with the scene's fonts (GUI thread).
    static core::layout::GraphLayoutSizes measure(const core::ir::Graph &graph,
                                                  const core::layout::GraphLayouter &layouter);

    /// Nodes shown, counting a collapsed group as its members (the model's node count less the
    /// folded shape-arithmetic nodes, which have no box).
    int nodeItemCount() const;
    int boxCount() const { return int(m_boxes.size()); }
    int collapsedGroupCount() const;
    /// The box showing `node` (itself or its collapsed group; for a folded node, the box of the
    /// node it is folded into); null when none.
    NodeItem *itemShowing(core::NodeId node) const;
    GroupFrameItem *frameOf(core::NamespaceId ns) const;
    EdgeLayerItem *edgeLayer() const { return m_edges; }

    /// Nodes whose name, op type, or an output's shape contains `text` (case-insensitive), in
    /// topological order; also marks their boxes. Folded nodes are found too and mark the box
    /// they are folded into.
    std::vector<core::NodeId> search(const QString &text);
    /// Switches between painting every box as an item and painting them all in the edge layer
    /// (far zoomed out, for big graphs). The view calls it as its scale crosses a threshold.
    void setOverview(bool on);
    bool overview() const { return m_overview; }
    void setCurrentSearchHit(core::NodeId node);

signals:
    /// Double-click on a collapsed group (expand) or an expanded group's header (collapse).
    void groupToggled(core::NamespaceId ns);
    /// A tensor was clicked (an edge).
    void valueClicked(core::ValueId value);

protected:
    void mouseDoubleClickEvent(QGraphicsSceneMouseEvent *event) override;
    void mousePressEvent(QGraphicsSceneMouseEvent *event) override;

private:
    void onDocumentChanged(const DocumentChange &change);
    void rebuild();
    void clearItems();
    void recolour();
    void onSelectionChanged();
    void applyHighlights();
    QString subtitleOf(core::NodeId node) const;
    /// A collapsed group's tooltip and summary bar from the colour mode's breakdown.
    void describeGroup(NodeItem *box, core::NamespaceId ns,
                       const std::vector<core::NodeId> &members);

    ModelDocument *m_document;
    std::shared_ptr<const core::layout::GraphLayout> m_layout;
    std::vector<NodeItem *> m_boxes;           ///< visible boxes, any order
    std::vector<NodeItem *> m_boxOfLayoutItem; ///< per layout item (null for frames)
    std::vector<GroupFrameItem *> m_frameOfLayoutItem;
    EdgeLayerItem *m_edges = nullptr;
    std::vector<core::NodeId> m_searchHits;
    core::NodeId m_currentHit;
    bool m_syncingSelection = false;
    bool m_overview = false;
};

} // namespace remat::ui
