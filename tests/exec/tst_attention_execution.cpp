// --attention sdpa on the CPU backend: the fused ScaledDotProductAttention computes the same loss
// and gradients as the MatMul / Softmax / MatMul graph it replaces (same weights, input and
// cotangent, fed by name), and the executor's measured peak equals the simulator's.
#include "exec/exec_test_util.h"

#include "core/ops/attention.h"

#include <QtTest>

using namespace remat;
using namespace remat::core;

namespace {

std::string dataPath(const char *file)
{
    return tests::toStd(tests::sourceDir()) + "/tests/data/attention/" + file;
}

struct Run
{
    exec::ExecResult result;
    int64_t predictedPeak = 0;
    exec::NpzArchive feed; ///< every preloaded tensor with a forward value, by name
};

Expected<Run> runStoreAll(const ir::Graph &g, training::Attention a, const exec::NpzArchive &feed)
{
    training::BuildOptions o;
    o.attention = a;
    o.inputGradients = false;
    REMAT_ASSIGN_OR_RETURN(training::TrainingGraph tg, training::buildTrainingGraph(g, o));
    auto backend = exec::makeCpuBackend();
    exec::Executor ex(*backend, tg, g);
    exec::ExecInputs in;
    in.feed = feed;
    REMAT_RETURN_IF_ERROR(ex.prepare(in));
    Run r;
    for (const training::Tensor &t : tg.tensors())
        if (t.preloaded && t.source.valid())
            if (const exec::HostTensor *h = ex.preloadedData(t.id))
                r.feed.set(t.name.rfind("R:", 0) == 0 ? t.name : g.value(t.source).name, *h);
    const schedule::Schedule s = schedule::storeAllSchedule(tg);
    REMAT_ASSIGN_OR_RETURN(r.result, ex.run(s, {}));
    const cost::Costs costs = cost::rooflineCosts(tg);
    REMAT_ASSIGN_OR_RETURN(sim::Timeline predicted, sim::simulate(s, tg, costs));
    r.predictedPeak = predicted.peakBytes;
    return r;
}

} // namespace

