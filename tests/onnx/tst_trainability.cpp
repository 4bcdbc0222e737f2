// Which weights train: --freeze / --trainable, --classify NAME=frozen|buffer, the export's
// metadata (remat_export.py), and the guesses for buffers a weightless export shows as graph
// inputs. Each model is built here with the ONNX protobuf API; what the training step keeps is
// written beside it, as autograd keeps it (checked against PyTorch in tests/python).
#include "core/onnx/classify.h"
#include "core/onnx/export_metadata.h"
#include "core/onnx/importer.h"
#include "core/onnx/input_spec.h"
#include "core/training/apply_training_options.h"
#include "core/training/builder.h"

#include "common/test_support.h"
#include "onnx/onnx_test_model.h"

#include <onnx/onnx_pb.h>

#include <QTest>

#include <algorithm>

using namespace remat::core;
using namespace remat::tests;
namespace ox = remat::core::onnx;

namespace {

/// x[2,8] -> MatMul enc.weight[8,16] -> Sigmoid -> MatMul head.weight[16,4] -> y, weights as
/// graph inputs named by state_dict keys (torch.onnx with export_params=False).
::onnx::ModelProto twoLayers()
{
    auto m = baseModel();
    m.set_producer_name("pytorch");
    auto *g = m.mutable_graph();
    addFloatInput(g, "input", {2, 8});
    addFloatInput(g, "enc.weight", {8, 16});
    addFloatInput(g, "head.weight", {16, 4});
    addNode(g, "/enc/MatMul", "MatMul", {"input", "enc.weight"}, {"h"});
    addNode(g, "/act/Sigmoid", "Sigmoid", {"h"}, {"s"});
    addNode(g, "/head/MatMul", "MatMul", {"s", "head.weight"}, {"y"});
    g->add_output()->set_name("y");
    return m;
}

struct Built
{
    ir::Graph graph;
    training::TrainingGraph training;
    training::TrainingSummary summary;
};

Expected<Built> build(const std::string &path, const ox::ImportOptions &options)
{
    REMAT_ASSIGN_OR_RETURN(ir::Graph g, ox::importModel(path, options));
    REMAT_ASSIGN_OR_RETURN(training::TrainingGraph tg, training::buildTrainingGraph(g));
    training::TrainingSummary s = training::summarize(tg, &g);
    return Built{std::move(g), std::move(tg), s};
}

ir::ValueKind kindOf(const ir::Graph &g, const std::string &name)
{
    auto id = g.findValue(name);
    return id ? g.value(*id).kind : ir::ValueKind::Intermediate;
}

/// Names of the forward ops a saved tensor is attributed to.
std::vector<std::string> savingOps(const Built &b)
{
    std::vector<std::string> out;
    for (const auto &e : b.summary.savedByForwardOp)
        out.push_back(b.training.op(e.op).name);
    return out;
}

bool hasTensor(const training::TrainingGraph &tg, const std::string &name)
{
    return tg.findTensor(name) != nullptr;
}

void addMetadata(::onnx::ModelProto &m, const std::string &key, const std::string &value)
{
    auto *p = m.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
}

} // namespace

class TstTrainability : public QObject
{
    Q_OBJECT

private slots:
    void everythingTrainsByDefault()
    {
        Files f;
        auto b = build(f.write("m.onnx", twoLayers()), {});
        QVERIFY2(b, b.status().message().c_str());
        QCOMPARE(kindOf(b->graph, "enc.weight"), ir::ValueKind::Parameter);
        QCOMPARE(b->summary.paramBytes, int64_t(4 * (8 * 16 + 16 * 4)));
        QCOMPARE(b->summary.frozenParamBytes, int64_t(0));
        // Sigmoid keeps s (2x16 floats); the MatMuls keep the input (data) and s again.
        QCOMPARE(b->summary.savedForBackwardBytes, int64_t(4 * 2 * 16));
        QCOMPARE(b->summary.backwardOps, size_t(3));
    }

