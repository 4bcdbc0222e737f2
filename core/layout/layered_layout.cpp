#include "core/layout/layered_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace remat::core::layout {
namespace {

constexpr int kNoNode = -1;

/// The proper layered graph: real nodes first, then dummy bends; every edge joins rank r to r + 1.
struct Layered
{
    int realCount = 0;
    std::vector<int> rank;
    std::vector<double> width, height;
    std::vector<std::vector<int>> up, down; // neighbours one rank above / below (deduplicated)
    std::vector<std::vector<int>> layers;   // node ids left to right
    std::vector<int> pos;                   // index in its layer
    std::vector<double> x;

    bool isDummy(int v) const { return v >= realCount; }
    int addNode(int r, double w, double h)
    {
        rank.push_back(r);
        width.push_back(w);
        height.push_back(h);
        up.emplace_back();
        down.emplace_back();
        return int(rank.size()) - 1;
    }
};

struct Fenwick
{
    std::vector<int64_t> tree;
    explicit Fenwick(size_t n) : tree(n + 1, 0) {}
    void add(size_t i)
    {
        for (++i; i < tree.size(); i += i & (~i + 1))
            ++tree[i];
    }
    int64_t prefix(size_t i) const // count of entries with index < i
    {
        int64_t s = 0;
        for (; i > 0; i -= i & (~i + 1))
            s += tree[i];
        return s;
    }
};

int64_t crossingsBetween(const Layered &g, int r)
{
    const auto &upper = g.layers[r];
    const auto &lower = g.layers[r + 1];
    if (upper.size() < 2 || lower.size() < 2)
        return 0;
    // Edges sorted by upper position then lower position; crossings are inversions of the lower
    // positions in that sequence.
    Fenwick fw(lower.size());
    int64_t crossings = 0;
    int64_t seen = 0;
    std::vector<int> lowerPos;
    for (int u : upper) {
        lowerPos.clear();
        for (int v : g.down[u])
            lowerPos.push_back(g.pos[v]);
        std::sort(lowerPos.begin(), lowerPos.end());
        for (int p : lowerPos)
            crossings += seen - fw.prefix(size_t(p) + 1);
        for (int p : lowerPos) {
            fw.add(size_t(p));
            ++seen;
        }
    }
    return crossings;
}

int64_t totalCrossings(const Layered &g)
{
    int64_t total = 0;
    for (int r = 0; r + 1 < int(g.layers.size()); ++r)
        total += crossingsBetween(g, r);
    return total;
}

void refreshPositions(Layered &g)
{
    for (const auto &layer : g.layers)
        for (size_t i = 0; i < layer.size(); ++i)
            g.pos[layer[i]] = int(i);
}

/// One barycenter pass over every layer, downwards (neighbours above) or upwards.
void sweep(Layered &g, bool downwards)
{
    const int rankCount = int(g.layers.size());
    std::vector<std::pair<double, int>> keyed;
    for (int step = 1; step < rankCount; ++step) {
        const int r = downwards ? step : rankCount - 1 - step;
        auto &layer = g.layers[r];
        keyed.clear();
        for (size_t i = 0; i < layer.size(); ++i) {
            const int v = layer[i];
            const auto &fixedSide = downwards ? g.up[v] : g.down[v];
            double key = double(i);
            if (!fixedSide.empty()) {
                double sum = 0;
                for (int w : fixedSide)
                    sum += g.pos[w];
                key = sum / double(fixedSide.size());
            } else {
                // A node with no neighbour on the fixed side (a constant feeding one consumer):
                // place it where its consumers' other inputs are.
                const auto &otherSide = downwards ? g.down[v] : g.up[v];
                double sum = 0;
                int count = 0;
                for (int s : otherSide) {
                    for (int w : (downwards ? g.up[s] : g.down[s])) {
                        if (w != v && g.rank[w] == g.rank[v]) {
                            // same layer: its position in this layer, mapped onto the fixed layer
                            const auto &wFixed = downwards ? g.up[w] : g.down[w];
                            for (int f : wFixed) {
                                sum += g.pos[f];
                                ++count;
                            }
                        }
                    }
                }
                if (count > 0)
                    key = sum / count;
                else if (!layer.empty()) {
                    const auto &fixedLayer = g.layers[downwards ? r - 1 : r + 1];
                    key = double(i) * double(fixedLayer.size()) / double(layer.size());
                }
            }
            keyed.push_back({key, v});
        }
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](const auto &a, const auto &b) { return a.first < b.first; });
        for (size_t i = 0; i < layer.size(); ++i) {
            layer[i] = keyed[i].second;
            g.pos[layer[i]] = int(i);
        }
    }
}

