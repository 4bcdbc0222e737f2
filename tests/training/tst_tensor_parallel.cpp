// --tensor-parallel / --sequence-parallel (core/training/tensor_parallel.h): a GPT layer written
// exactly as Korthikanti et al. 2022 assume it (fp16, eager attention with dropout, biases, GELU,
// layer norms, dropout after attention and MLP) keeps per layer sbh(34 + 5as/h) bytes without
// tensor parallelism, sbh(10 + 24/t + 5as/(ht)) with t ranks and sbh(34/t + 5as/(ht)) with
// sequence parallelism (plus the layer norms' float statistics, which the paper leaves out);
// weights split as Megatron-LM splits them; bad input gets clear errors.
#include "common/mini_graph.h"
#include "common/test_support.h"

#include "core/onnx/decoder_model.h"
#include "core/onnx/importer.h"
#include "core/training/apply_training_options.h"
#include "core/training/builder.h"

#include <QTemporaryDir>
#include <QtTest>

#include <array>

using namespace remat;
using namespace remat::core;
using remat::tests::attrFloat;
using remat::tests::attrInt;
using remat::tests::attrInts;
using remat::tests::MiniGraph;

namespace {

struct Dims
{
    int64_t s = 16, b = 2, h = 32, a = 4, kvHeads = 4;
};

ValueId dropout(MiniGraph &g, ValueId x, std::vector<int64_t> shape, int n)
{
    const ValueId ratio = g.constFloats("ratio" + std::to_string(n), {0.1f});
    const uint8_t on = 1;
    const ValueId train = g.constant("train" + std::to_string(n), ir::DataType::Bool, {}, &on, 1);
    return g.op("Dropout", {x, ratio, train}, shape, {}, {{shape, ir::DataType::Bool}});
}

/// `layers` GPT layers (Korthikanti et al. 2022, figure 4 / section 4.1): x [b, s, h].
ir::Graph gpt(int layers, const Dims &d)
{
    MiniGraph g;
    const int64_t s = d.s, b = d.b, h = d.h, a = d.a, dh = h / a, kv = d.kvHeads * dh;
    ValueId x = g.input("x", {b, s, h});
    const ValueId heads = g.constInts("heads", {b, s, a, dh});
    const ValueId kvShape = g.constInts("kv_heads", {b, s, d.kvHeads, dh});
    const ValueId flat = g.constInts("flat", {b, s, h});
    int n = 0;
    auto linear = [&](ValueId in, int64_t k, int64_t out, const std::string &name) {
        const ValueId w = g.param(name + ".weight", {k, out});
        const ValueId bias = g.param(name + ".bias", {out});
        const ValueId y = g.op("MatMul", {in, w}, {b, s, out});
        return g.op("Add", {y, bias}, {b, s, out});
    };
    auto layerNorm = [&](ValueId in, const std::string &name) {
        return g.op("LayerNormalization",
                    {in, g.param(name + ".weight", {h}), g.param(name + ".bias", {h})}, {b, s, h},
                    {attrInt("axis", -1)});
    };
    for (int l = 0; l < layers; ++l) {
        const std::string p = "l" + std::to_string(l);
        const ValueId ln1 = layerNorm(x, p + ".ln1");
        const ValueId q = linear(ln1, h, h, p + ".q");
        const ValueId k = linear(ln1, h, kv, p + ".k");
        const ValueId v = linear(ln1, h, kv, p + ".v");
        const ValueId q4 = g.op("Transpose", {g.op("Reshape", {q, heads}, {b, s, a, dh})},
                                {b, a, s, dh}, {attrInts("perm", {0, 2, 1, 3})});
        const ValueId kT = g.op("Transpose", {g.op("Reshape", {k, kvShape}, {b, s, d.kvHeads, dh})},
                                {b, d.kvHeads, dh, s}, {attrInts("perm", {0, 2, 3, 1})});
        const ValueId v4 = g.op("Transpose", {g.op("Reshape", {v, kvShape}, {b, s, d.kvHeads, dh})},
                                {b, d.kvHeads, s, dh}, {attrInts("perm", {0, 2, 1, 3})});
        const ValueId scores = g.op("MatMul", {q4, kT}, {b, a, s, s});
        const ValueId probs = g.op("Softmax", {scores}, {b, a, s, s}, {attrInt("axis", -1)});
        const ValueId dropped = dropout(g, probs, {b, a, s, s}, n++);
        const ValueId ctx = g.op("MatMul", {dropped, v4}, {b, a, s, dh});
        const ValueId merged =
            g.op("Reshape",
                 {g.op("Transpose", {ctx}, {b, s, a, dh}, {attrInts("perm", {0, 2, 1, 3})}), flat},
                 {b, s, h});
        const ValueId attn = dropout(g, linear(merged, h, h, p + ".out"), {b, s, h}, n++);
        const ValueId r1 = g.op("Add", {x, attn}, {b, s, h});
        const ValueId up = linear(layerNorm(r1, p + ".ln2"), h, 4 * h, p + ".fc1");
        const ValueId act = g.op("Gelu", {up}, {b, s, 4 * h});
        const ValueId down = dropout(g, linear(act, 4 * h, h, p + ".fc2"), {b, s, h}, n++);
        x = g.op("Add", {r1, down}, {b, s, h});
    }
    auto built = g.build({x});
    if (!built)
        qFatal("%s", built.status().toString().c_str());
    return std::move(*built);
}

Expected<training::TrainingGraph> trained(const ir::Graph &g, int64_t t, bool sp)
{
    auto tg = training::buildTrainingGraph(g, {});
    if (!tg)
        return tg.status();
    training::TrainingOptions o;
    o.precision = training::Precision::Fp16Master;
    o.tensorParallel = t;
    o.sequenceParallel = sp;
    return training::applyTrainingOptions(*tg, o);
}

/// Saved-for-backward bytes of one layer: 3 layers minus 2 (the middle layer's input is an
/// activation, as in a deep stack).
int64_t perLayer(const Dims &d, int64_t t, bool sp)
{
    const ir::Graph g3 = gpt(3, d), g2 = gpt(2, d);
    auto a = trained(g3, t, sp);
    auto b = trained(g2, t, sp);
    if (!a || !b)
        qFatal("%s", (!a ? a.status() : b.status()).toString().c_str());
    return training::summarize(*a, &g3).savedForBackwardBytes -
           training::summarize(*b, &g2).savedForBackwardBytes;
}

/// Bytes of sbh * (coef) for whole-number coefficients times 1/t: (num / den) sbh exactly.
int64_t sbh(const Dims &d, int64_t num, int64_t den) { return d.s * d.b * d.h * num / den; }

} // namespace

