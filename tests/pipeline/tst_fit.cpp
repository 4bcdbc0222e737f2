// core's fit search (pipeline::Fitter, shared by `remat fit` and the planner's dialog) on the
// corpus MLP with weights. Expected:
// - store-all within 1 MiB: batch B fits and B+1 does not, each checked against loadProblem's
//   store-all peak at that batch; every trial has the peak loadProblem gives at its batch, the
//   largest fitting one being B; the line through batches 1 and 2 then false position find B
//   (855 at 1 MiB) in at most 7 tries, where doubling then bisection took 16 (the MLP's peak
//   bends: weights dominate at small batches, so the first line overshoots);
// - Adam's 16 B per parameter take memory: its batch is smaller;
// - a solver (chen-sqrtn) fits at least store-all's batch; every batch is imported once for
//   both solvers;
// - a stop token that has fired: the result is cancelled, batch 0, no plan;
// - a search limit already spent after batch 1: the search stops there, batch 1 answered and
//   the row says it stopped.
#include "core/pipeline/fit.h"
#include "core/solvers/registry.h"

#include "common/test_support.h"

#include <QFileInfo>
#include <QTest>

using namespace remat;
using namespace remat::core;

namespace {

std::string mlpPath() { return tests::toStd(tests::sharedPath("corpus/with_weights/mlp.onnx")); }

int64_t storeAllPeak(int64_t batch, const training::TrainingOptions &t = {})
{
    pipeline::LoadOptions o;
    o.import.batch = batch;
    o.training = t;
    auto p = pipeline::loadProblem(mlpPath(), o);
    return p && (*p)->isValid() ? (*p)->storeAll.timeline.peakBytes : -1;
}

constexpr int64_t kMemory = 1 << 20;

} // namespace

