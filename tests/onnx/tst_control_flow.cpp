// Loops with a trip count known at import and tensor sequences with known positions are written
// out as plain ops (core/onnx/control_flow.h): the result computes what the Loop computes (the
// CPU reference's loss and gradients on hand-checked values), trains, and what cannot be written
// out stays, naming why.
#include "onnx/onnx_test_model.h"

#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/onnx/importer.h"
#include "core/onnx/input_spec.h"
#include "core/schedule/store_all.h"
#include "core/training/builder.h"

#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace remat;
using namespace remat::core;
using namespace remat::tests;
namespace ox = remat::core::onnx;

namespace {

std::vector<std::string> opTypes(const ir::Graph &g)
{
    std::vector<std::string> out;
    for (const ir::Node &n : g.nodes())
        out.push_back(n.opType);
    return out;
}

long countOf(const std::vector<std::string> &ops, const char *type)
{
    return long(std::count(ops.begin(), ops.end(), type));
}

void addBoolConstant(::onnx::GraphProto *g, const std::string &out, bool value)
{
    auto *n = addNode(g, out + "_node", "Constant", {}, {out});
    auto *a = n->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(::onnx::TensorProto::BOOL);
    a->mutable_t()->add_int32_data(value ? 1 : 0);
}

void addInts(::onnx::GraphProto *g, const std::string &out, std::vector<int64_t> values,
             bool scalar = false)
{
    auto *n = addNode(g, out + "_node", "Constant", {}, {out});
    auto *a = n->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(::onnx::TensorProto::INT64);
    if (!scalar)
        a->mutable_t()->add_dims(int64_t(values.size()));
    for (int64_t v : values)
        a->mutable_t()->add_int64_data(v);
}

/// The CPU reference's step on `g` with every float input 1 and the loss cotangent R = 1: the
/// loss (the sum of the output) and the input's gradient.
struct Step
{
    double loss = 0;
    std::vector<double> gradInput;
};

Step runOnes(const ir::Graph &g, const std::string &input, std::vector<int64_t> inShape,
             std::vector<int64_t> outShape)
{
    Step s;
    training::BuildOptions bo;
    bo.inputGradients = true;
    auto tg = training::buildTrainingGraph(g, bo);
    if (!tg) {
        qWarning("%s", tg.status().toString().c_str());
        return s;
    }
    auto ones = [](const std::vector<int64_t> &shape) {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return std::vector<float>(size_t(n), 1.f);
    };
    exec::ExecInputs in;
    in.feed.set(input, exec::HostTensor::fromFloats(inShape, ones(inShape)));
    in.feed.set("R", exec::HostTensor::fromFloats(outShape, ones(outShape)));
    auto backend = exec::makeCpuBackend();
    exec::Executor ex(*backend, *tg, g);
    if (Status st = ex.prepare(in); !st.isOk()) {
        qWarning("%s", st.toString().c_str());
        return s;
    }
    auto r = ex.run(schedule::storeAllSchedule(*tg), {});
    if (!r) {
        qWarning("%s", r.status().toString().c_str());
        return s;
    }
    s.loss = r->loss;
    if (const exec::HostTensor *gi = r->gradients.find("grad_input"))
        s.gradInput = gi->toDoubles();
    return s;
}

} // namespace