/// Exchanges neighbours in a layer while that lowers the crossings with both adjacent layers.
/// Quadratic in the layer's edges, so only run on small layers.
void transpose(Layered &g, size_t maxLayerSize)
{
    auto pairCrossings = [&](int a, int b) {
        // crossings among edges of a and b when a is left of b
        int64_t c = 0;
        for (const auto *side : {&g.up, &g.down}) {
            for (int pa : (*side)[a])
                for (int pb : (*side)[b])
                    if (g.pos[pa] > g.pos[pb])
                        ++c;
        }
        return c;
    };
    for (int pass = 0; pass < 2; ++pass) {
        bool improved = false;
        for (auto &layer : g.layers) {
            if (layer.size() > maxLayerSize)
                continue;
            for (size_t i = 0; i + 1 < layer.size(); ++i) {
                const int a = layer[i], b = layer[i + 1];
                if (pairCrossings(a, b) > pairCrossings(b, a)) {
                    std::swap(layer[i], layer[i + 1]);
                    g.pos[a] = int(i + 1);
                    g.pos[b] = int(i);
                    improved = true;
                }
            }
        }
        if (!improved)
            break;
    }
}

/// Places a layer's nodes as close as possible to their desired centres, in the given order and
/// with the given minimum separations: weighted isotonic regression by pooling adjacent
/// violators, exact and linear in the layer size.
void placeLayer(const std::vector<double> &desired, const std::vector<double> &weight,
                const std::vector<double> &offset, std::vector<double> &out)
{
    struct Block
    {
        double sumW, sumWT;
        size_t count;
        double mean() const { return sumWT / sumW; }
    };
    std::vector<Block> blocks;
    blocks.reserve(desired.size());
    for (size_t i = 0; i < desired.size(); ++i) {
        const double t = desired[i] - offset[i];
        blocks.push_back({weight[i], weight[i] * t, 1});
        while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
            Block top = blocks.back();
            blocks.pop_back();
            blocks.back().sumW += top.sumW;
            blocks.back().sumWT += top.sumWT;
            blocks.back().count += top.count;
        }
    }
    out.resize(desired.size());
    size_t i = 0;
    for (const Block &b : blocks) {
        const double y = b.mean();
        for (size_t k = 0; k < b.count; ++k, ++i)
            out[i] = y + offset[i];
    }
}

double separation(const Layered &g, int a, int b, const LayeredOptions &opt)
{
    const bool da = g.isDummy(a), db = g.isDummy(b);
    double gap = opt.nodeSpacing;
    if (da && db)
        gap = opt.edgeSpacing;
    else if (da || db)
        gap = (opt.nodeSpacing + opt.edgeSpacing) / 2;
    return (g.width[a] + g.width[b]) / 2 + gap;
}

