// Feng & Huang, "Optimal Gradient Checkpoint Search for Arbitrary Computation Graphs", CVPR 2021.
// The authors' algorithm: a division tree of the tensor graph (linear / branch / complicate
// pieces), every candidate max term m, and per m the cheapest checkpoint set whose re-forward
// units stay within m (a shortest path over each linear chain). Written iteratively (no
// recursion), with splitting vertices found by edge-crossing counts and each chain solved by a
// sliding-window DP instead of Dijkstra.
#include "core/solvers/feng_huang.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <numeric>
#include <set>

namespace remat::core::solvers {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class PieceKind : unsigned char { Leaf, Linear, Branch, Complicate };

struct Piece
{
    PieceKind kind = PieceKind::Leaf;
    int32_t s = -1, t = -1;
    std::vector<int32_t> vertices;  ///< topological order, s first, t last
    std::vector<int32_t> edges;     ///< indices into the edge list
    double cost = 0;                ///< sum of vertex costs other than s and t
    std::vector<int32_t> children;  ///< pieces; for Linear in chain order
    std::vector<int32_t> chain;     ///< Linear: u0 .. uk
    std::vector<int32_t> junctions; ///< Complicate: IS end points other than s and t
    bool fromLinear = false;        ///< a piece of a linear division has no splitting vertex
};

struct Tree
{
    std::vector<Piece> pieces; // pieces[0] is the root
    bool coverFallback = false;
};

class Builder
{
public:
    Builder(const FengHuangGraph &g) : m_g(g)
    {
        const size_t n = g.cost.size();
        m_pos.assign(n, -1);
        m_mark.assign(n, 0);
        m_mark2.assign(n, 0);
        m_comp.assign(n, -1);
        m_out.resize(n);
        m_in.resize(n);
        for (size_t e = 0; e < g.edges.size(); ++e) {
            m_out[g.edges[e].first].push_back(static_cast<int32_t>(e));
            m_in[g.edges[e].second].push_back(static_cast<int32_t>(e));
        }
    }

    Tree build(const StopToken &stop)
    {
        Tree tree;
        Piece root;
        root.s = m_g.source;
        root.t = m_g.sink;
        root.vertices.resize(m_g.cost.size());
        std::iota(root.vertices.begin(), root.vertices.end(), 0);
        root.edges.resize(m_g.edges.size());
        std::iota(root.edges.begin(), root.edges.end(), 0);
        tree.pieces.push_back(std::move(root));
        std::vector<int32_t> work{0};
        while (!work.empty()) {
            if (stop.stopRequested())
                break;
            const int32_t id = work.back();
            work.pop_back();
            std::vector<Piece> kids = divide(tree.pieces[id], tree);
            for (Piece &k : kids) {
                const int32_t kid = static_cast<int32_t>(tree.pieces.size());
                tree.pieces[id].children.push_back(kid);
                const bool leaf = k.vertices.size() <= 2;
                if (leaf)
                    k.kind = PieceKind::Leaf;
                tree.pieces.push_back(std::move(k));
                if (!leaf)
                    work.push_back(kid);
            }
        }
        return tree;
    }

private:
    double interiorCost(const Piece &p) const
    {
        double c = 0;
        for (int32_t v : p.vertices)
            if (v != p.s && v != p.t)
                c += m_g.cost[v];
        return c;
    }
    Piece makePiece(int32_t s, int32_t t, std::vector<int32_t> vertices, std::vector<int32_t> edges)
    {
        Piece p;
        p.s = s;
        p.t = t;
        std::sort(vertices.begin(), vertices.end()); // vertex ids are topological
        p.vertices = std::move(vertices);
        p.edges = std::move(edges);
        p.cost = interiorCost(p);
        return p;
    }

    std::vector<Piece> divide(Piece &h, Tree &tree)
    {
        if (h.vertices.size() <= 2) {
            h.kind = PieceKind::Leaf;
            return {};
        }
        for (size_t i = 0; i < h.vertices.size(); ++i)
            m_pos[h.vertices[i]] = static_cast<int32_t>(i);
        std::vector<Piece> out;
        if (!h.fromLinear && linear(h, out))
            return finish(h, out);
        if (branch(h, out))
            return finish(h, out);
        complicate(h, out, tree);
        return finish(h, out);
    }
    std::vector<Piece> finish(Piece &h, std::vector<Piece> &out)
    {
        for (int32_t v : h.vertices)
            m_pos[v] = -1;
        return std::move(out);
    }

