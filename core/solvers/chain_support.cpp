#include "core/solvers/chain_support.h"

#include "core/solvers/plan_builder.h"

#include <algorithm>
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

void appendBackward(const StageOps &ops, size_t stage, std::vector<OpId> *seq)
{
    seq->insert(seq->end(), ops.backward[stage].begin(), ops.backward[stage].end());
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
