// The user's import settings: whole input shapes (--input-shape), named free dims (--dim),
// classification overrides (--classify), and weights stored as Constant nodes. Each model is
// built here with the ONNX protobuf API; the expected shapes and kinds are written beside it.
#include "core/onnx/importer.h"
#include "core/onnx/input_spec.h"
#include "core/training/builder.h"

#include "common/test_support.h"
#include "onnx/onnx_test_model.h"

#include <onnx/onnx_pb.h>

#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <fstream>

using namespace remat::core;
using namespace remat::tests;
namespace ox = remat::core::onnx;

namespace {

/// A Constant node holding a float tensor of `dims` filled with 0.25.
void addConstant(::onnx::GraphProto *g, const std::string &out, std::vector<int64_t> dims)
{
    auto *t = addConstantNode(g, out + "_node", out, ::onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
        t->add_dims(d);
        count *= d;
    }
    for (int64_t i = 0; i < count; ++i)
        t->add_float_data(0.25f);
}

/// An int64 Constant node (indices, axes).
void addIntConstant(::onnx::GraphProto *g, const std::string &out, std::vector<int64_t> dims,
                    std::vector<int64_t> values)
{
    auto *t = addConstantNode(g, out + "_node", out, ::onnx::TensorProto::INT64);
    for (int64_t d : dims)
        t->add_dims(d);
    for (int64_t v : values)
        t->add_int64_data(v);
}

/// x[N, 3, H, W] -> Relu -> y
::onnx::ModelProto imageModel(std::vector<D> dims = {"N", 3, "H", "W"})
{
    auto m = baseModel();
    auto *g = m.mutable_graph();
    addFloatInput(g, "x", std::move(dims));
    addNode(g, "/relu/Relu", "Relu", {"x"}, {"y"});
    g->add_output()->set_name("y");
    return m;
}

/// What both If models below share: in the outer If's then branch (where `h` is computed) h2 =
/// If(`cond`) { Neg(h) } else { h }, the nested If reading `h` from the enclosing branch; the outer
/// else branch is Sigmoid(x); the graph's output is the outer If's y.
void addNestedIf(::onnx::GraphProto *g, ::onnx::NodeProto *ifNode, ::onnx::GraphProto *thenG,
                 const std::string &cond)
{
    auto *inner = addNode(thenG, "/then/If", "If", {cond}, {"h2"});
    auto *innerThen = addBranch(inner, "then_branch");
    addNode(innerThen, "/then/then/Neg", "Neg", {"h"}, {"neg"});
    innerThen->add_output()->set_name("neg");
    auto *innerElse = addBranch(inner, "else_branch");
    innerElse->add_output()->set_name("h");
    thenG->add_output()->set_name("h2");
    auto *elseG = addBranch(ifNode, "else_branch");
    addNode(elseG, "/else/Sigmoid", "Sigmoid", {"x"}, {"s"});
    elseG->add_output()->set_name("s");
    g->add_output()->set_name("y");
}

/// Silero VAD's shape: y = If(Equal(sr, 16000)) then { h = Relu(x); If(true) { Neg(h) } }
/// else { Sigmoid(x) }. The nested If reads `h` from the enclosing branch.
::onnx::ModelProto sampleRateModel()
{
    auto m = baseModel();
    auto *g = m.mutable_graph();
    addFloatInput(g, "x", {2, 8});
    addScalarInput(g, "sr");
    addInt64Constant(g, "k16000", 16000);
    addNode(g, "/Equal", "Equal", {"sr", "k16000"}, {"is16k"});
    auto *ifNode = addNode(g, "/If", "If", {"is16k"}, {"y"});
    auto *thenG = addBranch(ifNode, "then_branch");
    addNode(thenG, "/then/Relu", "Relu", {"x"}, {"h"});
    addConstantNode(thenG, "/then/true_node", "yes", ::onnx::TensorProto::BOOL)->add_int32_data(1);
    addNestedIf(g, ifNode, thenG, "yes");
    return m;
}

/// A wake-word model's shape: y = If(ReduceMean(x) > 0) then { h = Relu(x);
/// If(ReduceSum(h) > 0) { Neg(h) } else { h } } else { Sigmoid(x) }. Both conditions are
/// computed from the data: only --branch decides them.
::onnx::ModelProto dataDependentIfModel()
{
    auto m = baseModel();
    auto *g = m.mutable_graph();
    addFloatInput(g, "x", {2, 8});
    addConstantNode(g, "/zero", "zero", ::onnx::TensorProto::FLOAT)->add_float_data(0.f);
    addNode(g, "/ReduceMean", "ReduceMean", {"x"}, {"energy"})
        ->add_attribute()
        ->set_name("keepdims");
    g->mutable_node(g->node_size() - 1)
        ->mutable_attribute(0)
        ->set_type(::onnx::AttributeProto::INT);
    g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_i(0);
    addNode(g, "/Greater", "Greater", {"energy", "zero"}, {"loud"});
    auto *ifNode = addNode(g, "/If", "If", {"loud"}, {"y"});
    auto *thenG = addBranch(ifNode, "then_branch");
    addNode(thenG, "/then/Relu", "Relu", {"x"}, {"h"});
    auto *sum = addNode(thenG, "/then/ReduceSum", "ReduceSum", {"h"}, {"hs"});
    auto *ka = sum->add_attribute();
    ka->set_name("keepdims");
    ka->set_type(::onnx::AttributeProto::INT);
    ka->set_i(0);
    addNode(thenG, "/then/Greater", "Greater", {"hs", "zero"}, {"pos"});
    addNestedIf(g, ifNode, thenG, "pos");
    return m;
}

std::vector<std::string> opTypes(const ir::Graph &g)
{
    std::vector<std::string> ops;
    for (const ir::Node &n : g.nodes())
        ops.push_back(n.opType);
    return ops;
}

#define EXPECT_ERROR_WITH(expr, ...)                                                               \
    do {                                                                                           \
        auto r_ = (expr);                                                                          \
        QVERIFY2(!r_.isOk(), "expected an error");                                                 \
        for (const char *part_ : {__VA_ARGS__})                                                    \
            QVERIFY2(has(r_.message(), part_),                                                     \
                     ("'" + std::string(part_) + "' missing in: " + r_.message()).c_str());        \
    } while (0)

Status importStatus(const std::string &path, const ox::ImportOptions &opt)
{
    auto g = ox::importModel(path, opt);
    return g ? Status::ok() : g.status();
}

ir::Shape outputShape(const ir::Graph &g) { return g.value(g.outputs()[0]).shape; }

} // namespace

