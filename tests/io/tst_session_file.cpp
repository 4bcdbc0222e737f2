// Session files (.rematproj) in core/io: the sessions in tests/data/sessions/, written by the
// first writer (QtCore's JSON in ui/planner/session_file.cpp, before the format moved to core),
// still open, and their plans restore to the figures recorded in them; a session written now
// reads back the same; malformed sessions are refused with the file's name and the problem.
// Fixtures (tests/data/sessions/README.md):
//   mlp_two_plans                  mlp.onnx at its batch: store-all and chen-sqrtn (current: 2nd),
//                                  min-time at 3/4 of store-all's peak, one keep pin
//   mlp_before_import_settings     the same without "import" and "objective" (older sessions):
//                                  default import settings, min-time (a budget is set)
//   tiny_vit_batch3_as_exported    tiny_vit.onnx at batch 3, semantics as-exported, min-peak:
//                                  chen-sqrtn and chen-greedy (current: 1st)
//   resnet18_no_plans              resnet18 (graph only) at batch 2, 1 GiB, min-time, no plans,
//                                  a recompute pin on "input"
#include "common/test_support.h"

#include "core/cost/roofline.h"
#include "core/io/import_settings_json.h"
#include "core/io/session_file.h"
#include "core/onnx/importer.h"
#include "core/onnx/input_spec.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

using namespace remat;
using namespace remat::core;
using remat::tests::sharedPath;
using remat::tests::toStd;

