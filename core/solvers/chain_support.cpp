#include "core/solvers/chain_support.h"

#include "core/solvers/plan_builder.h"

#include "core/training/training_graph.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace remat::core::solvers {

ChainPins chainPins(const ChainView &view, const GraphFacts &facts, const std::vector<Pin> &pins)
{
    const size_t n = view.boundaryCount();
    ChainPins cp;
    cp.forced.assign(n, 0);
    cp.forbidden.assign(n, 0);
    std::vector<char> keepPin(facts.graph().tensorCount(), 0), recomputePin(keepPin.size(), 0);
    for (const Pin &p : pins) {
        if (!p.tensor.valid() || p.tensor.index() >= keepPin.size())
            continue;
        if (p.kind == PinKind::Keep)
            keepPin[p.tensor.index()] = 1;
        else if (p.kind == PinKind::Recompute)
            recomputePin[p.tensor.index()] = 1;
    }
    for (size_t k = 0; k < n; ++k) {
        bool allKept = !view.boundarySets[k].empty();
        for (TensorId t : view.boundarySets[k]) {
            if (recomputePin[t.index()])
                cp.forbidden[k] = 1;
            if (!keepPin[t.index()])
                allKept = false;
        }
        cp.forced[k] = allKept && !cp.forbidden[k];
    }
    return cp;
}

std::vector<TensorId> keepFromBoundaries(const ChainView &view, const std::vector<int> &chosen)
{
    std::vector<TensorId> keep;
    for (int k : chosen)
        keep.insert(keep.end(), view.boundarySets[k].begin(), view.boundarySets[k].end());
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    return keep;
}

StageOps stageOps(const ChainView &view, const GraphFacts &facts)
{
    StageOps s;
    const size_t L = view.stageCount();
    s.forward.resize(L);
    s.backward.resize(L);
    for (size_t k = 0; k < L; ++k)
        for (int32_t i = view.stageBegin[k]; i < view.stageBegin[k + 1]; ++i)
            s.forward[k].push_back(OpId(i));
    for (int32_t i = facts.forwardOps(); i < facts.lossEnd(); ++i)
        s.loss.push_back(OpId(i));
    for (int32_t i = facts.lossEnd(); i < facts.opCount(); ++i)
        s.backward[view.stageOfOp[i]].push_back(OpId(i));
    return s;
}

void appendForward(const StageOps &ops, size_t stage, std::vector<OpId> *seq, bool *lossDone)
{
    seq->insert(seq->end(), ops.forward[stage].begin(), ops.forward[stage].end());
    if (stage + 1 == ops.forward.size() && !*lossDone) {
        seq->insert(seq->end(), ops.loss.begin(), ops.loss.end());
        *lossDone = true;
    }
}

void appendBackward(const StageOps &ops, size_t stage, std::vector<OpId> *seq, int option)
{
    const std::vector<OpId> &b = stage < ops.options.size() && option > 0
                                     ? ops.options[stage][size_t(option)].backward
                                     : ops.backward[stage];
    seq->insert(seq->end(), b.begin(), b.end());
}

