// The CUDA fused attention's tiled algorithm (gpu/kernels/attention_tile.h: the very tile steps
// gpu/kernels/attention.cu runs, here called block by block on the CPU) against the CPU reference
// backend's ScaledDotProductAttention kernels (core/exec/cpu/kernels_attention.cpp, whose
// gradients tst_attention_execution shows equal to the unfused MatMul / Softmax / MatMul graph's).
// Random Q, K, V (and bias, mask, dO) with sequence lengths that are no multiple of the 32-row
// tiles: causal, additive bias broadcast over heads, boolean masks, grouped-query K / V, K^T, the
// [B, S, heads * D] layout. Expected: O, the log-sum-exp, dQ, dK, dV and dBias within 2e-5 of the
// reference's largest magnitude (float tiles against double rows), and the covered / refused cases
// as gpu/attention_plan.h says.
#include "core/exec/cpu/kernel.h"
#include "core/exec/host_tensor.h"
#include "core/ir/graph.h"
#include "core/ops/attention.h"
#include "gpu/attention_plan.h"

#include <QTest>

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

using namespace remat;
using namespace remat::core;
using exec::HostTensor;
using exec::cpu::KView;
namespace attn = gpu::kernels::attn;

namespace {

HostTensor randn(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(0, 1);
    HostTensor t = HostTensor::zeros(ir::DataType::Float, std::move(shape));
    for (float &v : t.floats())
        v = float(dist(rng) * scale);
    return t;
}

/// A boolean mask, true with probability `keep`; the first column always true so no row is
/// masked out entirely (the unfused graph gives NaN there).
HostTensor randomMask(std::vector<int64_t> shape, uint64_t seed, double keep)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(0, 1);
    HostTensor t = HostTensor::zeros(ir::DataType::Bool, shape);
    const int64_t cols = shape.back();
    for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = std::byte(int64_t(i) % cols == 0 || uni(rng) < keep ? 1 : 0);
    return t;
}

KView view(HostTensor &t) { return KView{t.data.data(), t.dtype, t.shape}; }

ir::Attribute attr(std::string name, ir::Attribute::Payload p)
{
    return {std::move(name), std::move(p)};
}

struct Case
{
    std::vector<ir::Attribute> attrs;
    std::vector<std::optional<HostTensor>> inputs; // Q, K, V, bias, mask
};

/// max |a - b| over max |b| (or 1e-30).
double scaledDiff(const float *a, const float *b, size_t n)
{
    double diff = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
        diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
        ref = std::max(ref, std::abs(double(b[i])));
    }
    return diff / std::max(ref, 1e-30);
}

struct Figures
{
    double o = 0, lse = 0, dq = 0, dk = 0, dv = 0, dbias = 0;
};