class TstTensorParallel : public QObject
{
    Q_OBJECT

private slots:
    void korthikantiPerLayer_data()
    {
        QTest::addColumn<int64_t>("t");
        QTest::addColumn<bool>("sp");
        QTest::addColumn<int64_t>("s");
        QTest::addColumn<int64_t>("b");
        QTest::addColumn<int64_t>("h");
        QTest::addColumn<int64_t>("a");
        for (const auto &[s, b, h, a] : {std::array<int64_t, 4>{16, 2, 32, 4}, {24, 1, 64, 8}})
            for (int64_t t : {int64_t(1), int64_t(2), int64_t(4), int64_t(8)})
                for (bool sp : {false, true}) {
                    if ((sp && t == 1) || a % t != 0)
                        continue;
                    const std::string name = "s" + std::to_string(s) + " b" + std::to_string(b) +
                                             " h" + std::to_string(h) + " a" + std::to_string(a) +
                                             " t" + std::to_string(t) + (sp ? " sp" : "");
                    QTest::newRow(name.c_str()) << t << sp << s << b << h << a;
                }
    }
    void korthikantiPerLayer()
    {
        QFETCH(int64_t, t);
        QFETCH(bool, sp);
        QFETCH(int64_t, s);
        QFETCH(int64_t, b);
        QFETCH(int64_t, h);
        QFETCH(int64_t, a);
        const Dims d{s, b, h, a, a};
        const int64_t measured = perLayer(d, t, sp);
        // the paper's formula, in bytes: 5as/h sbh = 5 a s^2 b
        const int64_t attention = 5 * d.a * d.s * d.s * d.b / t;
        const int64_t paper =
            sp ? sbh(d, 34, t) + attention : sbh(d, 10, 1) + sbh(d, 24, t) + attention;
        // what the paper leaves out: each layer norm's mean and inverse std (fp16, one per row),
        // replicated without sequence parallelism, split along the sequence with it
        const int64_t lnStats = 2 * 2 * d.s * d.b * 2 / (sp ? t : 1);
        qInfo("s %lld b %lld h %lld a %lld, t=%lld%s: measured %lld bytes, paper %lld (+ %lld "
              "layer-norm statistics)",
              (long long)s, (long long)b, (long long)h, (long long)a, (long long)t, sp ? " sp" : "",
              (long long)measured, (long long)paper, (long long)lnStats);
        QCOMPARE(measured, paper + lnStats);
    }

