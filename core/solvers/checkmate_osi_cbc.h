#pragma once
// Loads a checkmate::LinearModel into COIN-OR's OSI/CLP interface. Included only by *_cbc.cpp.
//   OsiClpSolverInterface si;  checkmate::loadModel(si, model, /*names=*/true);

#include "core/solvers/checkmate_model.h"

#include <algorithm>
#include <vector>

#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

namespace remat::core::solvers::checkmate {

inline void loadModel(OsiClpSolverInterface &si, const LinearModel &m, bool withNames)
{
    const int nnz = static_cast<int>(m.value.size());
    CoinPackedMatrix matrix(false, m.rowOf.data(), m.colOf.data(), m.value.data(), nnz);
    // The triplet constructor sizes the matrix by the largest index seen; empty trailing rows
    // or columns still need to exist.
    matrix.setDimensions(static_cast<int>(m.rows()), static_cast<int>(m.columns()));
    const double inf = si.getInfinity();
    auto finite = [inf](std::vector<double> v) {
        for (double &x : v)
            x = std::max(-inf, std::min(inf, x));
        return v;
    };
    const std::vector<double> colLo = finite(m.colLower), colHi = finite(m.colUpper);
    const std::vector<double> rowLo = finite(m.rowLower), rowHi = finite(m.rowUpper);
    si.loadProblem(matrix, colLo.data(), colHi.data(), m.objective.data(), rowLo.data(), rowHi.data());
    for (size_t c = 0; c < m.columns(); ++c)
        if (m.integer[c])
            si.setInteger(static_cast<int>(c));
    if (withNames)
        for (size_t c = 0; c < m.columns(); ++c)
            si.setColName(static_cast<int>(c), m.names[c]);
    si.setObjSense(1.0);
}

} // namespace remat::core::solvers::checkmate