    void headOnlyRunsOneBackward()
    {
        // --trainable '^head\.': enc.weight is frozen, so nothing before the head needs a
        // gradient: only the head's MatMul runs backward, keeping s for head.weight's gradient.
        Files f;
        ox::ImportOptions o;
        QVERIFY(ox::addTrainablePattern(o, "^head\\.").isOk());
        auto b = build(f.write("m.onnx", twoLayers()), o);
        QVERIFY2(b, b.status().message().c_str());
        QCOMPARE(kindOf(b->graph, "enc.weight"), ir::ValueKind::Frozen);
        QCOMPARE(kindOf(b->graph, "head.weight"), ir::ValueKind::Parameter);
        QVERIFY(has(b->graph.value(*b->graph.findValue("enc.weight")).kindReason, "--trainable"));
        QCOMPARE(b->summary.paramBytes, int64_t(4 * 16 * 4));
        QCOMPARE(b->summary.frozenParamBytes, int64_t(4 * 8 * 16));
        QCOMPARE(b->summary.paramGradBytes, int64_t(4 * 16 * 4));
        QCOMPARE(b->summary.backwardOps, size_t(1));
        QCOMPARE(b->summary.savedForBackwardBytes, int64_t(4 * 2 * 16));
        QCOMPARE(savingOps(*b), std::vector<std::string>{"/head/MatMul"});
        QVERIFY(!hasTensor(b->training, "grad:enc.weight"));
        QVERIFY(!hasTensor(b->training, "grad:h"));
        // the importer says what it froze
        QVERIFY(std::any_of(b->graph.info().importNotes.begin(), b->graph.info().importNotes.end(),
                            [](const std::string &n) { return has(n, "1 of 2 parameters"); }));
    }

    void frozenHeadKeepsWeightNotInput()
    {
        // --freeze '^head': the head's MatMul needs only its input's gradient (s), for which it
        // keeps the weight (a frozen parameter, no activation), not s; Sigmoid keeps s.
        Files f;
        ox::ImportOptions o;
        QVERIFY(ox::addFreezePattern(o, "^head").isOk());
        auto b = build(f.write("m.onnx", twoLayers()), o);
        QVERIFY2(b, b.status().message().c_str());
        QCOMPARE(kindOf(b->graph, "head.weight"), ir::ValueKind::Frozen);
        QCOMPARE(b->summary.backwardOps, size_t(3));
        QCOMPARE(b->summary.savedForBackwardBytes, int64_t(4 * 2 * 16));
        QCOMPARE(savingOps(*b), std::vector<std::string>{"/act/Sigmoid"});
        QVERIFY(!hasTensor(b->training, "grad:head.weight"));
        QVERIFY(hasTensor(b->training, "grad:enc.weight"));
        const training::Op &headGrad =
            b->training.op(b->training.backwardOf(b->training.ops()[2].id));
        std::vector<std::string> reads;
        for (TensorId t : headGrad.inputs)
            reads.push_back(b->training.tensor(t).name);
        QVERIFY(std::find(reads.begin(), reads.end(), "head.weight") != reads.end());
        QVERIFY(std::find(reads.begin(), reads.end(), "s") == reads.end());
    }

    void optimizerStateOnlyForTrainable()
    {
        Files f;
        ox::ImportOptions o;
        QVERIFY(ox::addTrainablePattern(o, "^head\\.").isOk());
        auto b = build(f.write("m.onnx", twoLayers()), o);
        QVERIFY2(b, b.status().message().c_str());
        training::TrainingOptions t;
        t.optimizer = training::Optimizer::Adam;
        t.precision = training::Precision::Bf16Master;
        auto tg = training::applyTrainingOptions(b->training, t);
        QVERIFY2(tg, tg.status().message().c_str());
        const training::ModelStateBytes m = training::modelStateBytes(*tg);
        // head.weight: 64 elements; two float32 Adam moments, one float32 master copy
        QCOMPARE(m.optimizerStateBytes, int64_t(2 * 4 * 64));
        QCOMPARE(m.masterWeightBytes, int64_t(4 * 64));
        // the frozen weight is held in bfloat16, with no master copy of its own
        const training::Tensor &enc = tg->tensor(*tg->findTensor("enc.weight"));
        QCOMPARE(enc.role, training::TensorRole::Frozen);
        QCOMPARE(enc.bytes, int64_t(2 * 8 * 16));
    }

