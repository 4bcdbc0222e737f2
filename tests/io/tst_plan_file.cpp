// Plan files: write, read, simulate gives the same figures; corrupted or mismatched files are
// refused with messages that say what is wrong.
#include "common/costed_model.h"
#include "solvers/random_graphs.h"

#include "core/cost/roofline.h"
#include "core/io/plan_file.h"
#include "core/onnx/importer.h"
#include "core/solvers/registry.h"
#include "core/training/builder.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace remat::core;

namespace {

remat::tests::RandomGraph graphFor(int64_t batch, const std::string &sha)
{
    remat::tests::RandomGraphOptions o;
    o.forwardOps = 9;
    o.dag = true;
    o.info.modelPath = "random.onnx";
    o.info.modelSha256 = sha;
    o.info.batch = batch;
    return remat::tests::randomTrainingGraph(7, o);
}

const std::string kSha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

solvers::Plan solve(const remat::tests::RandomGraph &rg, const std::string &id)
{
    auto reg = solvers::makeRegistry();
    solvers::SolveRequest r;
    r.graph = &rg.graph;
    r.costs = &rg.costs;
    auto p = reg.find(id)->solve(r);
    Q_ASSERT(p.hasValue());
    return *p;
}

} // namespace

class TstPlanFile : public QObject
{
    Q_OBJECT
private slots:
    void roundTrip()
    {
        // Expected: every solver's plan survives write -> read with the same schedule,
        // checkpoints and simulated figures (re-simulated, and as recorded).
        QTemporaryDir dir;
        const auto rg = graphFor(8, kSha);
        for (const char *id : {"store-all", "feng-huang", "hong-linear", "rotor", "revolve"}) {
            const solvers::Plan plan = solve(rg, id);
            const std::string path = remat::tests::toStd(dir.filePath(QString(id) + ".json"));
            QVERIFY(io::savePlan(path, plan, rg.graph, io::ModelIdentity::of(rg.graph)).isOk());
            auto back = io::readPlan(path, rg.graph, &rg.costs);
            QVERIFY2(back.hasValue(), back.status().toString().c_str());
            QCOMPARE(back->schedule, plan.schedule);
            QCOMPARE(back->checkpoints, plan.checkpoints);
            QCOMPARE(back->solver, plan.solver);
            QCOMPARE(back->timeline.peakBytes, plan.timeline.peakBytes);
            QCOMPARE(back->timeline.recomputeSeconds, plan.timeline.recomputeSeconds);
            auto recorded = io::readPlan(path, rg.graph);
            QVERIFY(recorded.hasValue());
            QCOMPARE(recorded->timeline.peakBytes, plan.timeline.peakBytes);
            QCOMPARE(recorded->timeline.activationPeakBytes, plan.timeline.activationPeakBytes);
        }
    }

    void pinsRoundTrip()
    {
        const auto rg = graphFor(8, kSha);
        auto reg = solvers::makeRegistry();
        solvers::SolveRequest r;
        r.graph = &rg.graph;
        r.costs = &rg.costs;
        r.pins = {{*rg.graph.findTensor("a2"), solvers::PinKind::Keep}};
        auto p = reg.find("hong-dp")->solve(r);
        QVERIFY(p.hasValue());
        const std::string text = io::writePlan(*p, rg.graph, io::ModelIdentity::of(rg.graph));
        auto back = io::parsePlan(text, rg.graph, &rg.costs);
        QVERIFY2(back.hasValue(), back.status().toString().c_str());
        QCOMPARE(back->pins, p->pins);
    }

