// Rotor (Beaumont, Eyraud-Dubois, Herrmann, Joly, Shilova; ACM TOMS 2024): optimal checkpointing
// for heterogeneous chains. A DP over (memory, i, j) where each stage is run keeping nothing,
// keeping its input (a checkpoint) or keeping its tape, on the chain of articulation points; a
// kept tape may be one of the stage's tape options (Rockmate, Zhao et al. ICML 2023: part of the
// tape kept, the rest recomputed in the stage's backward; chain_support.h addStageOptions).
#include "core/solvers/chain_frontier.h"
#include "core/solvers/chain_support.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/offload_pins.h"
#include "core/solvers/plan_builder.h"
#include "core/solvers/rotor_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>

namespace remat::core::solvers {
namespace {

class RotorSolver final : public Solver
{
public:
    std::string id() const override { return "rotor"; }
    std::string title() const override { return "Rotor (Beaumont et al.), heterogeneous chains"; }
    std::string description() const override
    {
        return "Dynamic program over (memory, i, j) on the chain of articulation points: each "
               "stage is run keeping nothing, keeping its input (a checkpoint that later stages "
               "are recomputed from) or keeping its tape, with per-stage forward and "
               "backward times, input, tape and transient bytes; checkpoints may be created "
               "during backward (multi-level). A kept tape may be one of up to 8 tape options "
               "per stage (setting \"tape-options\"; 1 is plain rotor): as in Rockmate, part "
               "of the tape is kept and the rest recomputed just before the stage's backward "
               "reads it (a ResNet block keeps its convolutions' outputs and recomputes "
               "BatchNormalization and ReLU). Solved on the chain of articulation points (once "
               "as rotor counts memory, once letting a stage whose input nothing reads after its "
               "forward give that input's memory back, as after a residual Add) and, where it "
               "cuts elsewhere, on the linearized chain (DenseNet's layers); the best simulated "
               "plan of all returned. Memory is discretised into at most 500 slots "
               "(setting \"slots\"). min-peak: the smallest feasible memory and a few above it "
               "are simulated and the lowest true peak returned; min-time: the largest memory "
               "whose plan's simulated peak fits the budget (the DP's least time there). Pins "
               "are not supported.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = false;
        c.pins = false;
        c.optimalForItsModel = false;
        c.maxOverhead = true; // the DP's table at every memory: withinOverhead()
        return c;
    }
    /// Min-peak within the request's max overhead: the DP's table read at every memory (the
    /// chain frontier, chain_frontier.h: articulation and linearized chains, tape options, the
    /// exact DP on short chains, every breakpoint's plan simulated), the lowest simulated peak
    /// whose simulated step is within the limit. Store-all is among the candidates, so there is
    /// always an answer.
    Expected<Plan> withinOverhead(const SolveRequest &request) const
    {
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        SolveRequest bare = request;
        bare.maxOverheadPercent = -1;
        REMAT_ASSIGN_OR_RETURN(const Plan base, storeAllPlan(bare));
        const double limit = stepSeconds(base.timeline) * (1 + request.maxOverheadPercent / 100);
        ChainFrontierOptions co;
        co.slotCount = 2000;
        if (auto it = request.settings.find("frontier-slots"); it != request.settings.end())
            co.slotCount = std::max(10, std::atoi(it->second.c_str()));
        co.memory = FrontierMemory::Total;
        REMAT_ASSIGN_OR_RETURN(const ChainFrontier f, chainFrontier(bare, co));
        std::vector<const FrontierPoint *> within;
        for (const FrontierPoint &p : f.candidates)
            if (stepSeconds(p.timeline) <= limit * (1 + 1e-9))
                within.push_back(&p);
        if (within.empty())
            return makeError(StatusCode::Infeasible,
                             id() + ": no plan of the chain frontier within the limit");
        std::stable_sort(within.begin(), within.end(),
                         [](const FrontierPoint *a, const FrontierPoint *b) {
                             if (a->timeline.peakBytes != b->timeline.peakBytes)
                                 return a->timeline.peakBytes < b->timeline.peakBytes;
                             return stepSeconds(a->timeline) < stepSeconds(b->timeline);
                         });
        const FrontierPoint *best = within.front();
        // A plan a little higher with time to spare may end lower once kept tensors are
        // streamed to the host (offload_pins.h: copies cost the step what compute does not
        // hide): the lowest-peak plan within P, P - 2, ..., P - 14 percent is tried.
        std::optional<Plan> streamed;
        std::vector<const FrontierPoint *> spared;
        const double baseStep = stepSeconds(base.timeline);
        for (int k = 0; k < 8; ++k) {
            const double cap =
                baseStep * (1 + std::max(0.0, request.maxOverheadPercent - 2 * k) / 100);
            for (const FrontierPoint *p : within) // ascending peak: the first under the cap
                if (stepSeconds(p->timeline) <= cap * (1 + 1e-9)) {
                    if (std::find(spared.begin(), spared.end(), p) == spared.end())
                        spared.push_back(p);
                    break;
                }
        }
        if (auto it = request.settings.find("stream");
            it == request.settings.end() || it->second != "off")
            for (const FrontierPoint *candidate : spared) {
                if (pb.shouldStop(-1, "streaming"))
                    break;
                Plan p;
                p.schedule = candidate->schedule;
                p.timeline = candidate->timeline;
                Plan s = streamKeptTensors(std::move(p), bare, limit, 32);
                const int64_t bar =
                    streamed ? streamed->timeline.peakBytes : best->timeline.peakBytes;
                if (s.timeline.peakBytes < bar && s.timeline.copySeconds > 0)
                    streamed = std::move(s);
            }
        pb.setObjectiveName("DP time of forward + backward with recomputation (seconds)");
        pb.addNote(fmt::format("lowest peak within {:g}% slower: the DP read at every memory "
                               "({} slots, {} plans simulated, {} breakpoints), {}",
                               request.maxOverheadPercent, f.slotCount, f.candidates.size(),
                               f.breakpoints, best->source));
        if (streamed) {
            pb.addNote(streamed->note);
            pb.setObjectiveName("the simulated step (seconds), a frontier plan then streamed");
            REMAT_RETURN_IF_ERROR(
                pb.offerSchedule(streamed->schedule, stepSeconds(streamed->timeline)).status());
        } else {
            REMAT_RETURN_IF_ERROR(pb.offerSchedule(best->schedule, best->dpSeconds).status());
        }
        // A walk the time limit cut short still answers: the best of the memories walked.
        if (!f.complete)
            pb.addNote("the frontier walk stopped at the time limit: the lowest peak among the "
                       "memories walked");
        return pb.finish(SolveStatus::Feasible);
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        if (!request.pins.empty())
            return makeError(StatusCode::Unsupported, id() + ": pins are not supported");
        if (request.objective == Objective::MinPeak && request.maxOverheadPercent >= 0)
            return withinOverhead(request);
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        int tapeOptions = 8;
        if (auto it = request.settings.find("tape-options"); it != request.settings.end())
            tapeOptions = std::max(1, std::atoi(it->second.c_str()));
        int requestedSlots = 500;
        if (auto it = request.settings.find("slots"); it != request.settings.end())
            requestedSlots = std::atoi(it->second.c_str());
        pb.setObjectiveName("DP time of forward + backward with recomputation (seconds)");
        pb.setSetting("tape-options", std::to_string(tapeOptions));
        const auto &g = pb.graph();
        bool complete = true, anyFits = false;
        double secondsPerStep = 0; // the articulation table's time per DP step (measured)
        std::vector<int32_t> firstCuts;
        ChainView view;
        StageOps ops;
        // The articulation chain with and without freed inputs (rotor_table.h), then the
        // linearized one where it cuts elsewhere (DenseNet's layers inside a dense block); the
        // builder keeps the best simulated plan of all.
        for (int pass = 0; pass < 3; ++pass) {
            const ChainKind kind = pass < 2 ? ChainKind::Articulation : ChainKind::Linearized;
            const bool freeInputs = pass == 1;
            if (pass > 0 && (!complete || pb.shouldStop(-1, "another chain model")))
                break;
            if (pass != 1) { // the second pass reuses the articulation chain and its options
                view = pb.facts().chainView(request.costs, kind);
                REMAT_RETURN_IF_ERROR(requireChain(view, id()));
                if (kind == ChainKind::Linearized && view.stageBegin == firstCuts)
                    break;
                firstCuts = view.stageBegin;
                ops = stageOps(view, pb.facts());
                addStageOptions(ops, view, pb.facts(), request.costs, tapeOptions);
            }
            const int L = static_cast<int>(view.stageCount());
            // The DP's work grows as L^3 / 6 x slots (1e9 steps take about half a second
            // here): the linearized chain gets fewer slots to stay within that, and within
            // half the time left as the first table's speed predicts it, or is left out below
            // 100 slots, so rotor stays an interactive solver and within its time limit.
            const double cube = double(L) * L * L / 6;
            int slotsHere = requestedSlots;
            if (kind == ChainKind::Linearized) {
                double cap = 1e9;
                if (secondsPerStep > 0)
                    cap = std::min(cap, 0.5 * (request.timeLimitSeconds - pb.elapsed()) /
                                            secondsPerStep);
                if (cube * requestedSlots > cap) {
                    slotsHere = int(std::max(0.0, cap / cube));
                    if (slotsHere < 100) {
                        // Left out for the time limit: the answer is the articulation chains'
                        // (the plan says it stopped at the time limit).
                        if (cap < 1e9)
                            complete = false;
                        pb.addNote("linearized chain of " + std::to_string(L) +
                                   (cap < 1e9 ? " stages left out (its table would not finish "
                                                "within the time limit)"
                                              : " stages left out (its table would take "
                                                "seconds)"));
                        break;
                    }
                }
            }
            const RotorChain c = rotorChain(view, pb.facts(), ops, slotsHere, 5000, 6e7,
                                            RotorTransients::Estimate, freeInputs);
            const int slots = c.slotCount;
            const double tableStart = pb.elapsed();
            RotorTable table(c);
            if (!table.compute(request.stop, [&pb] { return pb.timedOut(); })) {
                if (request.stop.stopRequested())
                    return makeError(StatusCode::Cancelled, id() + ": cancelled");
                // The time limit: the chains already solved answer (or finish says none did).
                pb.addNote(
                    std::string(kind == ChainKind::Articulation ? "articulation" : "linearized") +
                    " chain's table stopped at the time limit");
                complete = false;
                break;
            }
            if (kind == ChainKind::Articulation && !freeInputs)
                secondsPerStep = (pb.elapsed() - tableStart) / std::max(1.0, cube * slots);
            if (freeInputs) {
                pb.addNote("again with inputs freed: table " +
                           std::to_string(int((pb.elapsed() - tableStart) * 1000)) + " ms");
            } else {
                pb.addNote(
                    std::string(kind == ChainKind::Articulation ? "articulation" : "linearized") +
                    " chain of " + std::to_string(L) + " stages, " + std::to_string(slots) +
                    " memory slots of " + std::to_string(int64_t(c.unit)) + " bytes; table " +
                    std::to_string(int((pb.elapsed() - tableStart) * 1000)) + " ms");
                if (kind == ChainKind::Articulation)
                    pb.setSetting("slots", std::to_string(slots));
            }
            int mMin = -1;
            for (int m = 0; m <= slots; ++m)
                if (table.opt(m, 0, L - 1) < RotorTable::kInfinity) {
                    mMin = m;
                    break;
                }
            if (mMin < 0)
                continue;
            anyFits = true;
            auto offerAt = [&](int m) -> Expected<sim::Timeline> {
                auto sched = scheduleFromSequence(g, table.sequence(m, ops));
                if (!sched)
                    return sched.status();
                return pb.offerSchedule(std::move(*sched), table.opt(m, 0, L - 1));
            };
            if (request.objective == Objective::MinPeak) {
                for (int i = 0; i < 12; ++i) {
                    const int m = std::min(slots, mMin + int(std::lround(std::pow(1.6, i))) - 1);
                    if (i > 0 && pb.shouldStop(double(i) / 12, "memory sweep")) {
                        complete = false;
                        break;
                    }
                    REMAT_RETURN_IF_ERROR(offerAt(m).status());
                    if (m == slots)
                        break;
                }
            } else {
                // Largest memory whose simulated plan fits: bisection on slots.
                int lo = mMin, hi = slots;
                REMAT_RETURN_IF_ERROR(offerAt(lo).status());
                while (lo < hi) {
                    if (pb.shouldStop(-1, "budget search")) {
                        complete = false;
                        break;
                    }
                    const int mid = (lo + hi + 1) / 2;
                    auto t = offerAt(mid);
                    if (!t)
                        return t.status();
                    if (t->peakBytes <= request.budgetBytes)
                        lo = mid;
                    else
                        hi = mid - 1;
                }
            }
        }
        if (!anyFits && complete)
            return makeError(StatusCode::Infeasible, id() + ": no strategy within the slot range");
        return pb.finish(SolveStatus::Feasible, complete);
    }
};

} // namespace

std::unique_ptr<Solver> makeRotorSolver() { return std::make_unique<RotorSolver>(); }

} // namespace remat::core::solvers