    // Linear division: vertices no edge jumps over (every s->t path passes them).
    bool linear(Piece &h, std::vector<Piece> &out)
    {
        const size_t n = h.vertices.size();
        std::vector<int32_t> diff(n + 1, 0);
        for (int32_t e : h.edges) {
            const int32_t a = m_pos[m_g.edges[e].first], b = m_pos[m_g.edges[e].second];
            if (b > a + 1) {
                diff[a + 1] += 1;
                diff[b] -= 1;
            }
        }
        std::vector<int32_t> chain{0};
        int32_t c = 0;
        for (size_t p = 1; p + 1 < n; ++p) {
            c += diff[p];
            if (c == 0)
                chain.push_back(static_cast<int32_t>(p));
        }
        if (chain.size() == 1)
            return false;
        chain.push_back(static_cast<int32_t>(n - 1));
        std::vector<std::vector<int32_t>> pieceEdges(chain.size() - 1);
        for (int32_t e : h.edges) {
            const int32_t a = m_pos[m_g.edges[e].first];
            const size_t k = static_cast<size_t>(std::upper_bound(chain.begin(), chain.end(), a) -
                                                 chain.begin()) -
                             1;
            pieceEdges[k].push_back(e);
        }
        h.kind = PieceKind::Linear;
        for (int32_t p : chain)
            h.chain.push_back(h.vertices[p]);
        for (size_t k = 0; k + 1 < chain.size(); ++k) {
            std::vector<int32_t> vs(h.vertices.begin() + chain[k],
                                    h.vertices.begin() + chain[k + 1] + 1);
            Piece p = makePiece(h.vertices[chain[k]], h.vertices[chain[k + 1]], std::move(vs),
                                std::move(pieceEdges[k]));
            p.fromLinear = true;
            out.push_back(std::move(p));
        }
        return true;
    }

    // Branch division: direct s->t edges, and the weakly connected components of H - {s, t}.
    bool branch(Piece &h, std::vector<Piece> &out)
    {
        std::vector<int32_t> direct;
        std::vector<int32_t> parent(h.vertices.size());
        std::iota(parent.begin(), parent.end(), 0);
        auto find = [&](int32_t x) {
            while (parent[x] != x)
                x = parent[x] = parent[parent[x]];
            return x;
        };
        for (int32_t e : h.edges) {
            const int32_t a = m_g.edges[e].first, b = m_g.edges[e].second;
            if (a == h.s && b == h.t) {
                direct.push_back(e);
                continue;
            }
            if (a == h.s || b == h.t || a == h.t || b == h.s)
                continue;
            const int32_t ra = find(m_pos[a]), rb = find(m_pos[b]);
            if (ra != rb)
                parent[std::max(ra, rb)] = std::min(ra, rb);
        }
        std::vector<int32_t> compOf(h.vertices.size(), -1);
        int32_t comps = 0;
        for (size_t i = 0; i < h.vertices.size(); ++i) {
            const int32_t v = h.vertices[i];
            if (v == h.s || v == h.t)
                continue;
            const int32_t r = find(static_cast<int32_t>(i));
            if (compOf[r] < 0)
                compOf[r] = comps++;
            compOf[i] = compOf[r];
        }
        if (comps + (direct.empty() ? 0 : 1) < 2)
            return false;
        std::vector<std::vector<int32_t>> vs(comps), es(comps);
        for (size_t i = 0; i < h.vertices.size(); ++i)
            if (compOf[i] >= 0)
                vs[compOf[i]].push_back(h.vertices[i]);
        for (int32_t e : h.edges) {
            const int32_t a = m_g.edges[e].first, b = m_g.edges[e].second;
            if (a == h.s && b == h.t)
                continue;
            const int32_t inner = (a == h.s || a == h.t) ? b : a;
            es[compOf[m_pos[inner]]].push_back(e);
        }
        h.kind = PieceKind::Branch;
        if (!direct.empty())
            out.push_back(makePiece(h.s, h.t, {h.s, h.t}, direct));
        for (int32_t c = 0; c < comps; ++c) {
            vs[c].push_back(h.s);
            vs[c].push_back(h.t);
            out.push_back(makePiece(h.s, h.t, std::move(vs[c]), std::move(es[c])));
        }
        return true;
    }

