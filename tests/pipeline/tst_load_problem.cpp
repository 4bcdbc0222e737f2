// core::pipeline::loadProblem on a corpus model and on a file whose input sizes are open: the
// problem's parts agree with the stages run one by one, the indexes point where they say, a
// blocked training step leaves a browsable problem, and every call is counted.
#include "common/test_support.h"

#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/pipeline/problem.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

#include <QFileInfo>
#include <QtTest>

using namespace remat;
using namespace remat::core;

class TestLoadProblem : public QObject
{
    Q_OBJECT

private:
    QString mlp() const
    {
        return tests::sharedPath(QStringLiteral("corpus/with_weights/mlp.onnx"));
    }
    QString freeDims() const
    {
        // x[N,3,H,W] with named free dims: browsable, its training step waits for the sizes.
        return tests::sourceDir() +
               QStringLiteral("/tests/data/realworld/ppocr_mobile_v2_cls.onnx");
    }

private slots:
    void agreesWithTheStagesRunOneByOne()
    {
        if (!QFileInfo::exists(mlp()))
            QSKIP("shared corpus not found");
        const std::string path = tests::toStd(mlp());
        pipeline::LoadOptions options;
        options.import.batch = 3;
        const int64_t before = pipeline::loadProblemCount();
        auto p = pipeline::loadProblem(path, options);
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        QCOMPARE(pipeline::loadProblemCount() - before, int64_t(1));
        const pipeline::Problem &problem = **p;
        QVERIFY(problem.isValid());
        QVERIFY(problem.trainingStatus.isOk());
        QCOMPARE(problem.batch, int64_t(3));
        QCOMPARE(problem.modelPath, path);
        QCOMPARE(problem.options.import.batch, int64_t(3));

        // The same stages by hand: import, build, roofline, store-all simulated.
        onnx::ImportOptions io;
        io.batch = 3;
        auto g = onnx::importModel(path, io);
        QVERIFY(g.hasValue());
        QCOMPARE(problem.modelSha256, g->info().sha256);
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY(tg.hasValue());
        QCOMPARE(problem.training->opCount(), tg->opCount());
        QCOMPARE(problem.training->tensorCount(), tg->tensorCount());
        const cost::Costs costs = cost::rooflineCosts(*tg);
        auto t = sim::simulate(schedule::storeAllSchedule(*tg), *tg, costs);
        QVERIFY(t.hasValue());
        QCOMPARE(problem.storeAll.timeline.peakBytes, t->peakBytes);
        QCOMPARE(problem.storeAll.timeline.activationPeakBytes, t->activationPeakBytes);
        QCOMPARE(problem.storeAll.budgetBytes, t->peakBytes);
        QCOMPARE(problem.storeAll.timeline.points.size(), problem.storeAll.schedule.steps.size());

        // Node -> forward op: each names its node; every forward op with a node is indexed.
        QCOMPARE(problem.forwardOpOfNode.size(), problem.forward->nodeCount());
        size_t indexed = 0;
        for (size_t n = 0; n < problem.forwardOpOfNode.size(); ++n) {
            const OpId op = problem.forwardOpOfNode[n];
            if (!op.valid())
                continue;
            ++indexed;
            QCOMPARE(problem.training->op(op).source.index(), n);
            QCOMPARE(problem.training->op(op).phase, training::Phase::Forward);
        }
        QVERIFY(indexed > 0);
        // Node name -> its activation output, produced by the op of that name.
        QVERIFY(!problem.activationOfNode.empty());
        for (const auto &[name, tensor] : problem.activationOfNode) {
            const training::Tensor &t = problem.training->tensor(tensor);
            QCOMPARE(t.role, training::TensorRole::Activation);
            QCOMPARE(problem.training->op(t.producer).name, name);
        }
    }

    void blockedTrainingStepStillBrowses()
    {
        if (!QFileInfo::exists(freeDims()))
            QSKIP("tests/data/realworld not found");
        pipeline::LoadOptions options;
        options.import.allowUnknownShapes = true;
        auto p = pipeline::loadProblem(tests::toStd(freeDims()), options);
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        QVERIFY((*p)->forward);
        QVERIFY((*p)->forward->nodeCount() > 100);
        QVERIFY(!(*p)->isValid());
        QVERIFY(!(*p)->training);
        QVERIFY(!(*p)->trainingStatus.isOk());
        // The builder's refusal names the dim to give, as the importer worded it.
        QVERIFY2((*p)->trainingStatus.message().find("p2o.DynamicDimension") != std::string::npos,
                 (*p)->trainingStatus.message().c_str());

        // Without browsing the import itself refuses the open sizes.
        auto strict = pipeline::loadProblem(tests::toStd(freeDims()), {});
        QVERIFY(!strict.hasValue());
    }

    void errorsAndStopsAreCountedAndReported()
    {
        const int64_t before = pipeline::loadProblemCount();
        auto missing = pipeline::loadProblem("/nonexistent/model.onnx", {});
        QVERIFY(!missing.hasValue());
        QVERIFY2(missing.status().message().find("/nonexistent/model.onnx") != std::string::npos,
                 missing.status().message().c_str());
        QCOMPARE(pipeline::loadProblemCount() - before, int64_t(1));

        if (!QFileInfo::exists(mlp()))
            QSKIP("shared corpus not found");
        StopSource stop;
        stop.requestStop();
        auto stopped = pipeline::loadProblem(tests::toStd(mlp()), {}, stop.token());
        QVERIFY(!stopped.hasValue());
        QCOMPARE(stopped.status().code(), StatusCode::Cancelled);
        QCOMPARE(pipeline::loadProblemCount() - before, int64_t(2));
    }

    void handBuiltProblemHasTheBaseline()
    {
        if (!QFileInfo::exists(mlp()))
            QSKIP("shared corpus not found");
        auto g = onnx::importModel(tests::toStd(mlp()));
        QVERIFY(g.hasValue());
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY(tg.hasValue());
        auto training = std::make_shared<const training::TrainingGraph>(std::move(*tg));
        auto costs = std::make_shared<const cost::Costs>(cost::rooflineCosts(*training));
        const int64_t before = pipeline::loadProblemCount();
        auto p = pipeline::makeProblem(nullptr, training, costs);
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        QCOMPARE(pipeline::loadProblemCount(), before); // nothing imported
        QCOMPARE((*p)->training.get(), training.get());
        QVERIFY((*p)->storeAll.timeline.peakBytes > 0);
        QVERIFY((*p)->forwardOpOfNode.empty());
        QVERIFY(!(*p)->activationOfNode.empty());
        QVERIFY(!pipeline::makeProblem(nullptr, nullptr, costs).hasValue());
    }
};

QTEST_MAIN(TestLoadProblem)
#include "tst_load_problem.moc"
