#pragma once
// The explicit list of solvers, built in one visible place (registry.cpp).
//   SolverRegistry reg = makeRegistry();
//   const Solver *s = reg.find("feng-huang");      // nullptr when unknown
//   for (const auto &s : reg.solvers()) s->id();

#include "core/solvers/solver.h"

#include <memory>
#include <string>
#include <vector>

namespace remat::core::solvers {

/// Every solver this build has, in display order.
std::vector<std::unique_ptr<Solver>> makeSolvers();

class SolverRegistry
{
public:
    SolverRegistry() = default;
    explicit SolverRegistry(std::vector<std::unique_ptr<Solver>> solvers)
        : m_solvers(std::move(solvers))
    {
    }
    const std::vector<std::unique_ptr<Solver>> &solvers() const { return m_solvers; }
    const Solver *find(const std::string &id) const;
    std::vector<std::string> ids() const;

private:
    std::vector<std::unique_ptr<Solver>> m_solvers;
};

SolverRegistry makeRegistry();

} // namespace remat::core::solvers
