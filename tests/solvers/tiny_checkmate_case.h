#pragma once
// Random training graphs small enough for the exhaustive stage-plan optimum
// (stage_plan_optimum.h: at most 16 ops and 40 values), with their checkmate problem and the
// stage model's peak range: the set-up tst_checkmate and tst_checkmate_time compare
// checkmate-milp and its bounds on.
//   for (uint32_t seed = 1; seed <= 14; ++seed) {
//       const auto c = remat::tests::tinyCheckmateCase(seed, dagOptions(4));
//       if (!c)
//           continue; // too large (a problem that cannot be built fails the test)
//       const int64_t budget = c->budgetAt(0.5); // halfway from the lowest peak to store-all's

#include "random_graphs.h"

#include "core/solvers/checkmate/problem.h"

#include <QtTest>

#include <cstdint>
#include <optional>
#include <utility>

namespace remat::tests {

struct TinyCheckmateCase
{
    RandomGraph rg;
    core::solvers::checkmate::Problem p;
    int64_t lowestPeak = 0;   ///< the lowest-peak sequence's peak in the stage model
    int64_t storeAllPeak = 0; ///< store-all's

    /// The budget `share` of the way from the lowest peak to store-all's (below 0: under the
    /// lowest peak, where no plan may fit).
    int64_t budgetAt(double share) const
    {
        return lowestPeak + static_cast<int64_t>(share * double(storeAllPeak - lowestPeak));
    }
};

/// The random graph of `seed` and `o` with its problem, or nothing where it has more than 16 ops
/// or 40 values. A problem that cannot be built is a test failure (recorded; nothing returned).
inline std::optional<TinyCheckmateCase> tinyCheckmateCase(uint32_t seed,
                                                          const RandomGraphOptions &o)
{
    namespace checkmate = core::solvers::checkmate;
    RandomGraph rg = randomTrainingGraph(seed, o);
    if (rg.graph.opCount() > 16)
        return std::nullopt;
    auto p = checkmate::buildProblem(rg.graph, rg.costs, {});
    if (!p.hasValue()) {
        QTest::qFail(qPrintable(QString("seed %1: %2")
                                    .arg(seed)
                                    .arg(QString::fromStdString(p.status().toString()))),
                     __FILE__, __LINE__);
        return std::nullopt;
    }
    if (p->values > 40)
        return std::nullopt;
    const int64_t low = checkmate::evaluate(*p, checkmate::lowestPeakSequence(*p)).peakBytes;
    const int64_t high = checkmate::evaluate(*p, checkmate::storeAllSequence(*p)).peakBytes;
    return TinyCheckmateCase{std::move(rg), std::move(*p), low, high};
}

} // namespace remat::tests
