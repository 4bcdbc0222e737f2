#include "core/solvers/registry.h"

#include "core/solvers/checkpoint_solvers.h"

// The milp agent's solvers: checkmate-milp and checkmate-lp need CBC; offload does not.
#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/offload.h"

namespace remat::core::solvers {

std::vector<std::unique_ptr<Solver>> makeSolvers()
{
    std::vector<std::unique_ptr<Solver>> list;
    list.push_back(makeStoreAllSolver());
    list.push_back(makeChenSqrtnSolver());
    list.push_back(makeChenGreedySolver());
    list.push_back(makeRevolveSolver());
    list.push_back(makeFengHuangSolver());
    list.push_back(makeHongDpSolver());
    list.push_back(makeHongLinearSolver());
    list.push_back(makeRotorSolver());
#if REMAT_HAVE_CBC
    list.push_back(makeCheckmateMilpSolver());
    list.push_back(makeCheckmateLpSolver());
#endif
    list.push_back(makeOffloadSolver());
    return list;
}

const Solver *SolverRegistry::find(const std::string &id) const
{
    for (const auto &s : m_solvers)
        if (s->id() == id)
            return s.get();
    return nullptr;
}

std::vector<std::string> SolverRegistry::ids() const
{
    std::vector<std::string> out;
    for (const auto &s : m_solvers)
        out.push_back(s->id());
    return out;
}

SolverRegistry makeRegistry() { return SolverRegistry(makeSolvers()); }

} // namespace remat::core::solvers
