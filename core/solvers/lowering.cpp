#include "core/solvers/lowering.h"

#include <algorithm>
#include <numeric>

namespace remat::core::solvers {

using training::Phase;
using training::TrainingGraph;

namespace {

// Tensors at most this big (and at most 1/256 of the largest activation) that cross a boundary
// (shape arithmetic, scalars) do not stop it from being an articulation point; chain solvers
// keep them with the boundary.
constexpr int64_t kSmallCrossingBytes = 4096;

struct UnionFind
{
    std::vector<int32_t> parent;
    explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
    int32_t find(int32_t x)
    {
        while (parent[x] != x) {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        return x;
    }
    void unite(int32_t a, int32_t b)
    {
        a = find(a);
        b = find(b);
        if (a != b)
            parent[std::max(a, b)] = std::min(a, b);
    }
};

const training::Tensor &tensors_(const TrainingGraph &g, size_t t) { return g.tensors()[t]; }

} // namespace

Expected<GraphFacts> GraphFacts::build(const TrainingGraph &graph)
{
    GraphFacts f;
    f.m_graph = &graph;
    f.m_forwardOps = static_cast<int32_t>(graph.forwardOpCount());
    f.m_opCount = static_cast<int32_t>(graph.opCount());
    f.m_lossEnd = f.m_opCount - static_cast<int32_t>(graph.backwardOpCount());
    const size_t nt = graph.tensorCount();
    f.m_fwd.assign(nt, false);
    f.m_lastFwdUse.assign(nt, -1);
    f.m_firstBwdUse.assign(nt, -1);
    f.m_lastBwdUse.assign(nt, -1);
    f.m_lastUse.assign(nt, -1);
    for (int32_t i = 0; i < f.m_opCount; ++i) {
        const training::Op &op = graph.ops()[i];
        if ((i < f.m_forwardOps) != (op.phase == Phase::Forward))
            return makeError(StatusCode::InvalidArgument,
                             "training graph: op '" + op.name + "' is out of phase order");
        for (TensorId t : op.inputs) {
            if (!t.valid() || t.index() >= nt)
                return makeError(StatusCode::InvalidArgument,
                                 "training graph: op '" + op.name + "' reads an unknown tensor");
            f.m_lastUse[t.index()] = std::max(f.m_lastUse[t.index()], i);
            if (i < f.m_lossEnd) {
                f.m_lastFwdUse[t.index()] = std::max(f.m_lastFwdUse[t.index()], i);
            } else {
                if (f.m_firstBwdUse[t.index()] < 0)
                    f.m_firstBwdUse[t.index()] = i;
                f.m_lastBwdUse[t.index()] = i;
            }
        }
    }
    f.m_weightDerived.assign(nt, false);
    for (int32_t i = 0; i < f.m_forwardOps; ++i) {
        const training::Op &op = graph.ops()[i];
        // An op reading nothing is a source of data (a benchmark graph's first layer), unless it
        // is one of ONNX's constant generators.
        bool derived = !op.inputs.empty() || op.type == "Constant" ||
                       op.type == "ConstantOfShape" || op.type == "RandomNormal" ||
                       op.type == "RandomUniform";
        for (TensorId t : op.inputs) {
            const training::Tensor &in = graph.tensor(t);
            const bool weightLike = in.preloaded ? in.role != training::TensorRole::Input
                                                 : bool(f.m_weightDerived[t.index()]);
            derived = derived && weightLike;
        }
        if (derived)
            for (TensorId t : op.outputs)
                f.m_weightDerived[t.index()] = true;
    }
    for (const training::Tensor &t : graph.tensors()) {
        const bool fwd = !t.preloaded && t.producer.valid() &&
                         static_cast<int32_t>(t.producer.index()) < f.m_forwardOps;
        f.m_fwd[t.id.index()] = fwd;
        if (fwd && f.m_lastUse[t.id.index()] >= 0) {
            f.m_candidates.push_back(t.id);
            if (f.m_firstBwdUse[t.id.index()] >= 0)
                f.m_bwdNeeded.push_back(t.id);
        }
    }
    return f;
}

std::vector<TensorId> GraphFacts::siblings(TensorId t) const
{
    std::vector<TensorId> out;
    const training::Tensor &tensor = m_graph->tensor(t);
    if (!m_fwd[t.index()])
        return {t};
    for (TensorId u : m_graph->op(tensor.producer).outputs)
        if (m_lastUse[u.index()] >= 0 || u == t)
            out.push_back(u);
    return out;
}

int64_t ChainView::sharedBytes(size_t j, size_t i) const
{
    // A tensor alive across cut i that was produced before cut j is alive across cut j too
    // (alive ranges are intervals), so the shared part is a prefix of i's producer order.
    const int32_t pj = boundaryPos[j];
    const auto &order = producerOrder[i];
    const size_t n =
        static_cast<size_t>(std::upper_bound(order.begin(), order.end(), pj) - order.begin());
    return n == 0 ? 0 : prefixBytes[i][n - 1];
}

ChainView GraphFacts::chainView(const cost::Costs *costs, ChainKind kind) const
{
    const TrainingGraph &g = *m_graph;
    const int32_t nf = m_forwardOps;
    ChainView view;
    view.kind = kind;
    if (nf == 0)
        return view;
    // A tensor crosses cut p (between forward ops p and p+1) when it is produced at or before p
    // and read after p. Difference arrays give, per cut, the count of real-sized crossing
    // tensors, the sum of their ids (the id when the count is one) and all crossing bytes.
    std::vector<int64_t> count(nf + 1, 0), idSum(nf + 1, 0), bytes(nf + 1, 0);
    auto producerOf = [&](TensorId t) {
        return static_cast<int32_t>(g.tensor(t).producer.index());
    };
    int64_t largest = 0;
    for (TensorId t : m_candidates)
        largest = std::max(largest, g.tensor(t).bytes);
    const int64_t small = std::min(kSmallCrossingBytes, largest / 256);
    for (TensorId t : m_candidates) {
        const int32_t last = m_lastFwdUse[t.index()];
        const int32_t prod = producerOf(t);
        if (last <= prod)
            continue;
        const int32_t end = std::min(last, nf);
        bytes[prod] += g.tensor(t).bytes;
        bytes[end] -= g.tensor(t).bytes;
        if (g.tensor(t).bytes <= small || m_weightDerived[t.index()])
            continue;
        count[prod] += 1;
        count[end] -= 1;
        idSum[prod] += t.value;
        idSum[end] -= t.value;
    }
    std::vector<int64_t> cross(nf, 0);
    {
        int64_t b = 0;
        for (int32_t p = 0; p < nf; ++p)
            cross[p] = (b += bytes[p]);
    }
    std::vector<int32_t> cuts;
    {
        int64_t c = 0, sum = 0;
        TensorId previous;
        for (int32_t p = 0; p + 1 < nf; ++p) { // the cut after the last op is the output
            c += count[p];
            sum += idSum[p];
            if (c != 1)
                continue;
            const TensorId t(static_cast<int32_t>(sum));
            if (t == previous)
                continue; // the same value still alone (dead-end ops in between)
            if (producerOf(t) != p)
                continue;
            previous = t;
            cuts.push_back(p);
        }
    }
    if (kind == ChainKind::Linearized) {
        // Articulation points plus the local minima of the bytes alive across a cut.
        std::vector<int32_t> ap = cuts;
        cuts.clear();
        size_t a = 0;
        for (int32_t p = 0; p + 1 < nf; ++p) {
            const bool isAp = a < ap.size() && ap[a] == p;
            if (isAp)
                ++a;
            const bool descended = p == 0 || cross[p] <= cross[p - 1];
            if (isAp || (descended && cross[p] < cross[p + 1] && cross[p] > 0))
                cuts.push_back(p);
        }
    }
    // Boundary sets.
    view.boundaryPos = cuts;
    view.boundarySets.resize(cuts.size());
    {
        // Sweep tensors by producer; a tensor joins every cut in [prod, last).
        for (TensorId t : m_candidates) {
            const int32_t last = m_lastFwdUse[t.index()];
            const int32_t prod = producerOf(t);
            if (last <= prod)
                continue;
            auto it = std::lower_bound(cuts.begin(), cuts.end(), prod);
            for (; it != cuts.end() && *it < last; ++it)
                view.boundarySets[it - cuts.begin()].push_back(t);
        }
    }
    view.producerOrder.resize(cuts.size());
    view.prefixBytes.resize(cuts.size());
    view.boundaryBytes.resize(cuts.size());
    for (size_t k = 0; k < cuts.size(); ++k) {
        auto &set = view.boundarySets[k];
        std::sort(set.begin(), set.end(),
                  [&](TensorId a, TensorId b) { return producerOf(a) < producerOf(b); });
        int64_t acc = 0;
        for (TensorId t : set) {
            view.producerOrder[k].push_back(producerOf(t));
            acc += g.tensor(t).bytes;
            view.prefixBytes[k].push_back(acc);
        }
        view.boundaryBytes[k] = acc;
    }
    view.stageBegin.push_back(0);
    for (int32_t p : cuts)
        view.stageBegin.push_back(p + 1);
    view.stageBegin.push_back(nf);
    const size_t stages = view.stageBegin.size() - 1;
    view.stageOfOp.assign(m_opCount, -1);
    for (size_t k = 0; k < stages; ++k)
        for (int32_t i = view.stageBegin[k]; i < view.stageBegin[k + 1]; ++i)
            view.stageOfOp[i] = static_cast<int32_t>(k);
    view.interiorBytes.assign(stages, 0);
    view.tapeBytes.assign(stages, 0);
    view.largestBytes.assign(stages, 0);
    view.backwardNeedsOutput.assign(stages, false);
    view.forwardSeconds.assign(stages, 0.0);
    view.backwardSeconds.assign(stages, 0.0);
    for (TensorId t : m_candidates) {
        const int32_t prod = producerOf(t);
        const int32_t k = view.stageOfOp[prod];
        const int64_t b = g.tensor(t).bytes;
        view.largestBytes[k] = std::max(view.largestBytes[k], b);
        // Held by the stage's output boundary: produced here and alive across its end.
        const bool inOutput =
            static_cast<size_t>(k) < cuts.size() && m_lastFwdUse[t.index()] > cuts[k];
        if (inOutput)
            continue;
        view.interiorBytes[k] += b;
        if (m_firstBwdUse[t.index()] >= 0)
            view.tapeBytes[k] += b;
    }
    // Backward ops belong to the stage of the forward op they differentiate; accumulations and
    // other helpers to the stage of the op before them.
    int32_t current = static_cast<int32_t>(stages) - 1;
    for (int32_t i = m_lossEnd; i < m_opCount; ++i) {
        const training::Op &op = g.ops()[i];
        if (op.forwardOf.valid() && static_cast<int32_t>(op.forwardOf.index()) < nf)
            current = view.stageOfOp[op.forwardOf.index()];
        view.stageOfOp[i] = current;
        if (costs && static_cast<size_t>(i) < costs->opSeconds.size())
            view.backwardSeconds[current] += costs->opSeconds[i];
    }
    for (size_t k = 0; k < cuts.size(); ++k)
        for (TensorId t : view.boundarySets[k])
            for (OpId consumer : g.tensor(t).consumers)
                if (static_cast<int32_t>(consumer.index()) >= m_lossEnd &&
                    view.stageOfOp[consumer.index()] == static_cast<int32_t>(k))
                    view.backwardNeedsOutput[k] = true;
    if (costs)
        for (int32_t i = 0; i < nf && static_cast<size_t>(i) < costs->opSeconds.size(); ++i)
            view.forwardSeconds[view.stageOfOp[i]] += costs->opSeconds[i];
    return view;
}

Expected<std::vector<char>> keepMask(const GraphFacts &facts, const std::vector<TensorId> &keep,
                                     const std::vector<Pin> &pins)
{
    const TrainingGraph &g = facts.graph();
    const size_t nt = g.tensorCount();
    std::vector<char> mask(nt, 0), forbidden(nt, 0);
    auto checkTensor = [&](TensorId t, const char *what) -> Status {
        if (!t.valid() || t.index() >= nt)
            return makeError(StatusCode::InvalidArgument,
                             std::string(what) + ": unknown tensor id");
        if (!facts.isForwardTensor(t))
            return makeError(StatusCode::InvalidArgument,
                             std::string(what) + ": '" + g.tensor(t).name +
                                 "' is not a forward activation (only those can be kept or "
                                 "recomputed)");
        return Status::ok();
    };
    for (const Pin &p : pins) {
        if (p.kind == PinKind::Offload)
            return makeError(StatusCode::Unsupported,
                             "offload pin on '" +
                                 (p.tensor.valid() && p.tensor.index() < nt
                                      ? g.tensor(p.tensor).name
                                      : std::string("?")) +
                                 "': checkpoint-set lowering cannot offload");
        REMAT_RETURN_IF_ERROR(checkTensor(p.tensor, pinKindName(p.kind)));
        if (p.kind == PinKind::Recompute)
            for (TensorId s : facts.siblings(p.tensor))
                forbidden[s.index()] = 1;
    }
    for (const Pin &p : pins)
        if (p.kind == PinKind::Keep) {
            if (forbidden[p.tensor.index()])
                return makeError(StatusCode::InvalidArgument,
                                 "pins contradict: '" + g.tensor(p.tensor).name +
                                     "' is pinned keep, but it or an output of the same op is "
                                     "pinned recompute");
            for (TensorId s : facts.siblings(p.tensor))
                mask[s.index()] = 1;
        }
    for (TensorId t : keep) {
        REMAT_RETURN_IF_ERROR(checkTensor(t, "checkpoint"));
        if (forbidden[t.index()])
            continue; // the solver's choice yields to a recompute pin
        for (TensorId s : facts.siblings(t))
            mask[s.index()] = 1;
    }
    return mask;
}

std::vector<TensorId> maskToList(const std::vector<char> &mask)
{
    std::vector<TensorId> out;
    for (size_t i = 0; i < mask.size(); ++i)
        if (mask[i])
            out.push_back(TensorId(i));
    return out;
}

Expected<schedule::Schedule> lowerCheckpointSet(const GraphFacts &facts,
                                                const std::vector<TensorId> &keep,
                                                const std::vector<Pin> &pins)
{
    REMAT_ASSIGN_OR_RETURN(std::vector<char> mask, keepMask(facts, keep, pins));
    return lowerKeepMask(facts, std::move(mask));
}

/// lowerKeepMask's passes, run in order by run(); each reads what the earlier ones left in the
/// members. Declared a friend of GraphFacts (lowering.h) to read its per-tensor facts.
class Lowering
{
public:
    Lowering(const GraphFacts &facts, std::vector<char> kept)
        : m_facts(facts), m_g(facts.graph()), m_tensors(m_g.tensors()), m_nt(m_g.tensorCount()),
          m_nf(facts.m_forwardOps), m_lossEnd(facts.m_lossEnd), m_n(facts.m_opCount),
          m_fwd(facts.m_fwd), m_lastFwd(facts.m_lastFwdUse), m_firstBwd(facts.m_firstBwdUse),
          m_lastBwd(facts.m_lastBwdUse), m_lastUse(facts.m_lastUse), m_kept(std::move(kept)),
          m_uf(m_nt)
    {
    }