class TestControlFlow : public QObject
{
    Q_OBJECT

private slots:
    void countedLoopIsWrittenOut()
    {
        // v = Loop(4, true, x) { i, c, v: v2 = v * x + i (as float); scan: v2 } -> (vN, scans)
        // out = vN + ReduceSum(scans over the iterations). With x = 1: v2 = v + i, so the
        // carried value goes 1, 1, 2, 4, 7 and the scans are 1, 2, 4, 7: out = 7 + 14 = 21 per
        // element; d out / d x (x = 1, every use of x) is checked by hand below.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3});
        addInt64Constant(g, "M", 4);
        addBoolConstant(g, "go", true);
        auto *loop = addNode(g, "/Loop", "Loop", {"M", "go", "x"}, {"vN", "scans"});
        auto *body = addBranch(loop, "body");
        body->add_input()->set_name("i");
        body->add_input()->set_name("c");
        body->add_input()->set_name("v");
        addNode(body, "/mul", "Mul", {"v", "x"}, {"vx"});
        auto *cast = addNode(body, "/cast", "Cast", {"i"}, {"fi"});
        auto *to = cast->add_attribute();
        to->set_name("to");
        to->set_type(::onnx::AttributeProto::INT);
        to->set_i(::onnx::TensorProto::FLOAT);
        addNode(body, "/add", "Add", {"vx", "fi"}, {"v2"});
        addNode(body, "/keep", "Identity", {"c"}, {"c2"});
        body->add_output()->set_name("c2");
        body->add_output()->set_name("v2");
        body->add_output()->set_name("v2");
        addInts(g, "axes0", {0});
        auto *sum = addNode(g, "/sum", "ReduceSum", {"scans", "axes0"}, {"total"});
        auto *kd = sum->add_attribute();
        kd->set_name("keepdims");
        kd->set_type(::onnx::AttributeProto::INT);
        kd->set_i(0);
        addNode(g, "/out", "Add", {"vN", "total"}, {"out"});
        g->add_output()->set_name("out");
        const std::string path = f.write("counted_loop.onnx", m);

        auto imported = ox::importModel(path);
        QVERIFY2(imported.hasValue(), imported.status().message().c_str());
        const auto ops = opTypes(*imported);
        QCOMPARE(countOf(ops, "Loop"), 0L);
        QCOMPARE(countOf(ops, "Mul"), 4L);
        QCOMPARE(countOf(ops, "Concat"), 1L); // the stacked scan output
        QVERIFY(std::any_of(imported->info().importNotes.begin(),
                            imported->info().importNotes.end(), [](const std::string &n) {
                                return n.find("1 Loop / Scan node unrolled") != std::string::npos;
                            }));
        // Iteration names carry the Loop's name and the iteration (the explorer groups them).
        bool named = false;
        for (const ir::Node &n : imported->nodes())
            named = named || n.name.find("/Loop/iter3/") != std::string::npos;
        QVERIFY(named);

        const Step s = runOnes(*imported, "x", {2, 3}, {2, 3});
        QCOMPARE(s.loss, 21.0 * 6);
        // d/dx with x = 1: v1 = x*x + 0, v2 = v1*x + 1, v3 = v2*x + 2, v4 = v3*x + 3;
        // dv1 = 2, dv2 = dv1 + v1 = 3, dv3 = dv2 + v2 = 5, dv4 = dv3 + v3 = 9;
        // d out = dv4 + (dv1 + dv2 + dv3 + dv4) = 9 + 19 = 28.
        QCOMPARE(s.gradInput.size(), size_t(6));
        for (double d : s.gradInput)
            QCOMPARE(d, 28.0);
    }

    void scanIsWrittenOut()
    {
        // (sN, ys) = Scan(s0 = 0, xs[4, 3]) { s, x: s2 = s + x; out: s2 } (a running sum);
        // out = sN + ReduceSum(ys over the steps). With xs = 1: states 1, 2, 3, 4, so
        // out = 4 + 10 = 14 per element; d out / d x_t = 1 + (4 - t): 5, 4, 3, 2.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "xs", {4, 3});
        auto *zero = addNode(g, "/zero", "Constant", {}, {"s0"});
        auto *za = zero->add_attribute();
        za->set_name("value");
        za->set_type(::onnx::AttributeProto::TENSOR);
        za->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
        za->mutable_t()->add_dims(3);
        for (int k = 0; k < 3; ++k)
            za->mutable_t()->add_float_data(0.f);
        auto *scan = addNode(g, "/Scan", "Scan", {"s0", "xs"}, {"sN", "ys"});
        auto *n = scan->add_attribute();
        n->set_name("num_scan_inputs");
        n->set_type(::onnx::AttributeProto::INT);
        n->set_i(1);
        auto *body = addBranch(scan, "body");
        body->add_input()->set_name("s");
        body->add_input()->set_name("x");
        addNode(body, "/add", "Add", {"s", "x"}, {"s2"});
        body->add_output()->set_name("s2");
        body->add_output()->set_name("s2");
        addInts(g, "axes0", {0});
        auto *sum = addNode(g, "/sum", "ReduceSum", {"ys", "axes0"}, {"total"});
        auto *kd = sum->add_attribute();
        kd->set_name("keepdims");
        kd->set_type(::onnx::AttributeProto::INT);
        kd->set_i(0);
        addNode(g, "/out", "Add", {"sN", "total"}, {"out"});
        g->add_output()->set_name("out");
        auto imported = ox::importModel(f.write("scan.onnx", m));
        QVERIFY2(imported.hasValue(), imported.status().message().c_str());
        const auto ops = opTypes(*imported);
        QCOMPARE(countOf(ops, "Scan"), 0L);
        QCOMPARE(countOf(ops, "Gather"), 4L);
        const Step s = runOnes(*imported, "xs", {4, 3}, {3});
        QCOMPARE(s.loss, 14.0 * 3);
        QCOMPARE(s.gradInput.size(), size_t(12));
        for (size_t i = 0; i < s.gradInput.size(); ++i)
            QCOMPARE(s.gradInput[i], double(5 - int(i / 3)));
    }