namespace {

/// One stage's option search (addStageOptions): the tape as a function of the set S of dropped
/// ops, kept incrementally.
class StageOptionSearch
{
public:
    StageOptionSearch(const ChainView &view, const GraphFacts &facts, const StageOps &ops,
                      const cost::Costs *costs, size_t stage)
        : m_facts(facts), m_g(facts.graph()), m_ops(ops), m_stage(stage)
    {
        const int32_t begin = view.stageBegin[stage], end = view.stageBegin[stage + 1];
        const int32_t cut = end - 1;
        const bool last = stage + 1 == view.stageCount();
        for (int32_t i = begin; i < end; ++i) {
            const training::Op &op = m_g.ops()[size_t(i)];
            Local l;
            l.id = OpId(i);
            l.seconds =
                costs && size_t(i) < costs->opSeconds.size() ? costs->opSeconds[size_t(i)] : 1.0;
            for (TensorId t : op.outputs) {
                if (!m_facts.isForwardTensor(t))
                    continue;
                // Alive across the stage's end (its output boundary, or what the loss reads):
                // kept by the chain, so its op is never dropped here. As in the view's tape
                // (ChainView::tapeBytes), what the loss reads counts in the last stage's tape.
                const int32_t lastUse = m_facts.lastForwardUse(t);
                if (last && lastUse >= m_facts.forwardOps())
                    l.droppable = false;
                if (!last && lastUse > cut) {
                    l.droppable = false;
                    m_acrossEnd.push_back(t);
                }
                if (m_facts.weightDerived(t))
                    l.droppable = false;
            }
            m_local.push_back(std::move(l));
        }
        m_begin = begin;
        m_outputBytes = stage + 1 < view.stageCount() ? view.boundaryBytes[stage] : 0;
        if (last)
            for (OpId l : ops.loss)
                for (TensorId t : m_g.op(l).inputs)
                    if (m_facts.isForwardTensor(t))
                        m_outputBytes += m_g.tensor(t).bytes;
        m_inS.assign(m_local.size(), 0);
        m_readsByS.assign(m_g.tensorCount(), 0);
        m_lastRead.assign(m_g.tensorCount(), -1);
        m_inSequence.assign(m_g.opCount(), 0);
        m_counted.assign(m_g.tensorCount(), 0);
        m_seen.assign(m_local.size(), 0);
        reset();
    }

    /// Greedy walks (two orders: most tape bytes per recompute second, and most tape bytes);
    /// options non-dominated on (tape, recompute), at most maxOptions, the first keeping
    /// everything.
    std::vector<StageOption> run(int maxOptions)
    {
        std::vector<StageOption> all;
        for (bool perSecond : {true, false}) {
            reset();
            all.push_back(current());
            for (;;) {
                double bestScore = 0;
                std::vector<size_t> bestMove;
                if (m_work > kWorkPerStage)
                    break; // a stage of thousands of ops: the options found so far
                for (size_t x = 0; x < m_local.size(); ++x) {
                    if (m_inS[x] || !m_local[x].droppable)
                        continue;
                    std::vector<size_t> move = closure(x);
                    if (move.empty())
                        continue;
                    const int64_t gain = m_tape - tapeWith(move);
                    if (gain <= 0)
                        continue;
                    double seconds = 0;
                    for (size_t y : move)
                        seconds += m_local[y].seconds;
                    const double score =
                        perSecond ? double(gain) / std::max(seconds, 1e-12) : double(gain);
                    if (score > bestScore) {
                        bestScore = score;
                        bestMove = std::move(move);
                    }
                }
                if (bestMove.empty())
                    break;
                m_tape = tapeWith(bestMove);
                for (size_t y : bestMove)
                    add(y);
                all.push_back(current());
            }
        }
        // The whole tape first, always (rotorChain and appendBackward read option 0 as it);
        // then, by ascending tape, an option only if it recomputes less than every smaller
        // tape, and only below the whole tape.
        const StageOption whole = all.front();
        std::vector<StageOption> rest;
        for (StageOption &o : all)
            if (!o.recompute.empty() && o.tapeBytes < whole.tapeBytes)
                rest.push_back(std::move(o));
        std::stable_sort(rest.begin(), rest.end(), [](const StageOption &a, const StageOption &b) {
            return a.tapeBytes != b.tapeBytes ? a.tapeBytes < b.tapeBytes
                                              : a.recomputeSeconds < b.recomputeSeconds;
        });
        std::vector<StageOption> kept;
        for (StageOption &o : rest)
            if (kept.empty() || o.recomputeSeconds < kept.back().recomputeSeconds)
                kept.push_back(std::move(o));
        kept.push_back(whole);
        std::reverse(kept.begin(), kept.end());
        if (maxOptions >= 2 && kept.size() > size_t(maxOptions)) {
            std::vector<StageOption> thin;
            const size_t n = kept.size();
            size_t previous = n;
            for (int k = 0; k < maxOptions; ++k) {
                const size_t pick =
                    size_t(std::lround(double(k) * double(n - 1) / double(maxOptions - 1)));
                if (pick != previous)
                    thin.push_back(kept[pick]);
                previous = pick;
            }
            kept = std::move(thin);
        }
        return kept;
    }

private:
    struct Local
    {
        OpId id;
        double seconds = 0;
        bool droppable = true;
    };

