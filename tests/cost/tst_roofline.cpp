// Roofline and measured-profile costs on the hand-built two-layer graph (tests/sim/hand_graphs.h).
#include "core/cost/roofline.h"
#include "sim/hand_graphs.h"

#include <QtTest>

using namespace remat::core;

class TstRoofline : public QObject
{
    Q_OBJECT

private:
    training::TrainingGraph withFigures()
    {
        // f1: 2e12 FLOPs, 1e9 bytes -> compute bound; f2: 1e9 FLOPs, 4e12 bytes -> memory bound.
        training::TrainingGraph g = remat::tests::twoLayerGraph();
        std::vector<training::Op> ops = g.ops();
        ops[0].flops = 2e12;
        ops[0].bytesAccessed = int64_t(1e9);
        ops[1].flops = 1e9;
        ops[1].bytesAccessed = int64_t(4e12);
        return std::move(*training::TrainingGraph::assemble({}, ops, g.tensors()));
    }

private slots:
    void roofline()
    {
        const training::TrainingGraph g = withFigures();
        cost::Roofline hw; // 100 TFLOP/s, 2 TB/s, 5 us launch
        const cost::Costs c = cost::rooflineCosts(g, hw);
        QCOMPARE(c.opSeconds.size(), g.opCount());
        QVERIFY(qAbs(c.opSeconds[0] - (0.02 + 5e-6)) < 1e-12); // 2e12 / 1e14
        QVERIFY(qAbs(c.opSeconds[1] - (2.0 + 5e-6)) < 1e-12);  // 4e12 / 2e12
        QVERIFY(qAbs(c.opSeconds[2] - 5e-6) < 1e-15);          // nothing but the launch
        QCOMPARE(c.hostToDeviceBandwidth, hw.hostToDeviceBandwidth);
        QCOMPARE(QString::fromStdString(c.source), QString("roofline"));
    }

    void profile()
    {
        const training::TrainingGraph g = withFigures();
        auto p = cost::parseProfile(
            R"({"ops": {"f1": 0.5, "f2": 0.25, "loss": 0, "f2/grad": 1, "f1/grad": 2},
                                        "host_to_device_bandwidth": 1e9})",
            g);
        QVERIFY2(p.hasValue(), p.status().message().c_str());
        QCOMPARE(p->opSeconds, (std::vector<double>{0.5, 0.25, 0, 1, 2}));
        QCOMPARE(p->hostToDeviceBandwidth, 1e9);
        // A flat object works too; a missing op is an error without a fallback...
        auto missing = cost::parseProfile(R"({"f1": 0.5})", g);
        QVERIFY(!missing.hasValue());
        QCOMPARE(QString::fromStdString(missing.status().message()),
                 QString("profile: no time for op 'f2'"));
        // ...and takes the roofline time with one.
        const cost::Roofline hw;
        auto mixed = cost::parseProfile(R"({"f1": 0.5})", g, &hw);
        QVERIFY(mixed.hasValue());
        QCOMPARE(mixed->opSeconds[0], 0.5);
        QVERIFY(qAbs(mixed->opSeconds[1] - (2.0 + 5e-6)) < 1e-12);
        QCOMPARE(QString::fromStdString(mixed->source), QString("profile+roofline"));
        QVERIFY(!cost::parseProfile("[1,2]", g).hasValue());
        QVERIFY(!cost::parseProfile(R"({"f1": -1})", g, &hw).hasValue());
        QVERIFY(!cost::loadProfile("/nonexistent/profile.json", g).hasValue());
    }
};

QTEST_GUILESS_MAIN(TstRoofline)
#include "tst_roofline.moc"
