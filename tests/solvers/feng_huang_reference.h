#pragma once
// A plain, test-only reference of Feng & Huang's search (CVPR 2021), written step by step from
// ../shared/research/solvers-optimal.md section 1.2 (the authors' solver.py as described there),
// independently of core/solvers/feng_huang.cpp: explicit vertex sets, ancestor / descendant
// traversals per candidate, literal splitting-vertex and largest-independent-segment tests,
// every max term evaluated, Dijkstra on each accessibility graph. Quadratic to quartic; only for
// small graphs and a few corpus models.
//   FengHuangReference ref(graph);          // core::solvers::FengHuangGraph
//   RefOutcome o = ref.solve();             // o.status == RefStatus::Solved: o.best, o.gcs

#include "core/solvers/feng_huang.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <utility>
#include <vector>

namespace remat::tests {

enum class RefStatus {
    Solved,
    CoverFailed, ///< "Something wrong with Complicate IS": the authors' code raises ValueError
    NoMaxTerms,  ///< empty candidate set: the authors' code crashes (best_run_graph is None)
};

struct RefOutcome
{
    RefStatus status = RefStatus::Solved;
    double best = 0; ///< sum of GC costs (source and sink excluded) + m
    double bestM = 0;
    std::set<int> gcs; ///< the run graph's vertices at the best m (source and sink included)
    size_t maxTerms = 0;
    size_t complicateLevels = 0;
};

class FengHuangReference
{
public:
    explicit FengHuangReference(const core::solvers::FengHuangGraph &g) : m_g(g) {}

    RefOutcome solve()
    {
        RefOutcome out;
        Sub root;
        root.s = m_g.source;
        root.t = m_g.sink;
        root.in.assign(m_g.cost.size(), 1);
        for (size_t e = 0; e < m_g.edges.size(); ++e)
            root.edges.push_back(static_cast<int>(e));
        Level tree;
        if (!buildDivisionTree(root, false, &tree)) {
            out.status = RefStatus::CoverFailed;
            return out;
        }
        out.complicateLevels = m_complicate;
        std::set<double> terms;
        getMaxTerms(tree, &terms);
        terms.erase(0.0);
        out.maxTerms = terms.size();
        if (terms.empty()) {
            out.status = RefStatus::NoMaxTerms;
            return out;
        }
        double best = std::numeric_limits<double>::infinity();
        for (auto it = terms.rbegin(); it != terms.rend(); ++it) { // descending, no pruning
            const double m = *it;
            std::set<int> gcs;
            solveWithMax(tree, m, &gcs);
            gcs.insert(m_g.source);
            gcs.insert(m_g.sink);
            double cost = 0;
            for (int v : gcs)
                if (v != m_g.source && v != m_g.sink)
                    cost += m_g.cost[v];
            if (cost + m < best) {
                best = cost + m;
                out.bestM = m;
                out.gcs = gcs;
            }
        }
        out.best = best;
        return out;
    }

private:
    /// A sub-graph H of G with terminals (s, t): a vertex mask and its edges.
    struct Sub
    {
        std::vector<char> in;
        std::vector<int> edges;
        int s = -1, t = -1;
    };
    enum class Type { Leaf, Linear, Branch, Complicate };
    struct Level
    {
        Type type = Type::Leaf;
        int s = -1, t = -1;
        double cost = 0;
        std::vector<int> chain;     ///< Linear: u0 .. uk
        std::vector<int> junctions; ///< Complicate: IS end points other than s and t
        std::vector<Level> children;
    };

    size_t vertexCount(const Sub &h) const
    {
        return static_cast<size_t>(std::count(h.in.begin(), h.in.end(), 1));
    }