void placeX(Layered &g, const LayeredOptions &opt)
{
    const size_t total = g.rank.size();
    g.x.assign(total, 0);
    std::vector<std::vector<double>> offsets(g.layers.size());
    for (size_t r = 0; r < g.layers.size(); ++r) {
        const auto &layer = g.layers[r];
        auto &off = offsets[r];
        off.assign(layer.size(), 0);
        for (size_t i = 1; i < layer.size(); ++i)
            off[i] = off[i - 1] + separation(g, layer[i - 1], layer[i], opt);
        const double centre = layer.empty() ? 0 : off.back() / 2;
        for (size_t i = 0; i < layer.size(); ++i)
            g.x[layer[i]] = off[i] - centre;
    }

    std::vector<double> desired, weight, placed;
    auto passOver = [&](int r, int mode) { // mode 0: above, 1: below, 2: both
        const auto &layer = g.layers[r];
        desired.assign(layer.size(), 0);
        weight.assign(layer.size(), 0);
        for (size_t i = 0; i < layer.size(); ++i) {
            const int v = layer[i];
            double sum = 0, wsum = 0;
            // A real node with real neighbours ignores the long edges passing by, so the main
            // chain stays straight and skip connections bend instead.
            bool realOnly = false;
            if (!g.isDummy(v)) {
                auto hasReal = [&](const std::vector<int> &nbrs) {
                    return std::any_of(nbrs.begin(), nbrs.end(),
                                       [&](int w) { return !g.isDummy(w); });
                };
                realOnly = ((mode == 0 || mode == 2) && hasReal(g.up[v])) ||
                           ((mode == 1 || mode == 2) && hasReal(g.down[v]));
            }
            auto take = [&](const std::vector<int> &nbrs) {
                for (int w : nbrs) {
                    if (realOnly && g.isDummy(w))
                        continue;
                    sum += g.x[w];
                    wsum += 1;
                }
            };
            if (mode == 0 || mode == 2)
                take(g.up[v]);
            if (mode == 1 || mode == 2)
                take(g.down[v]);
            if (wsum > 0) {
                desired[i] = sum / wsum;
                weight[i] = g.isDummy(v) ? 0.05 : 1.0; // boxes win over bends
            } else {
                desired[i] = g.x[v];
                weight[i] = 0.002;
            }
        }
        placeLayer(desired, weight, offsets[r], placed);
        for (size_t i = 0; i < layer.size(); ++i)
            g.x[layer[i]] = placed[i];
    };
    const int rankCount = int(g.layers.size());
    for (int s = 0; s < opt.placeSweeps; ++s) {
        const bool down = s % 2 == 0;
        for (int step = 0; step < rankCount; ++step) {
            const int r = down ? step : rankCount - 1 - step;
            passOver(r, down ? 0 : 1);
        }
    }
    for (int r = 0; r < rankCount; ++r)
        passOver(r, 2);
}

} // namespace

int64_t countCrossings(const std::vector<std::vector<int>> &layers,
                       const std::vector<std::pair<int, int>> &edges)
{
    Layered g;
    int maxId = -1;
    for (const auto &layer : layers)
        for (int v : layer)
            maxId = std::max(maxId, v);
    g.realCount = maxId + 1;
    g.pos.assign(size_t(maxId + 1), 0);
    g.rank.assign(size_t(maxId + 1), 0);
    g.down.assign(size_t(maxId + 1), {});
    g.layers = layers;
    for (size_t r = 0; r < layers.size(); ++r)
        for (int v : layers[r])
            g.rank[v] = int(r);
    refreshPositions(g);
    for (auto [a, b] : edges)
        if (a >= 0 && b >= 0 && a <= maxId && b <= maxId && g.rank[b] == g.rank[a] + 1)
            g.down[a].push_back(b);
    return totalCrossings(g);
}