    // Complicate division: the largest independent segments between candidate pairs, taken
    // greedily while edge-disjoint, as in the authors' code.
    void complicate(Piece &h, std::vector<Piece> &out, Tree &tree)
    {
        h.kind = PieceKind::Complicate;
        const size_t n = h.vertices.size();
        std::vector<int32_t> degree(n, 0);
        for (int32_t e : h.edges) {
            degree[m_pos[m_g.edges[e].first]] += 1;
            degree[m_pos[m_g.edges[e].second]] += 1;
        }
        std::vector<int32_t> cand;
        for (size_t i = 0; i < n; ++i)
            if (h.vertices[i] == h.s || h.vertices[i] == h.t || degree[i] > 2)
                cand.push_back(static_cast<int32_t>(i));
        // Local adjacency over positions.
        std::vector<std::vector<int32_t>> succ(n), pred(n), outEdges(n);
        for (int32_t e : h.edges) {
            const int32_t a = m_pos[m_g.edges[e].first], b = m_pos[m_g.edges[e].second];
            succ[a].push_back(b);
            pred[b].push_back(a);
            outEdges[a].push_back(e);
        }
        // Descendant sets of candidates (positions are topological: a forward sweep suffices).
        auto reach = [&](int32_t from, bool forward) {
            std::vector<char> r(n, 0);
            r[from] = 1;
            if (forward) {
                for (size_t i = from; i < n; ++i)
                    if (r[i])
                        for (int32_t j : succ[i])
                            r[j] = 1;
            } else {
                for (size_t i = from + 1; i-- > 0;)
                    if (r[i])
                        for (int32_t j : pred[i])
                            r[j] = 1;
            }
            return r;
        };
        std::vector<std::vector<char>> desc(cand.size()), anc(cand.size());
        for (size_t k = 0; k < cand.size(); ++k) {
            desc[k] = reach(cand[k], true);
            anc[k] = reach(cand[k], false);
        }
        struct Segment
        {
            int32_t a, b;
            std::vector<int32_t> vertices; // positions
            std::vector<int32_t> edges;
        };
        std::vector<Segment> segments;
        // Per-pair work touches only N(a, b) = desc(a) & anc(b); arrays are reused with stamps.
        std::vector<int32_t> inN(n, -1), comp(n, -1), removed(n, -1), uf(n, 0);
        std::vector<int32_t> members, stack, nodes;
        int32_t stamp = 0;
        for (size_t ia = 0; ia < cand.size(); ++ia) {
            for (size_t ib = ia + 1; ib < cand.size(); ++ib) {
                const int32_t a = cand[ia], b = cand[ib];
                if (h.vertices[a] == h.s && h.vertices[b] == h.t)
                    continue;
                if (!desc[ia][b])
                    continue;
                ++stamp;
                nodes.clear();
                for (int32_t i = a; i <= b; ++i) // topological positions: N lies in [a, b]
                    if (desc[ia][i] && anc[ib][i]) {
                        inN[i] = stamp;
                        nodes.push_back(i);
                    }
                // Interior components touching a vertex outside N are not independent.
                for (int32_t i : nodes) {
                    if (i == a || i == b || comp[i] == stamp)
                        continue;
                    stack.assign(1, i);
                    members.clear();
                    comp[i] = stamp;
                    bool touchesOutside = false;
                    while (!stack.empty()) {
                        const int32_t v = stack.back();
                        stack.pop_back();
                        members.push_back(v);
                        for (const auto *adj : {&succ[v], &pred[v]})
                            for (int32_t u : *adj) {
                                if (inN[u] != stamp) {
                                    touchesOutside = true;
                                    continue;
                                }
                                if (u == a || u == b || comp[u] == stamp)
                                    continue;
                                comp[u] = stamp;
                                stack.push_back(u);
                            }
                    }
                    if (touchesOutside)
                        for (int32_t v : members)
                            removed[v] = stamp;
                }
                Segment seg{a, b, {}, {}};
                for (int32_t i : nodes)
                    if (removed[i] != stamp) {
                        seg.vertices.push_back(i);
                        uf[i] = i;
                    }
                auto kept = [&](int32_t x) { return inN[x] == stamp && removed[x] != stamp; };
                for (int32_t x : seg.vertices)
                    for (int32_t e : outEdges[x])
                        if (kept(m_pos[m_g.edges[e].second]))
                            seg.edges.push_back(e);
                if (seg.edges.empty())
                    continue;
                // Weakly connected over the kept vertices?
                auto find = [&](int32_t x) {
                    while (uf[x] != x)
                        x = uf[x] = uf[uf[x]];
                    return x;
                };
                for (int32_t e : seg.edges) {
                    const int32_t x = find(m_pos[m_g.edges[e].first]);
                    const int32_t y = find(m_pos[m_g.edges[e].second]);
                    if (x != y)
                        uf[std::max(x, y)] = std::min(x, y);
                }
                const int32_t r0 = find(seg.vertices.front());
                bool connected = true;
                for (int32_t v : seg.vertices)
                    connected = connected && find(v) == r0;
                if (connected) {
                    std::sort(seg.edges.begin(), seg.edges.end());
                    segments.push_back(std::move(seg));
                }
            }
        }
        std::stable_sort(segments.begin(), segments.end(), [](const Segment &x, const Segment &y) {
            return x.edges.size() > y.edges.size();
        });
        std::vector<char> covered(m_g.edges.size(), 0);
        std::set<int32_t> junctions;
        size_t coveredCount = 0;
        for (Segment &seg : segments) {
            bool disjoint = true;
            for (int32_t e : seg.edges)
                disjoint = disjoint && !covered[e];
            if (!disjoint)
                continue;
            for (int32_t e : seg.edges)
                covered[e] = 1;
            coveredCount += seg.edges.size();
            std::vector<int32_t> vs;
            for (int32_t p : seg.vertices)
                vs.push_back(h.vertices[p]);
            const int32_t sa = h.vertices[seg.a], sb = h.vertices[seg.b];
            for (int32_t v : {sa, sb})
                if (v != h.s && v != h.t)
                    junctions.insert(v);
            out.push_back(makePiece(sa, sb, std::move(vs), std::move(seg.edges)));
        }
        if (coveredCount != h.edges.size()) {
            // The authors' code raises here; we keep every uncovered edge as its own piece.
            tree.coverFallback = true;
            for (int32_t e : h.edges) {
                if (covered[e])
                    continue;
                const int32_t a = m_g.edges[e].first, b = m_g.edges[e].second;
                for (int32_t v : {a, b})
                    if (v != h.s && v != h.t)
                        junctions.insert(v);
                out.push_back(makePiece(a, b, {a, b}, {e}));
            }
        }
        h.junctions.assign(junctions.begin(), junctions.end());
    }

