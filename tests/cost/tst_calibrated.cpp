// The calibrated cost model on synthetic profiles, whose times come from a known formula, so the
// fit must find the formula's terms:
// - six Conv ops timed 20 us + flops / 1e10 + bytes / 2e9: the "type Conv" level recovers 20 us,
//   1e10 FLOP/s and 2e9 B/s (to 1e-6), on its own fit;
// - one Relu beside them (3x what the all-ops fit says): "type Relu" scales its parent and
//   predicts its own time exactly;
// - profileCosts on the hand-built two-layer graph: same sizes -> the profile's own times
//   (source "profile"); sizes doubled (another batch) -> each time scaled by model(new) /
//   model(old) (source "calibrated", a batch warning); another model's sha256 -> no time taken by
//   name, a warning naming both hashes; a legacy profile without sizes that misses ops -> those
//   take the roofline (source "estimate"); an empty profile -> an error;
// - a profile whose steps spent 25% more in ops than the medians add up to: every time x 1.25,
//   with a warning;
// - mlp from the corpus at batch 2 with per-type times from a known formula: the profile predicts
//   batch 4 exactly where the formula is linear in the sizes (every op but the loss within 1e-6
//   relative; the loss, alone in its phase, within 10%).
#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"
#include "core/exec/profile_recorder.h"
#include "core/onnx/importer.h"
#include "core/training/builder.h"

#include "common/test_support.h"
#include "sim/hand_graphs.h"

#include <QFileInfo>
#include <QtTest>

using namespace remat::core;

namespace {

cost::ProfiledOp op(const std::string &name, const std::string &type, double flops, double bytes,
                    double seconds, const std::string &family = "Convolution",
                    const std::string &phase = "forward")
{
    cost::ProfiledOp o;
    o.name = name;
    o.type = type;
    o.phase = phase;
    o.family = family;
    o.flops = flops;
    o.bytes = bytes;
    o.seconds = seconds;
    o.samples = 3;
    return o;
}

double convTime(double flops, double bytes) { return 20e-6 + flops / 1e10 + bytes / 2e9; }

bool near(double a, double b, double rel)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

/// The hand graph with sizes: f1 1e8 FLOPs 1e6 B, f2 1e7 / 4e6, loss 1e3 / 1e3,
/// f2/grad 2e7 / 8e6, f1/grad 2e8 / 2e6 (times `scale`).
training::TrainingGraph sizedGraph(double scale, const std::string &sha)
{
    training::TrainingGraph g = remat::tests::twoLayerGraph();
    std::vector<training::Op> ops = g.ops();
    const double f[] = {1e8, 1e7, 1e3, 2e7, 2e8}, b[] = {1e6, 4e6, 1e3, 8e6, 2e6};
    for (size_t i = 0; i < ops.size(); ++i) {
        ops[i].flops = f[i] * scale;
        ops[i].bytesAccessed = int64_t(b[i] * scale);
    }
    training::TrainingGraphInfo info;
    info.modelSha256 = sha;
    info.batch = int64_t(2 * scale);
    return std::move(*training::TrainingGraph::assemble(info, ops, g.tensors()));
}

/// A profile of `g` with every op timed by convTime, typed and phased as the graph says.
cost::Profile profileOf(const training::TrainingGraph &g)
{
    cost::Profile p;
    p.modelSha256 = g.info().modelSha256;
    p.batch = g.info().batch;
    p.backend = "cpu";
    for (const training::Op &o : g.ops()) {
        const cost::OpShape s = cost::opShape(g, o);
        p.ops.push_back(
            op(o.name, s.type, s.flops, s.bytes, convTime(s.flops, s.bytes), s.family, s.phase));
    }
    return p;
}

} // namespace

class TstCalibrated : public QObject
{
    Q_OBJECT

private slots:
    void fitRecoversEfficiencies()
    {
        cost::Profile p;
        const double sizes[][2] = {{1e6, 1e5}, {5e7, 2e6}, {2e8, 1e6},
                                   {1e9, 4e7}, {3e5, 9e6}, {7e7, 7e5}};
        int i = 0;
        for (const auto &s : sizes)
            p.ops.push_back(
                op("conv" + std::to_string(i++), "Conv", s[0], s[1], convTime(s[0], s[1])));
        const cost::CalibratedModel m = cost::CalibratedModel::fit(p);
        QVERIFY(m.valid());
        const cost::Efficiency *e = m.levelFor({"Conv", "forward", "Convolution", 1e6, 1e6});
        QVERIFY(e);
        QCOMPARE(QString::fromStdString(e->group), QString("type Conv"));
        QVERIFY(e->ownFit);
        QCOMPARE(e->samples, 6);
        QVERIFY2(near(e->fixedSeconds, 20e-6, 1e-6), qPrintable(QString::number(e->fixedSeconds)));
        QVERIFY2(near(e->flopsPerSecond(), 1e10, 1e-6),
                 qPrintable(QString::number(e->flopsPerSecond())));
        QVERIFY2(near(e->bytesPerSecond(), 2e9, 1e-6),
                 qPrintable(QString::number(e->bytesPerSecond())));
        // An op type the profile never saw takes the nearest level: same family and phase.
        const cost::Efficiency *other =
            m.levelFor({"ConvTranspose", "forward", "Convolution", 1, 1});
        QVERIFY(other);
        QCOMPARE(QString::fromStdString(other->group), QString("family Convolution forward"));
        QCOMPARE(QString::fromStdString(m.levelFor({"X", "forward", "", 0, 0})->group),
                 QString("phase forward"));
        QVERIFY(!cost::CalibratedModel::fit(cost::Profile{}).valid());
    }

