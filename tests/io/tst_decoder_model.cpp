// remat make-decoder's pieces: a Hugging Face config.json read as a decoder (core/io/hf_config.h)
// and written as a graph-only ONNX (core/onnx/decoder_model.h) that imports, trains and fuses its
// attention like a real export; the parameter count is the config's, by hand; bad configs are
// named.
#include "common/test_support.h"

#include "core/io/hf_config.h"
#include "core/onnx/decoder_model.h"
#include "core/onnx/importer.h"
#include "core/ops/attention.h"
#include "core/training/builder.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

using namespace remat;
using namespace remat::core;

namespace {

int64_t parameterElements(const ir::Graph &g)
{
    int64_t n = 0;
    for (const ir::Value &v : g.values())
        if (v.kind == ir::ValueKind::Parameter)
            n += *v.shape.numElements();
    return n;
}

std::string readFile(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace

class TstDecoderModel : public QObject
{
    Q_OBJECT

private slots:
    /// A LLaMA-style config (GQA 4 / 2 heads, SwiGLU, RMSNorm, rotary, untied): the file imports,
    /// its parameters are the config's (hand count below), sdpa fuses one attention per layer.
    void llamaConfigBuildsAndFuses()
    {
        const std::string cfg = R"({"model_type": "llama", "num_hidden_layers": 3,
            "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "intermediate_size": 160, "hidden_act": "silu", "vocab_size": 100,
            "rms_norm_eps": 1e-5, "max_position_embeddings": 128, "tie_word_embeddings": false})";
        auto spec = io::decoderSpecFromConfig(cfg, "config.json");
        QVERIFY2(spec, spec.status().toString().c_str());
        QVERIFY(spec->swiglu && spec->rmsNorm && spec->rope && !spec->tieEmbeddings);
        spec->seq = 16;
        spec->batch = 2;
        QTemporaryDir dir;
        const std::string path = tests::toStd(dir.path()) + "/llama.onnx";
        const Status written = onnx::writeDecoderModel(*spec, path);
        QVERIFY2(written.isOk(), written.toString().c_str());
        auto g = onnx::importModel(path);
        QVERIFY2(g, g.status().toString().c_str());
        const int64_t L = 3, d = 64, H = 4, KV = 2, dh = 16, f = 160, V = 100;
        const int64_t perLayer = 2 * d + d * H * dh + 2 * d * KV * dh + H * dh * d + 3 * d * f;
        QCOMPARE(parameterElements(*g), V * d + L * perLayer + d + V * d);
        training::BuildOptions o;
        o.attention = training::Attention::Sdpa;
        auto tg = training::buildTrainingGraph(*g, o);
        QVERIFY2(tg, tg.status().toString().c_str());
        QCOMPARE(tg->info().fusedPatterns.size(), size_t(L));
        QVERIFY(tg->info().notFused.empty());
        // K and V stay at their own 2 heads
        for (const training::Op &op : tg->ops())
            if (op.type == ops::kAttentionOp)
                QCOMPARE(tg->tensor(op.inputs[1]).shape.sizes(),
                         (std::vector<int64_t>{2, KV, 16, dh}));
    }

    /// The shipped configs (resources/configs) all read; GPT-2's keys are its own (n_layer ...).
    void shippedConfigsRead()
    {
        for (const char *name : {"llama-3-8b", "mistral-7b", "gpt2", "qwen2-0.5b"}) {
            const std::string path =
                tests::toStd(tests::sourceDir()) + "/resources/configs/" + name + ".json";
            auto spec = io::decoderSpecFromConfig(readFile(path), path);
            QVERIFY2(spec, spec.status().toString().c_str());
        }
        const std::string gpt2 = tests::toStd(tests::sourceDir()) + "/resources/configs/gpt2.json";
        auto s = io::decoderSpecFromConfig(readFile(gpt2), gpt2);
        QVERIFY(s);
        QCOMPARE(s->layers, int64_t(12));
        QCOMPARE(s->hidden, int64_t(768));
        QVERIFY(!s->rope && !s->rmsNorm && !s->swiglu && s->geluTanh && s->tieEmbeddings);
        // GPT-2 at a small size: imports and trains, with its tied head
        s->layers = 2;
        s->hidden = 64;
        s->heads = s->kvHeads = 4;
        s->ffn = 256;
        s->vocab = 50;
        s->seq = 8;
        QTemporaryDir dir;
        const std::string path = tests::toStd(dir.path()) + "/gpt2.onnx";
        QVERIFY(onnx::writeDecoderModel(*s, path).isOk());
        auto g = onnx::importModel(path);
        QVERIFY2(g, g.status().toString().c_str());
        training::BuildOptions o;
        o.attention = training::Attention::Sdpa;
        auto tg = training::buildTrainingGraph(*g, o);
        QVERIFY2(tg, tg.status().toString().c_str());
        QCOMPARE(tg->info().fusedPatterns.size(), size_t(2));
    }

    void badConfigsAreNamed_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing layers")
            << R"({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})"
            << "missing \"num_hidden_layers\"";
        QTest::newRow("heads not dividing hidden")
            << R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 5,
                  "vocab_size": 10})"
            << "hidden_size 64 is not a multiple of num_attention_heads 5";
        QTest::newRow("kv heads not dividing heads")
            << R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 3, "vocab_size": 10})"
            << "num_key_value_heads 3 does not divide num_attention_heads 4";
        QTest::newRow("not json") << "{"
                                  << "not a JSON object";
        QTest::newRow("unknown activation")
            << R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "vocab_size": 10, "hidden_act": "relu2"})"
            << "hidden_act \"relu2\" is not supported";
        QTest::newRow("negative size")
            << R"({"num_hidden_layers": -2, "hidden_size": 64, "num_attention_heads": 4,
                  "vocab_size": 10})"
            << "\"num_hidden_layers\" must be a positive whole number";
    }

    void badConfigsAreNamed()
    {
        QFETCH(QString, config);
        QFETCH(QString, expected);
        auto spec = io::decoderSpecFromConfig(config.toStdString(), "config.json");
        QVERIFY(!spec);
        QVERIFY2(spec.status().message().find(expected.toStdString()) != std::string::npos,
                 spec.status().message().c_str());
    }

    void learnedPositionsBoundTheSequence()
    {
        onnx::DecoderSpec s;
        s.modelType = "gpt2";
        s.layers = 1;
        s.hidden = 8;
        s.heads = s.kvHeads = 2;
        s.ffn = 32;
        s.vocab = 10;
        s.rope = false;
        s.swiglu = false;
        s.rmsNorm = false;
        s.maxPositions = 16;
        s.seq = 32;
        const Status st = onnx::validateDecoderSpec(s);
        QVERIFY(!st.isOk());
        QVERIFY2(st.message().find("longer than the 16 learned positions") != std::string::npos,
                 st.message().c_str());
    }
};

QTEST_MAIN(TstDecoderModel)
#include "tst_decoder_model.moc"