    Expected<schedule::Schedule> run()
    {
        if (m_kept.size() != m_nt)
            return makeError(StatusCode::InvalidArgument, "keep mask has the wrong size");
        normaliseKeepMask();
        buildSegments();
        placeReleases();
        emitForward();
        REMAT_RETURN_IF_ERROR(emitBackward());
        return std::move(m_s);
    }

private:
    static constexpr int32_t kNever = INT32_MAX;

    /// Recomputing an op re-creates all its outputs, so they are kept or dropped together; a
    /// kept tensor nothing in backward reads is an ordinary forward temporary.
    void normaliseKeepMask()
    {
        for (size_t t = 0; t < m_nt; ++t)
            if (m_kept[t] && m_fwd[t])
                for (TensorId u : m_g.op(tensors_(m_g, t).producer).outputs)
                    if (m_lastUse[u.index()] >= 0)
                        m_kept[u.index()] = 1;
        for (size_t t = 0; t < m_nt; ++t)
            if (m_kept[t] && (!m_fwd[t] || m_lastUse[t] < 0))
                m_kept[t] = 0;
    }

    /// Segments: components of non-kept forward tensors joined through forward ops; per segment
    /// the first backward op that reads it (recomputeAt) and the dropped tensors backward reads,
    /// grouped by segment (in m_bwdNeeded order within one), so a recompute visits only its own
    /// segment's, not every backward-read tensor.
    void buildSegments()
    {
        for (int32_t i = 0; i < m_nf; ++i) {
            const training::Op &op = m_g.ops()[i];
            int32_t first = -1;
            auto join = [&](TensorId t) {
                if (!m_fwd[t.index()] || m_kept[t.index()])
                    return;
                if (first < 0)
                    first = t.value;
                else
                    m_uf.unite(first, t.value);
            };
            for (TensorId t : op.outputs)
                join(t);
            for (TensorId t : op.inputs)
                join(t);
        }
        m_recomputeAt.assign(m_nt, kNever);
        m_groupStart.assign(m_nt + 1, 0);
        std::vector<int32_t> rootOf;
        rootOf.reserve(m_facts.m_bwdNeeded.size());
        for (TensorId t : m_facts.m_bwdNeeded) {
            if (m_kept[t.index()]) {
                rootOf.push_back(-1);
                continue;
            }
            const int32_t root = m_uf.find(t.value);
            rootOf.push_back(root);
            m_groupStart[root + 1] += 1;
            int32_t &r = m_recomputeAt[root];
            r = std::min(r, m_firstBwd[t.index()]);
        }
        for (size_t k = 0; k < m_nt; ++k)
            m_groupStart[k + 1] += m_groupStart[k];
        m_grouped.resize(m_groupStart[m_nt]);
        std::vector<int32_t> fill(m_groupStart.begin(), m_groupStart.end() - 1);
        for (size_t k = 0; k < rootOf.size(); ++k)
            if (rootOf[k] >= 0)
                m_grouped[fill[rootOf[k]]++] = m_facts.m_bwdNeeded[k].value;
    }