    /// Megatron's weight split: QKV, FFN up and out / FFN down weights split over t; their biases
    /// split for column-parallel linears only; layer norm weights replicated.
    void weightsSplitAsMegatron()
    {
        const Dims d;
        const ir::Graph g = gpt(1, d);
        auto one = trained(g, 1, false);
        auto four = trained(g, 4, false);
        QVERIFY2(one && four, "build");
        auto bytes = [](const training::TrainingGraph &tg, const std::string &name) {
            const TensorId *id = tg.findTensor(name);
            return id ? tg.tensor(*id).bytes : int64_t(-1);
        };
        for (const char *w : {"l0.q.weight", "l0.k.weight", "l0.v.weight", "l0.out.weight",
                              "l0.fc1.weight", "l0.fc2.weight", "l0.q.bias", "l0.fc1.bias"})
            QCOMPARE(bytes(*four, w) * 4, bytes(*one, w));
        for (const char *w : {"l0.out.bias", "l0.fc2.bias", "l0.ln1.weight", "l0.ln2.bias"})
            QCOMPARE(bytes(*four, w), bytes(*one, w));
        // the parameter gradient follows its parameter
        QCOMPARE(bytes(*four, "grad:l0.fc1.weight") * 4, bytes(*one, "grad:l0.fc1.weight"));
        const TensorId *fc1 = four->findTensor("l0.fc1.weight");
        QCOMPARE(four->tensor(*fc1).shape.sizes(), (std::vector<int64_t>{d.h, d.h}));
        const TensorId *fc2 = four->findTensor("l0.fc2.weight");
        QCOMPARE(four->tensor(*fc2).shape.sizes(), (std::vector<int64_t>{d.h, d.h}));
    }

    /// Sequence parallelism's all-gather / reduce-scatter buffers: the column-parallel linears'
    /// gathered input and the row-parallel linears' full output are the ops' workspace.
    void sequenceParallelCountsCommunication()
    {
        const Dims d;
        const ir::Graph g = gpt(1, d);
        auto tp = trained(g, 2, false);
        auto sp = trained(g, 2, true);
        QVERIFY2(tp && sp, "build");
        const int64_t full = d.b * d.s * d.h * 2; // fp16 [b, s, h]
        int columns = 0, rows = 0;
        for (size_t i = 0; i < sp->forwardOpCount(); ++i) {
            const training::Op &a = tp->ops()[i], &b = sp->ops()[i];
            if (a.type != "MatMul" ||
                sp->tensor(b.inputs[1]).role != training::TensorRole::Parameter)
                continue;
            const int64_t extra = b.workspaceBytes - a.workspaceBytes;
            const bool row = sp->tensor(b.inputs[0]).name.find("Reshape") != std::string::npos ||
                             sp->tensor(b.inputs[1]).name.find("fc2") != std::string::npos;
            QCOMPARE(extra, full);
            (row ? rows : columns)++;
            const OpId bwd = sp->backwardOf(b.id);
            QCOMPARE(sp->op(bwd).workspaceBytes - tp->op(bwd).workspaceBytes,
                     row ? full : 2 * full);
        }
        QCOMPARE(columns, 4); // q, k, v, fc1
        QCOMPARE(rows, 2);    // out, fc2
        // without sequence parallelism the all-reduces are in place: no extra bytes
        auto none = trained(g, 1, false);
        for (size_t i = 0; i < tp->forwardOpCount(); ++i)
            QCOMPARE(tp->ops()[i].workspaceBytes, none->ops()[i].workspaceBytes);
    }

    void headsMustDivide()
    {
        Dims d;
        d.a = 4;
        d.kvHeads = 2; // grouped-query: 4 query heads, 2 K/V heads
        const ir::Graph g = gpt(1, d);
        QVERIFY(trained(g, 2, false));
        auto three = trained(g, 3, false);
        QVERIFY(!three);
        QVERIFY2(three.status().message().find("--tensor-parallel 3") != std::string::npos &&
                     three.status().message().find("one of 1, 2") != std::string::npos,
                 three.status().message().c_str());
        auto four = trained(g, 4, false); // divides the 4 query heads, not the 2 K/V heads
        QVERIFY(!four);
        QVERIFY2(four.status().message().find("2 heads") != std::string::npos,
                 four.status().message().c_str());
    }

