// core's fit search (pipeline::Fitter, shared by `remat fit` and the planner's dialog) on the
// corpus MLP with weights. Expected:
// - store-all within 1 MiB: batch B fits and B+1 does not, each checked against loadProblem's
//   store-all peak at that batch; the trials are the doubling then the bisection, every one
//   with the peak loadProblem gives at its batch, the largest fitting one being B;
// - Adam's 16 B per parameter take memory: its batch is smaller;
// - a solver (chen-sqrtn) fits at least store-all's batch; every batch is imported once for
//   both solvers;
// - a stop token that has fired: the result is cancelled, batch 0, no plan.
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
};

QTEST_GUILESS_MAIN(TestFit)
#include "tst_fit.moc"