    /// The release point in backward of every tensor resident there (-1: freed in forward); kept
    /// tensors that feed a segment stay until that segment is recomputed, and a kept tensor
    /// nothing after the forward needs is dropped from the keep set.
    void placeReleases()
    {
        m_release.assign(m_nt, -1);
        for (TensorId t : m_facts.m_candidates) {
            const size_t ti = t.index();
            if (!m_kept[ti])
                m_release[ti] = m_lastBwd[ti];
            else
                m_release[ti] = std::max(m_release[ti], m_lastBwd[ti]);
        }
        for (int32_t i = 0; i < m_nf; ++i) {
            const training::Op &op = m_g.ops()[i];
            int32_t when = kNever;
            for (TensorId t : op.outputs)
                if (m_fwd[t.index()] && !m_kept[t.index()])
                    when = std::min(when, m_recomputeAt[m_uf.find(t.value)]);
            if (when == kNever)
                continue;
            for (TensorId t : op.inputs)
                if (m_fwd[t.index()] && m_kept[t.index()])
                    m_release[t.index()] = std::max(m_release[t.index()], when);
        }
        for (size_t t = 0; t < m_nt; ++t)
            if (m_kept[t] && m_release[t] < 0)
                m_kept[t] = 0;
    }

    bool keepForever(size_t t) const
    {
        return m_tensors[t].preloaded || m_tensors[t].requiredAtEnd;
    }

