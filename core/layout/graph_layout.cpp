#include "core/layout/graph_layout.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace remat::core::layout {

struct GraphLayouter::LocalEdge
{
    int src = 0;
    int dst = 0;
};

/// Static structure of one group (independent of the collapse state).
struct GraphLayouter::GroupInfo
{
    NamespaceId ns;
    int parent = -1;
    int depth = 0;
    int tin = 0, tout = 0;                      ///< preorder interval over the group tree
    std::vector<NodeId> nodes;                  ///< local ids [0, nodes.size())
    std::vector<int> childGroups;               ///< local ids after the nodes
    std::vector<ValueId> inPorts, outPorts;     ///< local ids after the child groups
    std::map<int32_t, int> inPortOf, outPortOf; ///< value -> local id
    std::vector<LocalEdge> edges;
    std::map<std::tuple<int, int, int32_t>, int> edgeIndex; ///< (src, dst, value) -> edge
    std::vector<NodeId> subtreeNodes;

    int localCount() const
    {
        return int(nodes.size() + childGroups.size() + inPorts.size() + outPorts.size());
    }
    int addEdge(int src, int dst, ValueId v)
    {
        auto key = std::make_tuple(src, dst, v.value);
        auto it = edgeIndex.find(key);
        if (it != edgeIndex.end())
            return it->second;
        edges.push_back({src, dst});
        edgeIndex.emplace(key, int(edges.size()) - 1);
        return int(edges.size()) - 1;
    }
};

/// One group's interior, laid out with the collapse state below it.
struct GraphLayouter::Interior
{
    LayeredResult local;
    Size frame; ///< the expanded group's box in its parent (header and padding included)
};

namespace {
// Local ids are assigned while the edges are collected, before ports are known, so ports get
// provisional ids from this base and are renumbered once per group.
constexpr int kPortBase = 1 << 29;

/// A group's in-ports get a rank of their own at the top and its out-ports one at the bottom;
/// those ranks hold only zero-size boxes yet cost a full rank gap each, an empty band under the
/// frame's header and above its bottom. Pulls the boxes up to `gap` below the in-ports and the
/// out-ports up to `gap` below the last box (edge points move with the rank they belong to).
/// Returns true when the last rank held only ports (they now end the interior).
bool trimPortRanks(LayeredResult &r, const std::vector<Size> &sizes, double gap)
{
    if (r.rankCount < 2)
        return false;
    auto portsOnly = [&](int rank) {
        bool any = false;
        for (size_t v = 0; v < r.nodes.size(); ++v) {
            if (r.ranks[v] != rank)
                continue;
            if (sizes[v].width > 0 || sizes[v].height > 0)
                return false;
            any = true;
        }
        return any;
    };
    const int last = r.rankCount - 1;
    const bool top = portsOnly(0), bottom = portsOnly(last);
    constexpr double eps = 1e-9;
    if (top) {
        double firstBox = std::numeric_limits<double>::max();
        for (size_t v = 0; v < r.nodes.size(); ++v)
            if (r.ranks[v] > 0)
                firstBox = std::min(firstBox, r.nodes[v].y);
        for (const auto &pts : r.edges) // bends of long edges may sit higher than any box
            for (const Point &p : pts)
                if (p.y > eps)
                    firstBox = std::min(firstBox, p.y);
        const double cut = firstBox - gap;
        if (cut > eps && firstBox < std::numeric_limits<double>::max()) {
            // Everything below the port rank (at y = 0) moves up by `cut`.
            for (size_t v = 0; v < r.nodes.size(); ++v)
                if (r.ranks[v] > 0)
                    r.nodes[v].y -= cut;
            for (auto &pts : r.edges)
                for (Point &p : pts)
                    if (p.y > eps)
                        p.y -= cut;
            r.bounds.height -= cut;
        }
    }
    if (!bottom)
        return false;
    double portY = 0, lastBox = 0;
    for (size_t v = 0; v < r.nodes.size(); ++v) {
        if (r.ranks[v] == last)
            portY = r.nodes[v].y;
        else
            lastBox = std::max(lastBox, r.nodes[v].bottom());
    }
    for (const auto &pts : r.edges)
        for (const Point &p : pts)
            if (p.y < portY - eps)
                lastBox = std::max(lastBox, p.y);
    const double target = lastBox + gap;
    if (portY - target <= eps)
        return true;
    for (size_t v = 0; v < r.nodes.size(); ++v)
        if (r.ranks[v] == last)
            r.nodes[v].y = target;
    for (auto &pts : r.edges)
        for (Point &p : pts)
            if (p.y >= portY - eps)
                p.y = target;
    r.bounds.height = target;
    return true;
}
} // namespace

