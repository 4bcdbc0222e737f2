// ScaledDotProductAttention (core/ops/attention.h), the builder's fused attention: computed unfused
// inside the kernel, one (batch, head) matrix at a time in double, so its gradients equal those of
// the MatMul / Softmax / MatMul graph it replaces to float rounding. The backward recomputes the
// probabilities from Q, K and the saved log-sum-exp, as flash attention does, and replays the
// dropout from the saved RNG state.
#include "core/exec/cpu/kernel_util.h"
#include "core/ops/attention.h"

#include <cmath>
#include <random>

namespace remat::core::exec::cpu {

namespace {

using ops::LogitOp;

Expected<ops::AttentionGeometry> geometryOf(const KernelContext &c)
{
    std::vector<std::vector<int64_t>> shapes(5);
    for (size_t k = 0; k < 5; ++k)
        if (const KView *v = c.input(k); v && (v->data || v->numel() == 0))
            shapes[k] = v->shape;
    if (!c.node)
        return c.error("no node attributes");
    auto g = ops::attentionGeometry(*c.node, shapes);
    if (!g)
        return c.error(g.status().message());
    return g;
}

/// The dropout keep decisions of the whole call, drawn in (batch, row, column) order from the seed:
/// the forward and the backward draw the same ones.
std::vector<char> keepMask(const ops::AttentionGeometry &g, uint64_t seed)
{
    std::vector<char> keep;
    if (g.dropout <= 0)
        return keep;
    keep.resize(size_t(g.batches * g.sq * g.sk));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    for (char &k : keep)
        k = uni(rng) >= g.dropout ? 1 : 0;
    return keep;
}

struct Inputs
{
    const float *q, *k, *v, *bias;
    const bool *mask;
    /// [B, heads, S, D] copies of Q, K, V when they come as [B, S, heads * D] (seqFirst)
    std::vector<float> ownQ, ownK, ownV;
};

/// [B, S, H * D] <-> [B, H, S, D]: toHeads reads x in the first layout into the second.
template <typename T>
std::vector<T> toHeads(const float *x, int64_t b, int64_t s, int64_t h, int64_t d)
{
    std::vector<T> out(size_t(b * s * h * d));
    for (int64_t n = 0; n < b; ++n)
        for (int64_t t = 0; t < s; ++t)
            for (int64_t k = 0; k < h; ++k)
                for (int64_t e = 0; e < d; ++e)
                    out[size_t(((n * h + k) * s + t) * d + e)] =
                        T(x[((n * s + t) * h + k) * d + e]);
    return out;
}

template <typename T>
void fromHeads(const T *x, float *out, int64_t b, int64_t s, int64_t h, int64_t d)
{
    for (int64_t n = 0; n < b; ++n)
        for (int64_t t = 0; t < s; ++t)
            for (int64_t k = 0; k < h; ++k)
                for (int64_t e = 0; e < d; ++e)
                    out[((n * s + t) * h + k) * d + e] = float(x[((n * h + k) * s + t) * d + e]);
}

/// Scores of one matrix: s[i][j] after the logit ops, from Q K^T.
void scores(const ops::AttentionGeometry &g, const Inputs &in, int64_t b, std::vector<double> &s)
{
    const float *q = in.q + g.matrixOf(0, b) * g.sq * g.d;
    const float *k = in.k + g.matrixOf(1, b) * g.sk * g.d;
    const float *bias = in.bias ? in.bias + g.matrixOf(3, b) * g.rowsOf[3] * g.colsOf[3] : nullptr;
    const bool *mask = in.mask ? in.mask + g.matrixOf(4, b) * g.rowsOf[4] * g.colsOf[4] : nullptr;
    s.assign(size_t(g.sq * g.sk), 0.0);
    for (int64_t i = 0; i < g.sq; ++i)
        for (int64_t j = 0; j < g.sk; ++j) {
            double acc = 0;
            for (int64_t e = 0; e < g.d; ++e)
                acc += double(q[i * g.d + e]) *
                       double(g.kTransposed ? k[e * g.sk + j] : k[j * g.d + e]);
            for (size_t o = 0; o < g.ops.size(); ++o) {
                switch (g.ops[o]) {
                case LogitOp::Scale: acc *= g.values[o]; break;
                case LogitOp::AddBias:
                    acc += double(bias[(g.rowsOf[3] == 1 ? 0 : i) * g.colsOf[3] +
                                       (g.colsOf[3] == 1 ? 0 : j)]);
                    break;
                case LogitOp::MaskKeepTrue:
                case LogitOp::MaskKeepFalse: {
                    const bool m =
                        mask[(g.rowsOf[4] == 1 ? 0 : i) * g.colsOf[4] + (g.colsOf[4] == 1 ? 0 : j)];
                    if (m != (g.ops[o] == LogitOp::MaskKeepTrue))
                        acc = float(g.values[o]);
                    break;
                }
                case LogitOp::Causal:
                    if (j > i)
                        acc = float(g.values[o]);
                    break;
                }
            }
            // the graph computes the scores in float32: round as it does
            s[size_t(i * g.sk + j)] = double(float(acc));
        }
}

Expected<Inputs> inputsOf(const KernelContext &c, const ops::AttentionGeometry &g)
{
    for (size_t k = 0; k < 3; ++k) {
        REMAT_RETURN_IF_ERROR(c.require(c.input(k), k == 0 ? "Q" : k == 1 ? "K" : "V"));
        if (c.input(k)->dtype != ir::DataType::Float)
            return c.error("the CPU kernel runs float32 attention");
    }
    Inputs in{c.input(0)->f(), c.input(1)->f(), c.input(2)->f(), nullptr, nullptr, {}, {}, {}};
    if (g.seqFirst) {
        const int64_t b = g.lead[0];
        in.ownQ = toHeads<float>(in.q, b, g.sq, g.heads, g.d);
        in.ownK = toHeads<float>(in.k, b, g.sk, g.kvHeads, g.d);
        in.ownV = toHeads<float>(in.v, b, g.sk, g.kvHeads, g.dv);
        in.q = in.ownQ.data();
        in.k = in.ownK.data();
        in.v = in.ownV.data();
    }
    if (g.has[3]) {
        REMAT_RETURN_IF_ERROR(c.require(c.input(3), "bias"));
        if (c.input(3)->dtype != ir::DataType::Float)
            return c.error("the bias must be float32");
        in.bias = c.input(3)->f();
    }
    if (g.has[4]) {
        REMAT_RETURN_IF_ERROR(c.require(c.input(4), "mask"));
        if (c.input(4)->dtype != ir::DataType::Bool)
            return c.error("the mask must be bool");
        in.mask = c.input(4)->as<bool>();
    }
    return in;
}

Status attentionForward(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(ops::AttentionGeometry g, geometryOf(c));
    REMAT_ASSIGN_OR_RETURN(Inputs in, inputsOf(c, g));
    KView *y = c.output(0), *lse = c.output(1), *rng = c.output(2);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (y->numel() != numelOf(g.outShape()))
        return c.error("output size mismatch");
    if (lse && lse->numel() != numelOf(g.lseShape()))
        return c.error("log-sum-exp size mismatch");
    if (rng) {
        if (rng->numel() != 2 || rng->dtype != ir::DataType::Int64)
            return c.error("the RNG state must be int64[2]");
        rng->as<int64_t>()[0] = int64_t(c.seed);
        rng->as<int64_t>()[1] = 0;
    }
    const std::vector<char> keep = keepMask(g, c.seed);
    const double inv = g.dropout > 0 ? 1.0 / (1.0 - g.dropout) : 1.0;
    std::vector<double> s, p(size_t(g.sk));
    // [B, heads, Sq, Dv] first when the output is [B, Sq, heads * Dv]
    std::vector<float> headsOut(g.seqFirst ? size_t(y->numel()) : 0);
    float *const outBase = g.seqFirst ? headsOut.data() : y->f();
    for (int64_t b = 0; b < g.batches; ++b) {
        scores(g, in, b, s);
        const float *v = in.v + g.matrixOf(2, b) * g.sk * g.dv;
        float *out = outBase + b * g.sq * g.dv;
        for (int64_t i = 0; i < g.sq; ++i) {
            const double *row = s.data() + i * g.sk;
            double m = -INFINITY;
            for (int64_t j = 0; j < g.sk; ++j)
                m = std::max(m, row[j]);
            double sum = 0;
            for (int64_t j = 0; j < g.sk; ++j)
                sum += std::exp(row[j] - m);
            const double l = m + std::log(sum);
            if (lse)
                lse->f()[b * g.sq + i] = float(l);
            for (int64_t j = 0; j < g.sk; ++j) {
                p[size_t(j)] = double(float(std::exp(row[j] - l)));
                if (!keep.empty())
                    p[size_t(j)] = keep[size_t((b * g.sq + i) * g.sk + j)]
                                       ? double(float(p[size_t(j)] * inv))
                                       : 0.0;
            }
            for (int64_t e = 0; e < g.dv; ++e) {
                double acc = 0;
                for (int64_t j = 0; j < g.sk; ++j)
                    acc += p[size_t(j)] * double(v[j * g.dv + e]);
                out[i * g.dv + e] = float(acc);
            }
        }
    }
    if (g.seqFirst)
        fromHeads(headsOut.data(), y->f(), g.lead[0], g.sq, g.heads, g.dv);
    return Status::ok();
}

Status attentionGrad(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(ops::AttentionGeometry g, geometryOf(c));
    REMAT_ASSIGN_OR_RETURN(Inputs in, inputsOf(c, g));
    KView *lse = c.output(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(lse, "log-sum-exp"));
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    uint64_t seed = 0;
    if (g.dropout > 0) {
        KView *rng = c.output(2);
        REMAT_RETURN_IF_ERROR(c.require(rng, "RNG state"));
        seed = uint64_t(rng->as<int64_t>()[0]);
    }
    const std::vector<char> keep = keepMask(g, seed);
    const double inv = g.dropout > 0 ? 1.0 / (1.0 - g.dropout) : 1.0;
    const std::vector<float> headsDy =
        g.seqFirst ? toHeads<float>(dy->f(), g.lead[0], g.sq, g.heads, g.dv) : std::vector<float>();
    const float *const dyBase = g.seqFirst ? headsDy.data() : dy->f();
    std::vector<double> dq(size_t(c.input(0)->numel()), 0.0), dk(size_t(c.input(1)->numel()), 0.0),
        dv(size_t(c.input(2)->numel()), 0.0), db(g.has[3] ? size_t(c.input(3)->numel()) : 0, 0.0);
    std::vector<double> s, p(size_t(g.sk)), dp(size_t(g.sk));
    for (int64_t b = 0; b < g.batches; ++b) {
        scores(g, in, b, s);
        const int64_t qo = g.matrixOf(0, b) * g.sq * g.d, ko = g.matrixOf(1, b) * g.sk * g.d,
                      vo = g.matrixOf(2, b) * g.sk * g.dv;
        const int64_t bo = g.has[3] ? g.matrixOf(3, b) * g.rowsOf[3] * g.colsOf[3] : 0;
        const int64_t mo = g.has[4] ? g.matrixOf(4, b) * g.rowsOf[4] * g.colsOf[4] : 0;
        const float *q = in.q + qo, *k = in.k + ko, *v = in.v + vo;
        const float *grad = dyBase + b * g.sq * g.dv;
        for (int64_t i = 0; i < g.sq; ++i) {
            const double l = double(lse->f()[b * g.sq + i]);
            double dsum = 0;
            for (int64_t j = 0; j < g.sk; ++j) {
                const double pj = double(float(std::exp(s[size_t(i * g.sk + j)] - l)));
                const double kept =
                    keep.empty() ? 1.0 : (keep[size_t((b * g.sq + i) * g.sk + j)] ? inv : 0.0);
                // dV += P' dO, dP' = dO V^T, dP = dP' * keep / (1 - p)
                double dpj = 0;
                for (int64_t e = 0; e < g.dv; ++e) {
                    dv[size_t(vo + j * g.dv + e)] +=
                        double(float(pj * kept)) * double(grad[i * g.dv + e]);
                    dpj += double(grad[i * g.dv + e]) * double(v[j * g.dv + e]);
                }
                p[size_t(j)] = pj;
                dp[size_t(j)] = dpj * kept;
                dsum += dp[size_t(j)] * pj;
            }
            for (int64_t j = 0; j < g.sk; ++j) {
                double ds = p[size_t(j)] * (dp[size_t(j)] - dsum);
                for (size_t o = g.ops.size(); o-- > 0;) {
                    switch (g.ops[o]) {
                    case LogitOp::Scale: ds *= g.values[o]; break;
                    case LogitOp::AddBias:
                        db[size_t(bo + (g.rowsOf[3] == 1 ? 0 : i) * g.colsOf[3] +
                                  (g.colsOf[3] == 1 ? 0 : j))] += ds;
                        break;
                    case LogitOp::MaskKeepTrue:
                    case LogitOp::MaskKeepFalse: {
                        const bool m = in.mask[mo + (g.rowsOf[4] == 1 ? 0 : i) * g.colsOf[4] +
                                               (g.colsOf[4] == 1 ? 0 : j)];
                        if (m != (g.ops[o] == LogitOp::MaskKeepTrue))
                            ds = 0;
                        break;
                    }
                    case LogitOp::Causal:
                        if (j > i)
                            ds = 0;
                        break;
                    }
                }
                if (ds == 0)
                    continue;
                for (int64_t e = 0; e < g.d; ++e) {
                    const int64_t kIndex = g.kTransposed ? e * g.sk + j : j * g.d + e;
                    dq[size_t(qo + i * g.d + e)] += ds * double(k[kIndex]);
                    dk[size_t(ko + kIndex)] += ds * double(q[i * g.d + e]);
                }
            }
        }
    }
    const auto store = [&](size_t slot, const std::vector<double> &src) -> Status {
        KView *d = c.inputGrad(slot);
        if (!d || !d->data)
            return Status::ok();
        if (d->numel() != int64_t(src.size()))
            return c.error("gradient size mismatch");
        if (g.seqFirst && slot < 3) { // back to [B, S, heads * D]
            fromHeads(src.data(), d->f(), g.lead[0], slot == 0 ? g.sq : g.sk,
                      slot == 0 ? g.heads : g.kvHeads, slot == 2 ? g.dv : g.d);
            return Status::ok();
        }
        for (size_t i = 0; i < src.size(); ++i)
            d->f()[i] = float(src[i]);
        return Status::ok();
    };
    REMAT_RETURN_IF_ERROR(store(0, dq));
    REMAT_RETURN_IF_ERROR(store(1, dk));
    REMAT_RETURN_IF_ERROR(store(2, dv));
    if (g.has[3])
        REMAT_RETURN_IF_ERROR(store(3, db));
    return Status::ok();
}

} // namespace

void addAttentionKernels(KernelTable &t)
{
    t[ops::kAttentionOp] = attentionForward;
    t[std::string(ops::kAttentionOp) + "Grad"] = attentionGrad;
}

} // namespace remat::core::exec::cpu