    const FengHuangGraph &m_g;
    std::vector<int32_t> m_pos;
    std::vector<char> m_mark, m_mark2;
    std::vector<int32_t> m_comp;
    std::vector<std::vector<int32_t>> m_out, m_in;
};

/// Candidate max terms, as the authors' get_max_terms (iterative).
std::vector<double> maxTerms(const Tree &tree, const FengHuangGraph &g)
{
    std::vector<double> terms;
    for (const Piece &p : tree.pieces) {
        if (p.kind == PieceKind::Linear) {
            const size_t k = p.chain.size() - 1;
            std::vector<double> prefix(k + 1, 0.0);
            for (size_t j = 0; j <= k; ++j)
                prefix[j] = (j ? prefix[j - 1] + tree.pieces[p.children[j - 1]].cost : 0.0) +
                            g.cost[p.chain[j]];
            for (size_t j = 0; j < k; ++j)
                for (size_t l = j + 1; l <= k; ++l)
                    terms.push_back(prefix[l] - prefix[j] - g.cost[p.chain[l]]);
        }
        if (p.kind != PieceKind::Leaf)
            for (int32_t c : p.children)
                terms.push_back(tree.pieces[c].cost);
    }
    std::sort(terms.begin(), terms.end());
    terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
    terms.erase(std::remove_if(terms.begin(), terms.end(), [](double x) { return x <= 0; }),
                terms.end());
    return terms;
}

/// Cheapest path over a run of chain vertices whose jumps stay within m (the accessibility
/// graph's shortest path), by a sliding-window DP; marks the path's vertices.
void solveRun(const std::vector<int32_t> &run, const std::vector<double> &pieceCost,
              const FengHuangGraph &g, const std::vector<char> &forbidden, double m,
              std::vector<int32_t> *gcs)
{
    const size_t r = run.size();
    std::vector<double> q(r, 0.0), f(r, kInf);
    std::vector<int32_t> from(r, -1);
    for (size_t j = 0; j < r; ++j)
        q[j] = (j ? q[j - 1] + pieceCost[j - 1] : 0.0) + g.cost[run[j]];
    f[0] = 0;
    std::deque<size_t> dq;
    size_t left = 0, pushed = 0;
    for (size_t l = 1; l < r; ++l) {
        while (pushed < l) {
            if (f[pushed] < kInf) {
                while (!dq.empty() && f[dq.back()] >= f[pushed])
                    dq.pop_back();
                dq.push_back(pushed);
            }
            ++pushed;
        }
        while (left < l && q[l] - q[left] - g.cost[run[l]] > m)
            ++left;
        while (!dq.empty() && dq.front() < left)
            dq.pop_front();
        const bool blocked = forbidden[run[l]] && l + 1 < r;
        if (!dq.empty() && !blocked) {
            f[l] = f[dq.front()] + g.cost[run[l]];
            from[l] = static_cast<int32_t>(dq.front());
        }
    }
    if (f[r - 1] == kInf) { // only forbidden vertices could bridge: keep every vertex
        for (int32_t v : run)
            gcs->push_back(v);
        return;
    }
    for (int32_t v = static_cast<int32_t>(r - 1); v >= 0; v = from[v])
        gcs->push_back(run[v]);
}

/// The authors' solve_with_max, iterative: the checkpoint vertices for max term m.
void solveWithMax(const Tree &tree, const FengHuangGraph &g, const std::vector<char> &forbidden,
                  double m, std::vector<int32_t> *gcs)
{
    gcs->clear();
    std::vector<int32_t> stack{0};
    std::vector<int32_t> run;
    std::vector<double> runCosts;
    while (!stack.empty()) {
        const Piece &p = tree.pieces[stack.back()];
        stack.pop_back();
        switch (p.kind) {
        case PieceKind::Leaf: break;
        case PieceKind::Complicate:
            gcs->insert(gcs->end(), p.junctions.begin(), p.junctions.end());
            [[fallthrough]];
        case PieceKind::Branch:
            for (int32_t c : p.children)
                if (tree.pieces[c].cost > m)
                    stack.push_back(c);
            break;
        case PieceKind::Linear: {
            run.assign(1, p.chain[0]);
            runCosts.clear();
            for (size_t i = 0; i + 1 < p.chain.size(); ++i) {
                const Piece &e = tree.pieces[p.children[i]];
                if (e.cost > m) {
                    stack.push_back(p.children[i]);
                    gcs->push_back(p.chain[i]);
                    gcs->push_back(p.chain[i + 1]);
                    if (run.size() > 1)
                        solveRun(run, runCosts, g, forbidden, m, gcs);
                    run.assign(1, p.chain[i + 1]);
                    runCosts.clear();
                } else {
                    run.push_back(p.chain[i + 1]);
                    runCosts.push_back(e.cost);
                }
            }
            if (run.size() > 1)
                solveRun(run, runCosts, g, forbidden, m, gcs);
            break;
        }
        }
    }
    std::sort(gcs->begin(), gcs->end());
    gcs->erase(std::unique(gcs->begin(), gcs->end()), gcs->end());
}

double gcCost(const std::vector<int32_t> &gcs, const FengHuangGraph &g)
{
    double c = 0;
    for (int32_t v : gcs)
        if (v != g.source && v != g.sink)
            c += g.cost[v];
    return c;
}

} // namespace