    void freeTensor(TensorId t)
    {
        if (m_resident[t.index()] && !keepForever(t.index())) {
            m_s.free(t);
            m_resident[t.index()] = 0;
        }
    }

    /// Forward and loss: every op once; a dropped tensor is freed after its last forward read
    /// (or at once when only backward reads it), a kept one stays.
    void emitForward()
    {
        m_s.steps.reserve(static_cast<size_t>(m_n) * 3);
        m_resident.assign(m_nt, 0);
        for (size_t t = 0; t < m_nt; ++t)
            m_resident[t] = m_tensors[t].preloaded ? 1 : 0;
        m_s.phase(schedule::PhaseMark::ForwardBegin);
        for (int32_t i = 0; i < m_lossEnd; ++i) {
            const training::Op &op = m_g.ops()[i];
            m_s.compute(OpId(i));
            for (TensorId t : op.outputs)
                m_resident[t.index()] = 1;
            for (TensorId t : op.outputs) {
                const size_t ti = t.index();
                if (m_lastUse[ti] < 0) {
                    freeTensor(t); // nothing reads it
                } else if (m_fwd[ti] && m_lastFwd[ti] < 0 && !m_kept[ti]) {
                    freeTensor(t); // only backward reads it, and it is recomputed there
                }
            }
            for (TensorId t : op.inputs) {
                const size_t ti = t.index();
                if (m_lastFwd[ti] != i || !m_resident[ti])
                    continue;
                if (m_fwd[ti] ? !m_kept[ti] : m_lastUse[ti] == i)
                    freeTensor(t);
            }
        }
        m_s.phase(schedule::PhaseMark::BackwardBegin);
    }