class TestInputSettings : public QObject
{
    Q_OBJECT
private slots:
    void parsesDimsInEverySpelling()
    {
        const std::vector<int64_t> expected{2, 16, 128};
        for (const char *text : {"2x16x128", "2,16,128",
                                 "2\xC3\x97"
                                 "16\xC3\x97"
                                 "128",
                                 " 2 x 16 x 128 ", "2X16X128"}) {
            auto dims = ox::parseDims(text);
            QVERIFY2(dims.hasValue(), dims.status().message().c_str());
            QCOMPARE(*dims, expected);
        }
        QCOMPARE(ox::parseDims("").value(), std::vector<int64_t>{}); // a scalar
        QCOMPARE(ox::formatDims({1, 3, 224, 224}), std::string("1x3x224x224"));
        // Zero, negative, junk and overflowing dims are refused with the dim's place.
        QVERIFY(has(ox::parseDims("2x0x3").status().message(), "at least 1"));
        QVERIFY(has(ox::parseDims("-4").status().message(), "not a whole number") ||
                has(ox::parseDims("-4").status().message(), "at least 1"));
        QVERIFY(has(ox::parseDims("2xabc").status().message(), "dim 1"));
        QVERIFY(!ox::parseDims("99999999999999999999x2").hasValue());
        QVERIFY(!ox::parseDims("2xx3").hasValue());
    }

    void settingsRefuseRepeatsAndBadForms()
    {
        ox::ImportOptions opt;
        QVERIFY(ox::addInputShape(opt, "x=1x3x8x8").isOk());
        EXPECT_ERROR_WITH(ox::addInputShape(opt, "x=1x3x4x4"), "twice");
        EXPECT_ERROR_WITH(ox::addInputShape(opt, "1x3x4x4"), "NAME=");
        EXPECT_ERROR_WITH(ox::addInputShape(opt, "=1x3"), "no name");
        // Names may hold ':' and '=' is split at the last one (tf2onnx names "input:0").
        QVERIFY(ox::addInputShape(opt, "input:0=2x5").isOk());
        QCOMPARE(opt.inputShapes.at("input:0"), (std::vector<int64_t>{2, 5}));
        QVERIFY(ox::addDimValue(opt, "H=32").isOk());
        EXPECT_ERROR_WITH(ox::addDimValue(opt, "H=64"), "twice");
        EXPECT_ERROR_WITH(ox::addDimValue(opt, "W=0"), "at least 1");
        EXPECT_ERROR_WITH(ox::addDimValue(opt, "W=-3"), "W");
        QVERIFY(ox::addClassification(opt, "w=constant").isOk());
        QCOMPARE(opt.kindOverrides.at("w"), ir::ValueKind::Constant);
        EXPECT_ERROR_WITH(ox::addClassification(opt, "w=buffer"), "twice");
        EXPECT_ERROR_WITH(ox::addClassification(opt, "v=weights"),
                          "parameter, frozen, buffer, input, constant");
        QCOMPARE(ox::suggestDimValue("height"), int64_t(224));
        QCOMPARE(ox::suggestDimValue("batch_size"), int64_t(1));
        QCOMPARE(ox::suggestDimValue("sequence"), int64_t(128));
    }

