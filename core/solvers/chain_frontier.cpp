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

/// The exact frontier over checkpoint sets of an articulation chain, as the lowering runs them
/// (lowering.h). Positions 0..L-2 are the boundaries, L-1 the network output, L the end. A plan
/// keeps some positions; a stage between two kept positions keeps the interior tensors of one
/// of its tape options (StageOption: the outputs of the ops it does not recompute); a run of
/// dropped positions drops the interiors of its stages too (the run is recomputed whole). On a
/// plain chain (one data op per stage) that is every checkpoint set.
/// The peak decomposes: at a stage's forward and in the backward of a stage or of a dropped run,
/// what is resident from before (kept positions and the tapes of earlier stages) plus what that
/// stage or run holds itself; the local terms are read off simulations (one per option index,
/// every position kept; one per dropped run), so the DP over (last kept position, bytes
/// resident before it) with (peak, recompute) labels is exact when the decomposition holds.
/// Every plan it returns is simulated, and it is called exact only when each simulated figure
/// equals the DP's.
struct ExactChainResult
{
    std::vector<FrontierPoint> points;
    bool exact = false; ///< every DP figure equal to the simulator's, no label cap hit
    int mismatches = 0; ///< plans whose simulated figures differ from the DP's
};

Expected<ExactChainResult> exactChainFrontier(PlanBuilder &pb, const ChainView &view,
                                              const StageOps &ops, FrontierMemory memory)
{
    const GraphFacts &facts = pb.facts();
    const training::TrainingGraph &g = pb.graph();
    const int L = static_cast<int>(view.stageCount());
    ExactChainResult out;
    if (L < 2)
        return out;
    constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
    // The positions' tensors: boundaries, then the network output.
    std::vector<std::vector<TensorId>> sets(view.boundarySets.begin(), view.boundarySets.end());
    sets.emplace_back();
    for (int32_t i = facts.forwardOps(); i < facts.lossEnd(); ++i)
        for (TensorId t : g.op(OpId(i)).inputs)
            if (facts.isForwardTensor(t))
                sets.back().push_back(t);
    const int P = L; // positions 0..L-1
    // A kept position holds, through the backward, its tensors (siblings joined) that backward
    // reads; when it starts a dropped run or a stage option recomputes from it, the rest of
    // them too, until that recompute (sourceOnly).
    std::vector<int64_t> kept(P, 0), sourceOnly(P, 0);
    std::vector<std::vector<char>> inPosition(P);
    for (int k = 0; k < P; ++k) {
        REMAT_ASSIGN_OR_RETURN(std::vector<char> mask, keepMask(facts, sets[size_t(k)], {}));
        for (TensorId t : maskToList(mask))
            (facts.neededByBackward(t) ? kept : sourceOnly)[size_t(k)] += g.tensor(t).bytes;
        inPosition[size_t(k)] = std::move(mask);
    }
    // Stage options: the interior tensors each keeps, its tape, whether it recomputes from the
    // stage input's source-only tensors.
    struct Option
    {
        std::vector<TensorId> keep;
        int64_t tape = 0;
        bool readsSource = false;
    };
    std::vector<std::vector<Option>> options(static_cast<size_t>(L));
    size_t maxOptions = 1;
    for (int i = 0; i < L; ++i) {
        const size_t count =
            size_t(i) < ops.options.size() ? std::max<size_t>(1, ops.options[size_t(i)].size()) : 1;
        maxOptions = std::max(maxOptions, count);
        for (size_t o = 0; o < count; ++o) {
            Option opt;
            std::vector<char> dropped(size_t(view.stageBegin[size_t(i) + 1]) + 1, 0);
            if (o > 0)
                for (OpId r : ops.options[size_t(i)][o].recompute)
                    dropped[r.index()] = 1;
            for (int32_t op = view.stageBegin[size_t(i)]; op < view.stageBegin[size_t(i) + 1];
                 ++op) {
                for (TensorId t : g.op(OpId(op)).outputs) {
                    const bool boundary = i < P && inPosition[size_t(i)][t.index()];
                    if (!facts.isForwardTensor(t) || boundary)
                        continue;
                    if (!dropped[size_t(op)])
                        opt.keep.push_back(t);
                }
                if (dropped[size_t(op)] && i > 0)
                    for (TensorId u : g.op(OpId(op)).inputs)
                        opt.readsSource =
                            opt.readsSource ||
                            (inPosition[size_t(i) - 1][u.index()] && !facts.neededByBackward(u));
            }
            // Resident after the forward: kept interior tensors backward reads, or that a
            // dropped op recomputes from (the lowering keeps both; siblings of the output are
            // the output position's).
            for (TensorId t : opt.keep) {
                bool source = false;
                for (OpId c : g.tensor(t).consumers)
                    source = source || (c.index() < dropped.size() && dropped[c.index()]);
                if (facts.neededByBackward(t) || source)
                    opt.tape += g.tensor(t).bytes;
            }
            options[size_t(i)].push_back(std::move(opt));
        }
    }
    auto stepBytes = [&](const sim::TimelinePoint &pt) {
        if (memory == FrontierMemory::Total)
            return pt.peakDuringStep;
        int64_t bytes = pt.peakDuringStep; // less model state, as activationPeakBytes counts
        for (size_t c = 0; c < schedule::kMemCategoryCount; ++c)
            if (schedule::isModelStateCategory(static_cast<schedule::MemCategory>(c)))
                bytes -= pt.byCategory[c];
        return bytes;
    };
    struct Windows
    {
        std::vector<int64_t> forward;  ///< per stage: most bytes while its forward runs
        std::vector<int64_t> backward; ///< per stage: most bytes in its backward window
        std::vector<double> recompute; ///< per stage: recompute seconds in its backward window
    };
    // Simulates keeping positions (keepPosition) and, per stage, the interior of an option
    // (-1: none).
    auto windows = [&](const std::vector<char> &keepPosition,
                       const std::vector<int> &stageOption) -> Expected<Windows> {
        std::vector<TensorId> keep;
        for (int k = 0; k < P; ++k)
            if (keepPosition[size_t(k)])
                keep.insert(keep.end(), sets[size_t(k)].begin(), sets[size_t(k)].end());
        for (int i = 0; i < L; ++i)
            if (stageOption[size_t(i)] >= 0) {
                const auto &k = options[size_t(i)][size_t(stageOption[size_t(i)])].keep;
                keep.insert(keep.end(), k.begin(), k.end());
            }
        REMAT_ASSIGN_OR_RETURN(schedule::Schedule sched, lowerCheckpointSet(facts, keep, {}));
        REMAT_ASSIGN_OR_RETURN(
            sim::Timeline t,
            sim::simulate(sched, g, *pb.request().costs, {.recordPoints = true, .validate = true}));
        Windows w;
        w.forward.assign(size_t(L), 0);
        w.backward.assign(size_t(L), 0);
        w.recompute.assign(size_t(L), 0.0);
        // Forward: the stage of the latest first compute; from the first loss or backward op
        // on, each step belongs to the backward window of the next backward op's stage.
        const auto &steps = sched.steps;
        std::vector<int> owner(steps.size(), 0);
        std::vector<char> late(steps.size(), 0), computed(g.opCount(), 0);
        size_t firstLate = steps.size();
        for (size_t s = 0; s < steps.size(); ++s)
            if (steps[s].kind == schedule::StepKind::Compute &&
                int32_t(steps[s].op().index()) >= facts.forwardOps()) {
                firstLate = s;
                break;
            }
        int stage = 0;
        for (size_t s = 0; s < firstLate; ++s) {
            if (steps[s].kind == schedule::StepKind::Compute)
                stage = std::max(0, view.stageOfOp[steps[s].op().index()]);
            owner[s] = stage;
        }
        int next = L - 1;
        for (size_t s = steps.size(); s-- > firstLate;) {
            if (steps[s].kind == schedule::StepKind::Compute &&
                int32_t(steps[s].op().index()) >= facts.lossEnd())
                next = std::max(0, view.stageOfOp[steps[s].op().index()]);
            owner[s] = next;
            late[s] = 1;
        }
        const auto &seconds = pb.request().costs->opSeconds;
        for (size_t s = 0; s < steps.size(); ++s) {
            auto &slot = late[s] ? w.backward : w.forward;
            slot[size_t(owner[s])] = std::max(slot[size_t(owner[s])], stepBytes(t.points[s]));
            if (steps[s].kind != schedule::StepKind::Compute)
                continue;
            const size_t op = steps[s].op().index();
            if (computed[op] && op < seconds.size())
                w.recompute[size_t(owner[s])] += seconds[op];
            computed[op] = 1;
        }
        return w;
    };
    // Adjacent stages (both positions kept), per stage and option: local forward and backward
    // bytes above what is resident from before, and the option's recompute.
    std::vector<std::vector<int64_t>> adjFwd(static_cast<size_t>(L)),
        adjBwd(static_cast<size_t>(L));
    std::vector<std::vector<double>> adjRec(static_cast<size_t>(L));
    for (int i = 0; i < L; ++i) {
        adjFwd[size_t(i)].assign(options[size_t(i)].size(), kNone);
        adjBwd[size_t(i)].assign(options[size_t(i)].size(), kNone);
        adjRec[size_t(i)].assign(options[size_t(i)].size(), 0.0);
    }
    const std::vector<char> allPositions(size_t(P), 1);
    for (size_t j = 0; j < maxOptions; ++j) {
        if (pb.cancelled())
            return makeError(StatusCode::Cancelled, "chain frontier: cancelled");
        std::vector<int> pick(static_cast<size_t>(L), 0);
        for (int i = 0; i < L; ++i)
            pick[size_t(i)] = int(std::min(j, options[size_t(i)].size() - 1));
        REMAT_ASSIGN_OR_RETURN(const Windows w, windows(allPositions, pick));
        int64_t before = 0; // resident from positions <= i-2 and stages < i
        for (int i = 0; i < L; ++i) {
            const size_t o = size_t(pick[size_t(i)]);
            if (i >= 2) {
                const int k = i - 2;
                before += kept[size_t(k)] +
                          (options[size_t(k) + 1][size_t(pick[size_t(k) + 1])].readsSource
                               ? sourceOnly[size_t(k)]
                               : 0);
            }
            if (i >= 1)
                before += options[size_t(i) - 1][size_t(pick[size_t(i) - 1])].tape;
            adjFwd[size_t(i)][o] = w.forward[size_t(i)] - before;
            adjBwd[size_t(i)][o] = w.backward[size_t(i)] - before;
            adjRec[size_t(i)][o] = w.recompute[size_t(i)];
        }
    }
    // Dropped runs: kept c and d (c = -1: the input, d = P: the end), d >= c + 2.
    const int S = P + 2;
    auto at = [&](int c, int d) { return size_t(c + 1) * S + size_t(d + 1); };
    std::vector<int64_t> runBwd(size_t(S) * S, kNone), runFwdFirst(size_t(S) * S, kNone),
        runFwdRest(size_t(S) * S, kNone);
    std::vector<double> runRec(size_t(S) * S, 0.0);
    for (int c = -1; c < P; ++c)
        for (int d = c + 2; d <= P; ++d) {
            if (pb.cancelled())
                return makeError(StatusCode::Cancelled, "chain frontier: cancelled");
            std::vector<char> keepPosition(size_t(P), 0);
            std::vector<int> pick(size_t(L), 0);
            for (int k = 0; k < P; ++k)
                keepPosition[size_t(k)] = k <= c || k >= d;
            for (int i = c + 1; i <= std::min(d, L - 1); ++i)
                pick[size_t(i)] = -1;
            REMAT_ASSIGN_OR_RETURN(const Windows w, windows(keepPosition, pick));
            // Resident from before the run: positions < c and the (whole) tapes of stages <= c.
            int64_t before = 0;
            for (int k = 0; k < c; ++k)
                before += kept[size_t(k)];
            for (int i = 0; i <= c; ++i)
                before += options[size_t(i)][0].tape;
            const int64_t own = c >= 0 ? kept[size_t(c)] + sourceOnly[size_t(c)] : 0;
            int64_t bwd = kNone, first = kNone, rest = kNone;
            double rec = 0;
            for (int i = c + 1; i <= std::min(d, L - 1); ++i) {
                bwd = std::max(bwd, w.backward[size_t(i)] - before);
                if (i == c + 1)
                    first = w.forward[size_t(i)] - before;
                else
                    rest = std::max(rest, w.forward[size_t(i)] - before - own);
                rec += w.recompute[size_t(i)];
            }
            runBwd[at(c, d)] = bwd;
            runFwdFirst[at(c, d)] = first;
            runFwdRest[at(c, d)] = rest;
            runRec[at(c, d)] = rec;
        }
    // Labels at each kept position: bytes resident from before it (kept positions before it,
    // tapes of the stages up to it), peak so far, recompute so far.
    struct Label
    {
        int64_t before, peak;
        double recompute;
        int parent, parentIndex, option; ///< option: of stage `position` (-1: in a run)
    };
    constexpr size_t kMaxLabels = 20000;
    std::vector<std::vector<Label>> labels(size_t(P) + 2);
    labels[0].push_back({0, 0, 0.0, -2, -1, -1}); // position -1: the input
    bool capped = false;
    auto add = [](int64_t a, int64_t b) { return b == kNone ? kNone : a + b; };
    for (int c = -1; c < P; ++c) {
        auto &here = labels[size_t(c + 1)];
        // Non-dominated on (before, peak, recompute).
        std::sort(here.begin(), here.end(), [](const Label &a, const Label &b) {
            return std::tie(a.before, a.peak, a.recompute) <
                   std::tie(b.before, b.peak, b.recompute);
        });
        std::map<int64_t, double> stair; // peak -> least recompute at that peak or below
        std::vector<Label> front;
        for (const Label &l : here) {
            auto it = stair.upper_bound(l.peak);
            if (it != stair.begin() && std::prev(it)->second <= l.recompute)
                continue;
            front.push_back(l);
            auto pos = stair.lower_bound(l.peak);
            while (pos != stair.end() && pos->second >= l.recompute)
                pos = stair.erase(pos);
            stair[l.peak] = l.recompute;
        }
        if (front.size() > kMaxLabels) {
            capped = true;
            front.resize(kMaxLabels);
        }
        here = std::move(front);
        for (size_t li = 0; li < here.size(); ++li) {
            const Label &l = here[li];
            // The next stage between two kept positions, with each of its options.
            if (c + 1 < P) {
                const int i = c + 1;
                for (size_t o = 0; o < options[size_t(i)].size(); ++o) {
                    if (adjFwd[size_t(i)][o] == kNone)
                        continue;
                    const int64_t own =
                        c >= 0 ? kept[size_t(c)] +
                                     (options[size_t(i)][o].readsSource ? sourceOnly[size_t(c)] : 0)
                               : 0;
                    int64_t peak = std::max(l.peak, l.before + adjFwd[size_t(i)][o]);
                    peak = std::max(peak, l.before + adjBwd[size_t(i)][o]);
                    labels[size_t(i) + 1].push_back({l.before + own + options[size_t(i)][o].tape,
                                                     peak, l.recompute + adjRec[size_t(i)][o], c,
                                                     int(li), int(o)});
                }
            } else { // c = P - 1: the output kept, nothing after it
                labels[size_t(P) + 1].push_back({l.before, l.peak, l.recompute, c, int(li), -1});
            }
            // A dropped run to each later kept position (or the end).
            for (int d = c + 2; d <= P; ++d) {
                const int64_t own = c >= 0 ? kept[size_t(c)] + sourceOnly[size_t(c)] : 0;
                int64_t peak = l.peak;
                peak = std::max(peak, add(l.before, runFwdFirst[at(c, d)]));
                peak = std::max(peak, add(l.before + own, runFwdRest[at(c, d)]));
                peak = std::max(peak, add(l.before, runBwd[at(c, d)]));
                labels[size_t(d) + 1].push_back(
                    {l.before + own, peak, l.recompute + runRec[at(c, d)], c, int(li), -1});
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
        // Walk back: each label names its position, the option of the stage it ends, and its
        // parent.
        int position = P, option = e.option;
        for (int pos = e.parent, idx = e.parentIndex;;) {
            if (position < P && position >= 0) {
                keep.insert(keep.end(), sets[size_t(position)].begin(),
                            sets[size_t(position)].end());
                if (option >= 0) {
                    const auto &k = options[size_t(position)][size_t(option)].keep;
                    keep.insert(keep.end(), k.begin(), k.end());
                }
            }
            if (pos < 0)
                break;
            const Label &l = labels[size_t(pos + 1)][size_t(idx)];
            position = pos;
            option = l.option;
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
        StageOps ops = stageOps(view, pb.facts());
        addStageOptions(ops, view, pb.facts(), r.costs, options.tapeOptions);
        if (kind == ChainKind::Articulation &&
            view.stageCount() <= size_t(options.exactChainStages)) {
            REMAT_ASSIGN_OR_RETURN(ExactChainResult exact,
                                   exactChainFrontier(pb, view, ops, options.memory));
            // Every checkpoint set only on a plain chain; on blocks, over kept positions with
            // the stages' tape options.
            f.exactOverCheckpointSets = exact.exact && oneDataOpPerStage(view, pb.facts());
            f.exactMismatches = exact.mismatches;
            for (FrontierPoint &p : exact.points)
                f.candidates.push_back(std::move(p));
        }
        for (int variant = 0; variant < 2 * int(transients.size()); ++variant) {
            const RotorTransients model = transients[size_t(variant) / 2];
            const bool freeInputs = variant % 2 == 1;
            if (freeInputs && kind != ChainKind::Articulation)
                continue; // only articulation boundaries are single values a stage can free
            const RotorChain chain = rotorChain(view, pb.facts(), ops, options.slotCount, 1'000'000,
                                                6e7, model, freeInputs);
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
                (model == RotorTransients::Estimate ? "estimated" : "walked") + " transients" +
                (freeInputs ? ", inputs freed" : "") + ")";
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
