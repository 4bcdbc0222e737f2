// Store-all against PyTorch: for every graph-only corpus model at the oracle's batch, the bytes our
// training graph keeps for backward are within 3% of PyTorch's saved_activation_bytes, the
// parameter bytes are equal, Conv + MatMul FLOPs equal fwd_flops, and store-all validates.
#include "common/test_support.h"
#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace remat::core;
using remat::tests::sharedPath;
using remat::tests::toStd;

class TstOracle : public QObject
{
    Q_OBJECT

private:
    QJsonObject m_oracle;

private slots:
    void initTestCase()
    {
        QFile f(sharedPath("corpus/oracle.json"));
        if (!f.open(QIODevice::ReadOnly))
            QSKIP("corpus/oracle.json not found");
        m_oracle = QJsonDocument::fromJson(f.readAll()).object();
        QVERIFY(m_oracle.size() >= 6);
    }

    void matchesPyTorch_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("batch2");
        for (const char *m :
             {"resnet18", "resnet50", "vgg16", "densenet121", "mobilenet_v2", "vit_b_16"}) {
            QTest::newRow(m) << QString(m) << false;
            QTest::newRow(qPrintable(QString(m) + "@2")) << QString(m) << true;
        }
    }

    void matchesPyTorch()
    {
        QFETCH(QString, model);
        QFETCH(bool, batch2);
        const QJsonObject top = m_oracle.value(model).toObject();
        QVERIFY(!top.isEmpty());
        // The second measured point (batch 2) has the batch-dependent figures only.
        QJsonObject o = top;
        const QJsonObject second = top.value("batch2").toObject();
        if (batch2)
            for (auto it = second.begin(); it != second.end(); ++it)
                o.insert(it.key(), it.value());
        const int64_t batch = batch2 ? 2 : o.value("batch").toInteger();
        onnx::ImportOptions opt;
        opt.batch = batch;
        auto g = onnx::importModel(toStd(sharedPath("corpus/" + top.value("onnx_file").toString())),
                                   opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY2(tg.hasValue(), tg.status().message().c_str());
        const training::TrainingSummary s = training::summarize(*tg, &*g);

        const int64_t expectedSaved = o.value("saved_activation_bytes").toInteger();
        const double diff =
            100.0 * double(s.savedForBackwardBytes - expectedSaved) / double(expectedSaved);
        qInfo("%-13s b%-3lld saved ours %lld  pytorch %lld  diff %+.3f%%  params %lld/%lld  flops "
              "%.0f/%lld",
              qPrintable(model), (long long)batch, (long long)s.savedForBackwardBytes,
              (long long)expectedSaved, diff, (long long)s.paramBytes,
              (long long)o.value("param_bytes").toInteger(), s.forwardMatmulConvFlops,
              (long long)o.value("fwd_flops").toInteger());
        QVERIFY2(std::abs(diff) <= 3.0, qPrintable(QString("saved bytes differ by %1%").arg(diff)));
        QCOMPARE(s.paramBytes, o.value("param_bytes").toInteger());
        QCOMPARE(s.paramGradBytes, s.paramBytes);
        const double flops = double(o.value("fwd_flops").toInteger());
        QVERIFY(std::abs(s.forwardMatmulConvFlops - flops) <= 1e-6 * flops);

        const schedule::Schedule storeAll = schedule::storeAllSchedule(*tg);
        Status valid = schedule::validate(storeAll, *tg);
        QVERIFY2(valid.isOk(), valid.message().c_str());
        auto t =
            sim::simulate(storeAll, *tg, cost::rooflineCosts(*tg, {}), {.recordPoints = false});
        QVERIFY2(t.hasValue(), t.status().message().c_str());
        QVERIFY(t->peakBytes >= s.paramBytes + s.savedForBackwardBytes);
    }
};

QTEST_GUILESS_MAIN(TstOracle)
#include "tst_oracle.moc"