    /// H's vertices in a topological order (Kahn, smallest id first).
    std::vector<int> topo(const Sub &h) const
    {
        const size_t n = m_g.cost.size();
        std::vector<int> indeg(n, 0);
        std::vector<std::vector<int>> succ(n);
        for (int e : h.edges) {
            indeg[m_g.edges[e].second] += 1;
            succ[m_g.edges[e].first].push_back(m_g.edges[e].second);
        }
        std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
        for (size_t v = 0; v < n; ++v)
            if (h.in[v] && indeg[v] == 0)
                ready.push(static_cast<int>(v));
        std::vector<int> order;
        while (!ready.empty()) {
            const int v = ready.top();
            ready.pop();
            order.push_back(v);
            for (int w : succ[v])
                if (--indeg[w] == 0)
                    ready.push(w);
        }
        return order;
    }

    /// Ancestors (forward = false) or descendants (forward = true) of v inside H, v excluded.
    std::vector<char> reach(const Sub &h, int v, bool forward) const
    {
        std::vector<char> r(m_g.cost.size(), 0);
        std::vector<int> stack{v};
        while (!stack.empty()) {
            const int x = stack.back();
            stack.pop_back();
            for (int e : h.edges) {
                const int a = m_g.edges[e].first, b = m_g.edges[e].second;
                const int from = forward ? a : b, to = forward ? b : a;
                if (from == x && !r[to]) {
                    r[to] = 1;
                    stack.push_back(to);
                }
            }
        }
        return r;
    }

    /// H[X]: the vertices of X and the edges of H with both ends in X.
    Sub induced(const Sub &h, const std::vector<char> &x, int s, int t) const
    {
        Sub r;
        r.s = s;
        r.t = t;
        r.in.assign(m_g.cost.size(), 0);
        for (size_t v = 0; v < x.size(); ++v)
            r.in[v] = x[v] && h.in[v];
        for (int e : h.edges)
            if (r.in[m_g.edges[e].first] && r.in[m_g.edges[e].second])
                r.edges.push_back(e);
        return r;
    }

    double interiorCost(const Sub &h) const
    {
        double c = 0;
        for (size_t v = 0; v < h.in.size(); ++v)
            if (h.in[v] && int(v) != h.s && int(v) != h.t)
                c += m_g.cost[v];
        return c;
    }

    /// The first splitting vertex of H in topological order, or -1.
    int firstSplittingVertex(const Sub &h) const
    {
        for (int v : topo(h)) {
            if (v == h.s || v == h.t)
                continue;
            std::vector<char> a = reach(h, v, false), d = reach(h, v, true);
            a[v] = 1;
            d[v] = 1;
            const Sub ha = induced(h, a, h.s, v), hd = induced(h, d, v, h.t);
            std::vector<int> count(m_g.edges.size(), 0);
            for (int e : ha.edges)
                count[e] += 1;
            for (int e : hd.edges)
                count[e] += 1;
            bool splits = true;
            for (int e : h.edges)
                splits = splits && count[e] == 1; // covered, and by one side only
            if (splits)
                return v;
        }
        return -1;
    }

    /// Linear division: pieces (s, u1), (u1, u2), ..., (uk-1, t); one piece when H has no
    /// splitting vertex.
    std::vector<Sub> linearDivision(const Sub &h) const
    {
        std::vector<Sub> pieces;
        Sub rest = h;
        for (;;) {
            const int v = firstSplittingVertex(rest);
            if (v < 0)
                break;
            std::vector<char> a = reach(rest, v, false), d = reach(rest, v, true);
            a[v] = 1;
            d[v] = 1;
            pieces.push_back(induced(rest, a, rest.s, v));
            rest = induced(rest, d, v, rest.t);
        }
        pieces.push_back(std::move(rest));
        return pieces;
    }

