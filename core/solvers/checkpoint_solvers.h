#pragma once
// Factories of the checkpoint solvers that need no external library. The registry lists them.
//   std::unique_ptr<Solver> s = makeFengHuangSolver();
//   Expected<Plan> p = s->solve(request);

#include "core/solvers/solver.h"

#include <memory>

namespace remat::core::solvers {

std::unique_ptr<Solver> makeStoreAllSolver();
/// store-all's plan for `request` (its pins honoured), without the framework's guard: the
/// baseline the guard checks every other solver's plan against.
Expected<Plan> storeAllPlan(const SolveRequest &request);
/// Appends the graph's optimizer step to a plan of the graph without it: its update ops read
/// only preloaded tensors and parameter gradients (resident at the end of every valid schedule),
/// so they run last, in order, before the End mark. A weight a plan streamed to the host
/// (offload) is prefetched for its update and freed after it (the copy of the updated weight
/// back to the host is not modelled). Solver::solve and the chain frontier use it.
void appendOptimizerStep(schedule::Schedule &s, const training::TrainingGraph &graph);
/// A request's graph without its optimizer step, and the costs of the ops before it: what a
/// solver plans before appendOptimizerStep adds the updates back.
struct WithoutOptimizerStep
{
    training::TrainingGraph graph;
    cost::Costs costs;
    /// `outer` reading this graph and these costs (valid while this object lives).
    SolveRequest request(const SolveRequest &outer) const
    {
        SolveRequest r = outer;
        r.graph = &graph;
        r.costs = &costs;
        return r;
    }
};
Expected<WithoutOptimizerStep> withoutOptimizerStep(const SolveRequest &request);
std::unique_ptr<Solver> makeChenSqrtnSolver();
std::unique_ptr<Solver> makeChenGreedySolver();
std::unique_ptr<Solver> makeRevolveSolver();
std::unique_ptr<Solver> makeFengHuangSolver();
std::unique_ptr<Solver> makeHongDpSolver();
std::unique_ptr<Solver> makeHongLinearSolver();
std::unique_ptr<Solver> makeRotorSolver();

} // namespace remat::core::solvers