    /// Backward op at which tensor t is freed (-1: not freed in backward).
    int32_t freePoint(size_t t) const
    {
        if (keepForever(t))
            return -1;
        if (m_fwd[t])
            return m_release[t] >= m_lossEnd ? m_release[t] : -1;
        return m_lastUse[t] >= m_lossEnd ? m_lastUse[t] : -1;
    }

    /// Tensors to free after each backward op, in tensor order (one flat array, no per-op lists).
    void buildFreeLists()
    {
        m_freeStart.assign(static_cast<size_t>(m_n) + 1, 0);
        for (size_t t = 0; t < m_nt; ++t)
            if (const int32_t at = freePoint(t); at >= 0)
                m_freeStart[at + 1] += 1;
        for (int32_t i = 0; i < m_n; ++i)
            m_freeStart[i + 1] += m_freeStart[i];
        m_freeList.assign(static_cast<size_t>(m_freeStart[m_n]), TensorId());
        std::vector<int32_t> fill(m_freeStart.begin(), m_freeStart.end() - 1);
        for (size_t t = 0; t < m_nt; ++t)
            if (const int32_t at = freePoint(t); at >= 0)
                m_freeList[fill[at]++] = TensorId(t);
    }

    /// Backward: each segment is recomputed once, just before the first op that reads it.
    Status emitBackward()
    {
        buildFreeLists();
        m_done.assign(static_cast<size_t>(m_nf), 0);
        m_useInClosure.assign(m_nt, -1);
        for (int32_t i = m_lossEnd; i < m_n; ++i) {
            const training::Op &op = m_g.ops()[i];
            for (TensorId need : op.inputs) {
                const size_t ni = need.index();
                if (m_resident[ni])
                    continue;
                if (!m_fwd[ni] || m_kept[ni])
                    return makeError(StatusCode::Internal, "lowering: '" + m_tensors[ni].name +
                                                               "' is not resident at '" + op.name +
                                                               "'");
                REMAT_RETURN_IF_ERROR(recomputeSegmentOf(need, i));
            }
            m_s.compute(OpId(i));
            for (TensorId t : op.outputs)
                m_resident[t.index()] = 1;
            for (TensorId t : op.outputs)
                if (m_lastUse[t.index()] < 0)
                    freeTensor(t);
            for (int32_t k = m_freeStart[i]; k < m_freeStart[i + 1]; ++k)
                freeTensor(m_freeList[k]);
        }
        m_s.phase(schedule::PhaseMark::End);
        return Status::ok();
    }