class TestFit : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        if (!QFileInfo::exists(QString::fromStdString(mlpPath())))
            QSKIP("corpus not found");
    }

    void storeAllLargestBatchIsTheBoundary()
    {
        for (bool adam : {false, true}) {
            training::TrainingOptions t;
            if (adam)
                t.optimizer = training::Optimizer::Adam;
            pipeline::LoadOptions load;
            load.training = t;
            pipeline::Fitter fitter(mlpPath(), load, {kMemory, 65536, 10});
            const pipeline::FitResult r = fitter.fit("store-all", nullptr);
            QVERIFY2(r.error.empty(), r.error.c_str());
            QVERIFY(r.batch > 1);
            QVERIFY(r.plan);
            QCOMPARE(r.plan->timeline.peakBytes, storeAllPeak(r.batch, t));
            QVERIFY(storeAllPeak(r.batch, t) <= kMemory);
            QVERIFY(storeAllPeak(r.batch + 1, t) > kMemory);
            QCOMPARE(r.tries, int(r.trials.size()));
            std::string tried;
            for (const pipeline::FitTrial &trial : r.trials)
                tried += std::to_string(trial.batch) + ":" + std::to_string(trial.peakBytes) + " ";
            QVERIFY2(r.tries <= 7, tried.c_str());
            QVERIFY(!r.searchStopped);
            QCOMPARE(r.firstMiss, r.batch + 1);
            QCOMPARE(r.trials.front().batch, int64_t(1));
            int64_t best = 0;
            for (const pipeline::FitTrial &trial : r.trials) {
                QCOMPARE(trial.peakBytes, storeAllPeak(trial.batch, t));
                QCOMPARE(trial.fits, trial.peakBytes <= kMemory);
                if (trial.fits)
                    best = std::max(best, trial.batch);
            }
            QCOMPARE(best, r.batch);
            QCOMPARE(r.smallestPeak, storeAllPeak(1, t));
            if (adam) {
                pipeline::Fitter plain(mlpPath(), {}, {kMemory, 65536, 10});
                QVERIFY(r.batch < plain.fit("store-all", nullptr).batch);
            }
        }
    }

    void solversShareTheImports()
    {
        const solvers::SolverRegistry registry = solvers::makeRegistry();
        pipeline::Fitter fitter(mlpPath(), {}, {kMemory, 65536, 10});
        const pipeline::FitResult all = fitter.fit("store-all", nullptr);
        const size_t imported = fitter.imports();
        QCOMPARE(imported, size_t(all.tries));
        const pipeline::FitResult chen = fitter.fit("chen-sqrtn", registry.find("chen-sqrtn"));
        QVERIFY2(chen.error.empty(), chen.error.c_str());
        QVERIFY(chen.batch >= all.batch);
        QVERIFY(chen.plan && chen.plan->timeline.peakBytes <= kMemory);
        QVERIFY(fitter.imports() <= imported + size_t(chen.tries));
    }

    void stopTokenCancels()
    {
        StopSource stop;
        stop.requestStop();
        int progressCalls = 0;
        pipeline::Fitter fitter(mlpPath(), {}, {kMemory, 65536, 10}, stop.token(),
                                [&](const std::string &, int64_t, int) { ++progressCalls; });
        const pipeline::FitResult r = fitter.fit("store-all", nullptr);
        QVERIFY(r.cancelled);
        QCOMPARE(r.batch, int64_t(0));
        QVERIFY(!r.plan);
        QCOMPARE(progressCalls, 0);
    }

    // Cancel in the middle of a search (the user's Cancel while the third batch is being
    // tried): the batches tried before it stand, nothing after it is tried, and the answer says
    // cancelled.
    void stopInTheMiddleOfASearch()
    {
        StopSource stop;
        std::vector<int64_t> announced;
        pipeline::Fitter fitter(mlpPath(), {}, {kMemory, 65536, 10}, stop.token(),
                                [&](const std::string &, int64_t batch, int) {
                                    announced.push_back(batch);
                                    if (announced.size() == 3)
                                        stop.requestStop(); // arrives while it is imported
                                });
        const pipeline::FitResult r = fitter.fit("store-all", nullptr);
        QVERIFY(r.cancelled);
        QCOMPARE(announced.size(), size_t(3));
        QCOMPARE(announced[0], int64_t(1));
        QCOMPARE(announced[1], int64_t(2));
        QVERIFY(announced[2] > 2);
        QCOMPARE(r.trials.size(), size_t(2)); // 1 and 2 were planned; the third was stopped
        QCOMPARE(r.trials[0].batch, int64_t(1));
        QCOMPARE(r.trials[1].batch, int64_t(2));
        QVERIFY(!r.error.empty());
        // The next solver's search on the same fitter does not start.
        const pipeline::FitResult next = fitter.fit("store-all", nullptr);
        QVERIFY(next.cancelled);
        QCOMPARE(announced.size(), size_t(3));
    }

    // A search limit spent once batch 1 is tried: the search stops there and says so, batch 1
    // (which fits) answered with its plan; the same search without a limit goes further.
    void searchLimitStopsTheSearch()
    {
        pipeline::Fitter fitter(mlpPath(), {}, {kMemory, 65536, 10, 1e-9});
        const pipeline::FitResult r = fitter.fit("store-all", nullptr);
        QVERIFY2(r.error.empty(), r.error.c_str());
        QVERIFY(r.searchStopped);
        QCOMPARE(r.tries, 1);
        QCOMPARE(r.batch, int64_t(1));
        QCOMPARE(r.firstMiss, int64_t(0));
        QVERIFY(r.plan && r.plan->timeline.peakBytes <= kMemory);
        pipeline::Fitter unlimited(mlpPath(), {}, {kMemory, 65536, 10});
        const pipeline::FitResult all = unlimited.fit("store-all", nullptr);
        QVERIFY(!all.searchStopped);
        QVERIFY(all.batch > 1);
    }
};

QTEST_GUILESS_MAIN(TestFit)
#include "tst_fit.moc"
