// Store-all on real models: every corpus model's training graph simulates under store-all, and at
// the forward/backward boundary the stored activations are exactly what the training graph says
// backward keeps (TrainingSummary), with weights and nothing else beside them.
#include "common/test_support.h"
#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

#include <QFileInfo>
#include <QtTest>

using namespace remat::core;
using remat::tests::sharedPath;
using remat::tests::toStd;
using schedule::MemCategory;

class TstCorpus : public QObject
{
    Q_OBJECT

private slots:
    void storeAll_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("batch");
        for (const char *m : {"resnet18", "vgg16", "densenet121", "mobilenet_v2", "vit_b_16"})
            QTest::newRow(m) << QString("graph_only/%1.onnx").arg(m) << 4;
        for (const char *m : {"mlp", "tiny_vit", "mobilenet_v2_b2_64"})
            QTest::newRow(m) << QString("with_weights/%1.onnx").arg(m) << 0;
    }

    void storeAll()
    {
        QFETCH(QString, file);
        QFETCH(int, batch);
        const QString path = sharedPath("corpus/" + file);
        if (!QFileInfo::exists(path))
            QSKIP("corpus not found");
        onnx::ImportOptions opt;
        opt.batch = batch;
        auto g = onnx::importModel(toStd(path), opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY2(tg.hasValue(), tg.status().message().c_str());
        const training::TrainingSummary sum = training::summarize(*tg);
        const schedule::Schedule s = schedule::storeAllSchedule(*tg);
        auto t = sim::simulate(s, *tg, cost::rooflineCosts(*tg));
        QVERIFY2(t.hasValue(), t.status().message().c_str());

        size_t boundary = 0;
        while (boundary < s.steps.size() &&
               !(s.steps[boundary].kind == schedule::StepKind::Phase &&
                 s.steps[boundary].mark() == schedule::PhaseMark::BackwardBegin))
            ++boundary;
        QVERIFY(boundary < s.steps.size());
        const auto &at = t->points[boundary].byCategory;
        const auto cat = [&](MemCategory c) { return at[static_cast<size_t>(c)]; };
        QCOMPARE(cat(MemCategory::StoredActivations),
                 sum.storedActivationBytes + sum.savedWeightDerivedBytes);
        QCOMPARE(cat(MemCategory::Weights), t->weightBytes);
        QCOMPARE(cat(MemCategory::RecomputedActivations), int64_t(0));
        // Only the loss and the seed gradients are alive beside them.
        QVERIFY(cat(MemCategory::ActivationGrads) > 0);
        QCOMPARE(t->weightGradBytes, sum.paramGradBytes);
        QCOMPARE(t->points.back().byCategory[static_cast<size_t>(MemCategory::StoredActivations)],
                 int64_t(0));
        QCOMPARE(t->points.back().bytesInUse, t->weightBytes + t->weightGradBytes);
        QVERIFY(t->peakBytes >= t->points[boundary].bytesInUse);
        QCOMPARE(t->recomputeSeconds, 0.0);
        QVERIFY(qAbs(t->computeSeconds - t->oneComputeSeconds) <= 1e-9 * t->oneComputeSeconds);
    }
};

QTEST_GUILESS_MAIN(TstCorpus)
#include "tst_corpus.moc"
