#include "core/solvers/chain_support.h"

#include <algorithm>

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

} // namespace remat::core::solvers