namespace {

std::string fixture(const char *name)
{
    return toStd(remat::tests::sourceDir() + "/tests/data/sessions/" + name);
}

std::string readText(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Loaded
{
    training::TrainingGraph graph;
    cost::Costs costs;
};

/// The session's model as the planner loads it (its batch and import settings), from the shared
/// corpus (`relative`: where under shared/ the session's model is).
Expected<Loaded> loadModel(const io::Session &s, const QString &relative)
{
    onnx::ImportOptions options = s.importSettings;
    options.batch = s.batch;
    REMAT_ASSIGN_OR_RETURN(ir::Graph g, onnx::importModel(toStd(sharedPath(relative)), options));
    REMAT_ASSIGN_OR_RETURN(training::TrainingGraph tg, training::buildTrainingGraph(g));
    cost::Costs costs = cost::rooflineCosts(tg);
    return Loaded{std::move(tg), std::move(costs)};
}

/// Every restored plan against the figures the first writer recorded in it.
void compareWithRecordedFigures(const io::Session &s, const std::vector<solvers::Plan> &plans)
{
    QCOMPARE(plans.size(), s.planTexts.size());
    for (size_t i = 0; i < plans.size(); ++i) {
        const nlohmann::json recorded = nlohmann::json::parse(s.planTexts[i]).at("figures");
        const sim::Timeline &t = plans[i].timeline;
        QCOMPARE(t.points.size(), plans[i].schedule.steps.size());
        QCOMPARE(t.peakBytes, recorded.at("peak_bytes").get<int64_t>());
        QCOMPARE(t.activationPeakBytes, recorded.at("activation_peak_bytes").get<int64_t>());
        QCOMPARE(t.computeSteps, recorded.at("compute_steps").get<int64_t>());
        QCOMPARE(t.recomputeSteps, recorded.at("recompute_steps").get<int64_t>());
        QVERIFY(qFuzzyCompare(t.totalSeconds, recorded.at("total_seconds").get<double>()));
    }
}

} // namespace

class TstSessionFile : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (!QFile::exists(sharedPath("corpus/with_weights/mlp.onnx")))
            QSKIP("shared corpus not found");
    }

    void oldSessionsOpen_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("plans");
        QTest::addColumn<int>("current");
        QTest::addColumn<QString>("objective");
        QTest::addColumn<QString>("semantics");
        QTest::addColumn<int>("pins");
        QTest::addColumn<QString>(
            "stale"); ///< a plan made for an earlier training graph: its error
        QTest::newRow("mlp_two_plans")
            << "mlp_two_plans.rematproj"
            << "corpus/with_weights/mlp.onnx" << 4 << 2 << 1 << "min-time"
            << "training" << 1 << "";
        QTest::newRow("mlp_before_import_settings")
            << "mlp_before_import_settings.rematproj"
            << "corpus/with_weights/mlp.onnx" << 4 << 2 << 1 << "min-time"
            << "training" << 1 << "";
        QTest::newRow("tiny_vit_batch3_as_exported")
            << "tiny_vit_batch3_as_exported.rematproj"
            << "corpus/with_weights/tiny_vit.onnx" << 3 << 2 << 0 << "min-peak"
            << "as-exported" << 0 << "plan 1: the schedule does not validate";
        QTest::newRow("resnet18_no_plans")
            << "resnet18_no_plans.rematproj"
            << "corpus/graph_only/resnet18.onnx" << 2 << 0 << -1 << "min-time"
            << "training" << 1 << "";
    }
    void oldSessionsOpen()
    {
        QFETCH(QString, file);
        QFETCH(QString, model);
        QFETCH(int, batch);
        QFETCH(int, plans);
        QFETCH(int, current);
        QFETCH(QString, objective);
        QFETCH(QString, semantics);
        QFETCH(int, pins);
        QFETCH(QString, stale);
        auto s = io::readSession(fixture(qPrintable(file)));
        QVERIFY2(s, s.status().toString().c_str());
        QVERIFY2(QString::fromStdString(s->modelPath).endsWith(model), s->modelPath.c_str());
        QCOMPARE(s->batch, int64_t(batch));
        QCOMPARE(int(s->planTexts.size()), plans);
        QCOMPARE(s->currentPlan, current);
        QCOMPARE(QString(solvers::objectiveName(s->objective)), objective);
        QCOMPARE(QString(onnx::semanticsName(s->importSettings.semantics)), semantics);
        QCOMPARE(int(s->pins.size()), pins);
        auto m = loadModel(*s, model);
        QVERIFY2(m, m.status().toString().c_str());
        auto restored = io::restoreSessionPlans(*s, m->graph, m->costs, toStd(file));
        if (!stale.isEmpty()) {
            // tiny_vit's plans were made before ReduceMean over axes saved its input (as PyTorch's
            // mean(dim) does): the plan no longer fits today's training step, and says so.
            QVERIFY(!restored);
            QVERIFY2(restored.status().message().find(toStd(stale)) != std::string::npos,
                     restored.status().toString().c_str());
            return;
        }
        QVERIFY2(restored, restored.status().toString().c_str());
        compareWithRecordedFigures(*s, *restored);
    }

    void writtenNowReadsBackTheSame()
    {
        // The first writer's session, restored and saved by core's writer, reads back field for
        // field, with the same plans.
        auto old = io::readSession(fixture("tiny_vit_batch3_as_exported.rematproj"));
        QVERIFY2(old, old.status().toString().c_str());
        auto m = loadModel(*old, "corpus/with_weights/tiny_vit.onnx");
        QVERIFY2(m, m.status().toString().c_str());
        // Its saved plans predate today's training step (oldSessionsOpen): a store-all plan of
        // today's graph stands in for them.
        solvers::Plan storeAll;
        storeAll.solver = "store-all";
        storeAll.schedule = schedule::storeAllSchedule(m->graph);
        auto t = sim::simulate(storeAll.schedule, m->graph, m->costs);
        QVERIFY2(t, t.status().toString().c_str());
        storeAll.timeline = std::move(*t);
        const std::vector<solvers::Plan> fresh = {storeAll};
        const std::vector<solvers::Plan> *plans = &fresh;
        io::Session s = *old;
        s.plans = *plans;
        s.pins = {{m->graph.tensors().front().name, solvers::PinKind::Offload}};
        s.importSettings.dimValues["unused"] = 7;
        s.importSettings.inputValues["sr"] = 16000.5;
        s.importSettings.kindOverrides["w"] = ir::ValueKind::Buffer;
        s.importSettings.inputShapes["x"] = {3, 16, 64};
        QTemporaryDir dir;
        const std::string path = toStd(dir.filePath("nested/../again.rematproj"));
        QVERIFY(QDir(dir.path()).mkpath("nested"));
        QVERIFY2(io::saveSession(path, s, &m->graph).isOk(), path.c_str());
        auto back = io::readSession(path);
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(back->modelPath, old->modelPath);
        QCOMPARE(back->modelSha256, old->modelSha256);
        QCOMPARE(back->batch, old->batch);
        QCOMPARE(back->budgetBytes, old->budgetBytes);
        QVERIFY(back->objective == old->objective);
        QVERIFY(back->pins == s.pins);
        QVERIFY(back->importSettings.dimValues == s.importSettings.dimValues);
        QVERIFY(back->importSettings.inputValues == s.importSettings.inputValues);
        QVERIFY(back->importSettings.kindOverrides == s.importSettings.kindOverrides);
        QVERIFY(back->importSettings.inputShapes == s.importSettings.inputShapes);
        QVERIFY(back->importSettings.semantics == onnx::Semantics::AsExported);
        QCOMPARE(back->currentPlan, s.currentPlan);
        QCOMPARE(back->opCount, m->graph.opCount());
        QCOMPARE(back->tensorCount, m->graph.tensorCount());
        auto again = io::restoreSessionPlans(*back, m->graph, m->costs, path);
        QVERIFY2(again, again.status().toString().c_str());
        QCOMPARE(again->size(), plans->size());
        for (size_t i = 0; i < plans->size(); ++i) {
            QVERIFY((*again)[i].schedule == (*plans)[i].schedule);
            QCOMPARE((*again)[i].timeline.peakBytes, (*plans)[i].timeline.peakBytes);
            QCOMPARE((*again)[i].solver, (*plans)[i].solver);
        }
        // The model's path relative to the session: a session moved with its model still finds it.
        const nlohmann::json j = nlohmann::json::parse(readText(path));
        const std::string rel = j.at("model").at("relative_path").get<std::string>();
        QVERIFY2(rel.find("corpus/with_weights/tiny_vit.onnx") != std::string::npos, rel.c_str());
        QVERIFY2(rel.rfind("..", 0) == 0, rel.c_str());
        QVERIFY(!QFile::exists(QString::fromStdString(path + ".saving")));
    }

    void movedSessionFindsItsModel()
    {
        // Session and model copied into a new folder: "path" is gone, "relative_path" resolves.
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath("models"));
        QVERIFY(QFile::copy(sharedPath("corpus/with_weights/mlp.onnx"),
                            dir.filePath("models/mlp.onnx")));
        io::Session s;
        s.modelPath = toStd(dir.filePath("models/mlp.onnx"));
        const std::string session = toStd(dir.filePath("s.rematproj"));
        QVERIFY(io::saveSession(session, s, nullptr).isOk());
        QVERIFY(QFile::remove(dir.filePath("models/mlp.onnx")));
        QTemporaryDir moved;
        QVERIFY(QDir(moved.path()).mkpath("models"));
        QVERIFY(QFile::copy(sharedPath("corpus/with_weights/mlp.onnx"),
                            moved.filePath("models/mlp.onnx")));
        QVERIFY(QFile::copy(QString::fromStdString(session), moved.filePath("s.rematproj")));
        auto back = io::readSession(toStd(moved.filePath("s.rematproj")));
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(QString::fromStdString(back->modelPath),
                 QDir::cleanPath(moved.filePath("models/mlp.onnx")));
    }

    void malformedSessionsAreRefused_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("expected");
        const QByteArray head = R"({"format": "remat-studio-session", "version": 1, )";
        QTest::newRow("not JSON") << QByteArray("{\"format\": ") << "not JSON";
        QTest::newRow("array") << QByteArray("[1, 2]") << "not a Remat Studio session";
        QTest::newRow("other format") << QByteArray(R"({"format": "remat-plan", "version": 1})")
                                      << "not a Remat Studio session";
        QTest::newRow("version 99")
            << QByteArray(R"({"format": "remat-studio-session", "version": 99})")
            << "session format version 99, this build reads 1 to 3";
        QTest::newRow("batch 1e300") << head + R"("batch": 1e300})"
                                     << "\"batch\" must be an integer";
        QTest::newRow("batch -1") << head + R"("batch": -1})"
                                  << "\"batch\" must be an integer";
        QTest::newRow("batch text") << head + R"("batch": "4"})"
                                    << "\"batch\" must be an integer";
        QTest::newRow("budget 2.5") << head + R"("budget_bytes": 2.5})"
                                    << "\"budget_bytes\" must be an integer";
        QTest::newRow("import array") << head + R"("import": []})"
                                      << "\"import\" is not an object";
        QTest::newRow("import dim 0") << head + R"("import": {"dims": {"h": 0}}})"
                                      << "dim 'h' is not a whole number";
        QTest::newRow("import bad shape") << head + R"("import": {"input_shapes": {"x": "2xq"}}})"
                                          << "x";
        QTest::newRow("import semantics") << head + R"("import": {"semantics": "inference"}})"
                                          << "inference";
        QTest::newRow("objective") << head + R"("objective": "fastest"})"
                                   << "fastest";
        QTest::newRow("pin kind") << head + R"("pins": [{"tensor": "a", "kind": "maybe"}]})"
                                  << "pin of unknown kind 'maybe'";
        QTest::newRow("plan not object") << head + R"("plans": [3]})"
                                         << "a plan is not a JSON object";
        const QByteArray head2 = R"({"format": "remat-studio-session", "version": 2, )";
        QTest::newRow("training optimizer") << head2 + R"("training": {"optimizer": "lamb"}})"
                                            << "unknown value 'lamb'";
        QTest::newRow("training ranks 0") << head2 + R"("training": {"ranks": 0}})"
                                          << "\"ranks\" is not a whole number";
        QTest::newRow("training tp 0") << head2 + R"("training": {"tensor_parallel": 0}})"
                                       << "\"tensor_parallel\" is not a whole number";
        QTest::newRow("training sp alone") << head2 + R"("training": {"sequence_parallel": true}})"
                                           << "--sequence-parallel splits along the sequence";
        QTest::newRow("training sp text") << head2 + R"("training": {"sequence_parallel": "yes"}})"
                                          << "\"sequence_parallel\" is not true or false";
        QTest::newRow("training array") << head2 + R"("training": []})"
                                        << "not an object";
        QTest::newRow("view array") << head2 + R"("view": []})"
                                    << "\"view\" is not an object";
        QTest::newRow("run text") << head2 + R"("run": "yes"})"
                                  << "\"run\" is not an object";
        QTest::newRow("run point short") << head2 + R"("run": {"bytes_in_use": [[3]]}})"
                                         << "bytes_in_use point is not [step, bytes]";
        QTest::newRow("run bytes negative") << head2 + R"("run": {"bytes_in_use": [[0, -5]]}})"
                                            << "must be an integer";
        QTest::newRow("run step 1e300") << head2 + R"("run": {"bytes_in_use": [[1e300, 5]]}})"
                                        << "must be an integer";
        QTest::newRow("run time text") << head2 + R"("run": {"step_times": [[0, "fast"]]}})"
                                       << "step_times point is not [step, seconds]";
        QTest::newRow("run time negative") << head2 + R"("run": {"step_times": [[0, -1.0]]}})"
                                           << "step time is out of range";
        QTest::newRow("run peak 1e400") << head2 + R"("run": {"measured_peak_bytes": 1e400}})"
                                        << "not JSON";
    }

    void trainingOptionsRoundTrip()
    {
        // Expected: a session with training options is written as version 3 (precision names as
        // Lightning's) with a "training" object and reads back the same; one without is still
        // version 1, with no "training".
        io::Session s;
        s.modelPath = "/tmp/m.onnx";
        s.training.optimizer = training::Optimizer::AdamW;
        s.training.precision = training::Precision::Bf16Master;
        s.training.shard = training::Sharding::Zero2;
        s.training.ranks = 8;
        s.training.microBatches = 4;
        s.training.hyper.lr = 3e-4;
        auto text = io::formatSession(s, "/tmp/t.rematproj", nullptr);
        QVERIFY2(text, text.status().toString().c_str());
        const nlohmann::json j = nlohmann::json::parse(*text);
        QCOMPARE(j.at("version").get<int>(), 3);
        QCOMPARE(QString::fromStdString(j.at("training").dump()),
                 QString(R"({"lr":0.0003,"micro_batches":4,"optimizer":"adamw","precision":)"
                         R"("bf16-master","ranks":8,"shard":"zero2","weight_decay":-1.0})"));
        auto back = io::parseSession(*text, "/tmp/t.rematproj");
        QVERIFY2(back, back.status().toString().c_str());
        QVERIFY(back->training == s.training);
        // --attention sdpa is written ("attention": "sdpa") and read back
        s.training.attention = training::Attention::Sdpa;
        auto sdpaText = io::formatSession(s, "/tmp/t.rematproj", nullptr);
        QVERIFY(sdpaText);
        QCOMPARE(nlohmann::json::parse(*sdpaText).at("training").at("attention").get<std::string>(),
                 std::string("sdpa"));
        auto sdpaBack = io::parseSession(*sdpaText, "/tmp/t.rematproj");
        QVERIFY2(sdpaBack, sdpaBack.status().toString().c_str());
        QVERIFY(sdpaBack->training == s.training);
        // --tensor-parallel 4 --sequence-parallel are written when set and read back
        s.training.tensorParallel = 4;
        s.training.sequenceParallel = true;
        auto tpText = io::formatSession(s, "/tmp/t.rematproj", nullptr);
        QVERIFY(tpText);
        const nlohmann::json tj = nlohmann::json::parse(*tpText).at("training");
        QCOMPARE(tj.at("tensor_parallel").get<int64_t>(), int64_t(4));
        QCOMPARE(tj.at("sequence_parallel").get<bool>(), true);
        auto tpBack = io::parseSession(*tpText, "/tmp/t.rematproj");
        QVERIFY2(tpBack, tpBack.status().toString().c_str());
        QVERIFY(tpBack->training == s.training);
        io::Session plain;
        auto plainText = io::formatSession(plain, "/tmp/p.rematproj", nullptr);
        QVERIFY(plainText);
        const nlohmann::json pj = nlohmann::json::parse(*plainText);
        QCOMPARE(pj.at("version").get<int>(), 1);
        QVERIFY(!pj.contains("training"));
        // Autocast keeps its device.
        s.training.precision = training::Precision::Bf16Mixed;
        s.training.autocastDevice = training::AutocastDevice::Cpu;
        auto acText = io::formatSession(s, "/tmp/t.rematproj", nullptr);
        QVERIFY(acText);
        QCOMPARE(
            nlohmann::json::parse(*acText).at("training").at("autocast_device").get<std::string>(),
            std::string("cpu"));
        auto acBack = io::parseSession(*acText, "/tmp/t.rematproj");
        QVERIFY2(acBack, acBack.status().toString().c_str());
        QVERIFY(acBack->training == s.training);
    }

    void version2PrecisionsKeepTheirMeaning()
    {
        // Expected: a version-2 session's "bf16-mixed" was half weights with float32 master
        // weights (now bf16-master), its "bf16" everything bfloat16 (now bf16-true); the same
        // strings in version 3 are Lightning's (bf16-mixed: autocast; bf16: refused, naming both).
        const std::string head =
            R"({"format": "remat-studio-session", "model": {"path": "/tmp/m.onnx"}, "version": )";
        const auto read = [&](int version, const std::string &precision) {
            return io::parseSession(head + std::to_string(version) +
                                        R"(, "training": {"precision": ")" + precision + R"("}})",
                                    "/tmp/old.rematproj");
        };
        auto v2 = read(2, "bf16-mixed");
        QVERIFY2(v2, v2.status().toString().c_str());
        QCOMPARE(v2->training.precision, training::Precision::Bf16Master);
        QCOMPARE(read(2, "fp16-mixed")->training.precision, training::Precision::Fp16Master);
        QCOMPARE(read(2, "bf16")->training.precision, training::Precision::Bf16True);
        QCOMPARE(read(3, "bf16-mixed")->training.precision, training::Precision::Bf16Mixed);
        auto ambiguous = read(3, "bf16");
        QVERIFY(!ambiguous);
        QVERIFY2(ambiguous.status().message().find("bf16-true") != std::string::npos,
                 ambiguous.status().message().c_str());
    }
    void viewAndRunRoundTrip()
    {
        // Expected: the view state and the last run are written as version 2 and read back field
        // for field; plan indices that are not there are dropped; a curve longer than the cap is
        // written capped, keeping its highest point; a session without them is still version 1.
        io::Session s;
        s.modelPath = "/tmp/m.onnx";
        s.view.colourMode = "flops";
        s.view.selectedNode = "/fc1/Gemm";
        s.view.overlaidPlans = {0, 2};
        io::SessionRun r;
        r.plan = 0;
        r.backend = "cpu";
        r.ok = true;
        r.iterations = 3;
        r.measuredPeakBytes = 871424;
        r.stepSeconds = 0.0042;
        r.gradientsChecked = true;
        r.gradientsMatch = true;
        r.maxRelativeError = 1.5e-7;
        r.worstEntry = "fc1.weight";
        const size_t n = io::kMaxSessionRunPoints * 2 + 7;
        for (size_t i = 0; i < n; ++i) {
            r.bytesInUse.emplace_back(int(i), int64_t(1000 + (i * 7919) % 1000));
            r.stepTimes.emplace_back(int(i), 1e-4 * double(i % 13));
        }
        r.bytesInUse[n / 2].second = 5'000'000; // the peak
        s.run = r;
        auto text = io::formatSession(s, "/tmp/v.rematproj", nullptr);
        QVERIFY2(text, text.status().toString().c_str());
        QCOMPARE(nlohmann::json::parse(*text).at("version").get<int>(), 2);
        // Three plans in the file (plain objects: they are parsed only against a graph).
        nlohmann::json j = nlohmann::json::parse(*text);
        j["plans"] = nlohmann::json::array(
            {nlohmann::json::object(), nlohmann::json::object(), nlohmann::json::object()});
        j["view"]["overlaid_plans"] = {0, 2, 7, -1, 1.5};
        auto back = io::parseSession(j.dump(), "/tmp/v.rematproj");
        QVERIFY2(back, back.status().toString().c_str());
        QCOMPARE(back->view.colourMode, s.view.colourMode);
        QCOMPARE(back->view.selectedNode, s.view.selectedNode);
        QVERIFY(back->view.overlaidPlans == (std::vector<int>{0, 2}));
        QVERIFY(back->run);
        const io::SessionRun &b = *back->run;
        QCOMPARE(b.plan, 0);
        QCOMPARE(b.backend, r.backend);
        QCOMPARE(b.ok, true);
        QCOMPARE(b.cancelled, false);
        QCOMPARE(b.iterations, 3);
        QCOMPARE(b.failedStep, -1);
        QCOMPARE(b.measuredPeakBytes, r.measuredPeakBytes);
        QCOMPARE(b.stepSeconds, r.stepSeconds);
        QCOMPARE(b.gradientsChecked, true);
        QCOMPARE(b.gradientsMatch, true);
        QCOMPARE(b.maxRelativeError, r.maxRelativeError);
        QCOMPARE(b.worstEntry, r.worstEntry);
        QCOMPARE(b.bytesInUse.size(), io::kMaxSessionRunPoints);
        QCOMPARE(b.stepTimes.size(), io::kMaxSessionRunPoints);
        int64_t highest = 0;
        for (const auto &[step, v] : b.bytesInUse)
            highest = std::max(highest, v);
        QCOMPARE(highest, int64_t(5'000'000));
        for (size_t i = 1; i < b.bytesInUse.size(); ++i)
            QVERIFY(b.bytesInUse[i].first > b.bytesInUse[i - 1].first);
        // A run of a plan that is not in the file names none.
        j["run"]["plan"] = 9;
        auto noPlan = io::parseSession(j.dump(), "/tmp/v.rematproj");
        QVERIFY(noPlan && noPlan->run);
        QCOMPARE(noPlan->run->plan, -1);
        // Nothing of it: still version 1.
        io::Session plain;
        plain.modelPath = "/tmp/m.onnx";
        auto plainText = io::formatSession(plain, "/tmp/p.rematproj", nullptr);
        QVERIFY(plainText);
        const nlohmann::json pj = nlohmann::json::parse(*plainText);
        QCOMPARE(pj.at("version").get<int>(), 1);
        QVERIFY(!pj.contains("view") && !pj.contains("run"));
    }

    void malformedSessionsAreRefused()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, expected);
        auto s = io::parseSession(text.toStdString(), "bad.rematproj");
        QVERIFY(!s);
        const QString message = QString::fromStdString(s.status().message());
        QVERIFY2(message.startsWith("bad.rematproj: "), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    void leniencyOfTheFirstReaderIsKept()
    {
        // What the first reader accepted still reads: numbers as doubles, a current plan out of
        // range clamped, members of the wrong type read as empty.
        const std::string text =
            R"({"format": "remat-studio-session", "version": 1.0, "batch": 8.0, "budget_bytes": 0,)"
            R"( "model": "not an object", "pins": {}, "plans": [], "current_plan": 7})";
        auto s = io::parseSession(text, "lenient.rematproj");
        QVERIFY2(s, s.status().toString().c_str());
        QCOMPARE(s->batch, int64_t(8));
        QCOMPARE(s->currentPlan, -1);
        QVERIFY(s->modelPath.empty());
        QVERIFY(s->objective == solvers::Objective::MinPeak); // no objective, no budget
    }

    void plansNeedTheirGraphToBeWritten()
    {
        io::Session s;
        s.plans.push_back(solvers::Plan{});
        auto text = io::formatSession(s, "x.rematproj", nullptr);
        QVERIFY(!text);
        QCOMPARE(text.status().code(), StatusCode::InvalidArgument);
    }

    void missingFileIsNotFound()
    {
        auto s = io::readSession("/nonexistent-remat/x.rematproj");
        QVERIFY(!s);
        QCOMPARE(s.status().code(), StatusCode::NotFound);
        QVERIFY2(s.status().message().find("/nonexistent-remat/x.rematproj") == 0,
                 s.status().toString().c_str());
    }

    void importSettingsRoundTrip()
    {
        onnx::ImportOptions o;
        o.dimValues = {{"height", 224}, {"width", 160}};
        o.inputShapes = {{"x", {1, 3, 224, 160}}};
        o.inputValues = {{"sr", 16000}};
        o.branches = {{"/router/If", true}, {"/If_1", false}};
        o.kindOverrides = {{"running_mean", ir::ValueKind::Buffer}};
        o.semantics = onnx::Semantics::AsExported;
        const nlohmann::json j = io::importSettingsJson(o);
        // Expected: {"branches": {"/If_1": "else", "/router/If": "then"},
        //            "classify": {"running_mean": "buffer"}, "dims": {"height": 224, "width": 160},
        //            "input_shapes": {"x": "1x3x224x160"}, "input_values": {"sr": 16000},
        //            "semantics": "as-exported"}
        QCOMPARE(
            QString::fromStdString(j.dump()),
            QString(R"({"branches":{"/If_1":"else","/router/If":"then"},)"
                    R"("classify":{"running_mean":"buffer"},"dims":{"height":224,"width":160},)"
                    R"("input_shapes":{"x":"1x3x224x160"},"input_values":{"sr":16000.0},)"
                    R"("semantics":"as-exported"})"));
        auto back = io::importSettingsFromJson(j, "settings");
        QVERIFY2(back, back.status().toString().c_str());
        QVERIFY(back->dimValues == o.dimValues);
        QVERIFY(back->inputShapes == o.inputShapes);
        QVERIFY(back->inputValues == o.inputValues);
        QVERIFY(back->branches == o.branches);
        QVERIFY(back->kindOverrides == o.kindOverrides);
        QVERIFY(back->semantics == o.semantics);
        // A branch that is neither then nor else is refused, naming it.
        nlohmann::json bad = j;
        bad["branches"]["/If_1"] = "sometimes";
        auto refused = io::importSettingsFromJson(bad, "settings");
        QVERIFY(!refused);
        QVERIFY2(refused.status().message().find("'sometimes' is not a branch") !=
                     std::string::npos,
                 refused.status().message().c_str());
        // Defaults: only the semantics is written.
        QCOMPARE(QString::fromStdString(io::importSettingsJson({}).dump()),
                 QString(R"({"semantics":"training"})"));
    }

    void trainabilityRoundTrip()
    {
        // Which weights train: --freeze / --trainable patterns and a frozen override.
        onnx::ImportOptions o;
        o.freezePatterns = {"^encoder\\."};
        o.trainablePatterns = {"lora_", "^head"};
        o.kindOverrides = {{"blocks.0.w", ir::ValueKind::Frozen}};
        const nlohmann::json j = io::importSettingsJson(o);
        // Expected: {"classify": {"blocks.0.w": "frozen"}, "freeze": ["^encoder\\."],
        //            "semantics": "training", "trainable": ["lora_", "^head"]}
        QCOMPARE(QString::fromStdString(j.dump()),
                 QString("{\"classify\":{\"blocks.0.w\":\"frozen\"},\"freeze\":[\"^encoder\\\\.\"],"
                         "\"semantics\":\"training\",\"trainable\":[\"lora_\",\"^head\"]}"));
        auto back = io::importSettingsFromJson(j, "settings");
        QVERIFY2(back, back.status().toString().c_str());
        QVERIFY(back->freezePatterns == o.freezePatterns);
        QVERIFY(back->trainablePatterns == o.trainablePatterns);
        QVERIFY(back->kindOverrides == o.kindOverrides);
        // An invalid expression or a non-string entry is refused, naming the setting.
        nlohmann::json invalid = nlohmann::json::object();
        invalid["freeze"] = nlohmann::json::array({"enc.(w"});
        auto bad = io::importSettingsFromJson(invalid, "run.rematproj: import");
        QVERIFY(!bad);
        QVERIFY(QString::fromStdString(bad.status().message()).contains("--freeze 'enc.(w'"));
        nlohmann::json number = nlohmann::json::object();
        number["trainable"] = nlohmann::json::array({3});
        bad = io::importSettingsFromJson(number, "s");
        QVERIFY(!bad);
        QVERIFY(QString::fromStdString(bad.status().message()).contains("trainable"));
        nlohmann::json text = nlohmann::json::object();
        text["trainable"] = "lora_";
        bad = io::importSettingsFromJson(text, "s");
        QVERIFY(!bad);
    }
};

QTEST_GUILESS_MAIN(TstSessionFile)
#include "tst_session_file.moc"
