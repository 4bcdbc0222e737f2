#include "core/solvers/chain_frontier.h"

#include "core/sim/simulator.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"
#include "core/solvers/rotor_table.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <new>
#include <tuple>
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

/// The exact frontier over checkpoint sets of a plain chain (one data op per stage), as the
/// lowering runs them (lowering.h: every dropped run of boundaries recomputed once).
/// Positions 0..L-2 are the boundaries, L-1 the network output, L the end; a plan keeps some
/// positions. The peak of a plan decomposes: at stage i's forward, the kept boundaries before
/// i-1 plus what the stage holds itself; in the backward of the stages between two kept
/// positions c < d, the kept boundaries before c plus what that segment holds. Both local terms
/// are read off simulations (every boundary kept; every boundary but those between c and d
/// kept), so the DP over (last kept position, bytes kept before it) with (peak, recompute)
/// labels is exact when the decomposition holds; every plan it returns is simulated, and the
/// frontier is called exact only when each simulated figure equals the DP's.
struct ExactChainResult
{
    std::vector<FrontierPoint> points;
    bool exact = false; ///< every DP figure equal to the simulator's, no label cap hit
    int mismatches = 0; ///< plans whose simulated figures differ from the DP's
};

Expected<ExactChainResult> exactChainFrontier(PlanBuilder &pb, const ChainView &view,
                                              FrontierMemory memory)
{
    const GraphFacts &facts = pb.facts();
    const training::TrainingGraph &g = pb.graph();
    const int L = static_cast<int>(view.stageCount());
    ExactChainResult out;
    if (L < 2)
        return out;
    // The positions' tensors: boundaries, then the network output.
    std::vector<std::vector<TensorId>> sets(view.boundarySets.begin(), view.boundarySets.end());
    sets.emplace_back();
    for (int32_t i = facts.forwardOps(); i < facts.lossEnd(); ++i)
        for (TensorId t : g.op(OpId(i)).inputs)
            if (facts.isForwardTensor(t))
                sets.back().push_back(t);
    const int P = L; // positions 0..L-1
    // Bytes a kept position holds through the backward: its tensors (siblings joined) that
    // backward reads.
    // A kept position that starts a dropped run is also the run's recompute source: the rest
    // of its tensors stay until that recompute (sourceOnly).
    std::vector<int64_t> kept(P, 0), sourceOnly(P, 0);
    for (int k = 0; k < P; ++k) {
        REMAT_ASSIGN_OR_RETURN(std::vector<char> mask, keepMask(facts, sets[size_t(k)], {}));
        for (TensorId t : maskToList(mask))
            (facts.neededByBackward(t) ? kept : sourceOnly)[size_t(k)] += g.tensor(t).bytes;
    }
    std::vector<int64_t> keptBefore(P + 1, 0); // sum of kept[k] for k < i
    for (int k = 0; k < P; ++k)
        keptBefore[size_t(k) + 1] = keptBefore[size_t(k)] + kept[size_t(k)];
    auto stepBytes = [&](const sim::TimelinePoint &pt) {
        if (memory == FrontierMemory::Total)
            return pt.peakDuringStep;
        return pt.peakDuringStep -
               pt.byCategory[static_cast<size_t>(schedule::MemCategory::Weights)] -
               pt.byCategory[static_cast<size_t>(schedule::MemCategory::MasterWeights)] -
               pt.byCategory[static_cast<size_t>(schedule::MemCategory::OptimizerState)] -
               pt.byCategory[static_cast<size_t>(schedule::MemCategory::WeightGrads)];
    };
    // Simulates the plan keeping every position but those strictly between c and d.
    struct Windows
    {
        std::vector<int64_t> forward;  ///< per stage: most bytes while its forward runs
        std::vector<int64_t> backward; ///< per stage: most bytes in its backward window
        double recompute = 0;
    };
    auto windows = [&](int c, int d) -> Expected<Windows> {
        std::vector<TensorId> keep;
        for (int k = 0; k < P; ++k)
            if (k <= c || k >= d)
                keep.insert(keep.end(), sets[size_t(k)].begin(), sets[size_t(k)].end());
        REMAT_ASSIGN_OR_RETURN(schedule::Schedule sched, lowerCheckpointSet(facts, keep, {}));
        REMAT_ASSIGN_OR_RETURN(
            sim::Timeline t,
            sim::simulate(sched, g, *pb.request().costs, {.recordPoints = true, .validate = true}));
        Windows w;
        w.forward.assign(size_t(L), 0);
        w.backward.assign(size_t(L), 0);
        w.recompute = t.recomputeSeconds;
        // Forward: the stage of the latest first compute; from the first loss or backward op
        // on, each step belongs to the backward window of the next backward op's stage.
        const auto &steps = sched.steps;
        std::vector<int> owner(steps.size(), -1);
        std::vector<char> isBackward(steps.size(), 0);
        int stage = 0;
        size_t firstLate = steps.size();
        for (size_t s = 0; s < steps.size(); ++s) {
            if (steps[s].kind != schedule::StepKind::Compute)
                continue;
            const int32_t op = static_cast<int32_t>(steps[s].op().index());
            if (op >= facts.forwardOps()) {
                firstLate = s;
                break;
            }
        }
        for (size_t s = 0; s < firstLate; ++s) {
            if (steps[s].kind == schedule::StepKind::Compute)
                stage = std::max(0, view.stageOfOp[steps[s].op().index()]);
            owner[s] = stage;
        }
        int next = L - 1;
        for (size_t s = steps.size(); s-- > firstLate;) {
            if (steps[s].kind == schedule::StepKind::Compute) {
                const int32_t op = static_cast<int32_t>(steps[s].op().index());
                if (op >= facts.lossEnd())
                    next = std::max(0, view.stageOfOp[size_t(op)]);
            }
            owner[s] = next;
            isBackward[s] = 1;
        }
        for (size_t s = 0; s < steps.size(); ++s) {
            auto &slot = isBackward[s] ? w.backward : w.forward;
            slot[size_t(owner[s])] = std::max(slot[size_t(owner[s])], stepBytes(t.points[s]));
        }
        return w;
    };
    REMAT_ASSIGN_OR_RETURN(const Windows all, windows(P, P)); // every position kept
    // Forward: stage i holds its own bytes above the kept positions before i-1.
    std::vector<int64_t> fwdLocal(size_t(L), 0);
    for (int i = 0; i < L; ++i)
        fwdLocal[size_t(i)] = all.forward[size_t(i)] - keptBefore[size_t(std::max(0, i - 1))];
    // Segments: kept c (-1: the input) and d (P: the end).
    const int S = P + 2;
    auto at = [&](int c, int d) { return size_t(c + 1) * S + size_t(d + 1); };
    std::vector<int64_t> segLocal(size_t(S) * S, 0);
    std::vector<double> segRecompute(size_t(S) * S, 0);
    for (int c = -1; c < P; ++c)
        for (int d = c + 1; d <= P; ++d) {
            if (pb.cancelled())
                return makeError(StatusCode::Cancelled, "chain frontier: cancelled");
            REMAT_ASSIGN_OR_RETURN(const Windows w, d == c + 1 ? Windows(all) : windows(c, d));
            int64_t most = std::numeric_limits<int64_t>::min();
            for (int st = c + 1; st <= std::min(d, L - 1); ++st)
                most = std::max(most, w.backward[size_t(st)]);
            segLocal[at(c, d)] = most == std::numeric_limits<int64_t>::min()
                                     ? most
                                     : most - keptBefore[size_t(std::max(0, c))];
            segRecompute[at(c, d)] = w.recompute;
        }
    // Labels at each kept position: bytes kept before it, peak so far, recompute so far.
    struct Label
    {
        int64_t before, peak;
        double recompute;
        int parent, parentIndex;
    };
    constexpr size_t kMaxLabels = 20000;
    std::vector<std::vector<Label>> labels(size_t(P) + 2);
    labels[0].push_back({0, 0, 0.0, -2, -1}); // position -1: the input
    bool capped = false;
    for (int c = -1; c < P; ++c) {
        auto &here = labels[size_t(c + 1)];
        // Non-dominated on (before, peak, recompute).
        std::sort(here.begin(), here.end(), [](const Label &a, const Label &b) {
            return std::tie(a.before, a.peak, a.recompute) <
                   std::tie(b.before, b.peak, b.recompute);
        });
        std::map<int64_t, double> stair; // peak -> least recompute at that peak or below
        std::vector<Label> kept2;
        for (const Label &l : here) {
            auto it = stair.upper_bound(l.peak);
            if (it != stair.begin() && std::prev(it)->second <= l.recompute)
                continue;
            kept2.push_back(l);
            auto pos = stair.lower_bound(l.peak);
            while (pos != stair.end() && pos->second >= l.recompute)
                pos = stair.erase(pos);
            stair[l.peak] = l.recompute;
        }
        if (kept2.size() > kMaxLabels) {
            capped = true;
            kept2.resize(kMaxLabels);
        }
        here = std::move(kept2);
        for (int d = c + 1; d <= P; ++d) {
            const int64_t own =
                c >= 0 ? kept[size_t(c)] + (d > c + 1 ? sourceOnly[size_t(c)] : 0) : 0;
            // Forward of stages c+1..min(d, L-1): stage c+1 above `before`, later ones above
            // `before` + own (the positions between c and d are dropped).
            int64_t fwdFirst = std::numeric_limits<int64_t>::min(), fwdRest = fwdFirst;
            for (int st = c + 1; st <= std::min(d, L - 1); ++st)
                (st == c + 1 ? fwdFirst : fwdRest) =
                    std::max(st == c + 1 ? fwdFirst : fwdRest, fwdLocal[size_t(st)]);
            const int64_t seg = segLocal[at(c, d)];
            for (size_t li = 0; li < here.size(); ++li) {
                const Label &l = here[li];
                int64_t peak = l.peak;
                if (fwdFirst != std::numeric_limits<int64_t>::min())
                    peak = std::max(peak, l.before + fwdFirst);
                if (fwdRest != std::numeric_limits<int64_t>::min())
                    peak = std::max(peak, l.before + own + fwdRest);
                if (seg != std::numeric_limits<int64_t>::min())
                    peak = std::max(peak, l.before + seg);
                labels[size_t(d + 1)].push_back(
                    {l.before + own, peak, l.recompute + segRecompute[at(c, d)], c, int(li)});
            }
        }
    }
    // The end's labels, non-dominated on (peak, recompute), each turned into its plan.
    auto &ends = labels[size_t(P) + 1];
    std::sort(ends.begin(), ends.end(), [](const Label &a, const Label &b) {
        return std::tie(a.peak, a.recompute) < std::tie(b.peak, b.recompute);
    });
    out.exact = !capped;
    double best = std::numeric_limits<double>::infinity();
    for (const Label &e : ends) {
        if (e.recompute >= best)
            continue;
        best = e.recompute;
        std::vector<TensorId> keep;
        for (int pos = e.parent, idx = e.parentIndex; pos >= 0;) {
            keep.insert(keep.end(), sets[size_t(pos)].begin(), sets[size_t(pos)].end());
            const Label &l = labels[size_t(pos + 1)][size_t(idx)];
            pos = l.parent;
            idx = l.parentIndex;
        }
        REMAT_ASSIGN_OR_RETURN(schedule::Schedule sched, lowerCheckpointSet(facts, keep, {}));
        REMAT_ASSIGN_OR_RETURN(sim::Timeline t, pb.simulate(sched));
        const int64_t simulated = peakOf(t, memory);
        if (simulated != e.peak ||
            std::abs(t.recomputeSeconds - e.recompute) > 1e-9 * std::max(1.0, e.recompute)) {
            ++out.mismatches;
            out.exact = false;
        }
        out.points.push_back({"exact chain DP", -1, e.recompute, std::move(sched), t});
    }
    return out;
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
        if (kind == ChainKind::Articulation && oneDataOpPerStage(view, pb.facts()) &&
            view.stageCount() <= size_t(options.exactChainStages)) {
            REMAT_ASSIGN_OR_RETURN(ExactChainResult exact,
                                   exactChainFrontier(pb, view, options.memory));
            f.exactOverCheckpointSets = exact.exact;
            f.exactMismatches = exact.mismatches;
            for (FrontierPoint &p : exact.points)
                f.candidates.push_back(std::move(p));
        }
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