    /// Produced by an op of this stage and not alive across its end (what the view's tape
    /// counts when backward reads it).
    bool interior(TensorId t) const
    {
        return m_facts.isForwardTensor(t) && localOf(t) >= 0 &&
               std::find(m_acrossEnd.begin(), m_acrossEnd.end(), t) == m_acrossEnd.end();
    }
    long localOf(TensorId t) const
    {
        const training::Tensor &tt = m_g.tensor(t);
        if (!tt.producer.valid())
            return -1;
        const long p = long(tt.producer.index()) - m_begin;
        return p >= 0 && size_t(p) < m_local.size() ? p : -1;
    }
    bool inTape(TensorId t) const
    {
        const long p = localOf(t);
        return interior(t) && !m_inS[size_t(p)] &&
               (m_facts.neededByBackward(t) || m_readsByS[t.index()] > 0);
    }
    /// x and the producers x's recompute would otherwise pin into the tape (inputs that are
    /// interior, not dropped and not in the tape yet), transitively.
    std::vector<size_t> closure(size_t x) const
    {
        std::vector<size_t> move{x}, stack{x};
        std::vector<char> &seen = m_seen; // cleared again below
        seen[x] = 1;
        bool pinned = false;
        while (!stack.empty() && !pinned) {
            const size_t y = stack.back();
            stack.pop_back();
            for (TensorId u : m_g.op(m_local[y].id).inputs) {
                const long p = localOf(u);
                if (p < 0 || !interior(u) || m_inS[size_t(p)] || seen[size_t(p)] || inTape(u))
                    continue;
                if (!m_local[size_t(p)].droppable) {
                    pinned = true;
                    break;
                }
                seen[size_t(p)] = 1;
                move.push_back(size_t(p));
                stack.push_back(size_t(p));
            }
        }
        for (size_t y : move)
            seen[y] = 0;
        if (pinned)
            move.clear();
        return move;
    }
    /// The tape with `move` added to S (S itself unchanged).
    int64_t tapeWith(const std::vector<size_t> &move) const
    {
        m_work += move.size();
        std::vector<size_t> ops = move;
        std::sort(ops.begin(), ops.end());
        std::vector<TensorId> reads, touched;
        for (size_t y : move) {
            const training::Op &op = m_g.op(m_local[y].id);
            reads.insert(reads.end(), op.inputs.begin(), op.inputs.end());
            touched.insert(touched.end(), op.outputs.begin(), op.outputs.end());
        }
        std::sort(reads.begin(), reads.end());
        touched.insert(touched.end(), reads.begin(), reads.end());
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        int64_t tape = m_tape;
        for (TensorId t : touched) {
            if (!interior(t))
                continue;
            const size_t p = size_t(localOf(t));
            const auto [lo, hi] = std::equal_range(reads.begin(), reads.end(), t);
            const bool after =
                !m_inS[p] && !std::binary_search(ops.begin(), ops.end(), p) &&
                (m_facts.neededByBackward(t) || m_readsByS[t.index()] + int(hi - lo) > 0);
            tape += ((after ? 1 : 0) - (inTape(t) ? 1 : 0)) * m_g.tensor(t).bytes;
        }
        return tape;
    }
    void reset()
    {
        std::fill(m_inS.begin(), m_inS.end(), 0);
        std::fill(m_readsByS.begin(), m_readsByS.end(), 0);
        m_tape = 0;
        for (const Local &l : m_local)
            for (TensorId t : m_g.op(l.id).outputs)
                if (interior(t) && m_facts.neededByBackward(t))
                    m_tape += m_g.tensor(t).bytes;
    }
    void add(size_t y)
    {
        m_inS[y] = 1;
        for (TensorId u : m_g.op(m_local[y].id).inputs)
            ++m_readsByS[u.index()];
    }
    /// The option S stands for, with its just-in-time backward sequence.
    StageOption current() const
    {
        StageOption o;
        o.tapeBytes = m_tape;
        for (size_t y = 0; y < m_local.size(); ++y)
            if (m_inS[y]) {
                o.recompute.push_back(m_local[y].id);
                o.recomputeSeconds += m_local[y].seconds;
            }
        if (o.recompute.empty()) {
            o.backward = m_ops.backward[m_stage];
            o.backwardPeakBytes = backwardPeak(o.backward);
            return o;
        }
        std::vector<char> done(m_local.size(), 0);
        // Emits y after the dropped producers of its inputs (forward order within the stage).
        auto ensure = [&](size_t y, auto &&self) -> void {
            if (done[y])
                return;
            done[y] = 1;
            for (TensorId u : m_g.op(m_local[y].id).inputs) {
                const long p = localOf(u);
                if (p >= 0 && m_inS[size_t(p)])
                    self(size_t(p), self);
            }
            o.backward.push_back(m_local[y].id);
        };
        for (OpId b : m_ops.backward[m_stage]) {
            for (TensorId u : m_g.op(b).inputs) {
                const long p = localOf(u);
                if (p >= 0 && m_inS[size_t(p)])
                    ensure(size_t(p), ensure);
            }
            o.backward.push_back(b);
        }
        // Recomputed bytes alive at once: from the recompute to its last read in the sequence.
        std::vector<int64_t> delta(o.backward.size() + 1, 0);
        const LastReads lastRead(*this, o.backward);
        for (size_t s = 0; s < o.backward.size(); ++s) {
            const long p = long(o.backward[s].index()) - m_begin;
            if (p < 0 || size_t(p) >= m_local.size() ||
                o.backward[s].index() >= size_t(m_facts.forwardOps()))
                continue;
            for (TensorId t : m_g.op(o.backward[s]).outputs) {
                const long until = std::max(long(s), lastRead[t.index()]);
                delta[s] += m_g.tensor(t).bytes;
                delta[size_t(until) + 1] -= m_g.tensor(t).bytes;
            }
        }
        int64_t alive = 0;
        for (int64_t d : delta) {
            alive += d;
            o.recomputedPeakBytes = std::max(o.recomputedPeakBytes, alive);
        }
        o.backwardPeakBytes = backwardPeak(o.backward);
        return o;
    }