    void fewOpsScaleTheirParent()
    {
        cost::Profile p;
        const double sizes[][2] = {{1e6, 1e5}, {5e7, 2e6}, {2e8, 1e6}, {1e9, 4e7}};
        int i = 0;
        for (const auto &s : sizes)
            p.ops.push_back(
                op("conv" + std::to_string(i++), "Conv", s[0], s[1], convTime(s[0], s[1])));
        const cost::CalibratedModel conly = cost::CalibratedModel::fit(p);
        const double parent = conly.predict({"Relu", "forward", "Activation", 1e5, 8e5});
        p.ops.push_back(op("relu", "Relu", 1e5, 8e5, 3 * parent, "Activation"));
        const cost::CalibratedModel m = cost::CalibratedModel::fit(p);
        const cost::Efficiency *relu = m.levelFor({"Relu", "forward", "Activation", 1e5, 8e5});
        QVERIFY(relu);
        QCOMPARE(QString::fromStdString(relu->group), QString("type Relu"));
        QVERIFY(!relu->ownFit);
        QCOMPARE(relu->samples, 1);
        QVERIFY2(near(m.predict({"Relu", "forward", "Activation", 1e5, 8e5}), 3 * parent, 0.05),
                 qPrintable(QString("%1 vs %2")
                                .arg(m.predict({"Relu", "forward", "Activation", 1e5, 8e5}))
                                .arg(3 * parent)));
    }