class TstAttentionExecution : public QObject
{
    Q_OBJECT

private slots:
    void sameGradientsAsUnfused_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("gpt2") << "gpt2_style.onnx";
        QTest::newRow("llama (grouped-query)") << "llama_style.onnx";
    }

    void sameGradientsAsUnfused()
    {
        QFETCH(QString, file);
        auto g = onnx::importModel(dataPath(file.toStdString().c_str()));
        QVERIFY2(g, g.status().toString().c_str());
        auto eager = runStoreAll(*g, training::Attention::Eager, {});
        QVERIFY2(eager, eager.status().toString().c_str());
        auto sdpa = runStoreAll(*g, training::Attention::Sdpa, eager->feed);
        QVERIFY2(sdpa, sdpa.status().toString().c_str());
        QCOMPARE(eager->result.measuredPeakBytes, eager->predictedPeak);
        QCOMPARE(sdpa->result.measuredPeakBytes, sdpa->predictedPeak);
        QVERIFY(sdpa->predictedPeak < eager->predictedPeak);
        QVERIFY2(
            std::abs(eager->result.loss - sdpa->result.loss) <=
                1e-5 * std::max(1.0, std::abs(eager->result.loss)),
            qPrintable(QString("loss %1 vs %2").arg(eager->result.loss).arg(sdpa->result.loss)));
        size_t compared = 0;
        for (const auto &[name, ref] : eager->result.gradients.entries()) {
            const exec::HostTensor *got = sdpa->result.gradients.find(name);
            // GPT-2's torch.full([], sqrt(d)) is read as a model tensor by the importer: eager
            // gives it a gradient, the fused op takes it as the constant it is
            if (!got && name.find("ConstantOfShape") != std::string::npos)
                continue;
            QVERIFY2(got, name.c_str());
            const double err = tests::relativeError(*got, ref);
            QVERIFY2(
                err < 1e-4,
                qPrintable(
                    QString("%1: relative error %2").arg(QString::fromStdString(name)).arg(err)));
            ++compared;
        }
        QVERIFY(compared > 10);
    }

    /// Each exporter's spelling (tests/python/attention_spellings.py) computes what the reference
    /// spelling (attention written out, K and V repeated, run eager) computes: same weights and
    /// input by name, loss and every gradient equal, measured peak = predicted, in either mode.
    /// The attention nodes (onnxruntime's MultiHeadAttention / GroupQueryAttention, ONNX
    /// Attention) have no unfused graph of their own: the reference is theirs.
    void spellingsMatchTheReference_data()
    {
        QTest::addColumn<QString>("style");
        QTest::addColumn<QString>("spelling");
        for (const char *style : {"gpt2", "llama"})
            for (const char *spelling : {"ref", "dynamo", "tf2onnx", "ort", "onnx23"})
                QTest::addRow("%s %s", style, spelling) << style << spelling;
        // com.microsoft Attention, the Q, K, V projection inside the node
        QTest::addRow("gpt2 ortattn") << "gpt2"
                                      << "ortattn";
        // TF GPT-2's multiplicative mask: not fused (a near miss), the same numbers
        QTest::addRow("gpt2 tf2onnx_mulmask") << "gpt2"
                                              << "tf2onnx_mulmask";
    }

    void spellingsMatchTheReference()
    {
        QFETCH(QString, style);
        QFETCH(QString, spelling);
        const std::string base = style.toStdString() + "_";
        auto ref = onnx::importModel(dataPath((base + "ref.onnx").c_str()));
        QVERIFY2(ref, ref.status().toString().c_str());
        auto g = onnx::importModel(dataPath((base + spelling.toStdString() + ".onnx").c_str()));
        QVERIFY2(g, g.status().toString().c_str());
        auto reference = runStoreAll(*ref, training::Attention::Eager, {});
        QVERIFY2(reference, reference.status().toString().c_str());
        // the weights, the input and the loss cotangent: the files' own constants (masks, rotary
        // tables) are theirs, and their generated names mean different things in different files
        exec::NpzArchive feed;
        for (const auto &[name, t] : reference->feed.entries()) {
            const auto id = ref->findValue(name);
            if (name.rfind("R:", 0) == 0 ||
                (id && (ref->value(*id).kind == ir::ValueKind::Parameter ||
                        ref->value(*id).kind == ir::ValueKind::Input)))
                feed.set(name, t);
        }
        for (training::Attention a : {training::Attention::Eager, training::Attention::Sdpa}) {
            auto run = runStoreAll(*g, a, feed);
            QVERIFY2(run, run.status().toString().c_str());
            QCOMPARE(run->result.measuredPeakBytes, run->predictedPeak);
            QVERIFY2(
                std::abs(reference->result.loss - run->result.loss) <=
                    1e-5 * std::max(1.0, std::abs(reference->result.loss)),
                qPrintable(
                    QString("loss %1 vs %2").arg(reference->result.loss).arg(run->result.loss)));
            size_t compared = 0;
            for (const auto &[name, want] : reference->result.gradients.entries()) {
                const exec::HostTensor *got = run->result.gradients.find(name);
                QVERIFY2(got, name.c_str());
                const double err = tests::relativeError(*got, want);
                QVERIFY2(err < 1e-4, qPrintable(QString("%1: relative error %2")
                                                    .arg(QString::fromStdString(name))
                                                    .arg(err)));
                ++compared;
            }
            QVERIFY(compared >= 18); // every parameter: GPT-2 24, LLaMA 18
        }
    }

    /// With attention dropout the fused op replays its mask from the saved RNG state: a store-all
    /// run's gradients equal a run that recomputes everything it can (finite differences of the
    /// op itself are in tst_kernel_gradients).
    void dropoutRuns()
    {
        auto g = onnx::importModel(dataPath("gpt2_style_dropout.onnx"));
        QVERIFY2(g, g.status().toString().c_str());
        auto sdpa = runStoreAll(*g, training::Attention::Sdpa, {});
        QVERIFY2(sdpa, sdpa.status().toString().c_str());
        QCOMPARE(sdpa->result.measuredPeakBytes, sdpa->predictedPeak);
        QVERIFY(std::isfinite(sdpa->result.loss));
    }
};

QTEST_MAIN(TstAttentionExecution)
#include "tst_attention_execution.moc"