GraphLayouter::GraphLayouter(std::shared_ptr<const ir::Graph> graph, GraphLayoutSizes sizes,
                             LayeredOptions options, std::vector<char> hidden)
    : m_graph(std::move(graph)), m_sizes(std::move(sizes)), m_options(std::move(options)),
      m_hidden(std::move(hidden))
{
    const ir::Graph &g = *m_graph;
    m_hidden.resize(g.nodeCount(), 0);
    auto hiddenNode = [&](NodeId n) { return m_hidden[n.index()] != 0; };
    m_host.assign(g.nodeCount(), NodeId());
    {
        const auto &topo = g.topologicalOrder();
        for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
            const NodeId n = *it;
            if (!hiddenNode(n))
                continue;
            ++m_hiddenCount;
            NodeId best;
            for (ValueId v : g.node(n).outputs) {
                if (!v.valid())
                    continue;
                for (NodeId c : g.value(v).consumers) {
                    const NodeId h = hiddenNode(c) ? m_host[c.index()] : c;
                    if (h.valid() && (!best.valid() || g.topoPosition(h) < g.topoPosition(best)))
                        best = h;
                }
            }
            m_host[n.index()] = best;
        }
    }
    const size_t nsCount = g.namespaces().size();
    m_sizes.node.resize(g.nodeCount(), Size{80, 30});
    m_sizes.collapsedGroup.resize(nsCount, Size{120, 36});

    // Subtree node counts (children have larger ids than their parents).
    m_subtreeNodes.assign(nsCount, 0);
    for (size_t i = nsCount; i-- > 0;) {
        const ir::Namespace &ns = g.namespaces()[i];
        for (NodeId n : ns.nodes)
            m_subtreeNodes[i] += hiddenNode(n) ? 0 : 1;
        if (ns.parent.valid())
            m_subtreeNodes[ns.parent.index()] += m_subtreeNodes[i];
    }

    // Groups: the root plus every namespace with at least two nodes below it.
    m_groupIndex.assign(nsCount, -1);
    m_groups.push_back(GroupInfo{});
    m_groups[0].ns = g.rootNamespace();
    m_groupIndex[0] = 0;
    std::vector<int> enclosing(nsCount, 0); // nearest group at or above each namespace
    for (size_t i = 1; i < nsCount; ++i) {
        const ir::Namespace &ns = g.namespaces()[i];
        const int parentGroup = enclosing[ns.parent.index()];
        if (m_subtreeNodes[i] >= 2) {
            GroupInfo info;
            info.ns = ns.id;
            info.parent = parentGroup;
            info.depth = m_groups[parentGroup].depth + 1;
            m_groups.push_back(std::move(info));
            const int gi = int(m_groups.size()) - 1;
            m_groupIndex[i] = gi;
            m_groups[parentGroup].childGroups.push_back(gi);
            enclosing[i] = gi;
        } else {
            enclosing[i] = parentGroup;
        }
    }
    // Preorder intervals over the group tree.
    {
        int clock = 0;
        std::function<void(int)> visit = [&](int gi) {
            m_groups[gi].tin = clock++;
            for (int c : m_groups[gi].childGroups)
                visit(c);
            m_groups[gi].tout = clock;
        };
        visit(0);
    }
    // Home group of every node: its namespace's group, except for constant-like nodes (computed
    // from weights and constants only: Constant, shape arithmetic on them) which move down into
    // the deepest group holding all their consumers. Exporters often leave such nodes unnamed at
    // the top level; drawn there, each would pull an edge across the whole graph.
    std::vector<int> home(g.nodeCount(), 0);
    {
        std::vector<char> constLike(g.nodeCount(), 0);
        for (NodeId n : g.topologicalOrder()) {
            bool c = true;
            for (ValueId v : g.node(n).inputs) {
                if (!v.valid())
                    continue;
                const ir::Value &val = g.value(v);
                if (val.producer.valid() ? !constLike[val.producer.index()]
                                         : val.kind == ir::ValueKind::Input) {
                    c = false;
                    break;
                }
            }
            constLike[n.index()] = c;
            home[n.index()] = enclosing[g.node(n).ns.index()];
        }
        auto isAncestorOrSelf = [&](int a, int b) { // group a contains group b
            for (int x = b; x >= 0; x = m_groups[x].parent)
                if (x == a)
                    return true;
            return false;
        };
        auto lca = [&](int a, int b) {
            while (!isAncestorOrSelf(a, b))
                a = m_groups[a].parent;
            return a;
        };
        const auto &topo = g.topologicalOrder();
        for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
            const NodeId n = *it;
            if (!constLike[n.index()] || hiddenNode(n))
                continue;
            int target = -1;
            for (ValueId v : g.node(n).outputs) {
                if (!v.valid())
                    continue;
                for (NodeId c : g.value(v).consumers)
                    if (!hiddenNode(c))
                        target = target < 0 ? home[c.index()] : lca(target, home[c.index()]);
            }
            if (target >= 0 && target != home[n.index()] &&
                isAncestorOrSelf(home[n.index()], target))
                home[n.index()] = target;
        }
    }
    // Chains and direct node lists, in topological order so layouts follow the model's order.
    m_chainOfNode.assign(g.nodeCount(), {});
    std::vector<int> localOfNode(g.nodeCount(), 0);
    for (NodeId n : g.topologicalOrder()) {
        const int gi = home[n.index()];
        std::vector<int> chain;
        for (int c = gi; c >= 0; c = m_groups[c].parent)
            chain.push_back(c);
        std::reverse(chain.begin(), chain.end());
        if (hiddenNode(n)) { // keeps its chain so groupOfNode() answers; joins no group
            m_chainOfNode[n.index()] = std::move(chain);
            continue;
        }
        localOfNode[n.index()] = int(m_groups[gi].nodes.size());
        m_groups[gi].nodes.push_back(n);
        for (int c : chain)
            m_groups[c].subtreeNodes.push_back(n);
        m_chainOfNode[n.index()] = std::move(chain);
    }
    std::vector<int> localOfGroup(m_groups.size(), 0);
    for (GroupInfo &info : m_groups)
        for (size_t k = 0; k < info.childGroups.size(); ++k)
            localOfGroup[info.childGroups[k]] = int(info.nodes.size() + k);

    auto childLocal = [&](NodeId n, size_t level) {
        const auto &chain = m_chainOfNode[n.index()];
        return level + 1 < chain.size() ? localOfGroup[chain[level + 1]] : localOfNode[n.index()];
    };
    // Local edges of every group: each producer -> consumer pair lands in its lowest common group,
    // plus port edges in every group it leaves or enters.
    for (NodeId n : g.topologicalOrder()) {
        if (hiddenNode(n))
            continue;
        for (ValueId v : g.node(n).inputs) {
            if (!v.valid())
                continue;
            const NodeId p = g.value(v).producer;
            if (!p.valid() || p == n || hiddenNode(p))
                continue;
            const auto &cp = m_chainOfNode[p.index()];
            const auto &cn = m_chainOfNode[n.index()];
            size_t lca = 0;
            while (lca + 1 < cp.size() && lca + 1 < cn.size() && cp[lca + 1] == cn[lca + 1])
                ++lca;
            m_groups[cp[lca]].addEdge(childLocal(p, lca), childLocal(n, lca), v);
            for (size_t k = lca + 1; k < cp.size(); ++k) {
                GroupInfo &gr = m_groups[cp[k]];
                auto [it, fresh] =
                    gr.outPortOf.emplace(v.value, kPortBase + int(gr.outPorts.size()));
                if (fresh)
                    gr.outPorts.push_back(v);
                gr.addEdge(childLocal(p, k), it->second, v);
            }
            for (size_t k = lca + 1; k < cn.size(); ++k) {
                GroupInfo &gr = m_groups[cn[k]];
                auto [it, fresh] =
                    gr.inPortOf.emplace(v.value, -kPortBase - int(gr.inPorts.size()));
                if (fresh)
                    gr.inPorts.push_back(v);
                gr.addEdge(it->second, childLocal(n, k), v);
            }
        }
    }
    // Renumber provisional port ids: in-ports after the child groups, then out-ports.
    for (GroupInfo &gr : m_groups) {
        const int inBase = int(gr.nodes.size() + gr.childGroups.size());
        const int outBase = inBase + int(gr.inPorts.size());
        auto fix = [&](int id) {
            if (id >= kPortBase)
                return outBase + (id - kPortBase);
            if (id <= -kPortBase)
                return inBase + (-kPortBase - id);
            return id;
        };
        std::map<std::tuple<int, int, int32_t>, int> index;
        for (auto &[key, e] : gr.edgeIndex) {
            auto [s, d, v] = key;
            index.emplace(std::make_tuple(fix(s), fix(d), v), e);
        }
        gr.edgeIndex = std::move(index);
        for (LocalEdge &e : gr.edges) {
            e.src = fix(e.src);
            e.dst = fix(e.dst);
        }
        for (auto &[v, id] : gr.inPortOf)
            id = fix(id);
        for (auto &[v, id] : gr.outPortOf)
            id = fix(id);
    }
    m_cache.assign(m_groups.size(), nullptr);
    m_cacheKeys.assign(m_groups.size(), {});
}