    void sameSizeIsTheProfile()
    {
        const training::TrainingGraph g = sizedGraph(1, "abc");
        cost::Profile p = profileOf(g);
        p.ops[1].seconds = 0.125; // not what the formula says: the measured time is taken as is
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, g, cost::Roofline{}, "p.json", &rep);
        QVERIFY2(c.hasValue(), c.hasValue() ? "" : c.status().toString().c_str());
        QCOMPARE(c->timeSource, cost::TimeSource::Profile);
        QCOMPARE(QString(cost::timeSourceName(c->timeSource)), QString("profile"));
        QCOMPARE(rep.measured, g.opCount());
        QVERIFY(rep.warnings.empty());
        QCOMPARE(c->opSeconds[1], 0.125);
        QCOMPARE(c->opSeconds[0], convTime(1e8, 1e6));
        QCOMPARE(QString::fromStdString(c->source), QString("profile:p.json"));
    }

    void loadFactorSpreadsTheBusyShare()
    {
        const training::TrainingGraph g = sizedGraph(1, "abc");
        cost::Profile p = profileOf(g);
        p.iterations = 3;
        double sum = 0;
        for (const cost::ProfiledOp &o : p.ops)
            sum += o.seconds;
        p.computeSeconds = 1.25 * sum; // steps took a quarter longer than the medians add up to
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, g, cost::Roofline{}, "busy.json", &rep);
        QVERIFY(c.hasValue());
        QVERIFY(near(rep.loadFactor, 1.25, 1e-12));
        for (size_t i = 0; i < g.opCount(); ++i)
            QVERIFY(near(c->opSeconds[i], 1.25 * p.ops[i].seconds, 1e-12));
        QCOMPARE(c->timeSource, cost::TimeSource::Profile);
        QVERIFY(!rep.warnings.empty());
        QVERIFY2(QString::fromStdString(rep.warnings[0]).contains("busy machine"),
                 rep.warnings[0].c_str());
    }

    void anotherBatchIsScaled()
    {
        const training::TrainingGraph g2 = sizedGraph(1, "abc"), g4 = sizedGraph(2, "abc");
        cost::Profile p = profileOf(g2);
        p.ops[0].seconds *= 1.5; // op 0 runs slower than the model: its scaled time keeps the 1.5
        const cost::CalibratedModel m = cost::CalibratedModel::fit(p);
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, g4, cost::Roofline{}, "p.json", &rep);
        QVERIFY(c.hasValue());
        QCOMPARE(c->timeSource, cost::TimeSource::Calibrated);
        QCOMPARE(rep.scaled, g4.opCount());
        QCOMPARE(rep.measured, size_t(0));
        QVERIFY(!rep.warnings.empty());
        QVERIFY2(
            QString::fromStdString(rep.warnings[0]).contains("batch 2, the model is at batch 4"),
            rep.warnings[0].c_str());
        for (const training::Op &o : g4.ops()) {
            const cost::OpShape now = cost::opShape(g4, o), then = cost::opShape(g2, g2.op(o.id));
            const double expected = p.ops[o.id.index()].seconds * m.predict(now) / m.predict(then);
            QVERIFY2(near(c->opSeconds[o.id.index()], expected, 1e-12), o.name.c_str());
        }
        QVERIFY(c->opSeconds[0] > 1.4 * convTime(2e8, 2e6)); // kept its 1.5 over the model
    }

    void anotherModelLendsItsEfficiencies()
    {
        const training::TrainingGraph mine = sizedGraph(1, "1111111111111111"),
                                      theirs = sizedGraph(1, "2222222222222222");
        cost::Profile p = profileOf(theirs);
        p.modelPath = "other.onnx";
        for (cost::ProfiledOp &o : p.ops)
            o.seconds *= 2; // not used by name
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, mine, cost::Roofline{}, "p.json", &rep);
        QVERIFY(c.hasValue());
        QCOMPARE(rep.measured, size_t(0));
        QCOMPARE(rep.fitted, mine.opCount());
        QCOMPARE(c->timeSource, cost::TimeSource::Calibrated);
        QVERIFY(!rep.warnings.empty());
        const QString w = QString::fromStdString(rep.warnings[0]);
        QVERIFY2(w.contains("another model") && w.contains("other.onnx") &&
                     w.contains("222222222222") && w.contains("111111111111") &&
                     w.contains("--profile-out"),
                 qPrintable(w));
    }

    void legacyProfileFallsBackToTheRoofline()
    {
        const training::TrainingGraph g = sizedGraph(1, "abc");
        cost::Profile p;
        cost::ProfiledOp f1;
        f1.name = "f1";
        f1.seconds = 0.5;
        p.ops.push_back(f1); // no sizes, no identity
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, g, cost::Roofline{}, "old.json", &rep);
        QVERIFY(c.hasValue());
        QCOMPARE(c->opSeconds[0], 0.5);
        QCOMPARE(rep.measured, size_t(1));
        QCOMPARE(rep.estimated, g.opCount() - 1);
        QCOMPARE(c->timeSource, cost::TimeSource::Estimate);
        const cost::Costs roof = cost::rooflineCosts(g);
        QCOMPARE(c->opSeconds[1], roof.opSeconds[1]);
        QVERIFY(!cost::profileCosts(cost::Profile{}, g, cost::Roofline{}, "empty.json").hasValue());
    }

    // Each op with its own law (a fixed cost and a slope no family shares: the CPU backend's
    // small batched MatMuls cost mostly per call): one batch cannot tell the two apart, two
    // batches can. With a second point per op the batch-4 time is each op's own law exactly;
    // without it the calibrated model misses.
    void secondPointFollowsEachOpsOwnLine()
    {
        const training::TrainingGraph g1 = sizedGraph(0.5, "abc"), g2 = sizedGraph(1, "abc"),
                                      g4 = sizedGraph(2, "abc");
        // op i: fixed (i + 1) * 40 us, plus its bytes at (i + 1) GB/s.
        auto law = [](size_t i, double bytes) {
            return double(i + 1) * 40e-6 + bytes / (double(i + 1) * 1e9);
        };
        cost::Profile p, second;
        p.modelSha256 = second.modelSha256 = "abc";
        p.batch = 2;
        second.batch = 1;
        for (const training::Op &o : g2.ops()) {
            const cost::OpShape s = cost::opShape(g2, o), s1 = cost::opShape(g1, g1.op(o.id));
            p.ops.push_back(op(o.name, s.type, s.flops, s.bytes, law(o.id.index(), s.bytes),
                               s.family, s.phase));
            second.ops.push_back(op(o.name, s1.type, s1.flops, s1.bytes,
                                    law(o.id.index(), s1.bytes), s1.family, s1.phase));
        }
        cost::Profile one = p;
        QCOMPARE(remat::core::exec::addSecondPoint(p, second), int(g2.opCount()));
        QCOMPARE(p.secondBatch, int64_t(1));
        cost::ProfileCostsReport rep, repOne;
        auto c = cost::profileCosts(p, g4, cost::Roofline{}, "two.json", &rep);
        auto cOne = cost::profileCosts(one, g4, cost::Roofline{}, "one.json", &repOne);
        QVERIFY(c && cOne);
        QCOMPARE(rep.twoPoint, g4.opCount());
        QCOMPARE(repOne.twoPoint, size_t(0));
        QVERIFY2(QString::fromStdString(rep.warnings[0]).contains("batches 2 and 1"),
                 rep.warnings[0].c_str());
        double worstOne = 0;
        for (const training::Op &o : g4.ops()) {
            const double expected = law(o.id.index(), cost::opShape(g4, o).bytes);
            QVERIFY2(near(c->opSeconds[o.id.index()], expected, 1e-9), o.name.c_str());
            worstOne = std::max(worstOne, std::abs(cOne->opSeconds[o.id.index()] / expected - 1));
        }
        QVERIFY2(worstOne > 0.05, qPrintable(QString::number(worstOne))); // one batch cannot

        // At the second point's own size the op's time is that measurement.
        auto at1 = cost::profileCosts(p, g1, cost::Roofline{}, "two.json", &rep);
        QVERIFY(at1);
        for (const training::Op &o : g1.ops())
            QCOMPARE(at1->opSeconds[o.id.index()], law(o.id.index(), cost::opShape(g1, o).bytes));
        QCOMPARE(rep.measured, g1.opCount());

        // Noise (the bigger batch measured faster) or one size twice: no line; the model scales.
        cost::ProfiledOp noisy = p.ops[0];
        noisy.secondSeconds = noisy.seconds * 2; // smaller size, slower
        const cost::CalibratedModel m = cost::CalibratedModel::fit(p);
        QVERIFY(!cost::twoPointSeconds(noisy, cost::opShape(g4, g4.op(g4.ops()[0].id)), m));
        cost::ProfiledOp flat = p.ops[0];
        flat.secondFlops = flat.flops;
        flat.secondBytes = flat.bytes;
        QVERIFY(!cost::twoPointSeconds(flat, cost::opShape(g4, g4.ops()[0]), m));
        // Far below both points the line would cross zero: the time stays positive.
        cost::ProfiledOp steep = p.ops[0];
        steep.seconds = 1e-3;
        steep.secondSeconds = 1e-6; // intercept far below zero
        cost::OpShape tiny = cost::opShape(g4, g4.ops()[0]);
        tiny.flops *= 1e-3;
        tiny.bytes *= 1e-3;
        const auto t = cost::twoPointSeconds(steep, tiny, m);
        QVERIFY(t && *t > 0 && *t < 1e-6);
    }

    void profileAtBatch2PredictsBatch4()
    {
        const QString path = remat::tests::sharedPath("corpus/with_weights/mlp.onnx");
        if (!QFileInfo::exists(path))
            QSKIP("shared corpus not found");
        auto build = [&](int64_t batch) {
            onnx::ImportOptions o;
            o.batch = batch;
            auto g = onnx::importModel(remat::tests::toStd(path), o);
            return training::buildTrainingGraph(*g);
        };
        auto g2 = build(2), g4 = build(4);
        QVERIFY(g2.hasValue() && g4.hasValue());
        // Per-phase formulas: every op of one phase follows one linear law, so the fit is exact.
        auto truth = [](const cost::OpShape &s) {
            return s.phase == "backward" ? 5e-6 + s.flops / 4e9 + s.bytes / 1e9
                                         : 2e-6 + s.flops / 8e9 + s.bytes / 3e9;
        };
        cost::Profile p;
        p.modelSha256 = g2->info().modelSha256;
        p.batch = 2;
        for (const training::Op &o : g2->ops()) {
            const cost::OpShape s = cost::opShape(*g2, o);
            p.ops.push_back(op(o.name, s.type, s.flops, s.bytes, truth(s), s.family, s.phase));
        }
        cost::ProfileCostsReport rep;
        auto c = cost::profileCosts(p, *g4, cost::Roofline{}, "b2.json", &rep);
        QVERIFY(c.hasValue());
        QCOMPARE(c->timeSource, cost::TimeSource::Calibrated);
        QVERIFY(rep.scaled > 0);
        for (const training::Op &o : g4->ops()) {
            const double expected = truth(cost::opShape(*g4, o));
            // The loss is alone in its phase: it scales the all-ops fit, which mixes the forward
            // and backward laws, so it is near, not exact.
            const double tolerance = o.phase == training::Phase::Loss ? 0.1 : 1e-6;
            QVERIFY2(near(c->opSeconds[o.id.index()], expected, tolerance),
                     qPrintable(QString("%1: %2 vs %3")
                                    .arg(QString::fromStdString(o.name))
                                    .arg(c->opSeconds[o.id.index()])
                                    .arg(expected)));
        }
    }
};

QTEST_APPLESS_MAIN(TstCalibrated)
#include "tst_calibrated.moc"
