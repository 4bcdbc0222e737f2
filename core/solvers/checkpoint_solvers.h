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
std::unique_ptr<Solver> makeChenSqrtnSolver();
std::unique_ptr<Solver> makeChenGreedySolver();
std::unique_ptr<Solver> makeRevolveSolver();
std::unique_ptr<Solver> makeFengHuangSolver();
std::unique_ptr<Solver> makeHongDpSolver();
std::unique_ptr<Solver> makeHongLinearSolver();
std::unique_ptr<Solver> makeRotorSolver();

} // namespace remat::core::solvers