    /// A LLaMA-style decoder as `remat make-decoder` writes it (RMSNorm, rotary, 8 query heads and
    /// 2 K/V heads with repeat_kv, SwiGLU, untied LM head): q / k / v / gate / up / down / o and
    /// the LM head split, the norms replicated, the embedding vocabulary-parallel; t = 4 does not
    /// divide the 2 K/V heads; sdpa reads the same.
    void decoderFromConfig()
    {
        onnx::DecoderSpec spec;
        spec.layers = 2;
        spec.hidden = 64;
        spec.heads = 8;
        spec.kvHeads = 2;
        spec.ffn = 96;
        spec.vocab = 100;
        spec.seq = 16;
        spec.batch = 2;
        QTemporaryDir dir;
        const std::string path = tests::toStd(dir.path()) + "/llama.onnx";
        const Status written = onnx::writeDecoderModel(spec, path);
        QVERIFY2(written.isOk(), written.toString().c_str());
        auto g = onnx::importModel(path);
        QVERIFY2(g, g.status().toString().c_str());
        for (training::Attention mode : {training::Attention::Eager, training::Attention::Sdpa}) {
            auto built = training::buildTrainingGraph(*g, {.attention = mode});
            QVERIFY2(built, built.status().toString().c_str());
            training::TrainingOptions o;
            o.precision = training::Precision::Bf16Master;
            auto one = training::applyTrainingOptions(*built, o);
            o.tensorParallel = 2;
            auto two = training::applyTrainingOptions(*built, o);
            QVERIFY2(one && two, (!one ? one.status() : two.status()).toString().c_str());
            auto bytes = [](const training::TrainingGraph &tg, const std::string &name) {
                const TensorId *id = tg.findTensor(name);
                return id ? tg.tensor(*id).bytes : int64_t(-1);
            };
            int splitCount = 0, replicated = 0;
            for (const training::Tensor &t : one->tensors()) {
                if (t.role != training::TensorRole::Parameter)
                    continue;
                const bool norm = t.name.find("norm") != std::string::npos;
                const int64_t share = bytes(*two, t.name);
                QVERIFY2(share == (norm ? t.bytes : t.bytes / 2), t.name.c_str());
                (norm ? replicated : splitCount)++;
            }
            // 7 linears per layer, the embedding and the LM head; 2 norms per layer and the final
            QCOMPARE(splitCount, 2 * 7 + 2);
            QCOMPARE(replicated, 2 * 2 + 1);
            o.tensorParallel = 4;
            auto four = training::applyTrainingOptions(*built, o);
            QVERIFY(!four);
            QVERIFY2(four.status().message().find("2 ") != std::string::npos &&
                         four.status().message().find("one of 1, 2") != std::string::npos,
                     four.status().message().c_str());
            // the activations: every split region shrinks, so a rank keeps well under the whole
            const int64_t whole = training::summarize(*one, &*g).savedForBackwardBytes;
            const int64_t rank = training::summarize(*two, &*g).savedForBackwardBytes;
            QVERIFY(rank < whole && rank > whole / 2);
            o.tensorParallel = 2;
            o.sequenceParallel = true;
            auto sp = training::applyTrainingOptions(*built, o);
            QVERIFY(sp);
            const int64_t spRank = training::summarize(*sp, &*g).savedForBackwardBytes;
            qInfo("decoder %s: saved %lld bytes, t=2 %lld, t=2 sp %lld; t=4: %s",
                  training::attentionName(mode), (long long)whole, (long long)rank,
                  (long long)spRank, four.status().message().c_str());
            QVERIFY2(spRank <= (whole + 1) / 2 + 64, qPrintable(QString::number(spRank)));
        }
    }

    void badOptions()
    {
        training::TrainingOptions o;
        o.tensorParallel = 0;
        Status s = training::validateTrainingOptions(o);
        QVERIFY(!s.isOk());
        QVERIFY2(s.message().find("--tensor-parallel 0") != std::string::npos, s.message().c_str());
        o.tensorParallel = 1;
        o.sequenceParallel = true;
        s = training::validateTrainingOptions(o);
        QVERIFY(!s.isOk());
        QVERIFY2(s.message().find("--sequence-parallel") != std::string::npos &&
                     s.message().find("--tensor-parallel N") != std::string::npos,
                 s.message().c_str());
        o.tensorParallel = 2;
        QVERIFY(training::validateTrainingOptions(o).isOk());
        QVERIFY(!o.executable());
    }
};

QTEST_APPLESS_MAIN(TstTensorParallel)
#include "tst_tensor_parallel.moc"