    /// Branch division: all direct s->t edges as one piece, then one piece per weakly connected
    /// component of H - {s, t}. Empty when H is one component without a direct edge.
    std::vector<Sub> branchDivision(const Sub &h) const
    {
        const size_t n = m_g.cost.size();
        std::vector<int> direct, rest;
        for (int e : h.edges) {
            if (m_g.edges[e].first == h.s && m_g.edges[e].second == h.t)
                direct.push_back(e);
            else
                rest.push_back(e);
        }
        std::vector<int> comp(n, -1);
        int comps = 0;
        for (size_t v0 = 0; v0 < n; ++v0) {
            if (!h.in[v0] || int(v0) == h.s || int(v0) == h.t || comp[v0] >= 0)
                continue;
            std::vector<int> stack{int(v0)};
            comp[v0] = comps;
            while (!stack.empty()) {
                const int x = stack.back();
                stack.pop_back();
                for (int e : rest) {
                    const int a = m_g.edges[e].first, b = m_g.edges[e].second;
                    const int other = a == x ? b : (b == x ? a : -1);
                    if (other < 0 || other == h.s || other == h.t || comp[other] >= 0)
                        continue;
                    comp[other] = comps;
                    stack.push_back(other);
                }
            }
            ++comps;
        }
        std::vector<Sub> pieces;
        if (direct.empty() && comps < 2)
            return pieces; // complicate
        if (!direct.empty()) {
            Sub d;
            d.s = h.s;
            d.t = h.t;
            d.in.assign(n, 0);
            d.in[h.s] = d.in[h.t] = 1;
            d.edges = direct;
            pieces.push_back(std::move(d));
        }
        for (int c = 0; c < comps; ++c) {
            std::vector<char> x(n, 0);
            for (size_t v = 0; v < n; ++v)
                x[v] = comp[v] == c;
            x[h.s] = x[h.t] = 1;
            Sub p = induced(h, x, h.s, h.t);
            std::vector<int> kept;
            for (int e : p.edges)
                if (!(m_g.edges[e].first == h.s && m_g.edges[e].second == h.t))
                    kept.push_back(e);
            p.edges = std::move(kept);
            pieces.push_back(std::move(p));
        }
        return pieces;
    }

    struct IndependentSegment
    {
        int a, b;
        Sub graph;
    };

    bool weaklyConnected(const Sub &h) const
    {
        std::vector<int> vs;
        for (size_t v = 0; v < h.in.size(); ++v)
            if (h.in[v])
                vs.push_back(int(v));
        if (vs.empty())
            return false;
        std::vector<char> seen(h.in.size(), 0);
        std::vector<int> stack{vs.front()};
        seen[vs.front()] = 1;
        size_t count = 1;
        while (!stack.empty()) {
            const int x = stack.back();
            stack.pop_back();
            for (int e : h.edges) {
                const int a = m_g.edges[e].first, b = m_g.edges[e].second;
                const int other = a == x ? b : (b == x ? a : -1);
                if (other >= 0 && !seen[other]) {
                    seen[other] = 1;
                    ++count;
                    stack.push_back(other);
                }
            }
        }
        return count == vs.size();
    }