Expected<Figures> compareWithReference(Case &cs)
{
    ir::Node node;
    node.opType = ops::kAttentionOp;
    node.name = "attention";
    node.attributes = cs.attrs;
    std::vector<std::vector<int64_t>> shapes(6);
    for (size_t k = 0; k < cs.inputs.size(); ++k)
        if (cs.inputs[k])
            shapes[k] = cs.inputs[k]->shape;
    REMAT_ASSIGN_OR_RETURN(ops::AttentionGeometry g, ops::attentionGeometry(node, shapes));
    gpu::AttentionPlan plan = gpu::planAttention(g);
    if (!plan.refusal.empty())
        return makeError(StatusCode::Unsupported, plan.refusal);

    // the CPU reference: forward, then backward with a random dO
    HostTensor o = HostTensor::zeros(ir::DataType::Float, g.outShape()),
               lse = HostTensor::zeros(ir::DataType::Float, g.lseShape());
    HostTensor dO = randn(g.outShape(), 99);
    std::vector<KView> iv(cs.inputs.size());
    KView ov = view(o), lv = view(lse), dov = view(dO);
    exec::cpu::KernelContext fc;
    fc.node = &node;
    fc.opName = "attention";
    for (size_t k = 0; k < cs.inputs.size(); ++k) {
        fc.in.push_back(cs.inputs[k] ? &(iv[k] = view(*cs.inputs[k])) : nullptr);
        fc.inShapes.push_back(shapes[k]);
    }
    fc.out = {&ov, &lv};
    REMAT_RETURN_IF_ERROR((*exec::cpu::findCpuKernel(ops::kAttentionOp))(fc));
    std::vector<HostTensor> grads(4);
    std::vector<KView> gv(4);
    exec::cpu::KernelContext bc = fc;
    bc.dOut = {&dov, nullptr};
    for (size_t k = 0; k < 4; ++k) {
        bc.dIn.push_back(nullptr);
        if (k < cs.inputs.size() && cs.inputs[k]) {
            grads[k] = HostTensor::zeros(ir::DataType::Float, shapes[k]);
            bc.dIn[k] = &(gv[k] = view(grads[k]));
        }
    }
    REMAT_RETURN_IF_ERROR((*exec::cpu::findCpuKernel(std::string(ops::kAttentionOp) + "Grad"))(bc));

    // the tiled algorithm
    const float *q = cs.inputs[0]->floats().data(), *k = cs.inputs[1]->floats().data(),
                *v = cs.inputs[2]->floats().data();
    const float *bias = plan.hasBias ? cs.inputs[3]->floats().data() : nullptr;
    const bool *mask =
        plan.hasMask ? reinterpret_cast<const bool *>(cs.inputs[4]->data.data()) : nullptr;
    std::vector<float> smem(size_t(
        std::max(attn::forwardSharedFloats(g.d, g.dv), attn::backwardSharedFloats(g.d, g.dv))));
    HostTensor to = HostTensor::zeros(ir::DataType::Float, g.outShape()),
               tl = HostTensor::zeros(ir::DataType::Float, g.lseShape());
    attn::forwardTiled(plan.problem, q, k, v, bias, mask, to.floats().data(), tl.floats().data(),
                       smem.data());
    std::vector<float> delta(size_t(g.batches * g.sq));
    std::vector<std::vector<float>> tg(4);
    for (size_t j = 0; j < 4; ++j)
        if (j < cs.inputs.size() && cs.inputs[j])
            tg[j].assign(size_t(cs.inputs[j]->numElements()), 0.f);
    attn::backwardTiled(plan.problem, q, k, v, bias, mask, to.floats().data(), dO.floats().data(),
                        tl.floats().data(), delta.data(), tg[0].data(), tg[1].data(), tg[2].data(),
                        plan.hasBias ? tg[3].data() : nullptr, smem.data());
    Figures f;
    f.o = scaledDiff(to.floats().data(), o.floats().data(), size_t(o.numElements()));
    f.lse = scaledDiff(tl.floats().data(), lse.floats().data(), size_t(lse.numElements()));
    f.dq = scaledDiff(tg[0].data(), grads[0].floats().data(), tg[0].size());
    f.dk = scaledDiff(tg[1].data(), grads[1].floats().data(), tg[1].size());
    f.dv = scaledDiff(tg[2].data(), grads[2].floats().data(), tg[2].size());
    if (plan.hasBias)
        f.dbias = scaledDiff(tg[3].data(), grads[3].floats().data(), tg[3].size());
    return f;
}

using V = std::vector<int64_t>;
using D = std::vector<double>;

} // namespace

class TstAttentionTiles : public QObject
{
    Q_OBJECT

private slots:
    void tiledMatchesReference_data()
    {
        QTest::addColumn<int>("which");
        QTest::newRow("causal, S 37 (GPT-2 style)") << 0;
        QTest::newRow("grouped-query 8 over 2, Sq 45 Sk 70, bias over heads, mask") << 1;
        QTest::newRow("K transposed, Sq 33 Sk 50, finfo.min causal") << 2;
        QTest::newRow("[B, S, heads x D] grouped, [1, H, S, S] bias, causal, S 40") << 3;
        QTest::newRow("padding mask [B, 1, 1, Sk], keep-false, Sq 1") << 4;
        QTest::newRow("single tile S 5, bias [Sq, Sk] after scale") << 5;
    }