FengHuangGraph fengHuangGraph(const GraphFacts &facts)
{
    const training::TrainingGraph &tg = facts.graph();
    FengHuangGraph g;
    // Flow tensors: forward tensors a forward or loss op reads. Vertex ids follow producer
    // order, so they are topological; 0 is the source, the last id the sink.
    std::vector<int32_t> vertexOf(tg.tensorCount(), -1);
    g.cost.push_back(0);
    g.tensor.push_back(TensorId());
    for (int32_t i = 0; i < facts.forwardOps(); ++i) {
        const training::Op &op = tg.ops()[i];
        int32_t first = -1;
        for (TensorId t : op.outputs)
            if (facts.lastForwardUse(t) >= 0 && !facts.weightDerived(t)) {
                vertexOf[t.index()] = static_cast<int32_t>(g.cost.size());
                if (first < 0)
                    first = vertexOf[t.index()];
                g.cost.push_back(double(tg.tensor(t).bytes));
                g.tensor.push_back(t);
            }
        // Saved state only backward reads is charged to the op's first flow output.
        if (first >= 0)
            for (TensorId t : op.outputs)
                if (facts.lastForwardUse(t) < 0 && facts.neededByBackward(t))
                    g.cost[first] += double(tg.tensor(t).bytes);
    }
    g.sink = static_cast<int32_t>(g.cost.size());
    g.cost.push_back(0);
    g.tensor.push_back(TensorId());
    std::vector<char> hasOut(g.cost.size(), 0), hasIn(g.cost.size(), 0);
    auto addEdge = [&](int32_t a, int32_t b) {
        g.edges.emplace_back(a, b);
        hasOut[a] = 1;
        hasIn[b] = 1;
    };
    for (int32_t i = 0; i < facts.lossEnd(); ++i) {
        const training::Op &op = tg.ops()[i];
        const bool loss = i >= facts.forwardOps();
        std::vector<int32_t> outs;
        if (loss)
            outs.push_back(g.sink);
        else
            for (TensorId t : op.outputs)
                if (vertexOf[t.index()] >= 0)
                    outs.push_back(vertexOf[t.index()]);
        for (int32_t v : outs) {
            bool fed = false;
            for (TensorId in : op.inputs) {
                if (vertexOf[in.index()] >= 0) {
                    addEdge(vertexOf[in.index()], v);
                    fed = true;
                } else if (tg.tensor(in).role == training::TensorRole::Input) {
                    addEdge(g.source, v);
                    fed = true;
                }
            }
            if (!fed)
                addEdge(g.source, v);
        }
    }
    for (int32_t v = 1; v < g.sink; ++v) {
        if (!hasIn[v])
            addEdge(g.source, v);
        if (!hasOut[v])
            addEdge(v, g.sink);
    }
    // One network output read only by the loss is the sink itself, as in the authors' graphs.
    int32_t feeding = -1, count = 0;
    for (const auto &e : g.edges)
        if (e.second == g.sink) {
            feeding = e.first;
            ++count;
        }
    if (count == 1 && feeding > 0) {
        int32_t outDegree = 0;
        for (const auto &e : g.edges)
            outDegree += e.first == feeding ? 1 : 0;
        if (outDegree == 1) {
            g.edges.erase(std::remove_if(g.edges.begin(), g.edges.end(),
                                         [&](const auto &e) { return e.second == g.sink; }),
                          g.edges.end());
            g.cost.pop_back();
            g.tensor.pop_back();
            g.sink = feeding;
            // Vertices after the new sink cannot exist: it was the last flow vertex read.
        }
    }
    return g;
}