    /// StageOption::backwardPeakBytes of a backward sequence with the current S.
    int64_t backwardPeak(const std::vector<OpId> &seq) const
    {
        const LastReads lastRead(*this, seq);
        // Resident at the start: the tape, the output boundary and its gradient.
        int64_t now = m_tape + 2 * m_outputBytes, peak = now;
        std::vector<char> &counted = m_counted;
        std::vector<TensorId> touched;
        for (const Local &l : m_local)
            for (TensorId t : m_g.op(l.id).outputs)
                if (inTape(t)) {
                    counted[t.index()] = 1;
                    touched.push_back(t);
                }
        auto tracked = [&](TensorId t) {
            const training::Tensor &tt = m_g.tensor(t);
            return tt.role != training::TensorRole::ParameterGrad && !tt.preloaded &&
                   (interior(t) || !m_facts.isForwardTensor(t));
        };
        for (size_t s = 0; s < seq.size(); ++s) {
            const training::Op &op = m_g.op(seq[s]);
            for (TensorId t : op.outputs)
                if (tracked(t) && !counted[t.index()]) {
                    counted[t.index()] = 1;
                    touched.push_back(t);
                    now += m_g.tensor(t).bytes;
                }
            peak = std::max(peak, now);
            auto release = [&](TensorId t) {
                if (counted[t.index()] && lastRead[t.index()] <= long(s) &&
                    m_g.tensor(t).role != training::TensorRole::ActivationGrad) {
                    counted[t.index()] = 0;
                    now -= m_g.tensor(t).bytes;
                }
            };
            for (TensorId u : op.inputs)
                release(u);
            for (TensorId t : op.outputs)
                release(t);
            // Gradients read here for the last time in the stage, produced in it, go too (the
            // stage input's gradient is read by the stage before and stays).
            for (TensorId u : op.inputs) {
                const training::Tensor &tu = m_g.tensor(u);
                if (counted[u.index()] && tu.role == training::TensorRole::ActivationGrad &&
                    lastRead[u.index()] == long(s) && tu.producer.valid() &&
                    lastRead.inSequence(tu.producer) &&
                    std::all_of(tu.consumers.begin(), tu.consumers.end(),
                                [&](OpId c) { return lastRead.inSequence(c); })) {
                    counted[u.index()] = 0;
                    now -= tu.bytes;
                }
            }
        }
        for (TensorId t : touched)
            counted[t.index()] = 0;
        return peak;
    }