    void tiledMatchesReference()
    {
        QFETCH(int, which);
        const float ninf = -INFINITY;
        Case cs;
        switch (which) {
        case 0:
            cs.attrs = {attr("logit_ops", V{1, 5}), attr("logit_values", D{0.25, double(ninf)})};
            cs.inputs = {randn({2, 3, 37, 16}, 1), randn({2, 3, 37, 16}, 2),
                         randn({2, 3, 37, 16}, 3)};
            break;
        case 1:
            cs.attrs = {attr("logit_ops", V{1, 2, 3}), attr("logit_values", D{0.35, 0.0, -1e4})};
            cs.inputs = {randn({1, 8, 45, 8}, 4), randn({1, 2, 70, 8}, 5), randn({1, 2, 70, 12}, 6),
                         randn({1, 1, 45, 70}, 7, 0.5), randomMask({45, 70}, 8, 0.7)};
            break;
        case 2:
            cs.attrs = {attr("k_transposed", int64_t(1)), attr("logit_ops", V{1, 5}),
                        attr("logit_values", D{0.3, -3.4028234663852886e38})};
            cs.inputs = {randn({2, 2, 33, 8}, 9), randn({2, 2, 8, 50}, 10),
                         randn({2, 2, 50, 8}, 11)};
            break;
        case 3:
            cs.attrs = {attr("logit_ops", V{1, 2, 5}), attr("logit_values", D{0.4, 0.0, -1e4}),
                        attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))};
            cs.inputs = {randn({2, 40, 32}, 12), randn({2, 40, 16}, 13), randn({2, 40, 12}, 14),
                         randn({1, 4, 40, 40}, 15, 0.5)};
            break;
        case 4:
            cs.attrs = {attr("logit_ops", V{1, 4}), attr("logit_values", D{0.5, -1e9})};
            {
                HostTensor m = randomMask({2, 1, 1, 66}, 19, 0.6);
                for (size_t i = 0; i < m.data.size(); ++i) // keep-false: false keeps
                    m.data[i] = std::byte(m.data[i] == std::byte(0) ? 1 : 0);
                cs.inputs = {randn({2, 3, 1, 8}, 16), randn({2, 3, 66, 8}, 17),
                             randn({2, 3, 66, 8}, 18), std::nullopt, m};
            }
            break;
        default:
            cs.attrs = {attr("logit_ops", V{1, 2}), attr("logit_values", D{0.5, 0.0})};
            cs.inputs = {randn({3, 5, 4}, 20), randn({3, 5, 4}, 21), randn({3, 5, 6}, 22),
                         randn({5, 5}, 23)};
            break;
        }
        auto f = compareWithReference(cs);
        QVERIFY2(f, f.status().toString().c_str());
        std::printf(
            "max |tiled - reference| / max |reference|: O %.2e, lse %.2e, dQ %.2e, dK %.2e, "
            "dV %.2e, dBias %.2e\n",
            f->o, f->lse, f->dq, f->dk, f->dv, f->dbias);
        for (double d : {f->o, f->lse, f->dq, f->dk, f->dv, f->dbias})
            QVERIFY2(d < 2e-5, qPrintable(QString("difference %1").arg(d)));
    }

    /// The cases the CUDA kernels do not run say so, with the way out.
    void refusalsNameTheWayOut()
    {
        ir::Node node;
        node.opType = ops::kAttentionOp;
        node.attributes = {attr("logit_ops", V{1}), attr("logit_values", D{0.5}),
                           attr("dropout", 0.1)};
        auto g =
            ops::attentionGeometry(node, {{1, 2, 5, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}, {}, {}, {}});
        QVERIFY2(g, g.status().toString().c_str());
        const gpu::AttentionPlan plan = gpu::planAttention(*g);
        QVERIFY(plan.refusal.find("dropout") != std::string::npos);
        QVERIFY(plan.refusal.find("--attention eager") != std::string::npos);
        node.attributes.back() = attr("dropout", 0.0);
        auto covered = ops::attentionGeometry(node, {{1, 2, 5, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}});
        QVERIFY2(covered, covered.status().toString().c_str());
        QVERIFY(gpu::planAttention(*covered).refusal.empty());
    }
};

QTEST_MAIN(TstAttentionTiles)
#include "tst_attention_tiles.moc"