Expected<FengHuangResult> solveFengHuang(const FengHuangGraph &g,
                                         const std::vector<char> &forbidden, const StopToken &stop,
                                         size_t keepBest, double slack)
{
    FengHuangResult result;
    const auto t0 = std::chrono::steady_clock::now();
    Builder builder(g);
    const Tree tree = builder.build(stop);
    result.treeSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (stop.stopRequested())
        return makeError(StatusCode::Cancelled, "feng-huang: cancelled");
    result.coverFallback = tree.coverFallback;
    for (const Piece &p : tree.pieces)
        result.levels[static_cast<int>(p.kind)] += 1;
    const std::vector<double> terms = maxTerms(tree, g);
    result.maxTerms = terms.size();
    std::vector<int32_t> gcs;
    double best = kInf;
    std::set<std::vector<int32_t>> seen;
    auto consider = [&](double m) {
        solveWithMax(tree, g, forbidden, m, &gcs);
        const double objective = gcCost(gcs, g) + m;
        best = std::min(best, objective);
        if (seen.insert(gcs).second)
            result.candidates.push_back({objective, m, gcs});
    };
    for (size_t i = 0; i < terms.size(); ++i) {
        if (terms[i] >= best * slack)
            break; // the objective is at least m
        if ((i & 31) == 0 && stop.stopRequested())
            return makeError(StatusCode::Cancelled, "feng-huang: cancelled");
        consider(terms[i]);
        result.evaluated += 1;
    }
    if (terms.empty())
        consider(0); // nothing to trade: every piece is free
    std::stable_sort(result.candidates.begin(), result.candidates.end(),
                     [](const FengHuangCandidate &a, const FengHuangCandidate &b) {
                         return a.objective < b.objective;
                     });
    if (result.candidates.size() > keepBest && keepBest > 0)
        result.candidates.resize(keepBest);
    result.best = best;
    return result;
}