GraphLayouter::~GraphLayouter() = default;

void GraphLayouter::setSizes(GraphLayoutSizes sizes)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_sizes = std::move(sizes);
    m_sizes.node.resize(m_graph->nodeCount(), Size{80, 30});
    m_sizes.collapsedGroup.resize(m_graph->namespaces().size(), Size{120, 36});
    m_cache.assign(m_groups.size(), nullptr);
    m_cacheKeys.assign(m_groups.size(), {});
}

NamespaceId GraphLayouter::groupOfNode(NodeId node) const
{
    return m_groups[m_chainOfNode[node.index()].back()].ns;
}

int GraphLayouter::groupDepth(NamespaceId ns) const
{
    const int gi = m_groupIndex[ns.index()];
    return gi >= 0 ? m_groups[gi].depth : 0;
}

std::vector<NamespaceId> GraphLayouter::groups() const
{
    std::vector<NamespaceId> out;
    for (size_t i = 1; i < m_groups.size(); ++i)
        out.push_back(m_groups[i].ns);
    return out;
}

std::vector<int32_t> GraphLayouter::cacheKey(int group, const CollapseSet &collapsed) const
{
    std::vector<int32_t> key;
    const GroupInfo &gr = m_groups[group];
    for (NamespaceId ns : collapsed) {
        if (!ns.valid() || ns.index() >= m_groupIndex.size())
            continue;
        const int gi = m_groupIndex[ns.index()];
        if (gi > 0 && m_groups[gi].tin > gr.tin && m_groups[gi].tin < gr.tout)
            key.push_back(gi);
    }
    return key;
}