    /// Recomputes the whole segment of `need` before backward op `at`: every tensor of it that
    /// backward still reads, plus whatever they are computed from inside the segment, in op
    /// order; each is freed after its last read there unless backward reads it later.
    Status recomputeSegmentOf(TensorId need, int32_t at)
    {
        const int32_t root = m_uf.find(need.value);
        m_closure.clear();
        m_stack.clear();
        for (int32_t k = m_groupStart[root]; k < m_groupStart[root + 1]; ++k)
            if (!m_resident[m_grouped[k]])
                m_stack.push_back(static_cast<int32_t>(m_tensors[m_grouped[k]].producer.index()));
        while (!m_stack.empty()) {
            const int32_t o = m_stack.back();
            m_stack.pop_back();
            if (m_done[o])
                continue;
            m_done[o] = 1;
            m_closure.push_back(o);
            for (TensorId in : m_g.ops()[o].inputs)
                if (!m_resident[in.index()]) {
                    if (!m_fwd[in.index()])
                        return makeError(StatusCode::Internal,
                                         "lowering: '" + m_tensors[in.index()].name +
                                             "' is needed for a recompute but not resident");
                    m_stack.push_back(static_cast<int32_t>(m_tensors[in.index()].producer.index()));
                }
        }
        std::sort(m_closure.begin(), m_closure.end());
        for (int32_t o : m_closure)
            for (TensorId in : m_g.ops()[o].inputs)
                m_useInClosure[in.index()] = std::max(m_useInClosure[in.index()], o);
        for (int32_t o : m_closure) {
            const training::Op &rop = m_g.ops()[o];
            m_s.compute(OpId(o));
            for (TensorId t : rop.outputs)
                m_resident[t.index()] = 1;
            auto retire = [&](TensorId t) {
                const size_t ti = t.index();
                if (m_kept[ti] || !m_fwd[ti])
                    return;
                if (m_lastBwd[ti] >= at)
                    return; // backward still reads it
                if (m_useInClosure[ti] > o)
                    return; // a later recomputed op reads it
                freeTensor(t);
            };
            for (TensorId t : rop.outputs)
                retire(t);
            for (TensorId t : rop.inputs)
                if (m_useInClosure[t.index()] == o)
                    retire(t);
        }
        for (int32_t o : m_closure) {
            m_done[o] = 0;
            for (TensorId in : m_g.ops()[o].inputs)
                m_useInClosure[in.index()] = -1;
        }
        return Status::ok();
    }

