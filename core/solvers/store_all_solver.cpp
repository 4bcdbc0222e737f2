// store-all: PyTorch's default. Every activation backward needs stays from its compute to its
// last backward use; nothing is recomputed.
#include "core/solvers/checkpoint_solvers.h"
#include "core/solvers/plan_builder.h"

namespace remat::core::solvers {
namespace {

class StoreAllSolver final : public Solver
{
public:
    std::string id() const override { return "store-all"; }
    std::string title() const override { return "Store all (PyTorch default)"; }
    std::string description() const override
    {
        return "Keeps every activation backward needs from its compute to its last backward use "
               "and recomputes nothing: the baseline every other plan is measured against. "
               "min-peak: the one plan; min-time: optimal (no recompute) when its peak fits the "
               "budget, otherwise infeasible. Recompute pins are honoured by dropping those "
               "tensors (they are then recomputed).";
    }
    Capabilities capabilities() const override
    {
        Capabilities c;
        c.anyDag = true;
        c.optimalForItsModel = false;
        return c;
    }
    Expected<Plan> searchPlan(const SolveRequest &request) const override
    {
        return storeAllPlan(request);
    }
};

} // namespace

Expected<Plan> storeAllPlan(const SolveRequest &request)
{
    PlanBuilder pb("store-all", request);
    REMAT_RETURN_IF_ERROR(pb.init());
    pb.setObjectiveName("bytes kept for backward");
    int64_t kept = 0;
    for (TensorId t : pb.facts().backwardNeeded())
        kept += pb.graph().tensor(t).bytes;
    REMAT_RETURN_IF_ERROR(pb.offerCheckpoints(pb.facts().backwardNeeded(), double(kept)).status());
    const bool noRecompute = request.pins.empty();
    return pb.finish(request.objective == Objective::MinTime && noRecompute
                         ? SolveStatus::Optimal
                         : SolveStatus::Feasible);
}

std::unique_ptr<Solver> makeStoreAllSolver() { return std::make_unique<StoreAllSolver>(); }

} // namespace remat::core::solvers
