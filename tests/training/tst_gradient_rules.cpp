// Gradient rules and the builder on hand-built forward graphs: for each rule, which tensors the
// backward op reads, which gradients it writes, its FLOPs; plus accumulation, constant folding,
// identity removal, GELU fusion and the errors. Expected figures are written beside each input.
#include "core/ops/op_def.h"
#include "core/schedule/store_all.h"
#include "core/training/apply_training_options.h"
#include "core/training/builder.h"

#include <QtTest>

#include <cstring>

using namespace remat::core;
using ir::DataType;
using ir::ValueKind;
using training::Operand;
using training::TrainingGraph;

namespace {

/// A forward graph written line by line: g.value("x", {2,3}); g.node("Relu", {"x"}, {"y"}).
struct GraphSpec
{
    std::vector<ir::Value> values;
    std::vector<ir::Node> nodes;
    std::vector<ValueId> inputs, outputs;

    ValueId value(const std::string &name, std::vector<int64_t> shape,
                  ValueKind kind = ValueKind::Intermediate, DataType dtype = DataType::Float)
    {
        ir::Value v;
        v.id = ValueId(values.size());
        v.name = name;
        v.kind = kind;
        v.dtype = dtype;
        v.shape = ir::Shape::fromStatic(shape);
        if (kind == ValueKind::Input || kind == ValueKind::Parameter || kind == ValueKind::Buffer)
            inputs.push_back(v.id);
        values.push_back(v);
        return v.id;
    }
    /// A constant with data (float32 or int64).
    ValueId constant(const std::string &name, std::vector<double> data,
                     DataType dtype = DataType::Float, std::vector<int64_t> shape = {})
    {
        const ValueId id = value(name, shape, ValueKind::Constant, dtype);
        auto tc = std::make_shared<ir::TensorConstant>();
        tc->name = name;
        tc->dtype = dtype;
        tc->shape = ir::Shape::fromStatic(shape);
        std::vector<std::byte> bytes;
        for (double d : data) {
            if (dtype == DataType::Bool) {
                bytes.push_back(std::byte(d != 0 ? 1 : 0));
            } else if (dtype == DataType::Int64) {
                int64_t i = int64_t(d);
                bytes.insert(bytes.end(), reinterpret_cast<std::byte *>(&i),
                             reinterpret_cast<std::byte *>(&i) + 8);
            } else {
                float f = float(d);
                bytes.insert(bytes.end(), reinterpret_cast<std::byte *>(&f),
                             reinterpret_cast<std::byte *>(&f) + 4);
            }
        }
        tc->byteCount = int64_t(bytes.size());
        tc->data = std::make_shared<ir::OwnedTensorData>(std::move(bytes));
        values[id.index()].initializer = tc;
        return id;
    }
    ValueId find(const std::string &name) const
    {
        for (const ir::Value &v : values)
            if (v.name == name)
                return v.id;
        return ValueId();
    }
    ir::Node &node(const std::string &op, std::vector<std::string> in, std::vector<std::string> out,
                   std::string name = {})
    {
        ir::Node n;
        n.id = NodeId(nodes.size());
        n.opType = op;
        n.name = name.empty() ? "/" + op + "_" + std::to_string(nodes.size()) : name;
        for (const auto &s : in)
            n.inputs.push_back(s.empty() ? ValueId() : find(s));
        for (const auto &s : out)
            n.outputs.push_back(find(s));
        nodes.push_back(n);
        return nodes.back();
    }
    Expected<ir::Graph> build()
    {
        ir::ModelInfo info;
        info.opsetVersion = 17;
        return ir::Graph::build(info, nodes, values, inputs, outputs);
    }
};

/// torch.onnx's F.cosine_similarity(a, b, dim=-1) of two [2, 3, 4] operands "a" and "b" the
/// caller makes: ReduceSum(a * b) / Max(Sqrt(ReduceSum(a * a) * ReduceSum(b * b)), eps), the
/// graph's output "y" [2, 3]. Products and sums the caller declared (a bfloat16 "aa", "sa") keep
/// that declaration; the others are float32.
void addExportedCosine(GraphSpec &s)
{
    s.constant("axes", {-1}, DataType::Int64, {1});
    s.constant("eps", {1e-8}, DataType::Float, {1});
    for (const char *v : {"ab", "aa", "bb"})
        if (!s.find(v).valid())
            s.value(v, {2, 3, 4});
    for (const char *v : {"cross", "sa", "sb", "m", "r", "d", "y"})
        if (!s.find(v).valid())
            s.value(v, {2, 3});
    s.outputs = {s.find("y")};
    const std::pair<const char *, const char *> sums[] = {
        {"ab", "cross"}, {"aa", "sa"}, {"bb", "sb"}};
    const char *products[][2] = {{"a", "b"}, {"a", "a"}, {"b", "b"}};
    for (int k = 0; k < 3; ++k) {
        const std::string suffix = k == 0 ? "" : "_" + std::to_string(k);
        s.node("Mul", {products[k][0], products[k][1]}, {sums[k].first}, "/Mul" + suffix);
        s.node("ReduceSum", {sums[k].first, "axes"}, {sums[k].second}, "/ReduceSum" + suffix)
            .attributes = {{"keepdims", int64_t(0)}};
    }
    s.node("Mul", {"sa", "sb"}, {"m"}, "/Mul_3");
    s.node("Sqrt", {"m"}, {"r"}, "/Sqrt");
    s.node("Max", {"r", "eps"}, {"d"}, "/Max");
    s.node("Div", {"cross", "d"}, {"y"}, "/Div");
}

std::vector<std::string> names(const TrainingGraph &g, const std::vector<TensorId> &ids)
{
    std::vector<std::string> out;
    for (TensorId t : ids)
        out.push_back(g.tensor(t).name);
    return out;
}

const training::Op *opNamed(const TrainingGraph &g, const std::string &name)
{
    for (const training::Op &op : g.ops())
        if (op.name == name)
            return &op;
    return nullptr;
}

TrainingGraph buildOk(GraphSpec &s, training::BuildOptions opt = {})
{
    auto g = s.build();
    if (!g)
        qFatal("graph: %s", g.status().message().c_str());
    auto tg = training::buildTrainingGraph(*g, opt);
    if (!tg)
        qFatal("training graph: %s", tg.status().message().c_str());
    // Every graph the builder makes runs under store-all.
    Status v = schedule::validate(schedule::storeAllSchedule(*tg), *tg);
    if (!v.isOk())
        qFatal("store-all: %s", v.message().c_str());
    return std::move(*tg);
}

using Names = std::vector<std::string>;

} // namespace

class TstGradientRules : public QObject
{
    Q_OBJECT

private slots:
    void tableIsSortedAndComplete()
    {
        const auto &t = ops::allOps();
        for (size_t i = 1; i < t.size(); ++i)
            QVERIFY(std::strcmp(t[i - 1].type, t[i].type) < 0);
        for (const char *op : {"Add",
                               "AveragePool",
                               "BatchNormalization",
                               "Cast",
                               "Clip",
                               "Concat",
                               "Constant",
                               "ConstantOfShape",
                               "Conv",
                               "Div",
                               "Dropout",
                               "Equal",
                               "Erf",
                               "Expand",
                               "Flatten",
                               "Gather",
                               "Gemm",
                               "GlobalAveragePool",
                               "HardSigmoid",
                               "HardSwish",
                               "LayerNormalization",
                               "MatMul",
                               "MaxPool",
                               "Mod",
                               "Mul",
                               "Not",
                               "Pad",
                               "Pow",
                               "Range",
                               "ReduceMean",
                               "Relu",
                               "Reshape",
                               "Resize",
                               "ScatterND",
                               "Shape",
                               "Sigmoid",
                               "Slice",
                               "Softmax",
                               "Sub",
                               "Transpose",
                               "Trilu",
                               "Unsqueeze",
                               "Where",
                               "Split",
                               "Squeeze",
                               "Sqrt",
                               "Tanh",
                               "Gelu",
                               "Identity",
                               "Sum",
                               "ReduceSum",
                               "LRN"})
            QVERIFY2(ops::findOp(op) && ops::findOp(op)->derive, op);
        QVERIFY(!ops::findOp("NonMaxSuppression"));
    }

