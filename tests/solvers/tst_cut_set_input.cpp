// checkmate::cutBound takes any list of first runs as its cut set: out of order, repeated or
// outside the step, it answers as for the cleaned set instead of writing past its tables (a cut
// past the last op once corrupted the heap in bench_cut_bound).
#include "random_graphs.h"

#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/checkmate/frontier.h"
#include "core/solvers/checkmate/problem.h"

#include <QtTest>

using namespace remat::core;
using namespace remat::core::solvers;

class TestCutSetInput : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!checkmateAvailable())
            QSKIP("built without COIN-OR CBC");
    }

    void messyCutSetsAnswerAsTheCleanedSet()
    {
        // Expected: the same LP bound for {a, b, c} and for {c, a, n + 7, b, -3, a, n}; a set of
        // nothing but out-of-range first runs is an empty set (bound 0, no cuts, not
        // infeasible); and the bound is positive (so equality is not 0 == 0).
        auto rg = remat::tests::residualBlocks(12);
        auto p = checkmate::buildProblem(rg.graph, rg.costs, {});
        QVERIFY(p.hasValue());
        const int n = p->n;
        const int64_t high = checkmate::evaluate(*p, checkmate::storeAllSequence(*p)).peakBytes;
        const int64_t low = checkmate::evaluate(*p, checkmate::lowestPeakSequence(*p)).peakBytes;
        const int64_t budget = low + (high - low) / 5;
        const int a = p->firstNonForward, b = (p->firstNonForward + n) / 2, c = n - 2;
        QVERIFY(a < b && b < c);
        const checkmate::CutBoundResult clean =
            checkmate::cutBound(*p, budget, {a, b, c}, -1, 10, {}, false);
        QVERIFY(clean.lpSolved);
        QVERIFY(clean.bound > 0);
        QCOMPARE(clean.cuts, 3);
        const checkmate::CutBoundResult messy =
            checkmate::cutBound(*p, budget, {c, a, n + 7, b, -3, a, n}, -1, 10, {}, false);
        QVERIFY(messy.lpSolved);
        QCOMPARE(messy.cuts, 3);
        QCOMPARE(messy.columns, clean.columns);
        QCOMPARE(messy.rows, clean.rows);
        QVERIFY(std::abs(messy.bound - clean.bound) <= 1e-12 * (1 + clean.bound));
        const checkmate::CutBoundResult none =
            checkmate::cutBound(*p, budget, {-1, n, n + 100}, -1, 10, {}, false);
        QCOMPARE(none.cuts, 0);
        QCOMPARE(none.bound, 0.0);
        QVERIFY(!none.infeasible);
    }
};

QTEST_GUILESS_MAIN(TestCutSetInput)
#include "tst_cut_set_input.moc"