    /// largestIS(a, b) as described; false when nothing is kept.
    bool largestIS(const Sub &h, int a, int b, const std::vector<std::vector<char>> &anc,
                   const std::vector<std::vector<char>> &desc, IndependentSegment *out) const
    {
        const size_t n = m_g.cost.size();
        std::vector<char> inN(n, 0);
        for (size_t v = 0; v < n; ++v)
            inN[v] = h.in[v] && desc[a][v] && anc[b][v];
        inN[a] = inN[b] = 1;
        auto interior = [&](int v) { return inN[v] && v != a && v != b; };
        std::vector<char> rm(n, 0);
        for (int e : h.edges) {
            const int x = m_g.edges[e].first, y = m_g.edges[e].second;
            if (interior(x) && !inN[y])
                rm[x] = 1;
            if (interior(y) && !inN[x])
                rm[y] = 1;
        }
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t u = 0; u < n; ++u) {
                if (!interior(int(u)) || rm[u])
                    continue;
                bool add = false;
                for (size_t r = 0; r < n && !add; ++r)
                    if (rm[r])
                        add = anc[r][u] || desc[r][u];
                for (int e : h.edges) {
                    const int x = m_g.edges[e].first, y = m_g.edges[e].second;
                    if ((x == int(u) && rm[y]) || (y == int(u) && rm[x]))
                        add = true;
                }
                if (add) {
                    rm[u] = 1;
                    changed = true;
                }
            }
        }
        std::vector<char> keep(n, 0);
        for (size_t v = 0; v < n; ++v)
            keep[v] = inN[v] && !rm[v];
        Sub g = induced(h, keep, a, b);
        if (g.edges.empty() || !weaklyConnected(g))
            return false;
        *out = {a, b, std::move(g)};
        return true;
    }

    /// Complicate division; false when the independent segments do not cover H.
    bool complicateDivision(const Sub &h, std::vector<IndependentSegment> *taken) const
    {
        const size_t n = m_g.cost.size();
        std::vector<int> degree(n, 0);
        for (int e : h.edges) {
            degree[m_g.edges[e].first] += 1;
            degree[m_g.edges[e].second] += 1;
        }
        std::vector<std::vector<char>> anc(n), desc(n);
        std::vector<int> cands;
        for (int v : topo(h)) {
            anc[v] = reach(h, v, false);
            desc[v] = reach(h, v, true);
            if (v == h.s || v == h.t || degree[v] > 2)
                cands.push_back(v);
        }
        std::vector<IndependentSegment> all;
        for (size_t i = 0; i < cands.size(); ++i)
            for (size_t j = i + 1; j < cands.size(); ++j) {
                if (cands[i] == h.s && cands[j] == h.t)
                    continue;
                IndependentSegment is;
                if (largestIS(h, cands[i], cands[j], anc, desc, &is))
                    all.push_back(std::move(is));
            }
        std::stable_sort(all.begin(), all.end(), [](const auto &x, const auto &y) {
            return x.graph.edges.size() > y.graph.edges.size();
        });
        std::vector<char> used(m_g.edges.size(), 0);
        for (IndependentSegment &is : all) {
            bool disjoint = true;
            for (int e : is.graph.edges)
                disjoint = disjoint && !used[e];
            if (!disjoint)
                continue;
            for (int e : is.graph.edges)
                used[e] = 1;
            taken->push_back(std::move(is));
        }
        for (int e : h.edges)
            if (!used[e])
                return false;
        return true;
    }

    bool buildDivisionTree(const Sub &h, bool parentLinear, Level *level)
    {
        level->s = h.s;
        level->t = h.t;
        if (vertexCount(h) == 2) {
            level->type = Type::Leaf;
            level->cost = 0;
            return true;
        }
        if (!parentLinear) {
            std::vector<Sub> pieces = linearDivision(h);
            if (pieces.size() > 1) {
                level->type = Type::Linear;
                level->chain.push_back(h.s);
                for (const Sub &p : pieces) {
                    level->chain.push_back(p.t);
                    Level child;
                    if (!buildDivisionTree(p, true, &child))
                        return false;
                    level->cost += child.cost;
                    level->children.push_back(std::move(child));
                }
                for (size_t i = 1; i + 1 < level->chain.size(); ++i)
                    level->cost += m_g.cost[level->chain[i]];
                return true;
            }
        }
        std::vector<Sub> branches = branchDivision(h);
        if (!branches.empty()) {
            level->type = Type::Branch;
            for (const Sub &p : branches) {
                Level child;
                if (!buildDivisionTree(p, false, &child))
                    return false;
                level->cost += child.cost;
                level->children.push_back(std::move(child));
            }
            return true;
        }
        level->type = Type::Complicate;
        ++m_complicate;
        std::vector<IndependentSegment> segments;
        if (!complicateDivision(h, &segments))
            return false;
        std::set<int> junctions;
        for (const IndependentSegment &is : segments) {
            for (int v : {is.a, is.b})
                if (v != h.s && v != h.t)
                    junctions.insert(v);
            Level child;
            if (!buildDivisionTree(is.graph, false, &child))
                return false;
            level->cost += child.cost;
            level->children.push_back(std::move(child));
        }
        level->junctions.assign(junctions.begin(), junctions.end());
        for (int v : level->junctions)
            level->cost += m_g.cost[v];
        return true;
    }

    void getMaxTerms(const Level &level, std::set<double> *terms) const
    {
        if (level.type == Type::Linear) {
            const size_t k = level.chain.size() - 1;
            std::vector<double> p(k + 1, 0);
            for (size_t j = 0; j <= k; ++j) {
                for (size_t i = 0; i <= j; ++i)
                    p[j] += m_g.cost[level.chain[i]];
                for (size_t i = 0; i < j; ++i)
                    p[j] += level.children[i].cost;
            }
            for (size_t j = 0; j < k; ++j)
                for (size_t l = j + 1; l <= k; ++l)
                    terms->insert(p[l] - p[j] - m_g.cost[level.chain[l]]);
        }
        for (const Level &c : level.children) {
            terms->insert(c.cost);
            getMaxTerms(c, terms);
        }
    }

    /// The accessibility graph's shortest path from w0 to wr (Dijkstra).
    std::vector<int> solveLinear(const std::vector<int> &w, const std::vector<double> &pieceCost,
                                 double m) const
    {
        const size_t r = w.size();
        std::vector<double> q(r, 0);
        for (size_t j = 0; j < r; ++j) {
            for (size_t i = 0; i <= j; ++i)
                q[j] += m_g.cost[w[i]];
            for (size_t i = 1; i <= j; ++i)
                q[j] += pieceCost[i - 1];
        }
        std::vector<std::vector<std::pair<int, double>>> adj(r);
        for (size_t j = 0; j < r; ++j)
            for (size_t l = j + 1; l < r; ++l)
                if (q[l] - q[j] - m_g.cost[w[l]] <= m)
                    adj[j].push_back({int(l), m_g.cost[w[l]]});
        std::vector<double> dist(r, std::numeric_limits<double>::infinity());
        std::vector<int> prev(r, -1);
        using Item = std::pair<double, int>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
        dist[0] = 0;
        pq.push({0, 0});
        while (!pq.empty()) {
            auto [d, x] = pq.top();
            pq.pop();
            if (d > dist[x])
                continue;
            for (auto [y, wgt] : adj[x])
                if (d + wgt < dist[y]) {
                    dist[y] = d + wgt;
                    prev[y] = x;
                    pq.push({dist[y], y});
                }
        }
        std::vector<int> path;
        for (int x = int(r) - 1; x >= 0; x = prev[x]) {
            path.push_back(w[x]);
            if (x == 0)
                break;
        }
        return path;
    }

    void solveWithMax(const Level &level, double m, std::set<int> *gcs) const
    {
        switch (level.type) {
        case Type::Leaf: return;
        case Type::Branch:
        case Type::Complicate:
            for (const Level &c : level.children)
                if (c.cost > m)
                    solveWithMax(c, m, gcs);
            gcs->insert(level.junctions.begin(), level.junctions.end());
            return;
        case Type::Linear: {
            std::vector<int> run{level.chain[0]};
            std::vector<double> runCosts;
            for (size_t i = 0; i + 1 < level.chain.size(); ++i) {
                const Level &e = level.children[i];
                if (e.cost > m) {
                    solveWithMax(e, m, gcs);
                    gcs->insert(level.chain[i]);
                    gcs->insert(level.chain[i + 1]);
                    if (run.size() > 1)
                        for (int v : solveLinear(run, runCosts, m))
                            gcs->insert(v);
                    run.assign(1, level.chain[i + 1]);
                    runCosts.clear();
                } else {
                    run.push_back(level.chain[i + 1]);
                    runCosts.push_back(e.cost);
                }
            }
            if (run.size() > 1)
                for (int v : solveLinear(run, runCosts, m))
                    gcs->insert(v);
            return;
        }
        }
    }

    const core::solvers::FengHuangGraph &m_g;
    size_t m_complicate = 0;
};

} // namespace remat::tests