    /// Each tensor's last read in a sequence (-1: none) and which ops the sequence holds, on
    /// scratch arrays of the search that are cleared again when it goes out of scope (a stage's
    /// walk asks this once per option; arrays over the whole graph each time would cost more
    /// than the walk on graphs of thousands of ops).
    class LastReads
    {
    public:
        LastReads(const StageOptionSearch &s, const std::vector<OpId> &seq) : m_s(s), m_seq(seq)
        {
            for (size_t k = 0; k < seq.size(); ++k) {
                m_s.m_inSequence[seq[k].index()] = 1;
                for (TensorId u : m_s.m_g.op(seq[k]).inputs)
                    m_s.m_lastRead[u.index()] = long(k);
            }
        }
        ~LastReads()
        {
            for (OpId op : m_seq) {
                m_s.m_inSequence[op.index()] = 0;
                for (TensorId u : m_s.m_g.op(op).inputs)
                    m_s.m_lastRead[u.index()] = -1;
            }
        }
        LastReads(const LastReads &) = delete;
        LastReads &operator=(const LastReads &) = delete;
        long operator[](size_t tensor) const { return m_s.m_lastRead[tensor]; }
        bool inSequence(OpId op) const { return m_s.m_inSequence[op.index()] != 0; }

    private:
        const StageOptionSearch &m_s;
        const std::vector<OpId> &m_seq;
    };

    const GraphFacts &m_facts;
    const training::TrainingGraph &m_g;
    const StageOps &m_ops;
    size_t m_stage;
    int32_t m_begin = 0;
    std::vector<Local> m_local;
    std::vector<char> m_inS;
    std::vector<int> m_readsByS;
    int64_t m_tape = 0;
    int64_t m_outputBytes = 0;
    std::vector<TensorId> m_acrossEnd; ///< the stage's tensors alive across its end (few)
    // Scratch over the whole graph, all clear between uses (LastReads, backwardPeak).
    mutable std::vector<long> m_lastRead;
    mutable std::vector<char> m_inSequence, m_counted, m_seen;
    /// Ops the walks have evaluated in candidate moves; past kWorkPerStage a walk stops (about
    /// a tenth of a second).
    mutable size_t m_work = 0;
    static constexpr size_t kWorkPerStage = size_t(1) << 23;
};

} // namespace