    void loopThatDecidesToStopStays()
    {
        // The body computes its condition (i < 2): not unrolled, and the blocker says why.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3});
        addInt64Constant(g, "M", 4);
        addBoolConstant(g, "go", true);
        auto *loop = addNode(g, "/Loop", "Loop", {"M", "go", "x"}, {"vN"});
        auto *body = addBranch(loop, "body");
        body->add_input()->set_name("i");
        body->add_input()->set_name("c");
        body->add_input()->set_name("v");
        addNode(body, "/add", "Add", {"v", "v"}, {"v2"});
        addInts(body, "two", {2}, true);
        addNode(body, "/less", "Less", {"i", "two"}, {"c2"});
        body->add_output()->set_name("c2");
        body->add_output()->set_name("v2");
        g->add_output()->set_name("vN");
        const std::string path = f.write("while_loop.onnx", m);
        auto strict = ox::importModel(path);
        QVERIFY(!strict.hasValue());
        QVERIFY2(has(strict.status().message(), "a Loop is not unrolled") &&
                     has(strict.status().message(), "computes whether to go on"),
                 strict.status().message().c_str());
    }

    void tensorSequencesBecomeLists()
    {
        // torch.tensor_split as torch exports it, and the other sequence ops:
        //   s = SequenceInsert(SequenceInsert(SequenceEmpty, x[:, :1]), x[:, 1:])
        //   a = SequenceAt(s, 0); b = SequenceAt(s, -1)
        //   t = SplitToSequence(x, [1, 2], axis 1); c = ConcatFromSequence(t, axis 1)
        //   n = SequenceLength(s) (2, a Cast to float)
        //   out = Concat(b, a) * c + n
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3});
        addNode(g, "/empty", "SequenceEmpty", {}, {"s0"});
        addInts(g, "zero", {0});
        addInts(g, "one", {1});
        addInts(g, "big", {1000});
        addNode(g, "/head", "Slice", {"x", "zero", "one", "one"}, {"head"});
        addNode(g, "/tail", "Slice", {"x", "one", "big", "one"}, {"tail"});
        addNode(g, "/ins0", "SequenceInsert", {"s0", "head"}, {"s1"});
        addNode(g, "/ins1", "SequenceInsert", {"s1", "tail"}, {"s2"});
        addInts(g, "first", {0}, true);
        addInts(g, "last", {-1}, true);
        addNode(g, "/at0", "SequenceAt", {"s2", "first"}, {"a"});
        addNode(g, "/at1", "SequenceAt", {"s2", "last"}, {"b"});
        addInts(g, "sizes", {1, 2});
        auto *split = addNode(g, "/split", "SplitToSequence", {"x", "sizes"}, {"t"});
        auto *ax = split->add_attribute();
        ax->set_name("axis");
        ax->set_type(::onnx::AttributeProto::INT);
        ax->set_i(1);
        auto *cat = addNode(g, "/cat", "ConcatFromSequence", {"t"}, {"c"});
        auto *cax = cat->add_attribute();
        cax->set_name("axis");
        cax->set_type(::onnx::AttributeProto::INT);
        cax->set_i(1);
        addNode(g, "/len", "SequenceLength", {"s2"}, {"n"});
        auto *cast = addNode(g, "/lenf", "Cast", {"n"}, {"nf"});
        auto *to = cast->add_attribute();
        to->set_name("to");
        to->set_type(::onnx::AttributeProto::INT);
        to->set_i(::onnx::TensorProto::FLOAT);
        auto *swap = addNode(g, "/swap", "Concat", {"b", "a"}, {"ba"});
        auto *sax = swap->add_attribute();
        sax->set_name("axis");
        sax->set_type(::onnx::AttributeProto::INT);
        sax->set_i(1);
        addNode(g, "/mul", "Mul", {"ba", "c"}, {"p"});
        addNode(g, "/out", "Add", {"p", "nf"}, {"out"});
        g->add_output()->set_name("out");
        const std::string path = f.write("sequences.onnx", m);

        auto imported = ox::importModel(path);
        QVERIFY2(imported.hasValue(), imported.status().message().c_str());
        for (const std::string &op : opTypes(*imported))
            QVERIFY2(op.find("Sequence") == std::string::npos, op.c_str());
        QCOMPARE(imported->value(*imported->findValue("out")).shape, ir::Shape::fromStatic({2, 3}));
        // x = 1: out = 1 * 1 + 2 everywhere; d/dx = 2 (x read twice, each once per element).
        const Step s = runOnes(*imported, "x", {2, 3}, {2, 3});
        QCOMPARE(s.loss, 3.0 * 6);
        QCOMPARE(s.gradInput.size(), size_t(6));
        for (double d : s.gradInput)
            QCOMPARE(d, 2.0);
    }

    void torchTensorSplitExportTrains()
    {
        // A real export (tests/data/onnx/README.md): torch.tensor_split as two Loops over tensor
        // sequences. Written out, nothing of them is left, the parameters are the module's
        // (q 1056, kv 2112, pool 320 with its bias, norm 64, out 330: 3882 floats), and it
        // trains.
        auto g = ox::importModel(toStd(sourceDir()) + "/tests/data/onnx/tensor_split_loop.onnx");
        QVERIFY2(g.hasValue(), g.status().message().c_str());
        for (const std::string &op : opTypes(*g))
            QVERIFY2(op != "Loop" && op.find("Sequence") == std::string::npos, op.c_str());
        int64_t params = 0;
        for (const ir::Value &v : g->values())
            if (v.kind == ir::ValueKind::Parameter)
                if (auto b = v.bytes())
                    params += *b;
        QCOMPARE(params, int64_t(3882 * 4));
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY2(tg.hasValue(), tg.status().message().c_str());
    }

    void hostileControlFlowIsRefusedClearly()
    {
        // A Loop of 10^12 iterations is not written out (the node budget), and says so; a
        // sequence op without an output, and a Loop whose body does not match its inputs, are
        // errors naming the node, never a crash.
        Files f;
        {
            auto m = baseModel();
            auto *g = m.mutable_graph();
            addFloatInput(g, "x", {2});
            addInt64Constant(g, "M", int64_t(1) << 40);
            addBoolConstant(g, "go", true);
            auto *loop = addNode(g, "/Huge", "Loop", {"M", "go", "x"}, {"vN"});
            auto *body = addBranch(loop, "body");
            body->add_input()->set_name("i");
            body->add_input()->set_name("c");
            body->add_input()->set_name("v");
            addNode(body, "/add", "Add", {"v", "v"}, {"v2"});
            addNode(body, "/keep", "Identity", {"c"}, {"c2"});
            body->add_output()->set_name("c2");
            body->add_output()->set_name("v2");
            g->add_output()->set_name("vN");
            auto r = ox::importModel(f.write("huge.onnx", m));
            QVERIFY(!r.hasValue());
            QVERIFY2(has(r.status().message(), "iterations of 2 nodes would pass"),
                     r.status().message().c_str());
        }
        {
            auto m = baseModel();
            auto *g = m.mutable_graph();
            addFloatInput(g, "x", {2});
            addNode(g, "/empty", "SequenceEmpty", {}, {});
            addNode(g, "/relu", "Relu", {"x"}, {"y"});
            g->add_output()->set_name("y");
            auto r = ox::importModel(f.write("no_output.onnx", m));
            if (!r.hasValue())
                QVERIFY2(!r.status().message().empty(), "an error without a message");
        }
        {
            auto m = baseModel();
            auto *g = m.mutable_graph();
            addFloatInput(g, "x", {2});
            addInt64Constant(g, "M", 2);
            addBoolConstant(g, "go", true);
            auto *loop = addNode(g, "/Bad", "Loop", {"M", "go", "x"}, {"vN"});
            auto *body = addBranch(loop, "body");
            body->add_input()->set_name("i");
            addNode(body, "/keep", "Identity", {"i"}, {"c2"});
            body->add_output()->set_name("c2");
            g->add_output()->set_name("vN");
            auto r = ox::importModel(f.write("bad_body.onnx", m));
            QVERIFY(!r.hasValue());
            QVERIFY2(has(r.status().message(), "/Bad") && has(r.status().message(), "body"),
                     r.status().message().c_str());
        }
    }

    void sequenceAtAnUnknownPositionStays()
    {
        // SequenceAt by a position that is a graph input: nothing is written out, and the
        // blocker names the op.
        Files f;
        auto m = baseModel();
        auto *g = m.mutable_graph();
        addFloatInput(g, "x", {2, 3});
        addScalarInput(g, "k");
        addNode(g, "/construct", "SequenceConstruct", {"x", "x"}, {"s"});
        addNode(g, "/at", "SequenceAt", {"s", "k"}, {"y"});
        g->add_output()->set_name("y");
        const std::string path = f.write("unknown_position.onnx", m);
        auto strict = ox::importModel(path);
        QVERIFY(!strict.hasValue());
        QVERIFY2(has(strict.status().message(), "position not known at import"),
                 strict.status().message().c_str());
        // The position given, it is written out.
        ox::ImportOptions given;
        QVERIFY(ox::addInputValue(given, "k=1").isOk());
        auto g2 = ox::importModel(path, given);
        QVERIFY2(g2.hasValue(), g2.status().message().c_str());
        QCOMPARE(countOf(opTypes(*g2), "SequenceAt"), 0L);
    }
};

QTEST_GUILESS_MAIN(TestControlFlow)
#include "tst_control_flow.moc"