    void convBnReluMaxPool()
    {
        // x[2,3,8,8] -> Conv(W[4,3,3,3], pads 1) -> c[2,4,8,8] -> BN(training) -> b -> Relu -> r
        //   -> MaxPool 2x2 -> m[2,4,4,4] -> GlobalAveragePool -> p[2,4,1,1] -> Flatten -> f[2,4]
        //   -> Gemm(Wfc[3,4], transB) -> y[2,3]
        GraphSpec s;
        s.value("x", {2, 3, 8, 8}, ValueKind::Input);
        s.value("W", {4, 3, 3, 3}, ValueKind::Parameter);
        for (const char *n : {"scale", "bias"})
            s.value(n, {4}, ValueKind::Parameter);
        for (const char *n : {"rmean", "rvar"})
            s.value(n, {4}, ValueKind::Buffer);
        s.value("Wfc", {3, 4}, ValueKind::Parameter);
        s.value("c", {2, 4, 8, 8});
        s.value("b", {2, 4, 8, 8});
        s.value("r", {2, 4, 8, 8});
        s.value("m", {2, 4, 4, 4});
        s.value("p", {2, 4, 1, 1});
        s.value("f", {2, 4});
        s.value("y", {2, 3});
        s.outputs = {s.find("y")};
        s.node("Conv", {"x", "W"}, {"c"}, "conv").attributes = {
            {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
        s.node("BatchNormalization", {"c", "scale", "bias", "rmean", "rvar"}, {"b"}, "bn")
            .attributes = {{"training_mode", int64_t(1)}};
        s.node("Relu", {"b"}, {"r"}, "relu");
        s.node("MaxPool", {"r"}, {"m"}, "pool").attributes = {
            {"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
        s.node("GlobalAveragePool", {"m"}, {"p"}, "gap");
        s.node("Flatten", {"p"}, {"f"}, "flatten");
        s.node("Gemm", {"f", "Wfc"}, {"y"}, "fc").attributes = {{"transB", int64_t(1)}};
        const TrainingGraph g = buildOk(s);

        // 7 forward ops, the loss, 7 backward ops (no input gradient: conv/grad writes dW only).
        QCOMPARE(g.forwardOpCount(), size_t(7));
        QCOMPARE(g.backwardOpCount(), size_t(7));

        const training::Op *conv = opNamed(g, "conv");
        // MACs = |c| * 3*3*3 = 512 * 27 = 13824; forward FLOPs 2 x MACs.
        QCOMPARE(conv->flops, 27648.0);
        const training::Op *convGrad = opNamed(g, "conv/grad");
        QCOMPARE(convGrad->type, std::string("ConvGrad"));
        // dW = x (*) dc; W is kept too, as torch's convolution node keeps both
        QCOMPARE(names(g, convGrad->inputs), (Names{"x", "W", "grad:c"}));
        QCOMPARE(names(g, convGrad->outputs), (Names{"grad:W"}));
        QCOMPARE(convGrad->flops, 27648.0);
        QCOMPARE(int(convGrad->inputRoles[0].kind), int(Operand::Kind::FwdInput));
        QCOMPARE(int(convGrad->inputRoles[2].kind), int(Operand::Kind::OutputGrad));

        // BN appends mean and inverse std ([4] float32) at positions 3 and 4.
        const training::Op *bn = opNamed(g, "bn");
        QCOMPARE(names(g, bn->outputs), (Names{"b", "b::saved_mean", "b::saved_inv_std"}));
        QCOMPARE(bn->outputRoles[1].index, 3);
        QCOMPARE(g.tensor(bn->outputs[1]).bytes, int64_t(16));
        QCOMPARE(g.tensor(bn->outputs[1]).role, training::TensorRole::SavedState);
        const training::Op *bnGrad = opNamed(g, "bn/grad");
        QCOMPARE(names(g, bnGrad->inputs),
                 (Names{"c", "scale", "b::saved_mean", "b::saved_inv_std", "grad:b"}));
        QCOMPARE(names(g, bnGrad->outputs), (Names{"grad:c", "grad:scale", "grad:bias"}));

        // Relu saves its output; MaxPool its input and int64 indices shaped like m.
        QCOMPARE(names(g, opNamed(g, "relu/grad")->inputs), (Names{"r", "grad:r"}));
        const training::Op *pool = opNamed(g, "pool");
        QCOMPARE(names(g, pool->outputs), (Names{"m", "m::indices"}));
        QCOMPARE(g.tensor(pool->outputs[1]).bytes, int64_t(2 * 4 * 4 * 4 * 8));
        QCOMPARE(names(g, opNamed(g, "pool/grad")->inputs), (Names{"r", "m::indices", "grad:m"}));
        // GlobalAveragePool keeps its input (as PyTorch does); Flatten nothing.
        QCOMPARE(names(g, opNamed(g, "gap/grad")->inputs), (Names{"m", "grad:p"}));
        QCOMPARE(names(g, opNamed(g, "flatten/grad")->inputs), (Names{"grad:f"}));
        // Gemm: dA needs B, dB needs A. FLOPs 2*M*N*K = 2*2*3*4 = 48 forward, 96 backward.
        const training::Op *fcGrad = opNamed(g, "fc/grad");
        QCOMPARE(names(g, fcGrad->inputs), (Names{"Wfc", "f", "grad:y"}));
        QCOMPARE(names(g, fcGrad->outputs), (Names{"grad:f", "grad:Wfc"}));
        QCOMPARE(opNamed(g, "fc")->flops, 48.0);
        QCOMPARE(fcGrad->flops, 96.0);

        // Loss: sum(y * R) seeds grad:y.
        const training::Op *loss = opNamed(g, "loss");
        QCOMPARE(names(g, loss->inputs), (Names{"y", "R:y"}));
        QCOMPARE(names(g, loss->outputs), (Names{"loss", "grad:y"}));

        // Saved for backward (no parameters, buffers, input): c 2048 + means 32 + r 2048 +
        // indices 1024 + m 512 + f 32 = 5696 bytes.
        const training::TrainingSummary sum = training::summarize(g);
        QCOMPARE(sum.savedForBackwardBytes, int64_t(2048 + 32 + 2048 + 1024 + 512 + 32));
        QCOMPARE(sum.paramBytes, int64_t(4 * (108 + 4 + 4 + 12)));
        QCOMPARE(sum.paramGradBytes, sum.paramBytes);
        for (const char *p : {"grad:W", "grad:scale", "grad:bias", "grad:Wfc"})
            QVERIFY(g.tensor(*g.findTensor(p)).requiredAtEnd);
    }

    void inputGradientOnRequest()
    {
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("w", {2, 4}, ValueKind::Parameter);
        s.value("y", {2, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"y"}, "mul");
        const TrainingGraph a = buildOk(s);
        // Only w needs a gradient: d(x*w)/dw = x, so x is saved and w is not.
        QCOMPARE(names(a, opNamed(a, "mul/grad")->inputs), (Names{"x", "grad:y"}));
        QCOMPARE(names(a, opNamed(a, "mul/grad")->outputs), (Names{"grad:w"}));
        const TrainingGraph b = buildOk(s, {.inputGradients = true});
        QCOMPARE(names(b, opNamed(b, "mul/grad")->inputs), (Names{"x", "w", "grad:y"}));
        QCOMPARE(names(b, opNamed(b, "mul/grad")->outputs), (Names{"grad:x", "grad:w"}));
        QVERIFY(b.tensor(*b.findTensor("grad:x")).requiredAtEnd);
    }

    void accumulatesSeveralConsumers()
    {
        // h = relu(x*w) is read by three ops: y = h + h*h... as a + b + c with one partial each.
        GraphSpec s;
        s.value("x", {4}, ValueKind::Input);
        s.value("w", {4}, ValueKind::Parameter);
        for (const char *n : {"h", "a", "b", "c", "ab", "y"})
            s.value(n, {4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Sigmoid", {"h"}, {"a"}, "sig");
        s.node("Tanh", {"h"}, {"b"}, "tanh");
        s.node("Relu", {"h"}, {"c"}, "relu");
        s.node("Add", {"a", "b"}, {"ab"}, "add1");
        s.node("Add", {"ab", "c"}, {"y"}, "add2");
        const TrainingGraph g = buildOk(s);
        // Backward order relu, tanh, sig (reverse); partials #0..#2, two Accumulate ops.
        size_t accumulates = 0;
        for (const training::Op &op : g.ops())
            accumulates += op.type == "Accumulate";
        QCOMPARE(accumulates, size_t(2));
        QCOMPARE(names(g, opNamed(g, "relu/grad")->outputs), (Names{"grad:h#0"}));
        QCOMPARE(names(g, opNamed(g, "grad:h/accumulate1")->inputs),
                 (Names{"grad:h#0", "grad:h#1"}));
        QCOMPARE(names(g, opNamed(g, "grad:h/accumulate1")->outputs), (Names{"grad:h#sum1"}));
        QCOMPARE(names(g, opNamed(g, "grad:h/accumulate2")->inputs),
                 (Names{"grad:h#sum1", "grad:h#2"}));
        QCOMPARE(names(g, opNamed(g, "grad:h/accumulate2")->outputs), (Names{"grad:h"}));
        QCOMPARE(names(g, opNamed(g, "mul/grad")->inputs), (Names{"x", "grad:h"}));
        // Sigmoid and Tanh save their outputs; Add nothing.
        QCOMPARE(names(g, opNamed(g, "sig/grad")->inputs), (Names{"a", "grad:a"}));
        QCOMPARE(names(g, opNamed(g, "add2/grad")->inputs), (Names{"grad:y"}));
    }

    void shapeSubgraphIsFolded()
    {
        // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> y: the shape arithmetic
        // is not in the training graph; the Reshape reads a preloaded Constant.
        GraphSpec s;
        s.value("x", {2, 3, 4}, ValueKind::Input);
        s.value("w", {2, 12}, ValueKind::Parameter);
        s.value("shape", {3}, ValueKind::Intermediate, DataType::Int64);
        s.constant("zero", {0}, DataType::Int64);
        s.constant("axes", {0}, DataType::Int64, {1});
        s.constant("minus1", {-1}, DataType::Int64, {1});
        s.value("n", {}, ValueKind::Intermediate, DataType::Int64);
        s.value("n1", {1}, ValueKind::Intermediate, DataType::Int64);
        s.value("target", {2}, ValueKind::Intermediate, DataType::Int64);
        s.value("r", {2, 12});
        s.value("y", {2, 12});
        s.outputs = {s.find("y")};
        s.node("Shape", {"x"}, {"shape"});
        s.node("Gather", {"shape", "zero"}, {"n"});
        s.node("Unsqueeze", {"n", "axes"}, {"n1"});
        s.node("Concat", {"n1", "minus1"}, {"target"}).attributes = {{"axis", int64_t(0)}};
        s.node("Reshape", {"x", "target"}, {"r"}, "reshape");
        s.node("Mul", {"r", "w"}, {"y"}, "mul");
        const TrainingGraph g = buildOk(s, {.inputGradients = true});
        QCOMPARE(g.forwardOpCount(), size_t(2));
        const training::Op *reshape = opNamed(g, "reshape");
        QCOMPARE(names(g, reshape->inputs), (Names{"x", "target"}));
        QCOMPARE(g.tensor(reshape->inputs[1]).role, training::TensorRole::Constant);
        QVERIFY(g.tensor(reshape->inputs[1]).preloaded);
        // Reshape's backward reads nothing but the output gradient and writes only dx.
        QCOMPARE(names(g, opNamed(g, "reshape/grad")->inputs), (Names{"grad:r"}));
        QCOMPARE(names(g, opNamed(g, "reshape/grad")->outputs), (Names{"grad:x"}));
    }

    void dropoutAndIdentity()
    {
        // d1 = Dropout(x, 0.0, true) is the identity and disappears; Identity too;
        // d2 = Dropout(., 0.5, true) keeps a bool mask for backward.
        GraphSpec s;
        s.value("x", {2, 8}, ValueKind::Input);
        s.value("w", {2, 8}, ValueKind::Parameter);
        s.constant("r0", {0.0});
        s.constant("r5", {0.5});
        s.constant("on", {1}, DataType::Bool);
        s.value("xw", {2, 8});
        s.value("d1", {2, 8});
        s.value("i1", {2, 8});
        s.value("y", {2, 8});
        s.value("mask", {2, 8}, ValueKind::Intermediate, DataType::Bool);
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"xw"}, "mul");
        s.node("Dropout", {"xw", "r0", "on"}, {"d1"}, "drop0");
        s.node("Identity", {"d1"}, {"i1"}, "id");
        s.node("Dropout", {"i1", "r5", "on"}, {"y", "mask"}, "drop5");
        const TrainingGraph g = buildOk(s);
        QVERIFY(!opNamed(g, "drop0"));
        QVERIFY(!opNamed(g, "id"));
        QCOMPARE(names(g, opNamed(g, "drop5")->inputs), (Names{"xw", "r5", "on"}));
        QCOMPARE(names(g, opNamed(g, "drop5/grad")->inputs), (Names{"mask", "grad:y"}));
        QCOMPARE(g.tensor(*g.findTensor("mask")).role, training::TensorRole::SavedState);
        QCOMPARE(g.tensor(*g.findTensor("mask")).bytes, int64_t(16));
    }

    void geluIsFused()
    {
        // y = Mul(Mul(h, Add(Erf(Div(h, 1.41421)), 1)), 0.5) with h = x*w: one Gelu op saving h.
        GraphSpec s;
        s.value("x", {2, 8}, ValueKind::Input);
        s.value("w", {2, 8}, ValueKind::Parameter);
        s.constant("sqrt2", {1.4142135});
        s.constant("one", {1.0});
        s.constant("half", {0.5});
        for (const char *n : {"h", "d", "e", "a", "m", "y"})
            s.value(n, {2, 8});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Div", {"h", "sqrt2"}, {"d"});
        s.node("Erf", {"d"}, {"e"});
        s.node("Add", {"e", "one"}, {"a"});
        s.node("Mul", {"h", "a"}, {"m"});
        s.node("Mul", {"m", "half"}, {"y"}, "gelu");
        const TrainingGraph g = buildOk(s);
        QCOMPARE(g.forwardOpCount(), size_t(2));
        const training::Op *gelu = opNamed(g, "gelu");
        QCOMPARE(gelu->type, std::string("Gelu"));
        QCOMPARE(names(g, gelu->inputs), (Names{"h"}));
        QCOMPARE(names(g, opNamed(g, "gelu/grad")->inputs), (Names{"h", "grad:y"}));
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(64)); // h only

        const TrainingGraph unfused = buildOk(s, {.fuseGelu = false});
        QCOMPARE(unfused.forwardOpCount(), size_t(6));
        // Unfused: Erf keeps d, Mul(h, a) keeps h and a: 3 x 64 bytes.
        QCOMPARE(training::summarize(unfused).savedForBackwardBytes, int64_t(192));
    }

    void siluAndMishAreFused()
    {
        // h = x*w [2,8]; y1 = Mul(h, Sigmoid(h)) (F.silu); y2 = Mul(h, Tanh(Softplus(h))) (F.mish);
        // y = y1 + y2. PyTorch's silu and mish each save h: 64 bytes in all (h once), not h plus
        // the gates (3 x 64 more).
        GraphSpec s;
        s.value("x", {2, 8}, ValueKind::Input);
        s.value("w", {2, 8}, ValueKind::Parameter);
        for (const char *n : {"h", "sg", "y1", "sp", "th", "y2", "y"})
            s.value(n, {2, 8});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Sigmoid", {"h"}, {"sg"});
        s.node("Mul", {"sg", "h"}, {"y1"}, "silu");
        s.node("Softplus", {"h"}, {"sp"});
        s.node("Tanh", {"sp"}, {"th"});
        s.node("Mul", {"h", "th"}, {"y2"}, "mish");
        s.node("Add", {"y1", "y2"}, {"y"}, "add");
        const TrainingGraph g = buildOk(s);
        QCOMPARE(g.forwardOpCount(), size_t(4));
        QCOMPARE(opNamed(g, "silu")->type, std::string("Silu"));
        QCOMPARE(opNamed(g, "mish")->type, std::string("Mish"));
        QCOMPARE(names(g, opNamed(g, "silu/grad")->inputs), (Names{"h", "grad:y1"}));
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(64));
        const TrainingGraph unfused = buildOk(s, {.fuseActivations = false});
        // Sigmoid keeps sg, Mul keeps h and sg, Tanh keeps th, Mul keeps h and th: h, sg, th.
        QCOMPARE(training::summarize(unfused).savedForBackwardBytes, int64_t(192));
    }

    void groupNormIsFused()
    {
        // torch.onnx's nn.GroupNorm(2, 4) on h = x*w [2,4,3]: Reshape(h, [0,2,-1]) -> r [2,2,6]
        // -> InstanceNormalization(r, ones[2], zeros[2]) -> n -> Reshape(n, [2,4,3]) -> m
        // -> Mul(m, gw[4,1]) -> Add(., gb[4,1]) -> y. PyTorch's group_norm saves h (96 B) and
        // float mean and rstd [2,2] (16 B each): 128 bytes. The pieces would also keep m for gw's
        // gradient (96 B more) and the statistics per InstanceNorm channel.
        GraphSpec s;
        s.value("x", {2, 4, 3}, ValueKind::Input);
        s.value("w", {2, 4, 3}, ValueKind::Parameter);
        s.value("gw", {4, 1}, ValueKind::Parameter);
        s.value("gb", {4, 1}, ValueKind::Parameter);
        s.constant("split", {0, 2, -1}, DataType::Int64, {3});
        s.constant("merge", {2, 4, 3}, DataType::Int64, {3});
        s.constant("ones", {1, 1}, DataType::Float, {2});
        s.constant("zeros", {0, 0}, DataType::Float, {2});
        s.value("h", {2, 4, 3});
        s.value("r", {2, 2, 6});
        s.value("n", {2, 2, 6});
        s.value("m", {2, 4, 3});
        s.value("sc", {2, 4, 3});
        s.value("y", {2, 4, 3});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Reshape", {"h", "split"}, {"r"});
        s.node("InstanceNormalization", {"r", "ones", "zeros"}, {"n"}).attributes = {
            {"epsilon", 1e-5}};
        s.node("Reshape", {"n", "merge"}, {"m"});
        s.node("Mul", {"m", "gw"}, {"sc"});
        s.node("Add", {"sc", "gb"}, {"y"}, "gn");
        const TrainingGraph g = buildOk(s);
        QCOMPARE(g.forwardOpCount(), size_t(2));
        const training::Op *gn = opNamed(g, "gn");
        QCOMPARE(gn->type, std::string("GroupNormalization"));
        QCOMPARE(names(g, opNamed(g, "gn/grad")->inputs),
                 (Names{"h", "gw", "y::mean", "y::inv_std_dev", "grad:y"}));
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(128));

        // Unfused, InstanceNormalization keeps h (as the view r) and [2,2] statistics, and the Mul
        // keeps m for gw: 96 + 16 + 16 + 96.
        const TrainingGraph unfused = buildOk(s, {.fuseActivations = false});
        QCOMPARE(training::summarize(unfused).savedForBackwardBytes, int64_t(224));

        // The same chain over the batch folded into the channels (Reshape to [1, 8, 3]: one
        // instance norm per sample and channel, not groups of channels) is left as it is.
        GraphSpec f;
        f.value("x", {2, 4, 3}, ValueKind::Input);
        f.value("w", {2, 4, 3}, ValueKind::Parameter);
        f.value("gw", {4, 1}, ValueKind::Parameter);
        f.value("gb", {4, 1}, ValueKind::Parameter);
        f.constant("fold", {1, 8, 3}, DataType::Int64, {3});
        f.constant("merge", {2, 4, 3}, DataType::Int64, {3});
        f.constant("ones", std::vector<double>(8, 1.0), DataType::Float, {8});
        f.constant("zeros", std::vector<double>(8, 0.0), DataType::Float, {8});
        f.value("h", {2, 4, 3});
        f.value("r", {1, 8, 3});
        f.value("n", {1, 8, 3});
        f.value("m", {2, 4, 3});
        f.value("sc", {2, 4, 3});
        f.value("y", {2, 4, 3});
        f.outputs = {f.find("y")};
        f.node("Mul", {"x", "w"}, {"h"}, "mul");
        f.node("Reshape", {"h", "fold"}, {"r"});
        f.node("InstanceNormalization", {"r", "ones", "zeros"}, {"n"});
        f.node("Reshape", {"n", "merge"}, {"m"});
        f.node("Mul", {"m", "gw"}, {"sc"});
        f.node("Add", {"sc", "gb"}, {"y"}, "gn");
        const TrainingGraph notFused = buildOk(f);
        QCOMPARE(opNamed(notFused, "gn")->type, std::string("Add"));
    }

    void instanceNormSavesLikeBatchNormPerSample()
    {
        // InstanceNormalization(x*w [2,3,4], scale[3], B[3]): torch's instance_norm (batch_norm
        // over [1, 6, 4]) keeps h (96 B) and float mean and inverse std per (sample, channel):
        // [2,3] each, 24 B. Backward reads h, the scale and both statistics.
        GraphSpec s;
        s.value("x", {2, 3, 4}, ValueKind::Input);
        s.value("w", {2, 3, 4}, ValueKind::Parameter);
        s.value("scale", {3}, ValueKind::Parameter);
        s.value("B", {3}, ValueKind::Parameter);
        s.value("h", {2, 3, 4});
        s.value("y", {2, 3, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("InstanceNormalization", {"h", "scale", "B"}, {"y"}, "in");
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "in/grad")->inputs),
                 (Names{"h", "scale", "y::mean", "y::inv_std_dev", "grad:y"}));
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(96 + 24 + 24));
        QCOMPARE(names(g, opNamed(g, "in/grad")->outputs),
                 (Names{"grad:h", "grad:scale", "grad:B"}));
    }

    void savedViewsKeepTheirBase()
    {
        // h = x*w [2,8]; a, b = Split(h) [2,4] each; c = Mul(a, w2) saves a (a view of h in
        // PyTorch: h's whole 64 bytes); f = Flatten(Reshape(h)) [16] read by Mul(f, w3) (a view of
        // h again: nothing more); e = Mul(c, Slice(tab)) keeps the slice of the buffer `tab`: a
        // view of a buffer (none). Stored by the training graph: a (32) + the slice (32) + f (64);
        // saved as PyTorch counts: h (64).
        GraphSpec s;
        s.value("x", {2, 8}, ValueKind::Input);
        s.value("w", {2, 8}, ValueKind::Parameter);
        s.value("w2", {2, 4}, ValueKind::Parameter);
        s.value("w3", {16}, ValueKind::Parameter);
        s.value("tab", {4, 4}, ValueKind::Buffer);
        s.constant("split", {4, 4}, DataType::Int64, {2});
        s.constant("flat", {16}, DataType::Int64, {1});
        s.constant("st", {0}, DataType::Int64, {1});
        s.constant("en", {2}, DataType::Int64, {1});
        for (const char *n : {"h", "tb"})
            s.value(n, n == std::string("h") ? std::vector<int64_t>{2, 8}
                                             : std::vector<int64_t>{2, 4});
        s.value("a", {2, 4});
        s.value("b", {2, 4});
        s.value("c", {2, 4});
        s.value("e", {2, 4});
        s.value("f", {16});
        s.value("y3", {16});
        s.outputs = {s.find("e"), s.find("y3")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Split", {"h", "split"}, {"a", "b"}, "split").attributes = {{"axis", int64_t(1)}};
        s.node("Mul", {"a", "w2"}, {"c"}, "mul_a");
        s.node("Slice", {"tab", "st", "en"}, {"tb"}, "slice");
        s.node("Mul", {"c", "tb"}, {"e"}, "mul_tab");
        s.node("Reshape", {"h", "flat"}, {"f"}, "flatten");
        s.node("Mul", {"f", "w3"}, {"y3"}, "mul_f");
        const TrainingGraph g = buildOk(s);
        const training::TrainingSummary sum = training::summarize(g);
        QCOMPARE(sum.storedActivationBytes, int64_t(32 + 32 + 64)); // a, tb, f
        QCOMPARE(sum.savedForBackwardBytes, int64_t(64));           // h (for a and f)
        QCOMPARE(sum.savedByForwardOp.size(), size_t(1));
        QCOMPARE(g.op(sum.savedByForwardOp[0].op).name, std::string("mul_a"));
        QCOMPARE(sum.savedByForwardOp[0].bytes, int64_t(64));
    }

    void reduceMeanOverAxesSavesInput()
    {
        // torch 1.13: x.mean(-1, keepdim=True) keeps x (MeanBackward1); x.mean() keeps nothing.
        GraphSpec s;
        s.value("x", {2, 8}, ValueKind::Input);
        s.value("w", {2, 8}, ValueKind::Parameter);
        s.value("h", {2, 8});
        s.value("m", {2, 1});
        s.value("t", {});
        s.outputs = {s.find("m"), s.find("t")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("ReduceMean", {"h"}, {"m"}, "mean_axis").attributes = {
            {"axes", std::vector<int64_t>{-1}}};
        s.node("ReduceMean", {"h"}, {"t"}, "mean_all").attributes = {{"keepdims", int64_t(0)}};
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "mean_axis/grad")->inputs), (Names{"h", "grad:m"}));
        QCOMPARE(names(g, opNamed(g, "mean_all/grad")->inputs), (Names{"grad:t"}));
    }

    void reduceMaxOverOneAxisKeepsIndices()
    {
        // torch.max(h, dim)[0] (PointNet's global feature): autograd keeps int64 indices of the
        // result's shape, not h; torch.amax over two axes keeps h and the result.
        GraphSpec s;
        s.value("x", {2, 4, 8}, ValueKind::Input);
        s.value("w", {2, 4, 8}, ValueKind::Parameter);
        s.value("h", {2, 4, 8});
        s.value("m", {2, 4});
        s.value("a", {4});
        s.outputs = {s.find("m"), s.find("a")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("ReduceMax", {"h"}, {"m"}, "max_dim").attributes = {
            {"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t(0)}};
        s.node("ReduceMax", {"h"}, {"a"}, "amax").attributes = {
            {"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t(0)}};
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "max_dim/grad")->inputs), (Names{"m::indices", "grad:m"}));
        QCOMPARE(names(g, opNamed(g, "amax/grad")->inputs), (Names{"h", "a", "grad:a"}));
        const training::Tensor &idx = g.tensor(opNamed(g, "max_dim/grad")->inputs[0]);
        QCOMPARE(idx.dtype, DataType::Int64);
        QCOMPARE(idx.bytes, int64_t(2 * 4 * 8));
    }

    void exporterTanhGeluIsFused()
    {
        // torch.onnx's gelu(approximate="tanh") below opset 20: Mul(h, Mul(h, h)) ->
        // Mul(0.044715, .) -> Add(h, .) -> Mul(sqrt(2/pi), .) -> Tanh -> Add(1, .) -> Mul(h, .) ->
        // Mul(0.5, .): one Gelu(approximate=tanh) keeping h, as GeluBackward does. The same
        // formula with Pow for the cube (GELU written out in Python) is left alone.
        for (const bool pow : {false, true}) {
            GraphSpec s;
            s.value("x", {2, 8}, ValueKind::Input);
            s.value("w", {2, 8}, ValueKind::Parameter);
            s.constant("kappa", {0.044715});
            s.constant("beta", {0.7978845608});
            s.constant("one", {1.0});
            s.constant("half", {0.5});
            s.constant("three", {3.0});
            for (const char *n : {"h", "sq", "cube", "k", "a", "i", "t", "o", "m", "y"})
                s.value(n, {2, 8});
            s.outputs = {s.find("y")};
            s.node("Mul", {"x", "w"}, {"h"}, "mul");
            if (pow) {
                s.node("Pow", {"h", "three"}, {"cube"});
            } else {
                s.node("Mul", {"h", "h"}, {"sq"});
                s.node("Mul", {"h", "sq"}, {"cube"});
            }
            s.node("Mul", {"kappa", "cube"}, {"k"});
            s.node("Add", {"h", "k"}, {"a"});
            s.node("Mul", {"beta", "a"}, {"i"});
            s.node("Tanh", {"i"}, {"t"});
            s.node("Add", {"one", "t"}, {"o"});
            s.node("Mul", {"h", "o"}, {"m"});
            s.node("Mul", {"half", "m"}, {"y"}, "gelu");
            const TrainingGraph g = buildOk(s);
            if (pow) {
                QVERIFY(g.forwardOpCount() > 2);
                continue;
            }
            QCOMPARE(g.forwardOpCount(), size_t(2));
            const training::Op *gelu = opNamed(g, "gelu");
            QCOMPARE(gelu->type, std::string("Gelu"));
            QCOMPARE(gelu->fusedNode->attrString("approximate", ""), std::string("tanh"));
            QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(64)); // h only
        }
    }

    void varianceIsFused()
    {
        // torch.std(v, 1, keepdim=True) exported: m = ReduceMean(v) -> d = Sub(v, m) -> Mul(d, d)
        // -> ReduceMean -> Mul(., 4) -> Div(., 3) -> Sqrt: a Variance keeping v (a parameter:
        // nothing counted) and the Sqrt keeping its output (16 bytes), as StdBackward keeps
        // self and result; unfused, d (64) and its square (64) would be kept too.
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("v", {4, 4}, ValueKind::Parameter);
        s.constant("n", {4.0});
        s.constant("n1", {3.0});
        for (const char *n : {"m", "var", "vn", "vu", "sd"})
            s.value(n, {4, 1});
        for (const char *n : {"d", "sq", "w"})
            s.value(n, {4, 4});
        s.value("y", {2, 4});
        s.outputs = {s.find("y")};
        const auto axis1 = std::vector<ir::Attribute>{{"axes", std::vector<int64_t>{1}}};
        s.node("ReduceMean", {"v"}, {"m"}, "mean").attributes = axis1;
        s.node("Sub", {"v", "m"}, {"d"}, "sub");
        s.node("Mul", {"d", "d"}, {"sq"}, "sq");
        s.node("ReduceMean", {"sq"}, {"var"}, "var").attributes = axis1;
        s.node("Mul", {"var", "n"}, {"vn"}, "times_n");
        s.node("Div", {"vn", "n1"}, {"vu"}, "unbiased");
        s.node("Sqrt", {"vu"}, {"sd"}, "std");
        s.node("Div", {"v", "sd"}, {"w"}, "ws");
        s.node("MatMul", {"x", "w"}, {"y"}, "mm");
        const TrainingGraph g = buildOk(s);
        const training::Op *var = opNamed(g, "unbiased");
        QCOMPARE(var->type, std::string("Variance"));
        QCOMPARE(var->fusedNode->attrInt("correction", -1), int64_t(1));
        QCOMPARE(names(g, opNamed(g, "unbiased/grad")->inputs), (Names{"v", "grad:vu"}));
        const int64_t fused = training::summarize(g).savedForBackwardBytes;
        const TrainingGraph unfused = buildOk(s, {.fuseActivations = false});
        QCOMPARE(training::summarize(unfused).savedForBackwardBytes - fused, int64_t(64 + 64));
    }

    void weightNormIsFused()
    {
        // torch.nn.utils.weight_norm(dim=0) exported: n = ReduceL2(v, axes 1, keepdims) ->
        // Div(v, n) -> Mul(., g): one WeightNorm keeping v, g and the norms (16 bytes), not the
        // quotient v / n (64 bytes); the MatMul then keeps w.
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("v", {4, 4}, ValueKind::Parameter);
        s.value("g", {4, 1}, ValueKind::Parameter);
        s.value("n", {4, 1});
        s.value("u", {4, 4});
        s.value("w", {4, 4});
        s.value("h", {2, 4});
        s.value("y", {2, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "x"}, {"h"}, "sq");
        s.node("ReduceL2", {"v"}, {"n"}, "norm").attributes = {{"axes", std::vector<int64_t>{1}},
                                                               {"keepdims", int64_t(1)}};
        s.node("Div", {"v", "n"}, {"u"}, "div");
        s.node("Mul", {"u", "g"}, {"w"}, "wn");
        s.node("MatMul", {"h", "w"}, {"y"}, "mm");
        const TrainingGraph g = buildOk(s);
        const training::Op *wn = opNamed(g, "wn");
        QCOMPARE(wn->type, std::string("WeightNorm"));
        QCOMPARE(wn->fusedNode->attrInt("axis", -9), int64_t(0));
        QCOMPARE(names(g, opNamed(g, "wn/grad")->inputs), (Names{"v", "g", "w::norm", "grad:w"}));
        // the norms (16) and h (32, kept by the MatMul for w's gradient); unfused, the quotient
        // (64) would be kept too
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(16 + 32));
        const TrainingGraph unfused = buildOk(s, {.fuseActivations = false});
        QCOMPARE(training::summarize(unfused).savedForBackwardBytes, int64_t(16 + 32 + 64));
    }

    void arithmeticOnWeightsIsSaved()
    {
        // Weight standardisation and the like: Ws = W * 0.5 is computed every step, a new tensor
        // the product keeps (64 bytes); Transpose(V) is a view of V that PyTorch never copies.
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("P", {2, 4}, ValueKind::Parameter);
        s.value("W", {4, 4}, ValueKind::Parameter);
        s.value("V", {4, 4}, ValueKind::Parameter);
        s.constant("scale", {0.5});
        for (const char *n : {"Vt", "Ws"})
            s.value(n, {4, 4});
        for (const char *n : {"h1", "h", "y"})
            s.value(n, {2, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "P"}, {"h1"}, "mul");
        s.node("Transpose", {"V"}, {"Vt"}, "vt").attributes = {
            {"perm", std::vector<int64_t>{1, 0}}};
        s.node("Mul", {"W", "scale"}, {"Ws"}, "scaled");
        s.node("MatMul", {"h1", "Ws"}, {"h"}, "mm1");
        s.node("MatMul", {"h", "Vt"}, {"y"}, "mm2");
        const TrainingGraph g = buildOk(s);
        const training::TrainingSummary sum = training::summarize(g);
        // mm1 keeps h1 (32) and Ws (64); mm2 keeps h (32) and Vt (V's view: not counted).
        QCOMPARE(sum.savedForBackwardBytes, int64_t(32 + 64 + 32));
        QCOMPARE(sum.savedWeightDerivedBytes, int64_t(64)); // Vt
    }

    void layerNormSoftmaxMatMul()
    {
        // q = LN(x) [2,4,8]; s = MatMul(q, kT[2,8,4]) -> [2,4,4]; p = Softmax(s); y = MatMul(p, v)
        GraphSpec s;
        s.value("x", {2, 4, 8}, ValueKind::Input);
        s.value("g", {8}, ValueKind::Parameter);
        s.value("bb", {8}, ValueKind::Parameter);
        s.value("kT", {2, 8, 4}, ValueKind::Parameter);
        s.value("v", {2, 4, 8}, ValueKind::Parameter);
        s.value("q", {2, 4, 8});
        s.value("sc", {2, 4, 4});
        s.value("p", {2, 4, 4});
        s.value("y", {2, 4, 8});
        s.outputs = {s.find("y")};
        s.node("LayerNormalization", {"x", "g", "bb"}, {"q"}, "ln").attributes = {
            {"axis", int64_t(-1)}};
        s.node("MatMul", {"q", "kT"}, {"sc"}, "qk");
        s.node("Softmax", {"sc"}, {"p"}, "softmax");
        s.node("MatMul", {"p", "v"}, {"y"}, "pv");
        const TrainingGraph g = buildOk(s);
        const training::Op *ln = opNamed(g, "ln");
        QCOMPARE(names(g, ln->outputs), (Names{"q", "q::mean", "q::inv_std_dev"}));
        QCOMPARE(g.tensor(ln->outputs[1]).shape, ir::Shape::fromStatic({2, 4, 1}));
        QCOMPARE(names(g, opNamed(g, "ln/grad")->inputs),
                 (Names{"x", "g", "q::mean", "q::inv_std_dev", "grad:q"}));
        QCOMPARE(names(g, opNamed(g, "ln/grad")->outputs), (Names{"grad:g", "grad:bb"}));
        QCOMPARE(names(g, opNamed(g, "softmax/grad")->inputs), (Names{"p", "grad:p"}));
        QCOMPARE(names(g, opNamed(g, "pv/grad")->inputs), (Names{"v", "p", "grad:y"}));
        // MatMul FLOPs: 2 * |sc| * K = 2 * 32 * 8 = 512.
        QCOMPARE(opNamed(g, "qk")->flops, 512.0);
    }

    void nonDifferentiableInputs()
    {
        // Gather(w, idx): idx is int64 and gets no gradient; Where(cond, a, b): cond neither.
        GraphSpec s;
        s.value("w", {10, 4}, ValueKind::Parameter);
        s.value("idx", {3}, ValueKind::Input, DataType::Int64);
        s.value("cond", {3, 4}, ValueKind::Input, DataType::Bool);
        s.value("z", {3, 4}, ValueKind::Parameter);
        s.value("e", {3, 4});
        s.value("y", {3, 4});
        s.outputs = {s.find("y")};
        s.node("Gather", {"w", "idx"}, {"e"}, "embed");
        s.node("Where", {"cond", "e", "z"}, {"y"}, "where");
        const TrainingGraph g = buildOk(s, {.inputGradients = true});
        QCOMPARE(names(g, opNamed(g, "embed/grad")->inputs), (Names{"idx", "grad:e"}));
        QCOMPARE(names(g, opNamed(g, "embed/grad")->outputs), (Names{"grad:w"}));
        QCOMPARE(names(g, opNamed(g, "where/grad")->inputs), (Names{"cond", "grad:y"}));
        QCOMPARE(names(g, opNamed(g, "where/grad")->outputs), (Names{"grad:e", "grad:z"}));
        QVERIFY(!g.findTensor("grad:idx"));
        QVERIFY(!g.findTensor("grad:cond"));
    }

    void clipAndPoolingSaveTheirInput()
    {
        GraphSpec s;
        s.value("x", {1, 2, 4, 4}, ValueKind::Input);
        s.value("w", {1, 2, 4, 4}, ValueKind::Parameter);
        s.constant("lo", {0.0});
        s.constant("hi", {6.0});
        s.value("xw", {1, 2, 4, 4});
        s.value("c", {1, 2, 4, 4});
        s.value("y", {1, 2, 2, 2});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"xw"}, "mul");
        s.node("Clip", {"xw", "lo", "hi"}, {"c"}, "relu6");
        s.node("AveragePool", {"c"}, {"y"}, "avg").attributes = {
            {"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "relu6/grad")->inputs), (Names{"xw", "grad:c"}));
        QCOMPARE(names(g, opNamed(g, "relu6/grad")->outputs), (Names{"grad:xw"})); // not lo / hi
        QCOMPARE(names(g, opNamed(g, "avg/grad")->inputs), (Names{"c", "grad:y"}));
        QCOMPARE(opNamed(g, "avg")->flops, 8.0 * 4); // |y| x kernel volume
    }

    void reflectionPadKeepsItsInput()
    {
        // ReflectionPad2d / ReplicationPad2d keep their input (torch 1.13's backward reads it);
        // a constant pad keeps nothing.
        for (const char *mode : {"reflect", "edge", "constant"}) {
            GraphSpec s;
            s.value("x", {1, 2, 4, 4}, ValueKind::Input);
            s.value("w", {1, 2, 4, 4}, ValueKind::Parameter);
            s.constant("pads", {0, 0, 1, 1, 0, 0, 1, 1}, DataType::Int64, {8});
            s.value("xw", {1, 2, 4, 4});
            s.value("y", {1, 2, 6, 6});
            s.outputs = {s.find("y")};
            s.node("Mul", {"x", "w"}, {"xw"}, "mul");
            s.node("Pad", {"xw", "pads"}, {"y"}, "pad").attributes = {{"mode", std::string(mode)}};
            const TrainingGraph g = buildOk(s);
            const Names expected =
                std::string(mode) == "constant" ? Names{"grad:y"} : Names{"xw", "grad:y"};
            QCOMPARE(names(g, opNamed(g, "pad/grad")->inputs), expected);
        }
    }

    void unknownOpIsAnError()
    {
        // a gradient would flow from y back through Frobnicate to the weight: a rule is needed
        GraphSpec s;
        s.value("x", {2}, ValueKind::Input);
        s.value("w", {2}, ValueKind::Parameter);
        s.value("xw", {2});
        s.value("y", {2});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"xw"}, "mul");
        s.node("Frobnicate", {"xw"}, {"y"}, "/block/Frobnicate_3");
        auto g = s.build();
        QVERIFY(g.hasValue());
        auto tg = training::buildTrainingGraph(*g);
        QVERIFY(!tg.hasValue());
        QCOMPARE(tg.status().code(), StatusCode::Unsupported);
        QCOMPARE(QString::fromStdString(tg.status().message()),
                 QString("no gradient rule for op type 'Frobnicate' (node '/block/Frobnicate_3' "
                         "(Frobnicate)), and the gradient of 'xw' would flow through it to a "
                         "floating-point result"));
    }

    void opsWithoutGradientEndTheGradientPath()
    {
        // A capsule network's decoder mask: one_hot(argmax(h)) cast to float, times h.
        //   h = x * w            [2, 4]      mask = Cast(OneHot(ArgMax(h), 4, [0, 1]))
        //   y = h * mask + Floor(h) + Frobnicate(Sign(h)) (an unknown op on a path no gradient
        //   reaches) + Size(h) as float (an int64 result)
        // Only mul, Cast's consumer and the adds differentiate; ArgMax, OneHot, Cast, Floor,
        // Sign, Frobnicate and Size end the path and have no backward op.
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("w", {2, 4}, ValueKind::Parameter);
        s.constant("depth", {4}, DataType::Int64, {});
        s.constant("onoff", {0, 1}, DataType::Int64, {2});
        s.value("h", {2, 4});
        s.value("idx", {2}, ValueKind::Intermediate, DataType::Int64);
        s.value("code", {2, 4}, ValueKind::Intermediate, DataType::Int64);
        s.value("mask", {2, 4});
        s.value("masked", {2, 4});
        s.value("fl", {2, 4});
        s.value("sg", {2, 4});
        s.value("fr", {2, 4});
        s.value("n", {}, ValueKind::Intermediate, DataType::Int64);
        s.value("nf", {});
        s.value("a", {2, 4});
        s.value("b", {2, 4});
        s.value("y", {2, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("ArgMax", {"h"}, {"idx"}, "argmax").attributes = {{"axis", int64_t(1)},
                                                                 {"keepdims", int64_t(0)}};
        s.node("OneHot", {"idx", "depth", "onoff"}, {"code"}, "onehot");
        s.node("Cast", {"code"}, {"mask"}, "cast").attributes = {{"to", int64_t(1)}};
        s.node("Mul", {"h", "mask"}, {"masked"}, "maskmul");
        s.node("Floor", {"h"}, {"fl"}, "floor");
        s.node("Sign", {"h"}, {"sg"}, "sign");
        s.node("Frobnicate", {"sg"}, {"fr"}, "frob");
        s.node("Size", {"h"}, {"n"}, "size");
        s.node("Cast", {"n"}, {"nf"}, "castn").attributes = {{"to", int64_t(1)}};
        s.node("Add", {"masked", "fl"}, {"a"}, "add1");
        s.node("Add", {"a", "fr"}, {"b"}, "add2");
        s.node("Add", {"b", "nf"}, {"y"}, "add3");
        const TrainingGraph g = buildOk(s);
        // (Size of a static shape is folded like Shape: no op at all)
        QVERIFY(!opNamed(g, "size") && !opNamed(g, "castn/grad"));
        for (const char *fwd : {"argmax", "onehot", "cast", "floor", "sign", "frob"}) {
            QVERIFY2(opNamed(g, fwd), fwd);
            QVERIFY2(!opNamed(g, std::string(fwd) + "/grad"), fwd);
        }
        // maskmul differentiates h only (the mask carries no gradient) and keeps the mask
        QCOMPARE(names(g, opNamed(g, "maskmul/grad")->inputs), (Names{"mask", "grad:masked"}));
        QCOMPARE(names(g, opNamed(g, "maskmul/grad")->outputs), (Names{"grad:h"}));
        QCOMPARE(names(g, opNamed(g, "mul/grad")->outputs), (Names{"grad:w"}));
    }

    void tensorsCreatedInForwardAreKeptAsPyTorchKeepsThem()
    {
        // A ConvLSTM's first step: c = sigmoid(f) * zeros(B, C), the zeros made in forward (a
        // Constant node in the export). PyTorch allocates them every step and MulBackward keeps
        // them; a module's table (broadcast, not batch-sized) and a batch-sized initializer of
        // the file are not tensors made in forward.
        //   h = x * w [2,4]; s = Sigmoid(h) keeps s (32 B); c = s * zeros [2,4] keeps zeros (32 B);
        //   t = c * table [4] keeps table (a constant); y = t * init [2,4] keeps init (the file's)
        GraphSpec s;
        s.value("x", {2, 4}, ValueKind::Input);
        s.value("w", {2, 4}, ValueKind::Parameter);
        s.value("zeros", {2, 4});
        s.value("table", {4});
        s.constant("init", {1, 2, 3, 4, 5, 6, 7, 8}, DataType::Float, {2, 4});
        for (const char *v : {"h", "s", "c", "t", "y"})
            s.value(v, {2, 4});
        s.outputs = {s.find("y")};
        s.node("Constant", {}, {"zeros"}, "/Constant_12");
        s.node("Constant", {}, {"table"}, "/Constant_13");
        s.node("Mul", {"x", "w"}, {"h"}, "mul");
        s.node("Sigmoid", {"h"}, {"s"}, "sig");
        s.node("Mul", {"s", "zeros"}, {"c"}, "cell");
        s.node("Mul", {"c", "table"}, {"t"}, "scale");
        s.node("Mul", {"t", "init"}, {"y"}, "out");
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "cell/grad")->inputs), (Names{"zeros", "grad:c"}));
        QCOMPARE(g.tensor(*g.findTensor("zeros")).role, training::TensorRole::Constant);
        const training::TrainingSummary withForward = training::summarize(g, &*forward);
        QCOMPARE(withForward.savedForBackwardBytes, int64_t(32 + 32)); // s and the zeros
        QCOMPARE(withForward.storedActivationBytes, int64_t(32)); // the zeros are preloaded here
        // attributed to the op whose backward keeps them
        bool attributed = false;
        for (const auto &e : withForward.savedByForwardOp)
            if (g.op(e.op).name == "cell")
                attributed = e.bytes == 32 && names(g, e.tensors) == Names{"zeros"};
        QVERIFY(attributed);
        // without the forward graph (no node to tell a made tensor from a table): s only
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(32));
    }

    void einsumOfThreeOperandsKeepsItsPairwiseProduct()
    {
        // Linear attention's normalised read-out, einsum("bnhd,bhdm,bnh->bnhm", q, kv, z):
        // torch.einsum contracts left to right, bmm(q as [b h, n, d], kv as [b h, d, m]) then a
        // mul by z, and keeps q's copy (q [b, n, h, d] is contiguous, but not in the product's
        // batch order), kv as a view, the product so far (an extra output) and z, as PyTorch
        // 1.13 measures: 1024 + 512 + 1024 + 256 B.
        GraphSpec s;
        s.value("x", {2, 8, 4, 4}, ValueKind::Input);
        s.value("x2", {2, 4, 4, 4}, ValueKind::Input);
        s.value("x3", {2, 8, 4}, ValueKind::Input);
        s.value("w", {2, 8, 4, 4}, ValueKind::Parameter);
        s.value("w2", {2, 4, 4, 4}, ValueKind::Parameter);
        s.value("w3", {2, 8, 4}, ValueKind::Parameter);
        s.value("q", {2, 8, 4, 4});
        s.value("kv", {2, 4, 4, 4});
        s.value("z", {2, 8, 4});
        s.value("y", {2, 8, 4, 4});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w"}, {"q"}, "q");
        s.node("Mul", {"x2", "w2"}, {"kv"}, "kv");
        s.node("Mul", {"x3", "w3"}, {"z"}, "z");
        s.node("Einsum", {"q", "kv", "z"}, {"y"}, "readout")
            .attributes.push_back({"equation", std::string("bnhd,bhdm,bnh->bnhm")});
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "readout/grad")->inputs),
                 (Names{"kv", "z", "q", "y::einsum_product1", "grad:y"}));
        const auto product = g.findTensor("y::einsum_product1");
        QVERIFY(product != nullptr);
        QCOMPARE(g.tensor(*product).bytes, int64_t(2 * 4 * 8 * 4 * 4)); // [b h, n, m] fp32
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes,
                 int64_t(1024 + 512 + 1024 + 256));
        // two operands: no product kept beyond the operands
        GraphSpec two;
        two.value("x", {2, 8, 4, 4}, ValueKind::Input);
        two.value("w", {2, 8, 4, 4}, ValueKind::Parameter);
        two.value("k", {2, 8, 4, 4});
        two.value("kv", {2, 4, 4, 4});
        two.outputs = {two.find("kv")};
        two.node("Mul", {"x", "w"}, {"k"}, "k");
        two.node("Einsum", {"k", "k"}, {"kv"}, "outer")
            .attributes.push_back({"equation", std::string("bnhd,bnhm->bhdm")});
        const TrainingGraph g2 = buildOk(two);
        QVERIFY(g2.findTensor("kv::einsum_product1") == nullptr);
    }

    void createdIndexExpandedIsAViewOfWhatItWasMadeFrom()
    {
        // DeBERTa's relative-position index: made in forward as [4, 5] and expanded over batch
        // and heads for a gather, which keeps it (and the data, 480 B). An expand is a view:
        // PyTorch keeps 4 x 5 int64 (160 B), not the expanded 960 B.
        GraphSpec s;
        s.value("x", {2, 3, 4, 5}, ValueKind::Input);
        s.value("w", {2, 3, 4, 5}, ValueKind::Parameter);
        std::vector<double> idx;
        for (int i = 0; i < 20; ++i)
            idx.push_back(i % 5);
        s.constant("rel", idx, DataType::Int64, {4, 5});
        s.constant("shape", {2, 3, 4, 5}, DataType::Int64, {4});
        s.value("index", {2, 3, 4, 5}, ValueKind::Intermediate, DataType::Int64);
        s.value("d", {2, 3, 4, 5});
        s.value("y", {2, 3, 4, 5});
        s.outputs = {s.find("y")};
        s.node("Expand", {"rel", "shape"}, {"index"}, "/attn/Expand_2");
        s.node("Mul", {"x", "w"}, {"d"}, "mul");
        s.node("GatherElements", {"d", "index"}, {"y"}, "c2p")
            .attributes.push_back({"axis", int64_t(-1)});
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(480 + 160));
    }

    void maskComputedFromConstantsIsMadeInForward()
    {
        // A sliding-window mask, (pos[None] - pos[:, None]).abs() > w: arithmetic on constants
        // in the export, which torch computed in forward (a new bool [4, 5] every step) and
        // masked_fill keeps (20 B), though it is not batch-sized. A module's table (a Constant
        // node read as it is) and a scalar are not tensors made in forward.
        GraphSpec s;
        s.value("x", {2, 3, 4, 5}, ValueKind::Input);
        s.value("w", {2, 3, 4, 5}, ValueKind::Parameter);
        s.value("pa", {4, 5});
        s.value("pb", {4, 5});
        s.value("table", {4, 5});
        s.constant("ninf", {-1e4}, DataType::Float, {});
        s.value("mask", {4, 5}, ValueKind::Intermediate, DataType::Bool);
        for (const char *v : {"scores", "masked", "y"})
            s.value(v, {2, 3, 4, 5});
        s.outputs = {s.find("y")};
        s.node("Constant", {}, {"pa"}, "/attn/Constant");
        s.node("Constant", {}, {"pb"}, "/attn/Constant_1");
        s.node("Constant", {}, {"table"}, "/attn/Constant_2");
        s.node("Greater", {"pa", "pb"}, {"mask"}, "/attn/Greater");
        s.node("Mul", {"x", "w"}, {"scores"}, "mul");
        s.node("Where", {"mask", "ninf", "scores"}, {"masked"}, "fill");
        s.node("Mul", {"masked", "table"}, {"y"}, "scale");
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        // folded here: a constant, which only the forward graph's node tells from a table
        QCOMPARE(g.tensor(*g.findTensor("mask")).role, training::TensorRole::Constant);
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(20));
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(0));
    }

    void cosineSimilarityKeepsWhatAtenKeeps()
    {
        // torch.onnx writes F.cosine_similarity(a, b, dim=-1) as ReduceSum(a * b) / Max(Sqrt(
        // ReduceSum(a * a) * ReduceSum(b * b)), eps); ATen normalises each operand first and keeps,
        // per operand that needs a gradient, the operand, its norm [2, 3] (24 B) and the other
        // operand normalised [2, 3, 4] (96 B), never the export's sums. a = x * w (96 B): with b
        // the input, 96 + 24 + 96 = 216 B (the export's own ops would keep 192); with b = x * w2
        // too, 2 x 216 = 432 B.
        for (const bool bNeedsGrad : {false, true}) {
            GraphSpec s;
            s.value("x", {2, 3, 4}, ValueKind::Input);
            s.value("w", {2, 3, 4}, ValueKind::Parameter);
            s.value("w2", {2, 3, 4}, ValueKind::Parameter);
            s.value("xb", {2, 3, 4}, ValueKind::Input);
            for (const char *v : {"a", "b"})
                s.value(v, {2, 3, 4});
            s.node("Mul", {"x", "w"}, {"a"}, "/a/Mul");
            if (bNeedsGrad)
                s.node("Mul", {"x", "w2"}, {"b"}, "/b/Mul");
            else
                s.node("Identity", {"xb"}, {"b"}, "/b/Identity");
            addExportedCosine(s);
            auto forward = s.build();
            QVERIFY(forward.hasValue());
            const TrainingGraph g = buildOk(s);
            const training::TrainingSummary sum = training::summarize(g, &*forward);
            QCOMPARE(sum.savedForBackwardBytes, int64_t(bNeedsGrad ? 432 : 216));
            // the per-op figures add up to the total; the norms and normalised operands are on
            // the Div
            int64_t perOp = 0, onDiv = 0;
            for (const auto &e : sum.savedByForwardOp) {
                perOp += e.bytes;
                if (g.op(e.op).name == "/Div")
                    onDiv = e.bytes;
            }
            QCOMPARE(perOp, sum.savedForBackwardBytes);
            QCOMPARE(onDiv, int64_t(bNeedsGrad ? 240 : 120));
            // the graph itself still holds the export's tensors, and without the forward graph
            // the export's ops are read as they are (a 96, sb 24, r 24, cross 24, d 24)
            if (!bNeedsGrad)
                QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(192));
        }
        // a bfloat16 against a float32 (CPU autocast, where cosine_similarity is on no list):
        // ATen promotes a to a float32 copy first and keeps that (96 B) instead of a (48 B):
        // 96 + 24 + 96 = 216 B
        GraphSpec s;
        s.value("x", {2, 3, 4}, ValueKind::Input, DataType::BFloat16);
        s.value("w", {2, 3, 4}, ValueKind::Parameter, DataType::BFloat16);
        s.value("b", {2, 3, 4}, ValueKind::Input);
        s.value("a", {2, 3, 4}, ValueKind::Intermediate, DataType::BFloat16);
        s.value("aa", {2, 3, 4}, ValueKind::Intermediate, DataType::BFloat16);
        s.value("sa", {2, 3}, ValueKind::Intermediate, DataType::BFloat16);
        s.node("Mul", {"x", "w"}, {"a"}, "/a/Mul");
        addExportedCosine(s);
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(216));

        // under autocast, a = x W1 and b = x W2 are bfloat16 matrix products. CUDA lists
        // cosine_similarity as fp32: per operand a float32 copy (96 B), a float32 norm (24 B) and
        // the other operand normalised in float32 (96 B), 432 B on the Div. CPU lists it nowhere:
        // all in bfloat16, 2 x (12 + 48) = 120 B.
        for (const ops::AutocastDevice device :
             {ops::AutocastDevice::Cuda, ops::AutocastDevice::Cpu}) {
            GraphSpec m;
            m.value("x", {2, 3, 4}, ValueKind::Input);
            m.value("w1", {4, 4}, ValueKind::Parameter);
            m.value("w2", {4, 4}, ValueKind::Parameter);
            for (const char *v : {"a", "b"})
                m.value(v, {2, 3, 4});
            m.node("MatMul", {"x", "w1"}, {"a"}, "/a/MatMul");
            m.node("MatMul", {"x", "w2"}, {"b"}, "/b/MatMul");
            addExportedCosine(m);
            auto fwd = m.build();
            QVERIFY(fwd.hasValue());
            training::TrainingOptions o;
            o.precision = training::Precision::Bf16Mixed;
            o.autocastDevice = device;
            auto tg = training::applyTrainingOptions(buildOk(m), o, &*fwd);
            QVERIFY2(tg, tg.status().message().c_str());
            int64_t onDiv = -1;
            for (const auto &e : training::summarize(*tg, &*fwd).savedByForwardOp)
                if (tg->op(e.op).name == "/Div")
                    onDiv = e.bytes;
            QCOMPARE(onDiv, int64_t(device == ops::AutocastDevice::Cuda ? 432 : 120));
        }
    }

    void indexAddKeepsItsSource()
    {
        // torch.onnx writes index_add(0, idx, src) as Add(self, ScatterElements(zeros,
        // expand(idx), Expand(src))); torch 1.13's IndexAddBackward0 keeps the source (24 B)
        // besides the index. A scatter into zeros of a source that is no Expand (scatter_add
        // before opset 16) keeps the index alone, as ScatterAddBackward0 does.
        for (const bool indexAdd : {true, false}) {
            GraphSpec s;
            s.value("x", {4, 3}, ValueKind::Input);
            s.value("w", {3, 3}, ValueKind::Parameter);
            s.value("v", {2, 3}, ValueKind::Input);
            s.value("w2", {2, 3}, ValueKind::Parameter);
            s.value("index", {2, 3}, ValueKind::Input, DataType::Int64);
            s.constant("zeros", std::vector<double>(12, 0.0), DataType::Float, {4, 3});
            s.constant("shape", {2, 3}, DataType::Int64, {2});
            for (const char *v : {"src", "e"})
                s.value(v, {2, 3});
            for (const char *v : {"h", "sc", "y"})
                s.value(v, {4, 3});
            s.outputs = {s.find("y")};
            s.node("MatMul", {"x", "w"}, {"h"}, "/MatMul");
            s.node("Mul", {"v", "w2"}, {"src"}, "/Mul");
            if (indexAdd)
                s.node("Expand", {"src", "shape"}, {"e"}, "/Expand");
            else
                s.node("Relu", {"src"}, {"e"}, "/Relu");
            s.node("ScatterElements", {"zeros", "index", "e"}, {"sc"}, "/ScatterElements")
                .attributes = {{"axis", int64_t(0)}};
            s.node("Add", {"h", "sc"}, {"y"}, "/Add");
            auto forward = s.build();
            QVERIFY(forward.hasValue());
            const TrainingGraph g = buildOk(s);
            const Names kept = names(g, opNamed(g, "/ScatterElements/grad")->inputs);
            QCOMPARE(std::find(kept.begin(), kept.end(), "e") != kept.end(), indexAdd);
            QVERIFY(std::find(kept.begin(), kept.end(), "index") != kept.end());
            // the source's storage (src, of which e is a view) or the Relu's output it reads
            QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(24));
        }
    }

    void einsumCopiesAPermutedWeight()
    {
        // torch.einsum("nd,edh->neh", h, W) (experts' weights stacked in one Parameter): bmm
        // needs W as [d, e * h], which no view of W[e, d, h] is, so W is copied (120 B) and kept
        // beside h (48 B). Stored as [d, e, h] ("nd,deh->neh") the reshape is a view: h alone.
        for (const bool permuted : {true, false}) {
            GraphSpec s;
            s.value("x", {4, 3}, ValueKind::Input);
            s.value("w0", {4, 3}, ValueKind::Parameter);
            s.value("W", permuted ? std::vector<int64_t>{2, 3, 5} : std::vector<int64_t>{3, 2, 5},
                    ValueKind::Parameter);
            s.value("h", {4, 3});
            s.value("y", {4, 2, 5});
            s.outputs = {s.find("y")};
            s.node("Mul", {"x", "w0"}, {"h"}, "/Mul");
            s.node("Einsum", {"h", "W"}, {"y"}, "/Einsum").attributes = {
                {"equation", std::string(permuted ? "nd,edh->neh" : "nd,deh->neh")}};
            auto forward = s.build();
            QVERIFY(forward.hasValue());
            const TrainingGraph g = buildOk(s);
            QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes,
                     permuted ? int64_t(48 + 120) : int64_t(48));
        }
    }

    void gruCellGatesLiveInTheHiddenProjection()
    {
        // nn.GRUCell (ATen's GRUCell on CPU) works in place on the hidden projection hg:
        //   r = hg[0].add_(ig[0]).sigmoid_(); z = hg[1].add_(ig[1]).sigmoid_()
        //   n = ig[2].add(hg[2].mul_(r)).tanh_(); h' = (h - n).mul_(z).add_(n)
        // The gates are views of hg (96 B) and mul_ keeps a copy of hg[2] (32 B); then n and
        // h - n: 96 + 32 + 32 + 32. The same cell written out of place (the input chunk first in
        // each Add, as a hand-written GRU has it) keeps r and z of their own and hg through hg[2]:
        // 32 + 32 + 96 + 32 + 32.
        for (const bool torchOrder : {true, false}) {
            GraphSpec s;
            s.value("x", {2, 4}, ValueKind::Input);
            s.value("h", {2, 4}, ValueKind::Input);
            s.value("wi", {4, 12}, ValueKind::Parameter);
            s.value("wh", {4, 12}, ValueKind::Parameter);
            s.constant("sizes", {4, 4, 4}, DataType::Int64, {3});
            s.value("ig", {2, 12});
            s.value("hg", {2, 12});
            for (const char *v : {"i0", "i1", "i2", "h0", "h1", "h2", "a0", "r", "a1", "z", "m",
                                  "a2", "n", "d", "e", "y"})
                s.value(v, {2, 4});
            s.outputs = {s.find("y")};
            s.node("MatMul", {"x", "wi"}, {"ig"}, "/cell/MatMul");
            s.node("MatMul", {"h", "wh"}, {"hg"}, "/cell/MatMul_1");
            s.node("Split", {"ig", "sizes"}, {"i0", "i1", "i2"}, "/cell/Split").attributes = {
                {"axis", int64_t(1)}};
            s.node("Split", {"hg", "sizes"}, {"h0", "h1", "h2"}, "/cell/Split_1").attributes = {
                {"axis", int64_t(1)}};
            auto add = [&](const char *a, const char *b, const char *out, const char *name) {
                if (torchOrder)
                    s.node("Add", {a, b}, {out}, name);
                else
                    s.node("Add", {b, a}, {out}, name);
            };
            add("h0", "i0", "a0", "/cell/Add");
            s.node("Sigmoid", {"a0"}, {"r"}, "/cell/Sigmoid");
            add("h1", "i1", "a1", "/cell/Add_1");
            s.node("Sigmoid", {"a1"}, {"z"}, "/cell/Sigmoid_1");
            s.node("Mul", {"h2", "r"}, {"m"}, "/cell/Mul");
            s.node("Add", {"i2", "m"}, {"a2"}, "/cell/Add_2");
            s.node("Tanh", {"a2"}, {"n"}, "/cell/Tanh");
            s.node("Sub", {"h", "n"}, {"d"}, "/cell/Sub");
            s.node("Mul", {"d", "z"}, {"e"}, "/cell/Mul_1");
            s.node("Add", {"e", "n"}, {"y"}, "/cell/Add_3");
            auto forward = s.build();
            QVERIFY(forward.hasValue());
            const TrainingGraph g = buildOk(s);
            const training::TrainingSummary sum = training::summarize(g, &*forward);
            QCOMPARE(sum.savedForBackwardBytes,
                     torchOrder ? int64_t(96 + 32 + 32 + 32) : int64_t(32 + 32 + 96 + 32 + 32));
        }
    }

    void weightBroadcastOverAProductIsCopiedAtTheBatch()
    {
        // A capsule layer: W [1, 3, 4, 5] @ u [2, 3, 5, 6] -> [2, 3, 4, 6]. torch.matmul expands W
        // over the batch of 2 and bmm keeps that copy (2 x 240 B) beside u (720 B); the product
        // reads both. A weight no op reads (the untaken branch's) stays resident, gradient-less.
        GraphSpec s;
        s.value("x", {2, 3, 5, 6}, ValueKind::Input);
        s.value("w2", {2, 3, 5, 6}, ValueKind::Parameter);
        s.value("W", {1, 3, 4, 5}, ValueKind::Parameter);
        s.value("unused", {10}, ValueKind::Parameter);
        s.value("u", {2, 3, 5, 6});
        s.value("y", {2, 3, 4, 6});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w2"}, {"u"}, "mul");
        s.node("MatMul", {"W", "u"}, {"y"}, "caps");
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(names(g, opNamed(g, "caps/grad")->inputs), (Names{"u", "W", "grad:y"}));
        const training::TrainingSummary sum = training::summarize(g, &*forward);
        QCOMPARE(sum.savedForBackwardBytes, int64_t(720 + 2 * 240));
        QCOMPARE(sum.storedActivationBytes, int64_t(720)); // W itself is the parameter here
        QCOMPARE(training::summarize(g).savedForBackwardBytes, int64_t(720)); // no stride model
        // parameters: w2 720 + W 240 + the unread 40; gradients for the read ones only
        QCOMPARE(sum.paramBytes, int64_t(720 + 240 + 40));
        QCOMPARE(sum.paramGradBytes, int64_t(720 + 240));
        QVERIFY(g.findTensor("unused") && !g.findTensor("grad:unused"));
    }

    void expandedWeightFoldedIntoRowsIsCopied()
    {
        // Learned queries read by a linear: q = queries.expand(2, -1, -1) [2, 8, 16], q @ W.
        // torch.matmul folds the 3-D operand into [16, 16] rows, which the expanded view (batch
        // stride 0) cannot be without a copy; mm keeps that copy for W's gradient: 2 x 8 x 16 x 4
        // = 1024 B. A Perceiver-style cross-attention head measured -5.22% without it.
        GraphSpec s;
        s.value("queries", {1, 8, 16}, ValueKind::Parameter);
        s.value("W", {16, 16}, ValueKind::Parameter);
        s.constant("shape", {2, 8, 16}, DataType::Int64, {3});
        s.value("q", {2, 8, 16});
        s.value("y", {2, 8, 16});
        s.outputs = {s.find("y")};
        s.node("Expand", {"queries", "shape"}, {"q"}, "expand");
        s.node("MatMul", {"q", "W"}, {"y"}, "proj");
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(1024));
    }

    void transposedOperandOfALinearIsNotCopied()
    {
        // A Mamba scan's x_proj(u.transpose(1, 2)): torch 1.13's matmul does not fold a 3-D
        // operand whose last two dims are transposed; bmm multiplies the view and keeps it, so
        // the product keeps s's storage (2048 B, also kept by the Sigmoid), no copy.
        //   h = x * w0 [2, 32, 8]; s = Sigmoid(h); t = Transpose(s) [2, 8, 32]; y = t @ W [2, 8, 16]
        GraphSpec s;
        s.value("x", {2, 32, 8}, ValueKind::Input);
        s.value("w0", {2, 32, 8}, ValueKind::Parameter);
        s.value("W", {32, 16}, ValueKind::Parameter);
        s.value("h", {2, 32, 8});
        s.value("s", {2, 32, 8});
        s.value("t", {2, 8, 32});
        s.value("y", {2, 8, 16});
        s.outputs = {s.find("y")};
        s.node("Mul", {"x", "w0"}, {"h"}, "mul");
        s.node("Sigmoid", {"h"}, {"s"}, "sig");
        s.node("Transpose", {"s"}, {"t"}, "tr").attributes = {
            {"perm", std::vector<int64_t>{0, 2, 1}}};
        s.node("MatMul", {"t", "W"}, {"y"}, "proj");
        auto forward = s.build();
        QVERIFY(forward.hasValue());
        const TrainingGraph g = buildOk(s);
        QCOMPARE(training::summarize(g, &*forward).savedForBackwardBytes, int64_t(2048));
    }

    void toolNamesNeverClashWithTheFilesNames()
    {
        // An MAE returns its loss as an output named "loss"; other values take the builder's
        // own patterns. Each keeps its name; the builder's tensors become "<name>~k".
        //   loss = Mul(x, w) [2]   "grad:w" = Relu(loss)   "R:loss" = Neg("grad:w") (an output too)
        GraphSpec s;
        s.value("x", {2}, ValueKind::Input);
        s.value("w", {2}, ValueKind::Parameter);
        s.value("loss", {2});
        s.value("grad:w", {2});
        s.value("R:loss", {2});
        s.value("loss~1", {2});
        s.outputs = {s.find("loss"), s.find("R:loss"), s.find("loss~1")};
        s.node("Mul", {"x", "w"}, {"loss"}, "mul");
        s.node("Relu", {"loss"}, {"grad:w"}, "relu");
        s.node("Neg", {"grad:w"}, {"R:loss"}, "neg");
        s.node("Sigmoid", {"grad:w"}, {"loss~1"}, "sig");
        const TrainingGraph g = buildOk(s);
        const training::Op *lossOp = nullptr;
        for (const training::Op &op : g.ops())
            if (op.phase == training::Phase::Loss)
                lossOp = &op;
        QVERIFY(lossOp);
        // the scalar loss: the file has "loss" and "loss~1", so the builder's is "loss~2"
        QCOMPARE(g.tensor(lossOp->outputs[0]).name, std::string("loss~2"));
        QCOMPARE(g.tensor(lossOp->outputs[0]).role, training::TensorRole::Loss);
        // the forward values keep their names and roles
        QCOMPARE(g.tensor(*g.findTensor("loss")).role, training::TensorRole::Activation);
        QCOMPARE(g.tensor(*g.findTensor("grad:w")).role, training::TensorRole::Activation);
        QCOMPARE(g.tensor(*g.findTensor("R:loss")).role, training::TensorRole::Activation);
        // the weight's gradient and the cotangent of output "loss" step aside
        QCOMPARE(names(g, opNamed(g, "mul/grad")->outputs), (Names{"grad:w~1"}));
        QCOMPARE(g.tensor(*g.findTensor("grad:w~1")).role, training::TensorRole::ParameterGrad);
        QCOMPARE(g.tensor(*g.findTensor("R:loss~1")).role, training::TensorRole::Constant);
        // the optimizer finds the weight's gradient by what it is, not by "grad:" + name
        training::TrainingOptions o;
        o.optimizer = training::Optimizer::Adam;
        auto withAdam = training::applyTrainingOptions(g, o);
        QVERIFY2(withAdam.hasValue(), withAdam.status().message().c_str());
        const training::Op *update = opNamed(*withAdam, "optimizer/w");
        QVERIFY(update);
        QCOMPARE(withAdam->tensor(update->inputs[1]).name, std::string("grad:w~1"));
    }

    void noFloatOutputIsAnError()
    {
        GraphSpec s;
        s.value("x", {2}, ValueKind::Input);
        s.value("y", {2}, ValueKind::Intermediate, DataType::Bool);
        s.outputs = {s.find("y")};
        s.node("Not", {"x"}, {"y"});
        auto g = s.build();
        QVERIFY(g.hasValue());
        QVERIFY(!training::buildTrainingGraph(*g).hasValue());
    }
};

QTEST_GUILESS_MAIN(TstGradientRules)
#include "tst_gradient_rules.moc"