Expected<LayeredResult> layeredLayout(const LayeredInput &input, const LayeredOptions &opt)
{
    const int n = int(input.sizes.size());
    if (!input.pins.empty() && input.pins.size() != input.sizes.size())
        return makeError(StatusCode::InvalidArgument, "layout: pins and sizes differ in length");
    for (auto [a, b] : input.edges)
        if (a < 0 || b < 0 || a >= n || b >= n)
            return makeError(StatusCode::InvalidArgument, "layout: edge (" + std::to_string(a) +
                                                              ", " + std::to_string(b) +
                                                              ") names a node that does not exist");
    auto pinOf = [&](int v) { return input.pins.empty() ? RankPin::Free : input.pins[v]; };
    auto cancelled = [&] { return opt.stop.stopRequested(); };

    // ---- 1. Orient: reverse back edges found by an iterative depth-first search.
    const size_t edgeCount = input.edges.size();
    std::vector<char> reversed(edgeCount, 0), selfLoop(edgeCount, 0);
    {
        std::vector<std::vector<int>> outEdges(static_cast<size_t>(n));
        for (size_t e = 0; e < edgeCount; ++e) {
            if (input.edges[e].first == input.edges[e].second)
                selfLoop[e] = 1;
            else
                outEdges[input.edges[e].first].push_back(int(e));
        }
        std::vector<char> state(static_cast<size_t>(n), 0); // 0 new, 1 on stack, 2 done
        std::vector<std::pair<int, size_t>> stack;
        for (int root = 0; root < n; ++root) {
            if (state[root])
                continue;
            stack.push_back({root, 0});
            state[root] = 1;
            while (!stack.empty()) {
                auto &[v, next] = stack.back();
                if (next < outEdges[v].size()) {
                    const int e = outEdges[v][next++];
                    const int w = input.edges[e].second;
                    if (state[w] == 1)
                        reversed[e] = 1;
                    else if (state[w] == 0) {
                        state[w] = 1;
                        stack.push_back({w, 0});
                    }
                } else {
                    state[v] = 2;
                    stack.pop_back();
                }
            }
        }
    }
    auto oriented = [&](size_t e) {
        auto [a, b] = input.edges[e];
        return reversed[e] ? std::pair<int, int>{b, a} : std::pair<int, int>{a, b};
    };

    // ---- 2. Rank: longest path from the sources, then nodes with more consumers than producers
    // (weights, constants, shape arithmetic) move down next to their consumers.
    std::vector<std::vector<int>> preds(static_cast<size_t>(n)), succs(static_cast<size_t>(n));
    for (size_t e = 0; e < edgeCount; ++e) {
        if (selfLoop[e])
            continue;
        auto [a, b] = oriented(e);
        succs[a].push_back(b);
        preds[b].push_back(a);
    }
    for (int v = 0; v < n; ++v) {
        for (auto *list : {&preds[v], &succs[v]}) {
            std::sort(list->begin(), list->end());
            list->erase(std::unique(list->begin(), list->end()), list->end());
        }
    }
    std::vector<int> topo;
    topo.reserve(static_cast<size_t>(n));
    {
        std::vector<int> indeg(static_cast<size_t>(n));
        for (int v = 0; v < n; ++v)
            indeg[v] = int(preds[v].size());
        for (int v = 0; v < n; ++v)
            if (indeg[v] == 0)
                topo.push_back(v);
        for (size_t i = 0; i < topo.size(); ++i)
            for (int s : succs[topo[i]])
                if (--indeg[s] == 0)
                    topo.push_back(s);
        if (int(topo.size()) != n)
            return makeError(StatusCode::Internal, "layout: cycle left after reversing back edges");
    }
    std::vector<int> rank(static_cast<size_t>(n), 0);
    int maxFreeRank = 0;
    for (int v : topo) {
        if (pinOf(v) == RankPin::Last)
            continue;
        for (int p : preds[v])
            if (pinOf(p) != RankPin::Last)
                rank[v] = std::max(rank[v], rank[p] + 1);
        if (pinOf(v) == RankPin::First && preds[v].empty())
            rank[v] = 0;
        maxFreeRank = std::max(maxFreeRank, rank[v]);
    }
    bool anyLast = false;
    for (int v = 0; v < n; ++v)
        if (pinOf(v) == RankPin::Last) {
            rank[v] = maxFreeRank + 1;
            anyLast = true;
        }
    (void)anyLast;
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
        const int v = *it;
        if (pinOf(v) != RankPin::Free || succs[v].empty())
            continue;
        if (!preds[v].empty() && succs[v].size() <= preds[v].size())
            continue;
        int lowest = std::numeric_limits<int>::max();
        for (int s : succs[v])
            lowest = std::min(lowest, rank[s]);
        rank[v] = std::max(rank[v], lowest - 1);
    }
    if (cancelled())
        return makeError(StatusCode::Cancelled, "layout cancelled");

    // ---- 3. Proper layering: dummy bends for edges spanning several ranks.
    Layered g;
    g.realCount = n;
    for (int v = 0; v < n; ++v)
        g.addNode(rank[v], input.sizes[v].width, input.sizes[v].height);
    std::vector<std::vector<int>> chainOf(edgeCount); // dummies each edge passes, source to target
    auto link = [&](int a, int b) {
        g.down[a].push_back(b);
        g.up[b].push_back(a);
    };
    {
        std::vector<std::vector<int>> outOriented(static_cast<size_t>(n));
        for (size_t e = 0; e < edgeCount; ++e)
            if (!selfLoop[e])
                outOriented[oriented(e).first].push_back(int(e));
        std::vector<int> chain;
        for (int u = 0; u < n; ++u) {
            chain.clear();
            for (int e : outOriented[u]) {
                const int v = oriented(size_t(e)).second;
                const int span = rank[v] - rank[u];
                if (span <= 1) {
                    link(u, v);
                    continue;
                }
                std::vector<int> own;
                std::vector<int> &path = opt.bundleEdges ? chain : own;
                while (int(path.size()) < span - 1) {
                    const int d = g.addNode(rank[u] + int(path.size()) + 1, 0, 0);
                    link(path.empty() ? u : path.back(), d);
                    path.push_back(d);
                }
                chainOf[e].assign(path.begin(), path.begin() + (span - 1));
                link(path[size_t(span - 2)], v);
            }
        }
    }
    const size_t total = g.rank.size();
    for (size_t v = 0; v < total; ++v) {
        for (auto *list : {&g.up[v], &g.down[v]}) {
            std::sort(list->begin(), list->end());
            list->erase(std::unique(list->begin(), list->end()), list->end());
        }
    }
    int rankCount = 0;
    for (int r : g.rank)
        rankCount = std::max(rankCount, r + 1);
    if (total == 0)
        rankCount = 0;

    // ---- 4. Order: start from the input order (dummies after their source), barycenter sweeps,
    // keep the order with the fewest crossings, then a cheap transposition pass.
    g.layers.assign(size_t(rankCount), {});
    for (int v = 0; v < int(total); ++v)
        g.layers[g.rank[v]].push_back(v);
    g.pos.assign(total, 0);
    refreshPositions(g);
    if (cancelled())
        return makeError(StatusCode::Cancelled, "layout cancelled");
    sweep(g, true); // the first downward sweep builds an order from rank 0's input order
    auto bestLayers = g.layers;
    int64_t bestCrossings = totalCrossings(g);
    for (int s = 0; s < opt.orderSweeps && bestCrossings > 0; ++s) {
        if (cancelled())
            return makeError(StatusCode::Cancelled, "layout cancelled");
        sweep(g, s % 2 == 1);
        const int64_t c = totalCrossings(g);
        if (c < bestCrossings) {
            bestCrossings = c;
            bestLayers = g.layers;
        }
    }
    g.layers = std::move(bestLayers);
    refreshPositions(g);
    if (bestCrossings > 0 && total < 20000) {
        transpose(g, 64);
        bestCrossings = totalCrossings(g);
    }

    // ---- 5. Place: x by weighted isotonic regression per layer, y by rank.
    if (cancelled())
        return makeError(StatusCode::Cancelled, "layout cancelled");
    placeX(g, opt);
    double minX = std::numeric_limits<double>::max();
    for (size_t v = 0; v < total; ++v)
        minX = std::min(minX, g.x[v] - g.width[v] / 2);
    if (total == 0)
        minX = 0;
    std::vector<double> rankTop(size_t(rankCount), 0), rankHeight(size_t(rankCount), 0);
    for (size_t v = 0; v < total; ++v)
        rankHeight[g.rank[v]] = std::max(rankHeight[g.rank[v]], g.height[v]);
    for (int r = 1; r < rankCount; ++r)
        rankTop[r] = rankTop[r - 1] + rankHeight[r - 1] + opt.rankSpacing;

    LayeredResult result;
    result.rankCount = rankCount;
    result.dummyCount = total - size_t(n);
    result.crossings = bestCrossings;
    result.ranks = rank;
    result.nodes.resize(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v) {
        const int r = g.rank[v];
        result.nodes[v] =
            Rect{g.x[v] - g.width[v] / 2 - minX, rankTop[r] + (rankHeight[r] - g.height[v]) / 2,
                 g.width[v], g.height[v]};
    }

    // ---- 6. Route: polylines through the bends; several edges meeting a box get spread ports.
    auto dummyX = [&](int d) { return g.x[d] - minX; };
    result.edges.resize(edgeCount);
    for (size_t e = 0; e < edgeCount; ++e) {
        if (selfLoop[e])
            continue;
        auto [a, b] = oriented(e);
        auto &pts = result.edges[e];
        const Rect &ra = result.nodes[a], &rb = result.nodes[b];
        pts.push_back({ra.center().x, ra.bottom()});
        for (int d : chainOf[e]) {
            const int r = g.rank[d];
            pts.push_back({dummyX(d), rankTop[r]});
            if (rankHeight[r] > 0)
                pts.push_back({dummyX(d), rankTop[r] + rankHeight[r]});
        }
        pts.push_back({rb.center().x, rb.y});
    }
    // Ports: a box's incoming edges are spread along its top by where they come from; outgoing
    // edges along its bottom by where they go (bundled edges share one port).
    {
        std::vector<std::vector<int>> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
        for (size_t e = 0; e < edgeCount; ++e) {
            if (selfLoop[e])
                continue;
            auto [a, b] = oriented(e);
            in[b].push_back(int(e));
            out[a].push_back(int(e));
        }
        auto spread = [&](int v, const std::vector<int> &edges, bool incoming) {
            if (edges.size() < 2)
                return;
            // key: x of the neighbouring point; edges with the same key share a port
            std::vector<std::pair<double, int>> keyed;
            for (int e : edges) {
                const auto &pts = result.edges[e];
                keyed.push_back({incoming ? pts[pts.size() - 2].x : pts[1].x, e});
            }
            std::stable_sort(keyed.begin(), keyed.end(),
                             [](const auto &p, const auto &q) { return p.first < q.first; });
            std::vector<double> distinct;
            for (auto &k : keyed)
                if (distinct.empty() || std::abs(distinct.back() - k.first) > 1e-6)
                    distinct.push_back(k.first);
            if (distinct.size() < 2)
                return;
            const double w = result.nodes[v].width;
            const double step = std::min(12.0, w * 0.7 / double(distinct.size() - 1));
            const double cx = result.nodes[v].center().x;
            size_t port = 0;
            for (size_t i = 0; i < keyed.size(); ++i) {
                if (i > 0 && std::abs(keyed[i].first - keyed[i - 1].first) > 1e-6)
                    ++port;
                auto &pts = result.edges[keyed[i].second];
                const double px = cx + (double(port) - double(distinct.size() - 1) / 2) * step;
                (incoming ? pts.back() : pts.front()).x = px;
            }
        };
        for (int v = 0; v < n; ++v) {
            spread(v, in[v], true);
            spread(v, out[v], false);
        }
    }
    for (size_t e = 0; e < edgeCount; ++e)
        if (reversed[e])
            std::reverse(result.edges[e].begin(), result.edges[e].end());

    double w = 0, h = 0;
    for (const Rect &r : result.nodes) {
        w = std::max(w, r.right());
        h = std::max(h, r.bottom());
    }
    for (const auto &pts : result.edges)
        for (const Point &p : pts) {
            w = std::max(w, p.x);
            h = std::max(h, p.y);
        }
    result.bounds = Rect{0, 0, w, h};
    return result;
}

} // namespace remat::core::layout