    void bufferAndFreezeShareOneRule()
    {
        // A weight classified as a buffer and the same weight frozen give the same training
        // step; only the summary's column differs.
        Files f;
        const std::string path = f.write("m.onnx", twoLayers());
        ox::ImportOptions asBuffer, asFrozen;
        QVERIFY(ox::addClassification(asBuffer, "enc.weight=buffer").isOk());
        QVERIFY(ox::addFreezePattern(asFrozen, "^enc\\.").isOk());
        auto b = build(path, asBuffer);
        auto z = build(path, asFrozen);
        QVERIFY(b && z);
        QCOMPARE(b->summary.savedForBackwardBytes, z->summary.savedForBackwardBytes);
        QCOMPARE(b->summary.backwardOps, z->summary.backwardOps);
        QCOMPARE(b->summary.paramGradBytes, z->summary.paramGradBytes);
        QCOMPARE(b->summary.bufferBytes, z->summary.frozenParamBytes);
        QCOMPARE(b->summary.frozenParamBytes, int64_t(0));
        // and --classify NAME=frozen is the same as --freeze
        ox::ImportOptions named;
        QVERIFY(ox::addClassification(named, "enc.weight=frozen").isOk());
        auto n = build(path, named);
        QVERIFY(n);
        QCOMPARE(n->summary.frozenParamBytes, z->summary.frozenParamBytes);
        QCOMPARE(n->summary.savedForBackwardBytes, z->summary.savedForBackwardBytes);
    }

    void namedKindWinsOverPatterns()
    {
        Files f;
        ox::ImportOptions o;
        QVERIFY(ox::addTrainablePattern(o, "^enc\\.").isOk());
        QVERIFY(ox::addClassification(o, "head.weight=parameter").isOk());
        auto b = build(f.write("m.onnx", twoLayers()), o);
        QVERIFY2(b, b.status().message().c_str());
        QCOMPARE(kindOf(b->graph, "head.weight"), ir::ValueKind::Parameter);
        QCOMPARE(kindOf(b->graph, "enc.weight"), ir::ValueKind::Parameter);
    }

    void badPatterns()
    {
        Files f;
        const std::string path = f.write("m.onnx", twoLayers());
        // an invalid expression: refused when given, naming it
        ox::ImportOptions o;
        Status s = ox::addFreezePattern(o, "enc.(weight");
        QVERIFY(!s.isOk());
        QVERIFY(has(s.message(), "--freeze 'enc.(weight'"));
        QVERIFY(has(s.message(), "not a valid regular expression"));
        QVERIFY(o.freezePatterns.empty());
        QVERIFY(!ox::addTrainablePattern(o, "").isOk());
        // a pattern long enough to exhaust std::regex's recursion is refused before compiling
        s = ox::addFreezePattern(o, std::string(5000, '('));
        QVERIFY(!s.isOk());
        QVERIFY2(has(s.message(), "more than 1000"), s.message().c_str());
        // a pattern that matches no parameter: the error lists real names
        ox::ImportOptions none;
        QVERIFY(ox::addTrainablePattern(none, "^fc\\.").isOk());
        auto g = ox::importModel(path, none);
        QVERIFY(!g);
        QVERIFY2(has(g.status().message(), "--trainable '^fc\\.' matches no parameter"),
                 g.status().message().c_str());
        QVERIFY(has(g.status().message(), "'enc.weight'"));
        // a frozen set that leaves nothing to train
        ox::ImportOptions all;
        QVERIFY(ox::addFreezePattern(all, "weight").isOk());
        g = ox::importModel(path, all);
        QVERIFY(!g);
        QVERIFY2(has(g.status().message(), "leave nothing to train"), g.status().message().c_str());
        // browsing: the file still opens, and what blocks training is said
        all.allowUnknownShapes = true;
        g = ox::importModel(path, all);
        QVERIFY2(g, g.status().message().c_str());
        QCOMPARE(g->info().trainingBlockers.size(), size_t(1));
        QVERIFY(has(g->info().trainingBlockers[0], "leave nothing to train"));
    }