    const GraphFacts &m_facts;
    const TrainingGraph &m_g;
    const std::vector<training::Tensor> &m_tensors;
    const size_t m_nt;
    const int32_t m_nf, m_lossEnd, m_n;
    const std::vector<bool> &m_fwd;
    const std::vector<int32_t> &m_lastFwd, &m_firstBwd, &m_lastBwd, &m_lastUse;
    std::vector<char> m_kept;
    // buildSegments
    UnionFind m_uf;
    std::vector<int32_t> m_recomputeAt; ///< per segment root: first backward op reading it
    std::vector<int32_t> m_groupStart, m_grouped;
    // placeReleases
    std::vector<int32_t> m_release;
    // emitForward / emitBackward
    schedule::Schedule m_s;
    std::vector<char> m_resident;
    std::vector<int32_t> m_freeStart;
    std::vector<TensorId> m_freeList;
    // recomputeSegmentOf's scratch, reused across segments
    std::vector<char> m_done;
    std::vector<int32_t> m_closure, m_stack, m_useInClosure;
};

Expected<schedule::Schedule> lowerKeepMask(const GraphFacts &facts, std::vector<char> kept)
{
    return Lowering(facts, std::move(kept)).run();
}

Expected<schedule::Schedule> scheduleFromSequence(const TrainingGraph &g,
                                                  const std::vector<OpId> &sequence)
{
    const size_t nt = g.tensorCount();
    const auto &tensors = g.tensors();
    // For every occurrence of a read, the next production of that tensor decides whether this
    // instance is still needed: free it after its last read before it is produced again.
    std::vector<int32_t> lastRead(nt, -1);   // per tensor: step of its latest read so far
    std::vector<int32_t> producedAt(nt, -1); // per tensor: sequence index of the live instance
    std::vector<std::vector<TensorId>> freeAfter(sequence.size());
    std::vector<char> resident(nt, 0);
    for (size_t t = 0; t < nt; ++t)
        resident[t] = tensors[t].preloaded ? 1 : 0;
    auto closeInstance = [&](size_t t) {
        if (tensors[t].preloaded || tensors[t].requiredAtEnd)
            return;
        const int32_t at = lastRead[t] >= producedAt[t] ? lastRead[t] : producedAt[t];
        freeAfter[at].push_back(TensorId(t));
    };
    for (size_t i = 0; i < sequence.size(); ++i) {
        if (!sequence[i].valid() || sequence[i].index() >= g.opCount())
            return makeError(StatusCode::InvalidArgument, "sequence names an unknown op");
        const training::Op &op = g.op(sequence[i]);
        for (TensorId t : op.inputs) {
            if (!resident[t.index()])
                return makeError(StatusCode::Internal, "sequence: op '" + op.name +
                                                           "' at position " + std::to_string(i) +
                                                           " reads '" + tensors[t.index()].name +
                                                           "' before it is computed");
            lastRead[t.index()] = static_cast<int32_t>(i);
        }
        for (TensorId t : op.outputs) {
            if (resident[t.index()] && producedAt[t.index()] >= 0)
                closeInstance(t.index());
            resident[t.index()] = 1;
            producedAt[t.index()] = static_cast<int32_t>(i);
            lastRead[t.index()] = -1;
        }
    }
    for (size_t t = 0; t < nt; ++t)
        if (resident[t] && producedAt[t] >= 0)
            closeInstance(t);
    int32_t lastLoss = -1;
    for (size_t i = 0; i < sequence.size(); ++i)
        if (g.op(sequence[i]).phase == training::Phase::Loss)
            lastLoss = static_cast<int32_t>(i);
    schedule::Schedule s;
    s.steps.reserve(sequence.size() * 2 + 3);
    s.phase(schedule::PhaseMark::ForwardBegin);
    for (size_t i = 0; i < sequence.size(); ++i) {
        s.compute(sequence[i]);
        // A re-production frees the old instance first; its frees were placed at its last read,
        // which is earlier, so the order below is always free-after-last-read.
        for (TensorId t : freeAfter[i])
            s.free(t);
        if (static_cast<int32_t>(i) == lastLoss)
            s.phase(schedule::PhaseMark::BackwardBegin);
    }
    s.phase(schedule::PhaseMark::End);
    return s;
}

} // namespace remat::core::solvers
