#pragma once
// Checkmate's MILP (Jain et al. 2020, eq. 1-9 with frontier-advancing stages) as plain arrays,
// built without any solver library so its size and warm starts can be checked anywhere.
//   checkmate::LinearModel m = checkmate::buildModel(problem, {.budgetBytes = b});
//   std::vector<double> x = m.pointFromPlan(problem, rs);  // a MIP start
//   m.columns(), m.rows();

#include "core/solvers/checkmate/problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::solvers::checkmate {

struct ModelOptions
{
    int64_t budgetBytes = 0;   ///< device bytes (total peak); ignored when minimisePeak
    bool minimisePeak = false; ///< objective = peak (+ a tie-breaking sliver of recompute time)
    /// Adds, per stage t, the budget row at op t's first run over binaries only (op t's inputs
    /// and outputs plus every value retained into t + 1), which CBC can lift into cover cuts.
    bool frontierRows = true;
    /// Leaves out the memory rows (U, FREE) of stages that cannot exceed the budget.
    bool skipSafeStages = true;
    /// The time constraint (`--max-overhead`): when >= 0, one row sum_t,i cost_i R[t,i] <= this
    /// (seconds; R[t,i], i < t, are the runs after an op's first, so the row bounds the recompute
    /// time, and store-all's step plus it bounds the step: Problem::cost is the simulator's
    /// per-run op time). sequenceFromR drops runs nobody reads, so a plan's recompute is at most
    /// the row's left side. The model's last row.
    double maxRecomputeSeconds = -1;
};

/// Variables: R[t,i] (binary, op i runs in stage t, i < t; R[t,t] = 1 is a constant), S[t,v]
/// (binary, value v retained into stage t), FREE[t,(v,k)] and U[t,k] (continuous; FREE only
/// relaxes memory, so a fractional FREE can always be raised to its 0/1 bound). Only entries that
/// can be non-zero exist: R[t,i] needs i recomputable and t <= lastUse(i), S[t,v] needs
/// producer(v) < t <= lastUse(v), U[t,k] exists where R[t,k] does.
/// Memory is in units of `unit` bytes (sizes rounded up, the capacity down).
struct LinearModel
{
    std::vector<double> colLower, colUpper, objective;
    std::vector<char> integer;
    std::vector<std::string> names;
    // Rows as triplets.
    std::vector<int> rowOf, colOf;
    std::vector<double> value;
    std::vector<double> rowLower, rowUpper;

    int64_t unit = 1;               ///< bytes per memory unit
    int peakColumn = -1;            ///< the peak variable (minimisePeak)
    double objectiveScale = 1;      ///< objective value x this = recompute seconds
    bool trivialInfeasible = false; ///< some first run cannot fit at all
    std::string infeasibleReason;

    // Column of R[t,i] (op i) / S[t,v] (value v), -1 when fixed at 0 (R[t,t] is not a column).
    int rCol(int t, int i) const;
    int sCol(int t, int v) const;
    size_t columns() const { return colLower.size(); }
    size_t rows() const { return rowLower.size(); }
    size_t integers() const;

    /// The model's point for a plan in stage form: R, S as given, FREE at its largest allowed
    /// value, U by the recurrence.
    std::vector<double> pointFromPlan(const Problem &p, const StagePlan &plan) const;
    /// R from a solution vector (values > 0.5), R[t,t] = 1.
    Matrix rFromPoint(const Problem &p, const std::vector<double> &x) const;
    Matrix sFromPoint(const Problem &p, const std::vector<double> &x, double threshold) const;

    // Internal layout, filled by buildModel.
    int n = 0;
    std::vector<std::vector<int>> rIndex, sIndex; ///< [t][op] / [t][value] -> column (-1: fixed 0)
    struct FreeVar
    {
        int t, i, k, col;
    }; ///< i: the value released after op k
    std::vector<FreeVar> frees;
    std::vector<std::vector<std::pair<int, int>>> uCols; ///< [t] -> (k, column), ascending k
    std::vector<double> uFixed;      ///< per U column, in creation order: resident fixed units
    std::vector<size_t> uFixedStart; ///< [t] -> index of stage t's first entry in uFixed
};

LinearModel buildModel(const Problem &p, const ModelOptions &options);

} // namespace remat::core::solvers::checkmate