const GraphLayouter::Interior &GraphLayouter::interior(int group, const CollapseSet &collapsed,
                                                       int &laidOut, int &reused,
                                                       const StopToken &stop, Status &status)
{
    std::vector<int32_t> key = cacheKey(group, collapsed);
    if (m_cache[group] && m_cacheKeys[group] == key) {
        ++reused;
        return *m_cache[group];
    }
    const GroupInfo &gr = m_groups[group];
    LayeredInput in;
    in.sizes.reserve(size_t(gr.localCount()));
    in.pins.reserve(size_t(gr.localCount()));
    for (NodeId n : gr.nodes) {
        in.sizes.push_back(m_sizes.node[n.index()]);
        in.pins.push_back(RankPin::Free);
    }
    for (int c : gr.childGroups) {
        const NamespaceId ns = m_groups[c].ns;
        if (collapsed.count(ns)) {
            in.sizes.push_back(m_sizes.collapsedGroup[ns.index()]);
        } else {
            const Interior &child = interior(c, collapsed, laidOut, reused, stop, status);
            in.sizes.push_back(child.frame);
        }
        in.pins.push_back(RankPin::Free);
    }
    for (size_t i = 0; i < gr.inPorts.size(); ++i) {
        in.sizes.push_back({0, 0});
        in.pins.push_back(RankPin::First);
    }
    for (size_t i = 0; i < gr.outPorts.size(); ++i) {
        in.sizes.push_back({0, 0});
        in.pins.push_back(RankPin::Last);
    }
    for (const LocalEdge &e : gr.edges)
        in.edges.push_back({e.src, e.dst});

    auto result = std::make_shared<Interior>();
    if (status.isOk()) {
        LayeredOptions opt = m_options;
        opt.stop = stop;
        Expected<LayeredResult> r = layeredLayout(in, opt);
        if (!r)
            status = r.status();
        else
            result->local = std::move(*r);
    }
    const double pad = m_sizes.groupPadding;
    const bool portsBelow = status.isOk() && trimPortRanks(result->local, in.sizes, pad);
    const Size label = group > 0 ? m_sizes.collapsedGroup[gr.ns.index()] : Size{};
    // Out-ports sit one padding below the last box already (see trimPortRanks).
    result->frame = {std::max(result->local.bounds.width + 2 * pad, label.width),
                     m_sizes.groupHeader + result->local.bounds.height + (portsBelow ? 0 : pad)};
    // Kept even on failure so the reference stays valid; a failed interior is never reused.
    m_cache[group] = result;
    m_cacheKeys[group] = status.isOk() ? std::move(key) : std::vector<int32_t>{-1};
    ++laidOut;
    return *result;
}

