// Bad and hostile model files, each crafted here with the ONNX protobuf API (or raw bytes) and
// written to a temporary folder: every one must fail with a Status naming the file, the node or
// value, and the problem, without crashing or reading outside the model's folder. Plus the good
// paths those checks guard: external data inside the folder, typed-field data, and ONNX's own
// inference for an op we do not cover.
#include "core/onnx/importer.h"

#include "common/test_support.h"
#include "onnx/onnx_test_model.h"

#include <onnx/onnx_pb.h>

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

using namespace remat::core;
using namespace remat::tests;

namespace {

void addInput(::onnx::GraphProto *g, const std::string &name, std::vector<int64_t> dims,
              int elemType = ::onnx::TensorProto::FLOAT, const std::string &symbolicFirst = {})
{
    auto *vi = g->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elemType);
    auto *sh = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
        auto *d = sh->add_dim();
        if (i == 0 && !symbolicFirst.empty())
            d->set_dim_param(symbolicFirst);
        else
            d->set_dim_value(dims[i]);
    }
}

void addOutput(::onnx::GraphProto *g, const std::string &name) { g->add_output()->set_name(name); }

/// x[2,3] -> Relu -> y: a valid model the error cases start from.
::onnx::ModelProto reluModel()
{
    auto m = baseModel();
    auto *g = m.mutable_graph();
    addInput(g, "x", {2, 3});
    addNode(g, "/relu/Relu", "Relu", {"x"}, {"y"});
    addOutput(g, "y");
    return m;
}

#define EXPECT_IMPORT_ERROR(path, options, ...)                                                    \
    do {                                                                                           \
        auto g_ = remat::core::onnx::importModel(path, options);                                   \
        QVERIFY2(!g_.hasValue(), "import succeeded but should fail");                              \
        const std::string msg_ = g_.status().message();                                            \
        QVERIFY2(has(msg_, path), ("message does not name the file: " + msg_).c_str());            \
        for (const char *part_ : {__VA_ARGS__})                                                    \
            QVERIFY2(has(msg_, part_),                                                             \
                     ("'" + std::string(part_) + "' missing in: " + msg_).c_str());                \
    } while (0)

} // namespace

class TestImportErrors : public QObject
{
    Q_OBJECT
private slots:
    void validModelLoads()
    {
        Files f;
        const std::string path = f.write("relu.onnx", reluModel());
        auto g = remat::core::onnx::importModel(path);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(g->nodeCount(), size_t(1));
        QCOMPARE(g->value(g->outputs()[0]).shape, ir::Shape::fromStatic({2, 3}));
        QCOMPARE(g->info().sha256.size(), size_t(64));
    }

    void notProtobuf()
    {
        Files f;
        const std::string path =
            f.write("junk.onnx", std::string("\xff\xff\xff\xff\x0f garbage", 14));
        EXPECT_IMPORT_ERROR(path, {}, "not an ONNX model");
    }