    void exportMetadataDecides()
    {
        // remat_export.py's metadata: enc.weight frozen, head.weight trainable.
        Files f;
        auto m = twoLayers();
        addMetadata(m, "remat.format", "1");
        addMetadata(m, "remat.frozen", R"(["enc.weight"])");
        addMetadata(m, "remat.parameters", R"(["head.weight", "not.in.the.graph"])");
        auto b = build(f.write("m.onnx", m), {});
        QVERIFY2(b, b.status().message().c_str());
        QCOMPARE(kindOf(b->graph, "enc.weight"), ir::ValueKind::Frozen);
        QVERIFY(has(b->graph.value(*b->graph.findValue("enc.weight")).kindReason, "metadata"));
        QCOMPARE(b->summary.backwardOps, size_t(1));
        const auto &notes = b->graph.info().importNotes;
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string &n) {
            return has(n, "not.in.the.graph") && has(n, "ignored");
        }));
        // the user's classification wins over the metadata
        ox::ImportOptions o;
        QVERIFY(ox::addClassification(o, "enc.weight=parameter").isOk());
        auto u = build(f.write("m2.onnx", m), o);
        QVERIFY(u);
        QCOMPARE(kindOf(u->graph, "enc.weight"), ir::ValueKind::Parameter);
    }

    void forwardConstantsAreKeptWhereRead()
    {
        // h / torch.arange(1, 17) in forward and h / a non-persistent buffer both export as a
        // Constant node [1, 16] (byte-identical files): the buffer is resident, the arange made
        // every step and kept by the Div (64 B). remat.forward_constants tells them apart; a
        // name it lists that is not a Constant output changes nothing.
        for (const bool listed : {false, true}) {
            Files f;
            auto m = baseModel();
            m.set_producer_name("pytorch");
            auto *g = m.mutable_graph();
            addFloatInput(g, "input", {2, 8});
            addFloatInput(g, "enc.weight", {8, 16});
            addNode(g, "/enc/MatMul", "MatMul", {"input", "enc.weight"}, {"h"});
            auto *t =
                addConstantNode(g, "/Constant", "/Constant_output_0", ::onnx::TensorProto::FLOAT);
            t->add_dims(1);
            t->add_dims(16);
            for (int i = 1; i <= 16; ++i)
                t->add_float_data(float(i));
            addNode(g, "/Div", "Div", {"h", "/Constant_output_0"}, {"y"});
            g->add_output()->set_name("y");
            addMetadata(m, "remat.format", "1");
            addMetadata(m, "remat.forward_constants",
                        listed ? R"(["/Constant_output_0", "h"])" : R"(["h"])");
            auto b = build(f.write("m.onnx", m), {});
            QVERIFY2(b, b.status().message().c_str());
            QCOMPARE(b->summary.savedForBackwardBytes, int64_t(listed ? 64 : 0));
            QVERIFY(b->graph.value(*b->graph.findValue("h")).kindReason.empty());
        }
    }

    void badMetadataIsIgnored_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("warning");
        QTest::newRow("not json") << "remat.frozen"
                                  << "[enc.weight"
                                  << "not a JSON array";
        QTest::newRow("object") << "remat.frozen"
                                << R"({"enc.weight": 1})"
                                << "not a JSON array";
        QTest::newRow("numbers") << "remat.frozen"
                                 << "[1, 2]"
                                 << "not a tensor name";
        QTest::newRow("empty name") << "remat.buffers"
                                    << R"([""])"
                                    << "not a tensor name";
        QTest::newRow("format") << "remat.format"
                                << "2"
                                << "is not 1";
        QTest::newRow("two kinds") << "remat.parameters"
                                   << R"(["enc.weight"])"
                                   << "two kinds";
        // what torch.onnx drops (remat.merged, remat.contiguous): malformed or naming nodes
        // the file does not have
        QTest::newRow("merged not array") << "remat.merged"
                                          << R"({"node": "/enc/MatMul"})"
                                          << "not a JSON array of objects";
        QTest::newRow("merged numbers") << "remat.merged"
                                        << "[1]"
                                        << "not an object";
        QTest::newRow("merged no readers") << "remat.merged"
                                           << R"([{"node": "/enc/MatMul"}])"
                                           << "without a node name";
        QTest::newRow("merged bad group") << "remat.merged"
                                          << R"([{"node": "/enc/MatMul", "readers": [[1]]}])"
                                          << "not an array of node names";
        QTest::newRow("merged unknown node")
            << "remat.merged"
            << R"([{"node": "/nope", "readers": [["/act/Sigmoid"]]}])"
            << "do not fit this file";
        QTest::newRow("merged wrong reader")
            << "remat.merged"
            << R"([{"node": "/enc/MatMul", "readers": [["/head/MatMul"]]}])"
            << "does not read";
        QTest::newRow("merged twice") << "remat.merged"
                                      << R"([{"node": "/enc/MatMul", "readers": [["/act/Sigmoid"]]},
                  {"node": "/enc/MatMul", "readers": [["/act/Sigmoid"]]}])"
                                      << "copies '/enc/MatMul' twice";
        QTest::newRow("contiguous bad") << "remat.contiguous"
                                        << R"([{"value": 1, "readers": {}}])"
                                        << "without a value name";
        QTest::newRow("contiguous unknown") << "remat.contiguous"
                                            << R"([{"value": "h", "readers": ["/nope"]}])"
                                            << "does not read";
        QTest::newRow("unread not objects") << "remat.unread"
                                            << "[1]"
                                            << "not an object";
        QTest::newRow("unread bad kind")
            << "remat.unread"
            << R"([{"name": "skip.weight", "kind": "weights", "dtype": "float32", "shape": [2]}])"
            << "the kind 'weights'";
        QTest::newRow("unread bad dim")
            << "remat.unread"
            << R"([{"name": "skip.weight", "kind": "frozen", "dtype": "float32", "shape": [-1]}])"
            << "not a size";
        QTest::newRow("unread bad dtype")
            << "remat.unread"
            << R"([{"name": "skip.weight", "kind": "frozen", "dtype": "complex", "shape": [2]}])"
            << "unknown dtype";
        QTest::newRow("constants numbers") << "remat.forward_constants"
                                           << "[3]"
                                           << "not a tensor name";
    }

    void badMetadataIsIgnored()
    {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, warning);
        Files f;
        auto m = twoLayers();
        addMetadata(m, key.toStdString(), value.toStdString());
        if (key == "remat.parameters" || key == "remat.format")
            addMetadata(m, "remat.frozen", R"(["enc.weight"])");
        auto b = build(f.write("m.onnx", m), {});
        QVERIFY2(b, b.status().message().c_str());
        // the weight trains, as without the metadata
        QCOMPARE(kindOf(b->graph, "enc.weight"), ir::ValueKind::Parameter);
        const auto &notes = b->graph.info().importNotes;
        QVERIFY2(std::any_of(notes.begin(), notes.end(),
                             [&](const std::string &n) { return has(n, warning.toStdString()); }),
                 notes.empty() ? "no notes" : notes.back().c_str());
    }

    void hugeMetadataList()
    {
        std::string big = "[";
        for (size_t i = 0; i <= ox::kMaxExportMetadataNames; ++i)
            big += i ? ",\"a\"" : "\"a\"";
        big += "]";
        const ox::ExportMetadata m = ox::parseExportMetadata({{"remat.buffers", big}});
        QVERIFY(m.kinds.empty());
        QCOMPARE(m.warnings.size(), size_t(1));
        QVERIFY(has(m.warnings[0], "more than"));
    }

    void hugeRewriteList()
    {
        std::string big = R"([{"node": "/a", "readers": [[)";
        for (size_t i = 0; i <= ox::kMaxExportMetadataNames; ++i)
            big += i ? ",\"a\"" : "\"a\"";
        big += "]]}]";
        const ox::ExportMetadata m = ox::parseExportMetadata({{"remat.merged", big}});
        QVERIFY(m.merged.empty());
        QCOMPARE(m.warnings.size(), size_t(1));
        QVERIFY(has(m.warnings[0], "more than"));
    }

    void mergedNodeIsComputedAgain()
    {
        // A LayerNorm written by hand: d = x - mean twice, once squared (d * d) and once scaled
        // by the weight. torch.onnx merges the two subtractions; autograd keeps both copies.
        Files f;
        auto m = baseModel();
        m.set_producer_name("pytorch");
        auto *g = m.mutable_graph();
        addFloatInput(g, "input", {4, 8});
        addFloatInput(g, "in.weight", {8});
        addFloatInput(g, "ln.weight", {8});
        addNode(g, "/in/Mul", "Mul", {"input", "in.weight"}, {"x"});
        addNode(g, "/ln/ReduceMean", "ReduceMean", {"x"}, {"mean"});
        addNode(g, "/ln/Sub", "Sub", {"x", "mean"}, {"d"});
        addNode(g, "/ln/Square", "Mul", {"d", "d"}, {"sq"});
        addNode(g, "/ln/Mul", "Mul", {"ln.weight", "d"}, {"scaled"});
        addNode(g, "/ln/Add", "Add", {"sq", "scaled"}, {"y"});
        g->add_output()->set_name("y");
        auto plain = build(f.write("merged.onnx", m), {});
        QVERIFY2(plain, plain.status().message().c_str());
        addMetadata(m, "remat.format", "1");
        addMetadata(m, "remat.merged", R"([{"node": "/ln/Sub", "readers": [["/ln/Mul"]]}])");
        auto unmerged = build(f.write("unmerged.onnx", m), {});
        QVERIFY2(unmerged, unmerged.status().message().c_str());
        QVERIFY(unmerged->graph.findValue("d#2").has_value());
        // the second copy of d (4 x 8 floats) is kept as well
        QCOMPARE(unmerged->summary.savedForBackwardBytes - plain->summary.savedForBackwardBytes,
                 int64_t(4 * 8 * 4));
        const auto &notes = unmerged->graph.info().importNotes;
        QVERIFY(std::any_of(notes.begin(), notes.end(),
                            [](const std::string &n) { return has(n, "remat.merged"); }));
    }

    void unreadWeightStaysResident()
    {
        // A layer built and never called: torch.onnx leaves its weight out, the module holds it.
        Files f;
        auto m = twoLayers();
        auto plain = build(f.write("plain.onnx", m), {});
        QVERIFY2(plain, plain.status().message().c_str());
        addMetadata(m, "remat.format", "1");
        addMetadata(m, "remat.parameters", R"(["enc.weight", "head.weight"])");
        addMetadata(m, "remat.unread",
                    R"([{"name": "skip.weight", "kind": "parameters", "dtype": "float32",
                        "shape": [4, 4]}, {"name": "enc.weight", "kind": "buffers",
                        "dtype": "float32", "shape": [1]}])");
        auto withUnread = build(f.write("unread.onnx", m), {});
        QVERIFY2(withUnread, withUnread.status().message().c_str());
        QCOMPARE(kindOf(withUnread->graph, "skip.weight"), ir::ValueKind::Parameter);
        // a name the graph has keeps what the graph says
        QCOMPARE(kindOf(withUnread->graph, "enc.weight"), ir::ValueKind::Parameter);
        QCOMPARE(withUnread->summary.paramBytes - plain->summary.paramBytes, int64_t(4 * 4 * 4));
        QCOMPARE(withUnread->summary.savedForBackwardBytes, plain->summary.savedForBackwardBytes);
    }

    void contiguousCopyIsItsOwnTensor()
    {
        // h.transpose(0, 1).contiguous() * itself beside h * h: with the copy PyTorch keeps two
        // storages; without it the transposed view is h's storage, kept once.
        Files f;
        auto m = baseModel();
        m.set_producer_name("pytorch");
        auto *g = m.mutable_graph();
        addFloatInput(g, "input", {4, 8});
        addFloatInput(g, "p.weight", {8});
        addNode(g, "/p/Mul", "Mul", {"input", "p.weight"}, {"h"});
        auto *tr = addNode(g, "/Transpose", "Transpose", {"h"}, {"t"});
        auto *perm = tr->add_attribute();
        perm->set_name("perm");
        perm->set_type(::onnx::AttributeProto::INTS);
        perm->add_ints(1);
        perm->add_ints(0);
        addNode(g, "/sq/Mul", "Mul", {"t", "t"}, {"y"});
        addNode(g, "/hh/Mul", "Mul", {"h", "h"}, {"z"});
        g->add_output()->set_name("y");
        g->add_output()->set_name("z");
        auto plain = build(f.write("view.onnx", m), {});
        QVERIFY2(plain, plain.status().message().c_str());
        addMetadata(m, "remat.format", "1");
        addMetadata(m, "remat.contiguous", R"([{"value": "t", "readers": ["/sq/Mul"]}])");
        auto copied = build(f.write("copy.onnx", m), {});
        QVERIFY2(copied, copied.status().message().c_str());
        QCOMPARE(copied->summary.savedForBackwardBytes - plain->summary.savedForBackwardBytes,
                 int64_t(4 * 8 * 4));
    }

    void moduleTensorBesideTheData()
    {
        // Glow's first ActNorm: (x + loc) * exp(logs), exported without weights: the two
        // submodule tensors meet only the data and arithmetic, and are learned all the same.
        Files f;
        auto m = baseModel();
        m.set_producer_name("pytorch");
        auto *g = m.mutable_graph();
        addFloatInput(g, "input", {2, 3});
        addFloatInput(g, "norm.loc", {1, 3});
        addFloatInput(g, "norm.logs", {1, 3});
        addNode(g, "/norm/Add", "Add", {"input", "norm.loc"}, {"a"});
        addNode(g, "/norm/Exp", "Exp", {"norm.logs"}, {"e"});
        addNode(g, "/norm/Mul", "Mul", {"a", "e"}, {"y"});
        g->add_output()->set_name("y");
        auto graph = ox::importModel(f.write("actnorm.onnx", m), {});
        QVERIFY2(graph, graph.status().message().c_str());
        QCOMPARE(kindOf(*graph, "norm.loc"), ir::ValueKind::Parameter);
        QCOMPARE(kindOf(*graph, "norm.logs"), ir::ValueKind::Parameter);
        QCOMPARE(kindOf(*graph, "input"), ir::ValueKind::Input);
    }

    void maskMultipliedOntoWeightIsBuffer()
    {
        // PixelCNN: conv(x, weight * mask): a weightless export shows the mask as a graph input
        // beside the weight; no gradient is wanted for it.
        Files f;
        auto m = baseModel();
        m.set_producer_name("pytorch");
        auto *g = m.mutable_graph();
        addFloatInput(g, "input", {2, 1, 8, 8});
        addFloatInput(g, "conv.weight", {4, 1, 3, 3});
        addFloatInput(g, "conv.m", {4, 1, 3, 3});
        addNode(g, "/conv/Mul", "Mul", {"conv.weight", "conv.m"}, {"w"});
        addNode(g, "/conv/Conv", "Conv", {"input", "w"}, {"y"});
        g->add_output()->set_name("y");
        auto graph = ox::importModel(f.write("pixel.onnx", m), {});
        QVERIFY2(graph, graph.status().message().c_str());
        QCOMPARE(kindOf(*graph, "conv.weight"), ir::ValueKind::Parameter);
        QCOMPARE(kindOf(*graph, "conv.m"), ir::ValueKind::Buffer);
        QVERIFY(has(graph->value(*graph->findValue("conv.m")).kindReason, "multiplied onto"));
        // and the import says this file carried no metadata, listing the guess
        const auto &notes = graph->info().importNotes;
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string &n) {
            return has(n, "no remat_export metadata") && has(n, "conv.m");
        }));
    }

    void tableNamesAreBuffers()
    {
        for (const char *name : {"frontend.dft_real", "fe.mel_filterbank", "fe.fbank",
                                 "stft.window", "block.conv.mask"})
            QVERIFY2(ox::bufferNameReason(name) != nullptr, name);
        for (const char *name : {"decoder.mask_token", "mask", "blocks.0.attn.qkv.weight",
                                 "layers.0.relative_position_bias_table"})
            QVERIFY2(ox::bufferNameReason(name) == nullptr, name);
    }
};

QTEST_GUILESS_MAIN(TstTrainability)
#include "tst_trainability.moc"