int GraphLayouter::collapsedAncestorGroup(NodeId node, const CollapseSet &collapsed) const
{
    for (int gi : m_chainOfNode[node.index()])
        if (gi > 0 && collapsed.count(m_groups[gi].ns))
            return gi;
    return -1;
}

Expected<GraphLayout> GraphLayouter::layout(const CollapseSet &collapsed, const StopToken &stop)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    const ir::Graph &g = *m_graph;
    GraphLayout out;
    Status status;
    // Hold every interior used in this call: a recursive call may replace a cache slot.
    std::vector<std::shared_ptr<Interior>> used(m_groups.size());
    used[0] = nullptr;
    interior(0, collapsed, out.groupsLaidOut, out.groupsReused, stop, status);
    REMAT_RETURN_IF_ERROR(status);
    for (size_t i = 0; i < m_groups.size(); ++i)
        used[i] = m_cache[i];

    // Compose: absolute boxes for every visible item, parents before children.
    out.itemOfNode.assign(g.nodeCount(), -1);
    std::vector<Point> origin(m_groups.size(), Point{});
    std::vector<int> itemOfGroup(m_groups.size(), -1);
    const double pad = m_sizes.groupPadding;
    std::function<void(int, Point, int, int)> place = [&](int gi, Point org, int parentItem,
                                                          int depth) {
        origin[gi] = org;
        const GroupInfo &gr = m_groups[gi];
        const LayeredResult &local = used[gi]->local;
        for (size_t k = 0; k < gr.nodes.size(); ++k) {
            LayoutItem item;
            item.kind = ItemKind::Node;
            item.node = gr.nodes[k];
            item.parent = parentItem;
            item.depth = depth;
            item.rect = local.nodes[k].translated(org.x, org.y);
            out.items.push_back(item);
            out.itemOfNode[gr.nodes[k].index()] = int(out.items.size()) - 1;
        }
        for (size_t k = 0; k < gr.childGroups.size(); ++k) {
            const int c = gr.childGroups[k];
            LayoutItem item;
            item.ns = m_groups[c].ns;
            item.parent = parentItem;
            item.depth = depth;
            item.rect = local.nodes[gr.nodes.size() + k].translated(org.x, org.y);
            const bool isCollapsed = collapsed.count(item.ns) > 0;
            item.kind = isCollapsed ? ItemKind::CollapsedGroup : ItemKind::ExpandedGroup;
            out.items.push_back(item);
            const int idx = int(out.items.size()) - 1;
            itemOfGroup[c] = idx;
            if (isCollapsed) {
                for (NodeId n : m_groups[c].subtreeNodes)
                    out.itemOfNode[n.index()] = idx;
            } else {
                place(c, Point{item.rect.x + pad, item.rect.y + m_sizes.groupHeader}, idx,
                      depth + 1);
            }
        }
    };
    place(0, Point{0, 0}, -1, 0);

    // Edges: one per (visible producer, visible consumer, value), routed piecewise through the
    // interiors of every group it leaves and enters.
    auto localRoute = [&](int gi, int src, int dst, ValueId v, std::vector<Point> &pts) {
        const GroupInfo &gr = m_groups[gi];
        auto it = gr.edgeIndex.find(std::make_tuple(src, dst, v.value));
        if (it == gr.edgeIndex.end() || !used[gi])
            return;
        for (const Point &p : used[gi]->local.edges[it->second])
            pts.push_back({p.x + origin[gi].x, p.y + origin[gi].y});
    };
    std::vector<int> localOfGroupInParent(m_groups.size(), 0);
    for (const GroupInfo &gr : m_groups)
        for (size_t k = 0; k < gr.childGroups.size(); ++k)
            localOfGroupInParent[gr.childGroups[k]] = int(gr.nodes.size() + k);
    std::vector<int> localOfNode(g.nodeCount(), 0);
    for (const GroupInfo &gr : m_groups)
        for (size_t k = 0; k < gr.nodes.size(); ++k)
            localOfNode[gr.nodes[k].index()] = int(k);
    auto childLocal = [&](NodeId n, size_t level) {
        const auto &chain = m_chainOfNode[n.index()];
        return level + 1 < chain.size() ? localOfGroupInParent[chain[level + 1]]
                                        : localOfNode[n.index()];
    };
    std::set<std::tuple<int, int, int32_t>> seen;
    for (NodeId n : g.topologicalOrder()) {
        for (ValueId v : g.node(n).inputs) {
            if (!v.valid())
                continue;
            const NodeId p = g.value(v).producer;
            if (!p.valid() || p == n || isHidden(p) || isHidden(n))
                continue;
            const int from = out.itemOfNode[p.index()], to = out.itemOfNode[n.index()];
            if (from == to || !seen.insert({from, to, v.value}).second)
                continue;
            const auto &cp = m_chainOfNode[p.index()];
            const auto &cn = m_chainOfNode[n.index()];
            size_t lca = 0;
            while (lca + 1 < cp.size() && lca + 1 < cn.size() && cp[lca + 1] == cn[lca + 1])
                ++lca;
            // deepest expanded group holding each visible end
            auto deepest = [&](NodeId x, const std::vector<int> &chain) {
                const int c = collapsedAncestorGroup(x, collapsed);
                if (c < 0)
                    return chain.size() - 1;
                return size_t(std::find(chain.begin(), chain.end(), c) - chain.begin()) - 1;
            };
            const size_t sp = deepest(p, cp), sn = deepest(n, cn);
            LayoutEdge edge;
            edge.value = v;
            edge.from = from;
            edge.to = to;
            for (size_t k = sp; k > lca; --k)
                localRoute(cp[k], childLocal(p, k), m_groups[cp[k]].outPortOf.at(v.value), v,
                           edge.points);
            localRoute(cp[lca], childLocal(p, lca), childLocal(n, lca), v, edge.points);
            for (size_t k = lca + 1; k <= sn; ++k)
                localRoute(cn[k], m_groups[cn[k]].inPortOf.at(v.value), childLocal(n, k), v,
                           edge.points);
            out.edges.push_back(std::move(edge));
        }
    }
    out.bounds = Rect{0, 0, used[0]->local.bounds.width, used[0]->local.bounds.height};
    return out;
}

CollapseSet collapseAtDepth(const GraphLayouter &layouter, int depth)
{
    CollapseSet set;
    if (depth <= 0)
        return set;
    for (NamespaceId ns : layouter.groups())
        if (layouter.groupDepth(ns) == depth)
            set.insert(ns);
    return set;
}

} // namespace remat::core::layout