    void rejects_data()
    {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<int>("code");
        // edit: a Python-free textual edit of the written plan, applied below.
        QTest::newRow("truncated") << "truncate"
                                   << "not valid JSON" << int(StatusCode::ParseError);
        QTest::newRow("format") << "format"
                                << "not a plan file" << int(StatusCode::ParseError);
        QTest::newRow("version") << "version"
                                 << "version 2 is not supported" << int(StatusCode::Unsupported);
        QTest::newRow("unknown tensor")
            << "tensor"
            << "tensor 'no_such_tensor' does not exist" << int(StatusCode::NotFound);
        QTest::newRow("unknown op") << "op"
                                    << "op 'no_such_op'" << int(StatusCode::InvalidArgument);
        QTest::newRow("invalid schedule")
            << "drop"
            << "does not validate" << int(StatusCode::InvalidArgument);
        QTest::newRow("step kind") << "kind"
                                   << "unknown step kind" << int(StatusCode::ParseError);
    }
    void rejects()
    {
        QFETCH(QString, edit);
        QFETCH(QString, expected);
        QFETCH(int, code);
        const auto rg = graphFor(8, kSha);
        const solvers::Plan plan = solve(rg, "hong-linear");
        std::string text = io::writePlan(plan, rg.graph, io::ModelIdentity::of(rg.graph));
        nlohmann::json j = nlohmann::json::parse(text);
        auto firstStep = [&](const char *kind) -> nlohmann::json & {
            for (auto &step : j["schedule"])
                if (step[0] == kind)
                    return step;
            return j["schedule"][0];
        };
        const std::string e = remat::tests::toStd(edit);
        if (e == "format")
            j["format"] = "remat-session";
        else if (e == "version")
            j["version"] = 2;
        else if (e == "tensor")
            firstStep("free")[1] = "no_such_tensor";
        else if (e == "op")
            firstStep("compute")[1] = "no_such_op";
        else if (e == "kind")
            firstStep("free")[0] = "teleport";
        else if (e == "drop") {
            // Remove the first compute: its outputs are then read before they exist.
            auto &steps = j["schedule"];
            for (size_t i = 0; i < steps.size(); ++i)
                if (steps[i][0] == "compute") {
                    steps.erase(i);
                    break;
                }
        }
        text = j.dump(1);
        if (e == "truncate")
            text.resize(text.size() / 2);
        auto p = io::parsePlan(text, rg.graph, &rg.costs, "edited.json");
        QVERIFY(!p.hasValue());
        const std::string msg = p.status().message();
        QVERIFY2(msg.find(remat::tests::toStd(expected)) != std::string::npos, msg.c_str());
        QVERIFY2(msg.rfind("edited.json: ", 0) == 0, msg.c_str());
        QCOMPARE(int(p.status().code()), code);
    }

    void refusesOtherModelOrBatch()
    {
        // Expected: a plan for batch 8 is refused at batch 16, and a plan for another file
        // (sha256) is refused, each saying so.
        const auto rg = graphFor(8, kSha);
        const solvers::Plan plan = solve(rg, "feng-huang");
        const std::string text = io::writePlan(plan, rg.graph, io::ModelIdentity::of(rg.graph));
        const auto other = graphFor(16, kSha);
        auto p = io::parsePlan(text, other.graph, &other.costs, "p.json");
        QVERIFY(!p.hasValue());
        QVERIFY2(p.status().message().find("made for batch 8, the model is loaded at batch 16") !=
                     std::string::npos,
                 p.status().message().c_str());
        const auto otherFile = graphFor(8, std::string(64, 'f'));
        p = io::parsePlan(text, otherFile.graph, &otherFile.costs, "p.json");
        QVERIFY(!p.hasValue());
        QVERIFY2(p.status().message().find("made for another model") != std::string::npos,
                 p.status().message().c_str());
    }

    void realModel()
    {
        // Expected: resnet18 (corpus, batch 4): a feng-huang plan written and read back
        // simulates to the same peak; the file records the model's sha256 and batch.
        const QString path = remat::tests::sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(path))
            QSKIP("corpus not found");
        auto m = remat::tests::loadCostedModel(path, 4);
        QVERIFY2(m.hasValue(), m.status().toString().c_str());
        const training::TrainingGraph *tg = &m->graph;
        const cost::Costs &costs = m->costs;
        auto reg = solvers::makeRegistry();
        solvers::SolveRequest r;
        r.graph = tg;
        r.costs = &costs;
        auto plan = reg.find("feng-huang")->solve(r);
        QVERIFY(plan.hasValue());
        const std::string text = io::writePlan(*plan, *tg, io::ModelIdentity::of(*tg));
        QVERIFY(text.find(tg->info().modelSha256) != std::string::npos);
        QVERIFY(!tg->info().modelSha256.empty());
        auto back = io::parsePlan(text, *tg, &costs);
        QVERIFY2(back.hasValue(), back.status().toString().c_str());
        QCOMPARE(back->timeline.peakBytes, plan->timeline.peakBytes);
        QCOMPARE(back->checkpoints, plan->checkpoints);
    }
};

QTEST_GUILESS_MAIN(TstPlanFile)
#include "tst_plan_file.moc"
