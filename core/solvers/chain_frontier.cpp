#include "core/solvers/chain_frontier.h"

#include "core/sim/simulator.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"
#include "core/solvers/rotor_table.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <new>
#include <unordered_set>

namespace remat::core::solvers {

namespace {

int64_t peakOf(const sim::Timeline &t, FrontierMemory memory)
{
    return memory == FrontierMemory::Activation ? t.activationPeakBytes : t.peakBytes;
}

/// Whether every stage holds at most one op on the data path (ops computing from weights alone
/// do not count): then a stage's tape is one op's and the DP's all-or-nothing choice per stage
/// loses nothing.
bool oneDataOpPerStage(const ChainView &view, const GraphFacts &facts)
{
    for (size_t k = 0; k < view.stageCount(); ++k) {
        int dataOps = 0;
        for (int32_t i = view.stageBegin[k]; i < view.stageBegin[k + 1]; ++i) {
            bool data = false;
            for (TensorId t : facts.graph().op(OpId(i)).outputs)
                data = data || (facts.isForwardTensor(t) && !facts.weightDerived(t));
            dataOps += data ? 1 : 0;
        }
        if (dataOps > 1)
            return false;
    }
    return true;
}

/// FNV-1a over the op ids: equal sequences, equal hashes (a collision would only skip a plan).
uint64_t sequenceHash(const std::vector<OpId> &sequence)
{
    uint64_t h = 1469598103934665603ull;
    for (OpId op : sequence) {
        h ^= uint64_t(op.index());
        h *= 1099511628211ull;
    }
    return h;
}

/// The candidates of a graph without an optimizer step (points left empty): store-all, then
/// the DP's breakpoints for each chain view and transient model in turn.
Expected<ChainFrontier> frontierCandidates(const SolveRequest &request,
                                           const ChainFrontierOptions &options)
{
    SolveRequest r = request;
    r.objective = Objective::MinPeak; // the builder checks the request; no budget is read
    PlanBuilder pb("chain frontier", r);
    REMAT_RETURN_IF_ERROR(pb.init());
    if (!r.pins.empty())
        return makeError(StatusCode::Unsupported,
                         "chain frontier: pins are not supported (rotor's DP has no pins); drop "
                         "them, or solve one budget with pins (remat solve --solver ID --pin ...)");
    ChainFrontier f;
    REMAT_ASSIGN_OR_RETURN(Plan storeAll, storeAllPlan(r));
    f.candidates.push_back({"store-all", -1, 0, std::move(storeAll.schedule), storeAll.timeline});

    std::vector<ChainKind> kinds{ChainKind::Articulation};
    if (options.linearized)
        kinds.push_back(ChainKind::Linearized);
    std::vector<RotorTransients> transients{RotorTransients::Estimate};
    if (options.tapeOptions > 1)
        transients.push_back(RotorTransients::Walked);
    std::unordered_set<uint64_t> seen; // hashes of the sequences already simulated
    std::vector<int32_t> firstCuts;
    bool first = true;
    for (ChainKind kind : kinds) {
        const ChainView view = pb.facts().chainView(r.costs, kind);
        REMAT_RETURN_IF_ERROR(requireChain(view, "chain frontier"));
        if (!first && view.stageBegin == firstCuts)
            continue; // the linearized view cut where the articulation points are
        firstCuts = view.stageBegin;
        StageOps ops = stageOps(view, pb.facts());
        addStageOptions(ops, view, pb.facts(), r.costs, options.tapeOptions);
        for (RotorTransients model : transients) {
            const RotorChain chain =
                rotorChain(view, pb.facts(), ops, options.slotCount, 1'000'000, 6e7, model);
            if (first) {
                f.stages = view.stageCount();
                f.opChain = kind == ChainKind::Articulation && oneDataOpPerStage(view, pb.facts());
                f.slotCount = chain.slotCount;
                f.slotBytes = chain.unit;
            }
            first = false;
            ++f.tables;
            const double tableStart = pb.elapsed();
            RotorTable table(chain);
            if (!table.compute(r.stop))
                return makeError(StatusCode::Cancelled, "chain frontier: cancelled");
            f.tableSeconds += pb.elapsed() - tableStart;
            const std::string source =
                std::string("rotor-dp (") +
                (kind == ChainKind::Articulation ? "articulation" : "linearized") + " chain, " +
                (model == RotorTransients::Estimate ? "estimated" : "walked") + " transients)";
            const int last = chain.L - 1;
            float previous = RotorTable::kInfinity;
            for (int m = 0; m <= chain.slotCount; ++m) {
                const float time = table.opt(m, 0, last);
                if (!(time < previous))
                    continue;
                previous = time;
                ++f.breakpoints;
                if (pb.cancelled())
                    return makeError(StatusCode::Cancelled, "chain frontier: cancelled");
                if (pb.timedOut()) {
                    f.complete = false;
                    break;
                }
                const std::vector<OpId> sequence = table.sequence(m, ops);
                if (!seen.insert(sequenceHash(sequence)).second)
                    continue; // the same plan from another memory, view or model
                REMAT_ASSIGN_OR_RETURN(schedule::Schedule sched,
                                       scheduleFromSequence(pb.graph(), sequence));
                REMAT_ASSIGN_OR_RETURN(sim::Timeline t, pb.simulate(sched));
                f.candidates.push_back({source, m, double(time), std::move(sched), t});
            }
        }
    }
    return f;
}

} // namespace

std::vector<FrontierPoint> nonDominated(std::vector<FrontierPoint> plans, FrontierMemory memory)
{
    std::stable_sort(plans.begin(), plans.end(),
                     [&](const FrontierPoint &a, const FrontierPoint &b) {
                         const int64_t pa = peakOf(a.timeline, memory);
                         const int64_t pb = peakOf(b.timeline, memory);
                         if (pa != pb)
                             return pa < pb;
                         return a.timeline.recomputeSeconds < b.timeline.recomputeSeconds;
                     });
    std::vector<FrontierPoint> out;
    for (FrontierPoint &p : plans) {
        const double r = p.timeline.recomputeSeconds;
        if (!out.empty()) {
            const double best = out.back().timeline.recomputeSeconds;
            if (r >= best - 1e-9 * best)
                continue; // a lower or equal peak already recomputes no more
        }
        out.push_back(std::move(p));
    }
    return out;
}

Expected<ChainFrontier> chainFrontier(const SolveRequest &request,
                                      const ChainFrontierOptions &options)
{
    const auto begin = std::chrono::steady_clock::now();
    try {
        ChainFrontier f;
        if (request.graph && request.costs && request.graph->optimizerOpCount() > 0 &&
            request.costs->opSeconds.size() == request.graph->opCount()) {
            // As Solver::solve: the update ops run after any plan, on state every plan keeps.
            const training::TrainingGraph &full = *request.graph;
            REMAT_ASSIGN_OR_RETURN(const WithoutOptimizerStep inner, withoutOptimizerStep(request));
            REMAT_ASSIGN_OR_RETURN(f, frontierCandidates(inner.request(request), options));
            for (FrontierPoint &p : f.candidates) {
                appendOptimizerStep(p.schedule, full);
                REMAT_ASSIGN_OR_RETURN(p.timeline,
                                       sim::simulate(p.schedule, full, *request.costs,
                                                     {.recordPoints = false, .validate = true}));
            }
        } else {
            REMAT_ASSIGN_OR_RETURN(f, frontierCandidates(request, options));
        }
        f.points = nonDominated(f.candidates, options.memory);
        f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        return f;
    } catch (const std::bad_alloc &) {
        return makeError(StatusCode::ResourceExhausted,
                         "chain frontier: ran out of host memory for the DP table "
                         "(std::bad_alloc); ask for fewer slots");
    }
}

} // namespace remat::core::solvers