    void namedDimsAndWholeShapes()
    {
        Files f;
        const std::string path = f.write("image.onnx", imageModel());
        // Nothing given: the error names every free dim and the options that set them.
        ox::ImportOptions none;
        EXPECT_ERROR_WITH(importStatus(path, none), "free dims",
                          "--dim N=", "--dim H=", "--dim W=");
        // Batch alone leaves H and W free.
        ox::ImportOptions batchOnly;
        batchOnly.batch = 2;
        EXPECT_ERROR_WITH(importStatus(path, batchOnly), "--dim H=", "--dim W=");
        // --batch 2 --dim H=32 --dim W=48 -> [2,3,32,48]
        ox::ImportOptions dims = batchOnly;
        QVERIFY(ox::addDimValue(dims, "H=32").isOk());
        QVERIFY(ox::addDimValue(dims, "W=48").isOk());
        auto g = ox::importModel(path, dims);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({2, 3, 32, 48}));
        QCOMPARE(g->info().batch, int64_t(2));
        // A named leading dim sets the batch the model reports: --dim N=6 -> batch 6, even with --batch 2.
        QVERIFY(ox::addDimValue(dims, "N=6").isOk());
        g = ox::importModel(path, dims);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({6, 3, 32, 48}));
        QCOMPARE(g->info().batch, int64_t(6));
        // A whole shape wins over both.
        QVERIFY(ox::addInputShape(dims, "x=4x3x8x8").isOk());
        g = ox::importModel(path, dims);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({4, 3, 8, 8}));
        QCOMPARE(g->info().batch, int64_t(4));
    }

    void theBatchNamesItsSymbolEverywhere()
    {
        // x[batch, 8] and state[2, batch, 4] (Silero's recurrent state): --batch 3 sets both.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {"batch", 8});
        addFloatInput(g, "state", {2, "batch", 4});
        addNode(g, "/a/Relu", "Relu", {"x"}, {"y"});
        addNode(g, "/b/Relu", "Relu", {"state"}, {"s"});
        g->add_output()->set_name("y");
        g->add_output()->set_name("s");
        const std::string path = f.write("state.onnx", m);
        ox::ImportOptions opt;
        opt.batch = 3;
        auto r = ox::importModel(path, opt);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(r->value(*r->findValue("s")).shape, ir::Shape::fromStatic({2, 3, 4}));
        QCOMPARE(r->value(*r->findValue("y")).shape, ir::Shape::fromStatic({3, 8}));
        // An explicit --dim still wins over --batch.
        QVERIFY(ox::addDimValue(opt, "batch=5").isOk());
        r = ox::importModel(path, opt);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(r->value(*r->findValue("s")).shape, ir::Shape::fromStatic({2, 5, 4}));
        QCOMPARE(r->info().batch, int64_t(5));
    }

    void unnamedDimsNeedAWholeShape()
    {
        Files f;
        const std::string path = f.write("unnamed.onnx", imageModel({"", 3, "", ""}));
        ox::ImportOptions opt;
        opt.batch = 1;
        EXPECT_ERROR_WITH(importStatus(path, opt), "--input-shape x=");
        QVERIFY(ox::addInputShape(opt, "x=1x3x16x16").isOk());
        auto g = ox::importModel(path, opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({1, 3, 16, 16}));
        // The signature lists what the dialog has to ask for.
        auto sig = ox::readModelSignature(path);
        QVERIFY2(sig.hasValue(), sig.status().message().c_str());
        QCOMPARE(sig->inputs.size(), size_t(1));
        QCOMPARE(sig->unnamedFreeDims, 3);
        QVERIFY(sig->freeDimNames.empty());
        auto named = ox::readModelSignature(f.write("named.onnx", imageModel()));
        QVERIFY2(named.hasValue(), named.status().message().c_str());
        QCOMPARE(named->freeDimNames, (std::vector<std::string>{"N", "H", "W"}));
    }

    void settingsThatNameNothingAreRefused()
    {
        Files f;
        const std::string path = f.write("image.onnx", imageModel({"N", 3, 8, 8}));
        ox::ImportOptions opt;
        opt.batch = 1;
        ox::ImportOptions wrongDim = opt;
        QVERIFY(ox::addDimValue(wrongDim, "height=8").isOk());
        EXPECT_ERROR_WITH(importStatus(path, wrongDim), "'height'", "named free dims are: N");
        ox::ImportOptions wrongInput = opt;
        QVERIFY(ox::addInputShape(wrongInput, "image=1x3x8x8").isOk());
        EXPECT_ERROR_WITH(importStatus(path, wrongInput), "'image'", "not a graph input",
                          "the inputs are: x");
        ox::ImportOptions wrongRank = opt;
        QVERIFY(ox::addInputShape(wrongRank, "x=1x3x8").isOk());
        EXPECT_ERROR_WITH(importStatus(path, wrongRank), "gives 3 dims", "has 4");
        // A static spatial dim may be changed: the whole shape is re-inferred.
        ox::ImportOptions bigger = opt;
        QVERIFY(ox::addInputShape(bigger, "x=1x3x16x16").isOk());
        auto g = ox::importModel(path, bigger);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({1, 3, 16, 16}));
    }

    void constantNodeWeightsAreParameters()
    {
        // Relu(x[2,4]) @ W(Constant [4,3]) + b(Constant [3]) -> * 0.5 (Constant scalar) -> y
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 4});
        addConstant(g, "W", {4, 3});
        addConstant(g, "b", {3});
        addConstant(g, "half", {});
        addNode(g, "/act/Relu", "Relu", {"x"}, {"h"});
        addNode(g, "/fc/MatMul", "MatMul", {"h", "W"}, {"xw"});
        addNode(g, "/fc/Add", "Add", {"xw", "b"}, {"z"});
        addNode(g, "/scale/Mul", "Mul", {"z", "half"}, {"y"});
        g->add_output()->set_name("y");
        const std::string path = f.write("paddle_style.onnx", m);
        auto r = ox::importModel(path);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        // W and b: parameters with their data, no producing node; the scalar stays a Constant node.
        for (const char *name : {"W", "b"}) {
            const ir::Value &v = r->value(*r->findValue(name));
            QCOMPARE(v.kind, ir::ValueKind::Parameter);
            QVERIFY(!v.producer.valid());
            QVERIFY(v.initializer && v.initializer->hasData());
        }
        const ir::Value &half = r->value(*r->findValue("half"));
        QCOMPARE(half.kind, ir::ValueKind::Constant);
        QVERIFY(half.producer.valid());
        QCOMPARE(r->nodeCount(), size_t(5)); // two of the three Constant nodes folded into weights
        // The user decides: W kept as a constant, the scalar trained.
        ox::ImportOptions opt;
        QVERIFY(ox::addClassification(opt, "W=constant").isOk());
        QVERIFY(ox::addClassification(opt, "half=parameter").isOk());
        r = ox::importModel(path, opt);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(r->value(*r->findValue("W")).kind, ir::ValueKind::Constant);
        QCOMPARE(r->value(*r->findValue("half")).kind, ir::ValueKind::Parameter);
        QVERIFY(!r->value(*r->findValue("half")).producer.valid());
        // A Constant node's tensor is stored data: it cannot become a graph input.
        ox::ImportOptions asInput;
        QVERIFY(ox::addClassification(asInput, "W=input").isOk());
        EXPECT_ERROR_WITH(importStatus(path, asInput), "'W'", "parameter, buffer or constant");
        // An activation still cannot be reclassified.
        ox::ImportOptions activation;
        QVERIFY(ox::addClassification(activation, "xw=parameter").isOk());
        EXPECT_ERROR_WITH(importStatus(path, activation), "'xw'", "computed by a node");
    }

    void torchTopLevelTensorsAreParameters()
    {
        // torch.onnx.export(export_params=False): the forward()'s arguments, then the state_dict.
        // A Perceiver's latents and BiFPN-style fusion weights are registered on the model
        // itself (no module path) and reach the graph through Unsqueeze / Expand or Relu, the
        // fusion weights shaped like the batch (4) but just before the latents; the first
        // argument read as x.index_select reads an embedding table; an argument named "mask"
        // is data, as is a timestep vector shaped like the batch before it.
        Files f;
        auto m = baseModel();
        m.set_producer_name("pytorch");
        auto *g = m.mutable_graph();
        addFloatInput(g, "input0", {4, 8});
        addFloatInput(g, "t", {4});
        addFloatInput(g, "mask", {4, 8});
        addFloatInput(g, "w", {4});
        addFloatInput(g, "latents", {1, 8});
        addFloatInput(g, "lin.weight", {8, 8});
        addFloatInput(g, "scale", {8});
        addIntConstant(g, "idx", {4}, {0, 2, 1, 3});
        addIntConstant(g, "zero", {}, {0});
        addIntConstant(g, "one", {1}, {1});
        addNode(g, "/Gather", "Gather", {"input0", "idx"}, {"rows"});
        addNode(g, "/Add", "Add", {"rows", "latents"}, {"a"});
        addNode(g, "/Relu", "Relu", {"w"}, {"wr"});
        addNode(g, "/ReduceSum", "ReduceSum", {"wr"}, {"ws"});
        addNode(g, "/Div", "Div", {"wr", "ws"}, {"wn"});
        addNode(g, "/Gather_1", "Gather", {"wn", "zero"}, {"wn0"});
        addNode(g, "/Mul", "Mul", {"a", "wn0"}, {"b"});
        addNode(g, "/Add_1", "Add", {"b", "mask"}, {"c"});
        addNode(g, "/Unsqueeze", "Unsqueeze", {"t", "one"}, {"tu"});
        addNode(g, "/Mul_1", "Mul", {"c", "tu"}, {"d"});
        addNode(g, "/lin/MatMul", "MatMul", {"d", "lin.weight"}, {"e"});
        addNode(g, "/Mul_2", "Mul", {"e", "scale"}, {"y"});
        g->add_output()->set_name("y");
        const std::string path = f.write("torch_top_level.onnx", m);
        auto r = ox::importModel(path);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        const auto kind = [&](const char *name) { return r->value(*r->findValue(name)).kind; };
        QCOMPARE(kind("input0"), ir::ValueKind::Input);
        QCOMPARE(kind("mask"), ir::ValueKind::Input);
        QCOMPARE(kind("t"), ir::ValueKind::Input);
        QCOMPARE(kind("latents"), ir::ValueKind::Parameter);
        QCOMPARE(kind("w"), ir::ValueKind::Parameter);
        QCOMPARE(kind("lin.weight"), ir::ValueKind::Parameter);
        QCOMPARE(kind("scale"), ir::ValueKind::Parameter);
        // Another exporter's file keeps the old reading: a bare name beside data is data.
        m.set_producer_name("test");
        const std::string other = f.write("other_top_level.onnx", m);
        r = ox::importModel(other);
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(kind("latents"), ir::ValueKind::Input);
        QCOMPARE(kind("w"), ir::ValueKind::Input);
    }

    void initializerWithDimsButNoDataIsRefused()
    {
        // A 2^50-element "weight" with no bytes: refused, not a 4 PiB model.
        Files f;
        auto m = imageModel({1, 3, 4, 4});
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name("huge");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        for (int i = 0; i < 5; ++i)
            t->add_dims(1024);
        const std::string path = f.write("hollow.onnx", m);
        EXPECT_ERROR_WITH(importStatus(path, {}), "'huge'", "holds no data", "PiB");
    }

    void ifOnAGivenScalarIsInlined()
    {
        Files f;
        const std::string path = f.write("vad.onnx", sampleRateModel());
        // Not given: the error names the If, its condition and the input to give.
        ox::ImportOptions none;
        EXPECT_ERROR_WITH(importStatus(path, none), "/If", "'is16k'", "--input-value sr=V");
        // sr = 16000: the then branch, and inside it the nested If's then branch (Neg of h).
        ox::ImportOptions at16k;
        QVERIFY(ox::addInputValue(at16k, "sr=16000").isOk());
        auto g = ox::importModel(path, at16k);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        const auto ops = opTypes(*g);
        QVERIFY(std::find(ops.begin(), ops.end(), "If") == ops.end());
        QVERIFY(std::find(ops.begin(), ops.end(), "Relu") != ops.end());
        QVERIFY(std::find(ops.begin(), ops.end(), "Neg") != ops.end());
        QVERIFY(std::find(ops.begin(), ops.end(), "Sigmoid") == ops.end());
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({2, 8}));
        QCOMPARE(g->value(*g->findValue("sr")).kind, ir::ValueKind::Constant);
        for (ValueId in : g->inputs())
            QVERIFY(g->value(in).name != "sr"); // a constant now, not an input to feed
        // The nested If's else branch returns the enclosing branch's h as it is: with its
        // condition false, inlining renames that output too (y = Relu(x), no Neg).
        {
            auto m = sampleRateModel();
            for (auto &n : *m.mutable_graph()->mutable_node())
                if (n.op_type() == "If")
                    for (auto &a : *n.mutable_attribute())
                        if (a.name() == "then_branch")
                            for (auto &bn : *a.mutable_g()->mutable_node())
                                if (bn.op_type() == "Constant")
                                    bn.mutable_attribute(0)->mutable_t()->set_int32_data(0, 0);
            const std::string noPath = f.write("vad_no.onnx", m);
            auto gn = ox::importModel(noPath, at16k);
            QVERIFY2(gn.hasValue(), gn.status().message().c_str());
            const auto opsNo = opTypes(*gn);
            QVERIFY(std::find(opsNo.begin(), opsNo.end(), "Neg") == opsNo.end());
            QVERIFY(std::find(opsNo.begin(), opsNo.end(), "Relu") != opsNo.end());
            QCOMPARE(outputShape(*gn), ir::Shape::fromStatic({2, 8}));
        }
        // sr = 8000: the else branch.
        ox::ImportOptions at8k;
        QVERIFY(ox::addInputValue(at8k, "sr=8000").isOk());
        g = ox::importModel(path, at8k);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        const auto ops8 = opTypes(*g);
        QVERIFY(std::find(ops8.begin(), ops8.end(), "Sigmoid") != ops8.end());
        QVERIFY(std::find(ops8.begin(), ops8.end(), "Relu") == ops8.end());
        // Bad values: an unknown name, a tensor input, a fraction for an integer input, twice.
        ox::ImportOptions unknown;
        QVERIFY(ox::addInputValue(unknown, "rate=16000").isOk());
        EXPECT_ERROR_WITH(importStatus(path, unknown), "'rate'", "not a graph input");
        ox::ImportOptions tensor;
        QVERIFY(ox::addInputValue(tensor, "x=1").isOk());
        EXPECT_ERROR_WITH(importStatus(path, tensor), "--input-value x", "[2,8]", "--input-shape");
        ox::ImportOptions fraction;
        QVERIFY(ox::addInputValue(fraction, "sr=16000.5").isOk());
        EXPECT_ERROR_WITH(importStatus(path, fraction), "not a whole number");
        EXPECT_ERROR_WITH(ox::addInputValue(at8k, "sr=16000"), "twice");
        EXPECT_ERROR_WITH(ox::addInputValue(none, "sr=abc"), "not a finite number");
    }

    void namedOptionMessagesInFull()
    {
        // The NAME=VALUE options share one parser: each message in full, so that none loses the
        // option, the name or the way out. Expected: "FLAG NAME: " before what is wrong with the
        // value; a name given twice named with what it is; the form shown when '=' is missing.
        using namespace std::string_literals;
        auto message = [](const Status &s) { return s.message(); };
        ox::ImportOptions o;
        QVERIFY(ox::addInputShape(o, "x=1x3").isOk());
        QCOMPARE(message(ox::addInputShape(o, "x=2")), "--input-shape gives input 'x' twice"s);
        QCOMPARE(message(ox::addInputShape(o, "y=1x0")),
                 "--input-shape y: dim 1 of '1x0': 0 is not a dimension (a dim is at least 1)"s);
        QCOMPARE(message(ox::addInputShape(o, "y=1xb")),
                 "--input-shape y: dim 1 of '1xb': 'b' is not a whole number"s);
        QVERIFY(ox::addDimValue(o, "h=224").isOk());
        QCOMPARE(message(ox::addDimValue(o, "h=8")), "--dim gives dim 'h' twice"s);
        QCOMPARE(message(ox::addDimValue(o, "w=abc")), "--dim w: 'abc' is not a whole number"s);
        QCOMPARE(message(ox::addDimValue(o, "w= -2 ")),
                 "--dim w: -2 is not a dimension (a dim is at least 1)"s);
        QCOMPARE(message(ox::addDimValue(o, "w")),
                 "--dim expects NAME=VALUE (e.g. height=224), got 'w'"s);
        QCOMPARE(message(ox::addDimValue(o, " =3")), "--dim ' =3' has no name before '='"s);
        QVERIFY(ox::addInputValue(o, "sr=16000").isOk());
        QCOMPARE(message(ox::addInputValue(o, "sr=8000")), "--input-value gives input 'sr' twice"s);
        QCOMPARE(message(ox::addInputValue(o, "t=inf")),
                 "--input-value t: 'inf' is not a finite number"s);
        QVERIFY(ox::addBranch(o, "/If= Then").isOk());
        QCOMPARE(o.branches.at("/If"), true);
        QCOMPARE(message(ox::addBranch(o, "/If=else")), "--branch gives If node '/If' twice"s);
        QCOMPARE(message(ox::addBranch(o, "/If2=maybe")),
                 "--branch /If2: 'maybe' is not a branch (then or else)"s);
        QVERIFY(ox::addClassification(o, "w=Frozen").isOk());
        QCOMPARE(o.kindOverrides.at("w"), ir::ValueKind::Frozen);
        QCOMPARE(message(ox::addClassification(o, "w=buffer")), "--classify gives 'w' twice"s);
        QCOMPARE(
            message(ox::addClassification(o, "v=weights")),
            "--classify v: 'weights' is not one of parameter, frozen, buffer, input, constant"s);
        // Nothing refused was added.
        QCOMPARE(o.inputShapes.size(), size_t(1));
        QCOMPARE(o.dimValues.size(), size_t(1));
        QCOMPARE(o.inputValues.size(), size_t(1));
        QCOMPARE(o.branches.size(), size_t(1));
        QCOMPARE(o.kindOverrides.size(), size_t(1));
    }

    void ifOnDataTakesTheGivenBranch()
    {
        Files f;
        const std::string path = f.write("wake.onnx", dataDependentIfModel());
        auto hasOp = [](const ir::Graph &g, const char *op) {
            const auto ops = opTypes(g);
            return std::find(ops.begin(), ops.end(), op) != ops.end();
        };
        // Not given: the error names the If and the option that decides it.
        EXPECT_ERROR_WITH(importStatus(path, {}), "/If", "'loud'", "--branch /If=then");
        // else: Sigmoid(x), no If left
        ox::ImportOptions otherwise;
        QVERIFY(ox::addBranch(otherwise, "/If=else").isOk());
        auto g = ox::importModel(path, otherwise);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QVERIFY(hasOp(*g, "Sigmoid") && !hasOp(*g, "Relu") && !hasOp(*g, "If"));
        QVERIFY(training::buildTrainingGraph(*g).hasValue());
        // then: the nested If is named under its parent's prefix, and decided the same way
        ox::ImportOptions thenOnly;
        QVERIFY(ox::addBranch(thenOnly, "/If=then").isOk());
        EXPECT_ERROR_WITH(importStatus(path, thenOnly), "/If/then//then/If",
                          "--branch /If/then//then/If=then");
        ox::ImportOptions both;
        QVERIFY(ox::addBranch(both, "/If=then").isOk());
        QVERIFY(ox::addBranch(both, " /If/then//then/If = THEN ").isOk());
        g = ox::importModel(path, both);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QVERIFY(hasOp(*g, "Relu") && hasOp(*g, "Neg") && !hasOp(*g, "Sigmoid") && !hasOp(*g, "If"));
        QCOMPARE(outputShape(*g), ir::Shape::fromStatic({2, 8}));
        // trains through the branch taken (Relu keeps its output, Neg nothing)
        auto tg = training::buildTrainingGraph(*g, {.inputGradients = true});
        QVERIFY2(tg.hasValue(), tg.status().message().c_str());
        // Bad settings: an unknown node (the Ifs there are are listed), a value that is no
        // branch, a node twice.
        ox::ImportOptions unknown;
        QVERIFY(ox::addBranch(unknown, "/Iff=then").isOk());
        EXPECT_ERROR_WITH(importStatus(path, unknown), "--branch names '/Iff'", "not an If node",
                          "'/If'");
        ox::ImportOptions noIfs;
        QVERIFY(ox::addBranch(noIfs, "/If=then").isOk());
        EXPECT_ERROR_WITH(importStatus(f.write("plain.onnx", imageModel({1, 3, 4, 4})), noIfs),
                          "'/If'", "(it has none)");
        EXPECT_ERROR_WITH(ox::addBranch(noIfs, "/If=else"), "twice");
        EXPECT_ERROR_WITH(ox::addBranch(noIfs, "/Other=maybe"), "'maybe' is not a branch");
        EXPECT_ERROR_WITH(ox::addBranch(noIfs, "/Other"), "NODE=then|else");
        // A branch against a condition known at import is refused, naming both.
        const std::string vad = f.write("vad.onnx", sampleRateModel());
        ox::ImportOptions contradiction;
        QVERIFY(ox::addInputValue(contradiction, "sr=16000").isOk());
        QVERIFY(ox::addBranch(contradiction, "/If=else").isOk());
        EXPECT_ERROR_WITH(importStatus(vad, contradiction), "--branch /If=else", "contradicts");
        // (sessions and remembered settings: tst_session_file importSettingsRoundTrip)
        // The model inputs dialog lists the file's Ifs from its signature.
        auto sig = ox::readModelSignature(path);
        QVERIFY(sig.hasValue());
        QCOMPARE(sig->ifNodes, std::vector<std::string>{"/If"});
    }

    void undecidedControlFlowIsBrowsable()
    {
        // The explorer's import (expandSubgraphs): an If left undecided keeps its node, moved
        // into its own group "If" beside its branches' nodes (then_branch / else_branch); an If
        // nested in a branch is inlined when its condition is known (here a constant), as at
        // the top level.
        Files f;
        const std::string path = f.write("vad.onnx", sampleRateModel());
        ox::ImportOptions browse;
        browse.allowUnknownShapes = true;
        browse.expandSubgraphs = true;
        auto g = ox::importModel(path, browse);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        auto node = [&](const char *name) { return g->findNode(name); };
        QVERIFY(node("If/If"));
        QCOMPARE(g->node(*node("If/If")).opType, std::string("If"));
        QVERIFY(node("If/then_branch/then/Relu"));
        QVERIFY(node("If/else_branch/else/Sigmoid"));
        QVERIFY(!node("If/then_branch/then/If/If")); // decided: inlined, not a box
        int ifs = 0;
        for (const ir::Node &n : g->nodes()) {
            ifs += n.opType == "If";
            if (n.opType != "Neg")
                continue;
            // The nested then branch reads the enclosing branch's h.
            QVERIFY2(n.name.rfind("If/then_branch/", 0) == 0, n.name.c_str());
            QCOMPARE(g->value(n.inputs[0]).name, std::string("If/then_branch/h"));
        }
        QCOMPARE(ifs, 1);
        // The If reads its condition, then each branch's outputs (the display edges).
        const ir::Node &ifNode = g->node(*node("If/If"));
        QCOMPARE(int(ifNode.inputs.size()), 3);
        QCOMPARE(g->value(ifNode.inputs[1]).name, std::string("If/then_branch/h2"));
        QCOMPARE(g->value(ifNode.inputs[2]).name, std::string("If/else_branch/s"));
        bool thenGroup = false;
        for (const ir::Namespace &ns : g->namespaces())
            thenGroup = thenGroup || ns.path == "If/then_branch";
        QVERIFY(thenGroup);
        // What blocks training is the If itself, named as the file names it, with the way out.
        QVERIFY(!g->info().trainingBlockers.empty());
        QVERIFY2(has(g->info().trainingBlockers.front(), "'/If'") &&
                     has(g->info().trainingBlockers.front(), "--input-value sr=V"),
                 g->info().trainingBlockers.front().c_str());
        // Decided (sr given): inlined as before, no display nodes.
        QVERIFY(ox::addInputValue(browse, "sr=16000").isOk());
        g = ox::importModel(path, browse);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QVERIFY(g->info().trainingBlockers.empty());
        const auto ops = opTypes(*g);
        QVERIFY(std::find(ops.begin(), ops.end(), "If") == ops.end());
        QVERIFY(std::find(ops.begin(), ops.end(), "Sigmoid") == ops.end());

        // A Loop: v = Loop(M, cond, v0) with body (i, c, v) { v2 = Add(v, v) }, its trip count
        // M a graph input: not known at import, so the body's formal inputs read the Loop's
        // inputs in the explorer and training is blocked naming the Loop and the way out.
        auto m = baseModel();
        auto *lg = m.mutable_graph();
        addFloatInput(lg, "v0", {2, 3});
        addScalarInput(lg, "M");
        addConstantNode(lg, "/true", "go", ::onnx::TensorProto::BOOL)->add_int32_data(1);
        auto *loop = addNode(lg, "/Loop", "Loop", {"M", "go", "v0"}, {"vN"});
        auto *body = addBranch(loop, "body");
        body->add_input()->set_name("i");
        body->add_input()->set_name("c");
        body->add_input()->set_name("v");
        addNode(body, "/Add", "Add", {"v", "v"}, {"v2"});
        addNode(body, "/Id", "Identity", {"c"}, {"c2"});
        body->add_output()->set_name("c2");
        body->add_output()->set_name("v2");
        lg->add_output()->set_name("vN");
        const std::string loopPath = f.write("loop.onnx", m);
        ox::ImportOptions browseLoop;
        browseLoop.allowUnknownShapes = true;
        browseLoop.expandSubgraphs = true;
        g = ox::importModel(loopPath, browseLoop);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QVERIFY(node("Loop/Loop"));
        QVERIFY(node("Loop/body/Add"));
        const ir::Node &add = g->node(*node("Loop/body/Add"));
        QCOMPARE(g->value(add.inputs[0]).name, std::string("v0"));
        QCOMPARE(g->value(add.outputs[0]).shape, ir::Shape::fromStatic({2, 3}));
        QVERIFY(!g->info().trainingBlockers.empty());
        QVERIFY2(has(g->info().trainingBlockers.front(), "Loop"),
                 g->info().trainingBlockers.front().c_str());
        // Without expandSubgraphs (remat info) the same file has no display nodes.
        browseLoop.expandSubgraphs = false;
        g = ox::importModel(loopPath, browseLoop);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QVERIFY(!node("Loop/body/Add"));
        // Its training blocker (and a strict import's error) names the Loop, why, and the ways
        // out: the scalar input's value, or an export that writes the loop out.
        QVERIFY(!g->info().trainingBlockers.empty());
        QVERIFY2(has(g->info().trainingBlockers.front(), "a Loop is not unrolled") &&
                     has(g->info().trainingBlockers.front(), "trip count 'M' is not known") &&
                     has(g->info().trainingBlockers.front(), "--input-value") &&
                     has(g->info().trainingBlockers.front(), "Python ints"),
                 g->info().trainingBlockers.front().c_str());
        auto strict = ox::importModel(loopPath);
        QVERIFY(!strict.hasValue());
        QVERIFY2(has(strict.status().message(), "a Loop is not unrolled"),
                 strict.status().message().c_str());
        // Given M, the Loop is written out: three Adds, trainable.
        ox::ImportOptions given;
        QVERIFY(ox::addInputValue(given, "M=3").isOk());
        auto unrolled = ox::importModel(loopPath, given);
        QVERIFY2(unrolled.hasValue(), unrolled.status().message().c_str());
        const auto unrolledOps = opTypes(*unrolled);
        QCOMPARE(std::count(unrolledOps.begin(), unrolledOps.end(), "Add"), 3);
        QVERIFY(std::find(unrolledOps.begin(), unrolledOps.end(), "Loop") == unrolledOps.end());
        QVERIFY(unrolled->info().trainingBlockers.empty());
    }

    void inferenceBatchNormIsStudiedInTrainingMode()
    {
        // x[2,3,4,4] -> BatchNormalization (no training_mode: inference) -> y
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3, 4, 4});
        for (const char *name : {"scale", "bias", "mean", "var"}) {
            auto *t = g->add_initializer();
            t->set_name(name);
            t->set_data_type(::onnx::TensorProto::FLOAT);
            t->add_dims(3);
            for (int i = 0; i < 3; ++i)
                t->add_float_data(1.0f);
        }
        addNode(g, "/bn/BatchNormalization", "BatchNormalization",
                {"x", "scale", "bias", "mean", "var"}, {"y"});
        g->add_output()->set_name("y");
        const std::string path = f.write("bn_inference.onnx", m);
        auto training = ox::importModel(path);
        QVERIFY2(training.hasValue(), training.status().message().c_str());
        QCOMPARE(training->nodes()[0].attrInt("training_mode", 0), int64_t(1));
        QCOMPARE(training->info().importNotes.size(), size_t(1));
        QVERIFY(has(training->info().importNotes[0],
                    "1 BatchNormalization node was exported for inference"));
        ox::ImportOptions exported;
        exported.semantics = ox::Semantics::AsExported;
        auto asExported = ox::importModel(path, exported);
        QVERIFY2(asExported.hasValue(), asExported.status().message().c_str());
        QCOMPARE(asExported->nodes()[0].attrInt("training_mode", 0), int64_t(0));
        QVERIFY(asExported->info().importNotes.empty());
        QCOMPARE(ox::parseSemantics("as-exported").value(), ox::Semantics::AsExported);
        QVERIFY(!ox::parseSemantics("eval").hasValue());
    }

    void padsComputedLikeTorchExportsThem()
    {
        // torch's F.pad(x, (0, 64)) on x[1,576]: the pads go Concat -> Reshape[-1,2] ->
        // Slice(step -1) -> Transpose -> Reshape[-1] before Pad; constant propagation through the
        // 2-D Slice and the Transpose gives pads [0,0,0,64], so y is [1,640].
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {1, 576});
        addIntConstant(g, "p", {4},
                       {0, 64, 0, 0}); // (left, right) for the last dim, then the first
        addIntConstant(g, "pairs", {2}, {-1, 2});
        addIntConstant(g, "s0", {1}, {-1});
        addIntConstant(g, "e0", {1}, {-9223372036854775807LL});
        addIntConstant(g, "ax", {1}, {0});
        addIntConstant(g, "st", {1}, {-1});
        addIntConstant(g, "flat", {1}, {-1});
        addNode(g, "/pad/Reshape", "Reshape", {"p", "pairs"}, {"p2"});
        addNode(g, "/pad/Slice", "Slice", {"p2", "s0", "e0", "ax", "st"}, {"rev"});
        addNode(g, "/pad/Transpose", "Transpose", {"rev"}, {"tr"});
        addNode(g, "/pad/Reshape_1", "Reshape", {"tr", "flat"}, {"pads"});
        auto *pad = addNode(g, "/pad/Pad", "Pad", {"x", "pads"}, {"y"});
        auto *mode = pad->add_attribute();
        mode->set_name("mode");
        mode->set_type(::onnx::AttributeProto::STRING);
        mode->set_s("reflect");
        g->add_output()->set_name("y");
        auto r = ox::importModel(f.write("torch_pad.onnx", m));
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(outputShape(*r), ir::Shape::fromStatic({1, 640}));
    }

    void incompatibleBroadcastIsAnErrorNamingTheNode()
    {
        // x[2,3] + y[4,3]: no broadcast exists; the error names the node and both shapes.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3});
        addFloatInput(g, "y", {4, 3});
        addNode(g, "/bad/Add", "Add", {"x", "y"}, {"z"});
        g->add_output()->set_name("z");
        EXPECT_ERROR_WITH(importStatus(f.write("bad_broadcast.onnx", m), {}), "/bad/Add",
                          "cannot broadcast", "[2,3]", "[4,3]");
    }

    void modFoldsLikeSwinsWindowPadding()
    {
        // Swin pads each side to a multiple of the window: (7 - 58 % 7) % 7 = 5, and -3 % 7 = 4
        // (the divisor's sign, fmod = 0): x[1,58] padded by [0,0,0,5] and [0,4,0,0].
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {1, 58});
        addIntConstant(g, "w", {1}, {7});
        addIntConstant(g, "n", {1}, {58});
        addIntConstant(g, "neg", {1}, {-3});
        addIntConstant(g, "zeros3", {3}, {0, 0, 0});
        addNode(g, "/m/Mod", "Mod", {"n", "w"}, {"r"});
        addNode(g, "/m/Sub", "Sub", {"w", "r"}, {"s"});
        addNode(g, "/m/Mod_1", "Mod", {"s", "w"}, {"p"});
        addNode(g, "/m/Concat", "Concat", {"zeros3", "p"}, {"pads"})->add_attribute()->CopyFrom([] {
            ::onnx::AttributeProto a;
            a.set_name("axis");
            a.set_type(::onnx::AttributeProto::INT);
            a.set_i(0);
            return a;
        }());
        addNode(g, "/m/Pad", "Pad", {"x", "pads"}, {"y"});
        addNode(g, "/m/Mod_2", "Mod", {"neg", "w"}, {"q"});
        addNode(g, "/m/Concat_1", "Concat", {"zeros3", "q"}, {"pads2"})
            ->add_attribute()
            ->CopyFrom([] {
                ::onnx::AttributeProto a;
                a.set_name("axis");
                a.set_type(::onnx::AttributeProto::INT);
                a.set_i(0);
                return a;
            }());
        addNode(g, "/m/Pad_1", "Pad", {"x", "pads2"}, {"y2"});
        g->add_output()->set_name("y");
        g->add_output()->set_name("y2");
        auto r = ox::importModel(f.write("mod.onnx", m));
        QVERIFY2(r.hasValue(), r.status().message().c_str());
        QCOMPARE(r->value(*r->findValue("y")).shape, ir::Shape::fromStatic({1, 63}));
        QCOMPARE(r->value(*r->findValue("y2")).shape, ir::Shape::fromStatic({1, 62}));
    }

    void paddleFileHasItsWeights()
    {
        // paddle2onnx stores every weight as a Constant node (tests/data/realworld/README.md).
        const QString file = sourceDir() + "/tests/data/realworld/ppocr_mobile_v2_cls.onnx";
        if (!QFileInfo::exists(file))
            QSKIP("realworld data not found");
        auto sig = ox::readModelSignature(toStd(file));
        QVERIFY2(sig.hasValue(), sig.status().message().c_str());
        QCOMPARE(sig->inputs.size(), size_t(1));
        ox::ImportOptions opt;
        QVERIFY(ox::addInputShape(opt, sig->inputs[0].name + "=1x3x48x192").isOk());
        auto g = ox::importModel(toStd(file), opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        int64_t params = 0, elements = 0;
        for (const ir::Value &v : g->values())
            if (v.kind == ir::ValueKind::Parameter) {
                ++params;
                elements += v.shape.numElements().value();
            }
        QVERIFY2(params > 100, std::to_string(params).c_str());
        QVERIFY2(elements > 100000, std::to_string(elements).c_str());
    }
};

QTEST_GUILESS_MAIN(TestInputSettings)
#include "tst_input_settings.moc"
