// Factories for builds without COIN-OR CBC; with CBC they live in checkmate_*_cbc.cpp.
#include "core/solvers/checkmate/checkmate.h"

namespace remat::core::solvers {

#ifndef REMAT_HAVE_CBC
std::unique_ptr<Solver> makeCheckmateMilpSolver() { return nullptr; }
std::unique_ptr<Solver> makeCheckmateLpSolver() { return nullptr; }
bool checkmateAvailable() { return false; }
#else
bool checkmateAvailable() { return true; }
#endif

} // namespace remat::core::solvers