void addStageOptions(StageOps &ops, const ChainView &view, const GraphFacts &facts,
                     const cost::Costs *costs, int maxOptions)
{
    ops.options.clear();
    ops.options.resize(view.stageCount());
    for (size_t k = 0; k < view.stageCount(); ++k) {
        StageOptionSearch search(view, facts, ops, costs, k);
        ops.options[k] = search.run(std::max(1, maxOptions));
        if (maxOptions <= 1)
            ops.options[k].resize(1);
    }
}

Status requireChain(const ChainView &view, const std::string &solverId)
{
    if (view.stageCount() == 0)
        return makeError(StatusCode::InvalidArgument, solverId + ": the graph has no forward ops");
    return Status::ok();
}

namespace {

/// Smaller is better: (over budget, first key, second key).
using CutScore = std::tuple<int, double, double>;

CutScore scoreOf(const sim::Timeline &t, const SolveRequest &r)
{
    if (r.objective == Objective::MinPeak)
        return {0, double(t.peakBytes), t.recomputeSeconds};
    if (t.peakBytes > r.budgetBytes)
        return {1, double(t.peakBytes), t.recomputeSeconds};
    return {0, t.recomputeSeconds, double(t.peakBytes)};
}

} // namespace

Expected<std::vector<int>> refineCuts(PlanBuilder &pb, const ChainView &view, const ChainPins &cp,
                                      std::vector<int> chosen, int maxEvaluations, bool *stopped)
{
    if (stopped)
        *stopped = false;
    const size_t n = view.boundaryCount();
    std::vector<char> in(n, 0);
    for (int k : chosen)
        in[size_t(k)] = 1;
    auto cutsOf = [&](const std::vector<char> &mask) {
        std::vector<int> cuts;
        for (size_t k = 0; k < n; ++k)
            if (mask[k])
                cuts.push_back(static_cast<int>(k));
        return cuts;
    };
    REMAT_ASSIGN_OR_RETURN(sim::Timeline start,
                           pb.offerCheckpoints(keepFromBoundaries(view, cutsOf(in)), 0));
    CutScore best = scoreOf(start, pb.request());
    int evaluations = 0;
    // Tries `mask`; takes it when better. False once the evaluations or the time run out.
    auto attempt = [&](std::vector<char> &mask, bool &taken) -> Expected<bool> {
        taken = false;
        if (evaluations >= maxEvaluations)
            return false;
        if (pb.shouldStop(-1, "local search on the cuts")) {
            if (stopped)
                *stopped = true;
            return false;
        }
        ++evaluations;
        auto t = pb.offerCheckpoints(keepFromBoundaries(view, cutsOf(mask)), 0);
        if (!t)
            return true; // a candidate the lowering refuses is just not taken
        const CutScore s = scoreOf(*t, pb.request());
        if (s < best) {
            best = s;
            in = mask;
            taken = true;
        }
        return true;
    };
    for (bool improved = true; improved;) {
        improved = false;
        for (size_t k = 0; k < n; ++k) {
            std::vector<std::vector<char>> moves;
            if (in[k] && !cp.forced[k]) {
                moves.push_back(in);
                moves.back()[k] = 0;
                for (int d : {-1, 1}) {
                    const long j = long(k) + d;
                    if (j < 0 || j >= long(n) || in[size_t(j)] || cp.forbidden[size_t(j)])
                        continue;
                    moves.push_back(in);
                    moves.back()[k] = 0;
                    moves.back()[size_t(j)] = 1;
                }
            } else if (!in[k] && !cp.forbidden[k]) {
                moves.push_back(in);
                moves.back()[k] = 1;
            }
            for (auto &m : moves) {
                bool taken = false;
                REMAT_ASSIGN_OR_RETURN(bool more, attempt(m, taken));
                if (!more)
                    return cutsOf(in);
                if (taken) {
                    improved = true;
                    break;
                }
            }
        }
    }
    return cutsOf(in);
}

} // namespace remat::core::solvers
