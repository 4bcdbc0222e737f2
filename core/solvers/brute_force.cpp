#include "core/solvers/brute_force.h"

#include "core/sim/simulator.h"
#include "core/solvers/lowering.h"

#include <algorithm>

namespace remat::core::solvers {

Expected<BruteForceResult> bruteForceCheckpoints(const training::TrainingGraph &graph,
                                                 const cost::Costs &costs,
                                                 const BruteForceOptions &options)
{
    REMAT_ASSIGN_OR_RETURN(GraphFacts facts, GraphFacts::build(graph));
    // Keep units: one per forward op with a read output.
    std::vector<std::vector<TensorId>> units;
    for (int32_t i = 0; i < facts.forwardOps(); ++i) {
        std::vector<TensorId> outs;
        for (TensorId t : graph.ops()[i].outputs)
            if (facts.lastForwardUse(t) >= 0 || facts.neededByBackward(t))
                outs.push_back(t);
        if (!outs.empty())
            units.push_back(std::move(outs));
    }
    if (units.size() > options.maxUnits)
        return makeError(StatusCode::OutOfRange, "brute force: " + std::to_string(units.size()) +
                                                     " keep units, limit " +
                                                     std::to_string(options.maxUnits));
    BruteForceResult r;
    r.units = units.size();
    sim::SimOptions so;
    so.recordPoints = false;
    so.validate = true;
    const uint64_t sets = uint64_t(1) << units.size();
    std::vector<TensorId> keep;
    std::vector<BruteForceBest> all;
    for (uint64_t mask = 0; mask < sets; ++mask) {
        keep.clear();
        for (size_t u = 0; u < units.size(); ++u)
            if (mask >> u & 1)
                keep.insert(keep.end(), units[u].begin(), units[u].end());
        REMAT_ASSIGN_OR_RETURN(std::vector<char> m, keepMask(facts, keep, options.pins));
        std::vector<TensorId> kept = maskToList(m);
        REMAT_ASSIGN_OR_RETURN(schedule::Schedule s, lowerKeepMask(facts, std::move(m)));
        REMAT_ASSIGN_OR_RETURN(sim::Timeline t, sim::simulate(s, graph, costs, so));
        ++r.evaluated;
        const double time = t.computeSeconds + t.recomputeSeconds;
        auto &mp = r.minPeak;
        if (!mp.found || t.peakBytes < mp.timeline.peakBytes ||
            (t.peakBytes == mp.timeline.peakBytes &&
             time < mp.timeline.computeSeconds + mp.timeline.recomputeSeconds)) {
            mp = {true, kept, t};
        }
        if (options.budgetBytes > 0 && t.peakBytes <= options.budgetBytes) {
            auto &mt = r.minTime;
            if (!mt.found || t.recomputeSeconds < mt.timeline.recomputeSeconds ||
                (t.recomputeSeconds == mt.timeline.recomputeSeconds &&
                 t.peakBytes < mt.timeline.peakBytes))
                mt = {true, kept, t};
        }
        if (options.frontier)
            all.push_back({true, kept, t});
    }
    std::stable_sort(all.begin(), all.end(), [](const BruteForceBest &a, const BruteForceBest &b) {
        if (a.timeline.peakBytes != b.timeline.peakBytes)
            return a.timeline.peakBytes < b.timeline.peakBytes;
        return a.timeline.recomputeSeconds < b.timeline.recomputeSeconds;
    });
    for (BruteForceBest &b : all)
        if (r.frontier.empty() ||
            b.timeline.recomputeSeconds < r.frontier.back().timeline.recomputeSeconds)
            r.frontier.push_back(std::move(b));
    return r;
}

} // namespace remat::core::solvers