namespace {

class FengHuangSolver final : public Solver
{
public:
    std::string id() const override { return "feng-huang"; }
    std::string title() const override { return "Feng & Huang, CVPR 2021 (division tree)"; }
    std::string description() const override
    {
        return "The authors' algorithm on the tensor graph (tensors are vertices weighted by "
               "bytes, saved state charged to its op's output; ops are edges; tensors computed "
               "from weights alone are left out, like the weights): a division tree of linear, "
               "branch and complicate pieces, "
               "every candidate max term m, and per m the cheapest checkpoint set whose "
               "re-forward units stay within m (a shortest path over every linear chain). Its "
               "objective, sum(checkpoint bytes) + m, is minimised exactly within that search "
               "space. min-peak: the 8 best sets by that objective are simulated and the lowest "
               "true peak is returned. min-time (not in the paper): the sets of every candidate m "
               "are lowered and simulated in order of their time until the rest are slower than "
               "the best one under the budget, which is returned. Keep pins "
               "are added to the plan; recompute-pinned vertices are avoided where the structure "
               "allows (junctions of complicate pieces are always kept in this algorithm).";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = true;
        c.optimalForItsModel = true;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        pb.setObjectiveName("sum(checkpoint bytes) + max term m (Feng & Huang)");
        const FengHuangGraph g = fengHuangGraph(pb.facts());
        std::vector<char> forbidden(g.cost.size(), 0);
        for (const Pin &p : request.pins)
            if (p.kind == PinKind::Recompute)
                for (size_t v = 0; v < g.tensor.size(); ++v)
                    if (g.tensor[v] == p.tensor)
                        forbidden[v] = 1;
        const bool minPeak = request.objective == Objective::MinPeak;
        const double t0 = pb.elapsed();
        auto r = solveFengHuang(g, forbidden, request.stop, minPeak ? 8 : 100000,
                                minPeak ? 1.25 : std::numeric_limits<double>::infinity());
        if (!r)
            return r.status();
        pb.addNote("search " + std::to_string(int((pb.elapsed() - t0) * 1000)) + " ms (tree " +
                   std::to_string(int(r->treeSeconds * 1000)) + " ms)");
        pb.addNote(std::to_string(g.cost.size()) + " vertices, " + std::to_string(g.edges.size()) +
                   " edges, " + std::to_string(r->maxTerms) + " max terms (" +
                   std::to_string(r->evaluated) + " evaluated); pieces: " +
                   std::to_string(r->levels[1]) + " linear, " + std::to_string(r->levels[2]) +
                   " branch, " + std::to_string(r->levels[3]) + " complicate");
        if (r->coverFallback)
            addCoverNote(pb);
        pb.setBound(r->best);
        std::vector<std::vector<TensorId>> sets;
        std::vector<double> objectives;
        for (const FengHuangCandidate &c : r->candidates) {
            std::vector<TensorId> keep;
            for (int32_t v : c.vertices)
                if (g.tensor[v].valid())
                    keep.push_back(g.tensor[v]);
            sets.push_back(std::move(keep));
            objectives.push_back(c.objective);
        }
        REMAT_ASSIGN_OR_RETURN(const bool complete, pb.offerCheckpointSets(sets, objectives));
        return pb.finish(SolveStatus::Feasible, complete);
    }

private:
    static void addCoverNote(PlanBuilder &pb)
    {
        pb.addNote("the independent segments did not cover a complicate piece (the authors' "
                   "code stops here); uncovered edges became pieces of their own");
    }
};

} // namespace

std::unique_ptr<Solver> makeFengHuangSolver() { return std::make_unique<FengHuangSolver>(); }

} // namespace remat::core::solvers
