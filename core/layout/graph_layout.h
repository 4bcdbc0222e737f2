#pragma once
// Layout of an ir::Graph with collapsible namespace groups, composed from one layered layout per
// expanded group (Model Explorer style) and cached per group.
//   layout::GraphLayouter lay(graph, sizes);                  // sizes: boxes measured by the UI
//   Expected<layout::GraphLayout> l = lay.layout(layout::collapseAtDepth(*graph, 2));
//   for (const layout::LayoutItem &it : l->items) draw(it.kind, it.rect);
//
// Design. A namespace with at least two nodes in its subtree is a *group*; smaller ones are
// transparent (their node belongs to the enclosing group). Each group's interior is laid out on
// its own by layeredLayout(): its children are its own nodes plus its child groups, each child
// group drawn as one box (a collapsed group's box, or an expanded group's frame sized by that
// group's own interior layout). Values entering a group become port nodes pinned to the first rank,
// values leaving it port nodes pinned to the last, so an edge that crosses group borders is routed
// piecewise: inside the source's groups to their out-ports, across the lowest common group, then
// from the in-ports down to the consumer. The ports' own ranks are squeezed to one padding, so a
// frame has no empty rank-high band under its header or above its bottom. An interior layout
// depends only on the collapse state inside that group, so it is cached under that key: expanding
// or collapsing a group re-lays out that group and its ancestors only; its siblings and
// everything else come from the cache.
//
// Hidden nodes (folded shape arithmetic, see shape_folding.h) are left out entirely: no box, no
// edge to or from them, and they do not count towards a namespace becoming a group.

#include "core/ir/graph.h"
#include "core/layout/geometry.h"
#include "core/layout/layered_layout.h"
#include "core/util/ids.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

namespace remat::core::layout {

/// The collapsed groups (namespaces). Namespaces that are not groups are ignored.
using CollapseSet = std::set<NamespaceId>;

/// Box sizes, measured by whoever draws them (the UI knows its fonts).
struct GraphLayoutSizes
{
    std::vector<Size> node;           ///< indexed by NodeId
    std::vector<Size> collapsedGroup; ///< indexed by NamespaceId: the box of a collapsed group
    double groupHeader = 24;          ///< label band at the top of an expanded group's frame
    double groupPadding = 12;         ///< frame margin around an expanded group's interior
};

enum class ItemKind : unsigned char {
    Node,           ///< one ir node
    CollapsedGroup, ///< a group drawn as one box standing for all its nodes
    ExpandedGroup,  ///< the frame around an expanded group's interior (drawn behind it)
};

struct LayoutItem
{
    ItemKind kind = ItemKind::Node;
    NodeId node;     ///< Node items
    NamespaceId ns;  ///< group items: the group; node items: invalid
    int parent = -1; ///< index of the enclosing ExpandedGroup item; -1 at the top level
    int depth = 0;   ///< group nesting depth (0 at the top level)
    Rect rect;       ///< scene coordinates
};

struct LayoutEdge
{
    ValueId value;             ///< the tensor the edge carries
    int from = -1;             ///< visible item (Node or CollapsedGroup) that produces it
    int to = -1;               ///< visible item that consumes it
    std::vector<Point> points; ///< polyline from `from`'s bottom to `to`'s top
};

struct GraphLayout
{
    std::vector<LayoutItem> items;
    std::vector<LayoutEdge> edges;
    std::vector<int> itemOfNode; ///< per NodeId: the visible item showing it
    Rect bounds;
    int groupsLaidOut = 0; ///< interiors computed by this call (the rest came from the cache)
    int groupsReused = 0;
};

class GraphLayouter
{
public:
    /// `hidden` (per NodeId, may be empty) marks nodes not to draw.
    GraphLayouter(std::shared_ptr<const ir::Graph> graph, GraphLayoutSizes sizes,
                  LayeredOptions options = {}, std::vector<char> hidden = {});
    ~GraphLayouter();
    GraphLayouter(const GraphLayouter &) = delete;
    GraphLayouter &operator=(const GraphLayouter &) = delete;

    /// Lays out the graph with `collapsed` groups shown as single boxes. Thread-safe (one call at a
    /// time runs; the cache is shared). Errors: Cancelled when `stop` fires.
    Expected<GraphLayout> layout(const CollapseSet &collapsed, const StopToken &stop = {});

    const ir::Graph &graph() const { return *m_graph; }
    /// Replaces the box sizes (and empties the cache). Groups do not depend on sizes, so a UI can
    /// ask isGroup() / groupOfNode() first to build labels, then measure them.
    void setSizes(GraphLayoutSizes sizes);
    const GraphLayoutSizes &sizes() const { return m_sizes; }
    /// True when the namespace forms a group (at least two nodes in its subtree, not the root).
    bool isGroup(NamespaceId ns) const { return m_groupIndex[ns.index()] >= 0; }
    /// The innermost group containing the node; the root namespace when none.
    NamespaceId groupOfNode(NodeId node) const;
    /// Group nesting depth of a group (1 for a top-level group), 0 for the root.
    int groupDepth(NamespaceId ns) const;
    /// Number of ir nodes inside a namespace's subtree.
    int subtreeNodeCount(NamespaceId ns) const { return m_subtreeNodes[ns.index()]; }
    /// The group namespaces, parents before children.
    std::vector<NamespaceId> groups() const;
    /// True for a node given as hidden: it has no item (itemOfNode is -1) and no edges.
    bool isHidden(NodeId node) const { return m_hidden[node.index()] != 0; }
    int hiddenCount() const { return m_hiddenCount; }
    /// The drawn node a hidden node feeds: its first visible consumer in topological order,
    /// reached through hidden consumers; invalid for visible nodes and unused hidden ones.
    NodeId hostOf(NodeId node) const { return m_host[node.index()]; }

private:
    struct LocalEdge;
    struct GroupInfo;
    struct Interior;
    const Interior &interior(int group, const CollapseSet &collapsed, int &laidOut, int &reused,
                             const StopToken &stop, Status &status);
    std::vector<int32_t> cacheKey(int group, const CollapseSet &collapsed) const;
    int collapsedAncestorGroup(NodeId node, const CollapseSet &collapsed) const;

    std::shared_ptr<const ir::Graph> m_graph;
    GraphLayoutSizes m_sizes;
    LayeredOptions m_options;
    std::vector<int> m_groupIndex;   ///< per NamespaceId: index into m_groups, -1 if none
    std::vector<int> m_subtreeNodes; ///< per NamespaceId
    std::vector<GroupInfo> m_groups; ///< index 0 is the root
    std::vector<std::vector<int>> m_chainOfNode; ///< per NodeId: group indices, outermost first
    std::vector<char> m_hidden;                  ///< per NodeId
    std::vector<NodeId> m_host;                  ///< per NodeId: see hostOf()
    int m_hiddenCount = 0;
    std::mutex m_mutex;
    std::vector<std::shared_ptr<Interior>> m_cache; ///< per group
    std::vector<std::vector<int32_t>> m_cacheKeys;
};

/// The collapse state that shows groups down to `depth` levels: every group of group depth
/// `depth` is collapsed (depth 1: only top-level groups, as boxes). depth <= 0 collapses nothing.
CollapseSet collapseAtDepth(const GraphLayouter &layouter, int depth);

} // namespace remat::core::layout
