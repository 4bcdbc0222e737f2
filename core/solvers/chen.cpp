// Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost": sqrt(n) segments on the
// chain of articulation points, and the greedy b-byte segmentation on the linearized graph.
#include "core/solvers/chain_support.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace remat::core::solvers {
namespace {

std::vector<int> everyKth(size_t n, size_t k, const ChainPins &cp)
{
    std::vector<int> chosen;
    for (size_t i = 0; i < n; ++i) {
        const bool pick = k > 0 && (i + 1) % k == 0;
        if (cp.forced[i] || (pick && !cp.forbidden[i]))
            chosen.push_back(static_cast<int>(i));
    }
    return chosen;
}

class ChenSqrtnSolver final : public Solver
{
public:
    std::string id() const override { return "chen-sqrtn"; }
    std::string title() const override { return "Chen et al. 2016, sqrt(n) segments"; }
    std::string description() const override
    {
        return "Runs on the chain of articulation points (n boundaries) and keeps every k-th "
               "boundary, k = floor(sqrt(n)): about sqrt(n) segments, each recomputed once in "
               "backward. min-peak: that plan. min-time: the paper has no budget mode; we sweep "
               "the stride k = 1..n and return the least recompute whose simulated peak fits. "
               "Pins: keep-pinned boundaries are always kept, recompute-pinned never.";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = false;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        const ChainView view = pb.facts().chainView(request.costs);
        REMAT_RETURN_IF_ERROR(requireChain(view, id()));
        const ChainPins cp = chainPins(view, pb.facts(), request.pins);
        const size_t n = view.boundaryCount();
        pb.setObjectiveName("segments (number of checkpoints + 1)");
        pb.addNote("chain of " + std::to_string(n) + " articulation points");
        const size_t k = static_cast<size_t>(std::floor(std::sqrt(double(n))));
        auto offer = [&](size_t stride) -> Status {
            const std::vector<int> chosen = everyKth(n, stride, cp);
            return pb.offerCheckpoints(keepFromBoundaries(view, chosen), double(chosen.size() + 1))
                .status();
        };
        REMAT_RETURN_IF_ERROR(offer(std::max<size_t>(k, 1)));
        bool complete = true;
        if (request.objective == Objective::MinTime) {
            for (size_t stride = 1; stride <= n; ++stride) {
                if (pb.shouldStop(double(stride) / double(n), "stride sweep")) {
                    complete = false;
                    break;
                }
                REMAT_RETURN_IF_ERROR(offer(stride));
            }
        }
        pb.setSetting("k", std::to_string(std::max<size_t>(k, 1)));
        return pb.finish(SolveStatus::Feasible, complete);
    }
};

class ChenGreedySolver final : public Solver
{
public:
    std::string id() const override { return "chen-greedy"; }
    std::string title() const override { return "Chen et al. 2016, greedy b-byte segments"; }
    std::string description() const override
    {
        return "Runs on the linearized graph (the forward order cut at articulation points and "
               "where the bytes alive across a cut are a local minimum; a cut keeps everything "
               "alive across it). Walks the cuts accumulating the bytes each stage produces and "
               "keeps a cut once more than b bytes have accumulated since the last one. b is "
               "swept over about 64 values: min-peak returns the lowest simulated peak, min-time "
               "the least recompute whose simulated peak fits the budget. The best sweep "
               "plan's cuts are then improved by a local search (drop, add or move one cut "
               "at a time, every candidate simulated, at most four per cut).";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = true;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        PlanBuilder pb(id(), request);
        REMAT_RETURN_IF_ERROR(pb.init());
        const ChainView view = pb.facts().chainView(request.costs, ChainKind::Linearized);
        REMAT_RETURN_IF_ERROR(requireChain(view, id()));
        const ChainPins cp = chainPins(view, pb.facts(), request.pins);
        const size_t n = view.boundaryCount();
        pb.setObjectiveName("b: bytes between checkpoints");
        pb.addNote("linearized graph with " + std::to_string(n) + " cuts");
        int64_t total = 0, smallest = INT64_MAX;
        for (size_t s = 0; s < view.stageCount(); ++s) {
            total += view.interiorBytes[s];
            if (view.interiorBytes[s] > 0)
                smallest = std::min(smallest, view.interiorBytes[s]);
        }
        if (smallest == INT64_MAX)
            smallest = 1;
        std::set<std::vector<int>> seen;
        std::optional<std::vector<int>> bestCuts;   // the cuts of the builder's best plan
        std::optional<std::vector<int>> lowestCuts; // the cuts of the lowest simulated peak
        int64_t lowestPeak = INT64_MAX;
        const int steps = 64;
        bool complete = true;
        for (int i = 0; i <= steps; ++i) {
            if (pb.shouldStop(double(i) / steps, "b sweep")) {
                complete = false;
                break;
            }
            const double b = double(smallest) *
                             std::pow(double(std::max<int64_t>(total, smallest)) / double(smallest),
                                      double(i) / steps);
            std::vector<int> chosen;
            double temp = 0;
            for (size_t k = 0; k < n; ++k) {
                temp += double(view.interiorBytes[k]);
                if (cp.forced[k] || (temp > b && !cp.forbidden[k])) {
                    chosen.push_back(static_cast<int>(k));
                    temp = 0;
                }
            }
            if (!seen.insert(chosen).second)
                continue;
            auto t = pb.offerCheckpoints(keepFromBoundaries(view, chosen), b);
            REMAT_RETURN_IF_ERROR(t.status());
            if (pb.bestTimeline() && pb.bestTimeline()->peakBytes == t->peakBytes &&
                pb.bestTimeline()->recomputeSeconds == t->recomputeSeconds)
                bestCuts = chosen;
            if (t->peakBytes < lowestPeak) {
                lowestPeak = t->peakBytes;
                lowestCuts = chosen;
            }
        }
        if (!bestCuts) // min-time with nothing under the budget yet: start from the lowest peak
            bestCuts = lowestCuts;
        // Then a local search from the sweep's best cuts (chain_support.h refineCuts), at most
        // four candidates per cut.
        if (complete && bestCuts) {
            bool stopped = false;
            REMAT_RETURN_IF_ERROR(
                refineCuts(pb, view, cp, *bestCuts, 4 * static_cast<int>(n), &stopped).status());
            complete = !stopped;
        }
        return pb.finish(SolveStatus::Feasible, complete);
    }
};

} // namespace

std::unique_ptr<Solver> makeChenSqrtnSolver() { return std::make_unique<ChenSqrtnSolver>(); }
std::unique_ptr<Solver> makeChenGreedySolver() { return std::make_unique<ChenGreedySolver>(); }

} // namespace remat::core::solvers