    void truncatedFile()
    {
        const QString corpus = sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(corpus))
            QSKIP("shared corpus not found");
        QFile in(corpus);
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QByteArray all = in.readAll();
        Files f;
        for (qsizetype cut : {all.size() / 2, all.size() - 7, qsizetype(100)}) {
            const std::string path = f.write("cut" + std::to_string(cut) + ".onnx",
                                             std::string(all.constData(), size_t(cut)));
            EXPECT_IMPORT_ERROR(path, {}, "truncated");
        }
    }

    void noGraph()
    {
        Files f;
        auto m = baseModel();
        m.clear_graph();
        EXPECT_IMPORT_ERROR(f.write("nograph.onnx", m), {}, "no graph");
    }

    void cycle()
    {
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {2});
        addNode(g, "/a/Add", "Add", {"x", "c"}, {"b"});
        addNode(g, "/b/Relu", "Relu", {"b"}, {"c"});
        addOutput(g, "c");
        EXPECT_IMPORT_ERROR(f.write("cycle.onnx", m), {}, "cycle", "/a/Add");
    }

    void valueNeverProduced()
    {
        Files f;
        auto m = reluModel();
        m.mutable_graph()->mutable_node(0)->set_input(0, "ghost");
        EXPECT_IMPORT_ERROR(f.write("ghost.onnx", m), {}, "ghost", "/relu/Relu",
                            "no node produces");
    }

    void negativeDims()
    {
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {2, -3});
        addNode(g, "r", "Relu", {"x"}, {"y"});
        addOutput(g, "y");
        EXPECT_IMPORT_ERROR(f.write("neg.onnx", m), {}, "'x'", "negative dimension -3");
        // The same in an initializer.
        auto m2 = reluModel();
        auto *t = m2.mutable_graph()->add_initializer();
        t->set_name("w");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(-1);
        EXPECT_IMPORT_ERROR(f.write("negInit.onnx", m2), {}, "'w'", "negative dimension");
    }

    void elementCountOverflow()
    {
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {int64_t(1) << 40, int64_t(1) << 40});
        addNode(g, "r", "Relu", {"x"}, {"y"});
        addOutput(g, "y");
        EXPECT_IMPORT_ERROR(f.write("huge.onnx", m), {}, "'x'", "overflows 64 bits");
        // An initializer whose dims claim 2^62 floats: refused before any allocation.
        auto m2 = reluModel();
        auto *t = m2.mutable_graph()->add_initializer();
        t->set_name("w");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(int64_t(1) << 31);
        t->add_dims(int64_t(1) << 31);
        t->add_dims(4);
        EXPECT_IMPORT_ERROR(f.write("hugeInit.onnx", m2), {}, "'w'", "overflows 64 bits");
    }

    void rawDataSizeMismatch()
    {
        Files f;
        auto m = reluModel();
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name("w");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(1000000);
        t->set_raw_data(std::string(16, '\0')); // 16 bytes for a million floats
        EXPECT_IMPORT_ERROR(f.write("short.onnx", m), {}, "'w'", "16 bytes of raw_data", "4000000");
    }

    void unknownDtype()
    {
        Files f;
        auto m = reluModel();
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name("w");
        t->set_data_type(99);
        t->add_dims(2);
        EXPECT_IMPORT_ERROR(f.write("dtype.onnx", m), {}, "'w'", "unknown data type 99");
        auto m2 = baseModel();
        addInput(m2.mutable_graph(), "x", {2}, 42);
        addNode(m2.mutable_graph(), "r", "Relu", {"x"}, {"y"});
        addOutput(m2.mutable_graph(), "y");
        EXPECT_IMPORT_ERROR(f.write("dtype2.onnx", m2), {}, "'x'", "unknown data type 42");
    }

    void externalDataOutsideFolderRefused()
    {
        Files f;
        // A real file outside the model's folder that must never be read.
        f.write("secret.bin", std::string(64, 'S'));
        auto makeModel = [](const std::string &location) {
            auto m = reluModel();
            auto *t = m.mutable_graph()->add_initializer();
            t->set_name("w");
            t->set_data_type(::onnx::TensorProto::FLOAT);
            t->add_dims(4);
            t->set_data_location(::onnx::TensorProto::EXTERNAL);
            auto *kv = t->add_external_data();
            kv->set_key("location");
            kv->set_value(location);
            return m;
        };
        const std::string dotdot = f.write("model/dotdot.onnx", makeModel("../secret.bin"));
        EXPECT_IMPORT_ERROR(dotdot, {}, "'w'", "../secret.bin", "outside the model's folder");
        const std::string absolute = f.write("model/abs.onnx", makeModel(f.dir() + "/secret.bin"));
        EXPECT_IMPORT_ERROR(absolute, {}, "'w'", "absolute path");
        std::filesystem::create_symlink(f.dir() + "/secret.bin", f.dir() + "/model/link.bin");
        const std::string link = f.write("model/link.onnx", makeModel("link.bin"));
        EXPECT_IMPORT_ERROR(link, {}, "'w'", "link.bin", "outside the model's folder");
        // From memory with no path there is no folder: refused too.
        auto g =
            remat::core::onnx::importModelFromBytes(makeModel("w.bin").SerializeAsString(), "");
        QVERIFY(!g.hasValue());
        QVERIFY(has(g.status().message(), "no folder"));
    }

    void externalDataShorterThanDeclared()
    {
        Files f;
        f.write("model/w.bin", std::string(10, '\0'));
        auto m = reluModel();
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name("w");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(4);
        t->set_data_location(::onnx::TensorProto::EXTERNAL);
        auto *kv = t->add_external_data();
        kv->set_key("location");
        kv->set_value("w.bin");
        EXPECT_IMPORT_ERROR(f.write("model/m.onnx", m), {}, "'w'", "w.bin",
                            "shorter than the declared");
    }

    void externalDataInsideFolderLoadsLazily()
    {
        Files f;
        const float values[4] = {1.5f, -2.f, 3.25f, 4.f};
        std::string bin(8, 'x'); // 8 bytes of something else, then the tensor at offset 8
        bin.append(reinterpret_cast<const char *>(values), sizeof values);
        f.write("model/weights/w.bin", bin);
        auto m = reluModel();
        auto *g = m.mutable_graph();
        auto *t = g->add_initializer();
        t->set_name("w");
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(4);
        t->set_data_location(::onnx::TensorProto::EXTERNAL);
        for (auto [k, v] :
             {std::pair{"location", "weights/w.bin"}, {"offset", "8"}, {"length", "16"}}) {
            auto *kv = t->add_external_data();
            kv->set_key(k);
            kv->set_value(v);
        }
        // Typed-field data too: int64_data.
        auto *s = g->add_initializer();
        s->set_name("shape");
        s->set_data_type(::onnx::TensorProto::INT64);
        s->add_dims(2);
        s->add_int64_data(3);
        s->add_int64_data(2);
        addNode(g, "/r/Reshape", "Reshape", {"y", "shape"}, {"z"});
        addNode(g, "/m/Mul", "Mul", {"z", "w2"}, {"o"});
        auto *w2 = g->add_initializer();
        w2->set_name("w2");
        w2->set_data_type(::onnx::TensorProto::FLOAT);
        w2->add_dims(2);
        w2->add_float_data(0.5f);
        w2->add_float_data(2.f);
        g->clear_output();
        addOutput(g, "o");
        auto res = remat::core::onnx::importModel(f.write("model/m.onnx", m));
        QVERIFY2(res.hasValue(), res.status().message().c_str());
        const ir::Value &w = res->value(*res->findValue("w"));
        QVERIFY(w.initializer && w.initializer->hasData());
        QCOMPARE(w.initializer->data->describe(), std::string("external weights/w.bin@8"));
        auto floats = w.initializer->toFloats();
        QVERIFY2(floats.hasValue(), floats.status().message().c_str());
        QCOMPARE(*floats, std::vector<float>({1.5f, -2.f, 3.25f, 4.f}));
        QCOMPARE(res->value(*res->findValue("o")).shape, ir::Shape::fromStatic({3, 2}));
        QCOMPARE(res->value(*res->findValue("w2")).initializer->toFloats().value(),
                 std::vector<float>({0.5f, 2.f}));
        // An initializer beside a computed operand is a parameter; the int table is a constant.
        QCOMPARE(res->value(*res->findValue("w2")).kind, ir::ValueKind::Parameter);
        QCOMPARE(res->value(*res->findValue("shape")).kind, ir::ValueKind::Constant);
    }

    void undeterminableShapeNamesValueAndHintsBatch()
    {
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {0, 3}, ::onnx::TensorProto::FLOAT, "N");
        addNode(g, "/r/Relu", "Relu", {"x"}, {"y"});
        addOutput(g, "y");
        const std::string path = f.write("sym.onnx", m);
        EXPECT_IMPORT_ERROR(path, {}, "'y'", "/r/Relu", "--batch");
        remat::core::onnx::ImportOptions opt;
        opt.batch = 5;
        auto ok = remat::core::onnx::importModel(path, opt);
        QVERIFY2(ok.hasValue(), ok.status().message().c_str());
        QCOMPARE(ok->value(ok->outputs()[0]).shape, ir::Shape::fromStatic({5, 3}));
        QCOMPARE(ok->info().batch, int64_t(5));
        // An op no one can infer (custom domain): named, with the hint.
        auto m2 = reluModel();
        auto *n = m2.mutable_graph()->mutable_node(0);
        n->set_op_type("Mystery");
        n->set_domain("com.example");
        EXPECT_IMPORT_ERROR(f.write("mystery.onnx", m2), {}, "'y'", "Mystery", "shape");
    }

    void dataDependentSizeSaysWhy()
    {
        // torch.where(mask) (a mixture of experts routing tokens): NonZero's count is set by the
        // values; the error says so and names the static-shape spellings, not a dim option.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {4, 3});
        addNode(g, "/NonZero", "NonZero", {"x"}, {"y"});
        addOutput(g, "y");
        EXPECT_IMPORT_ERROR(f.write("nonzero.onnx", m), {}, "'y'", "/NonZero",
                            "depends on the values", "one_hot and einsum");
    }

    void onnxInferenceCoversOtherOps()
    {
        // DepthToSpace is not in our op table: ONNX's own inference gives [1,2,4,6] at batch 1
        // and [3,2,4,6] at batch 3.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addInput(g, "x", {1, 8, 2, 3});
        auto *n = addNode(g, "/d/DepthToSpace", "DepthToSpace", {"x"}, {"y"});
        auto *a = n->add_attribute();
        a->set_name("blocksize");
        a->set_type(::onnx::AttributeProto::INT);
        a->set_i(2);
        addOutput(g, "y");
        const std::string path = f.write("d2s.onnx", m);
        auto g1 = remat::core::onnx::importModel(path);
        QVERIFY2(g1.hasValue(), g1.status().message().c_str());
        QCOMPARE(g1->value(g1->outputs()[0]).shape, ir::Shape::fromStatic({1, 2, 4, 6}));
        remat::core::onnx::ImportOptions opt;
        opt.batch = 3;
        auto g3 = remat::core::onnx::importModel(path, opt);
        QVERIFY2(g3.hasValue(), g3.status().message().c_str());
        QCOMPARE(g3->value(g3->outputs()[0]).shape, ir::Shape::fromStatic({3, 2, 4, 6}));
    }

    void fileSizeCap()
    {
        Files f;
        const std::string path = f.write("relu.onnx", reluModel());
        remat::core::onnx::ImportOptions opt;
        opt.maxFileBytes = 10;
        EXPECT_IMPORT_ERROR(path, opt, "more than the limit");
    }

    void contradictoryShapes()
    {
        // Reshape of 6 elements to [4]: named node and both shapes.
        Files f;
        auto m = reluModel();
        auto *g = m.mutable_graph();
        auto *s = g->add_initializer();
        s->set_name("shape");
        s->set_data_type(::onnx::TensorProto::INT64);
        s->add_dims(1);
        s->add_int64_data(4);
        addNode(g, "/bad/Reshape", "Reshape", {"y", "shape"}, {"z"});
        g->clear_output();
        addOutput(g, "z");
        EXPECT_IMPORT_ERROR(f.write("reshape.onnx", m), {}, "/bad/Reshape", "[2,3]", "[4]");
    }

    void mutatedFilesNeverCrash()
    {
        // Random byte damage to real files (fixed seed): every import returns a graph or a
        // Status; none crashes (also run far longer under ASan/UBSan during development).
        for (const char *rel :
             {"corpus/graph_only/resnet18.onnx", "corpus/with_weights/tiny_vit.onnx",
              "onnx-light/light_squeezenet.onnx"}) {
            QFile in(sharedPath(rel));
            if (!in.open(QIODevice::ReadOnly))
                QSKIP("shared corpus not found");
            const QByteArray orig = in.readAll();
            std::mt19937_64 rng(20261122);
            int failures = 0;
            for (int i = 0; i < 150; ++i) {
                std::string b(orig.constData(), size_t(orig.size()));
                for (int k = 0, n = 1 + int(rng() % 8); k < n; ++k)
                    b[rng() % b.size()] = char(rng());
                if (rng() % 10 == 0)
                    b.resize(rng() % b.size());
                remat::core::onnx::ImportOptions opt;
                opt.batch = int64_t(rng() % 3) * 7;
                opt.ignoreFileValueInfo = rng() % 2;
                auto g = remat::core::onnx::importModelFromBytes(b, "/nonexistent/fuzz.onnx", opt);
                if (!g) {
                    ++failures;
                    QVERIFY(has(g.status().message(), "/nonexistent/fuzz.onnx"));
                }
            }
            QVERIFY(failures > 0); // the damage is seen
        }
    }

    void classificationOverride()
    {
        const QString corpus = sharedPath("corpus/graph_only/resnet18.onnx");
        if (!QFileInfo::exists(corpus))
            QSKIP("shared corpus not found");
        remat::core::onnx::ImportOptions opt;
        opt.kindOverrides["bn1.running_mean"] = ir::ValueKind::Parameter;
        opt.kindOverrides["fc.bias"] = ir::ValueKind::Buffer;
        auto g = remat::core::onnx::importModel(toStd(corpus), opt);
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        QCOMPARE(g->value(*g->findValue("bn1.running_mean")).kind, ir::ValueKind::Parameter);
        QCOMPARE(g->value(*g->findValue("fc.bias")).kind, ir::ValueKind::Buffer);
        QCOMPARE(g->value(*g->findValue("conv1.weight")).kind, ir::ValueKind::Parameter);
        opt.kindOverrides = {{"no_such_value", ir::ValueKind::Buffer}};
        EXPECT_IMPORT_ERROR(toStd(corpus), opt, "no_such_value");
    }
};

QTEST_GUILESS_MAIN(TestImportErrors)
#include "tst_import_errors.moc"
