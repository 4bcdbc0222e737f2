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
    std::vector<std::vector<int64_t>> shapes(6);
    for (size_t k = 0; k < 6; ++k)
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
/// `row`: the elements between two sequence positions of x (h * d, or more for a slice of a
/// packed QKV row starting at x).
template <typename T>
std::vector<T> toHeads(const float *x, int64_t b, int64_t s, int64_t h, int64_t d, int64_t row = 0)
{
    if (row == 0)
        row = h * d;
    std::vector<T> out(size_t(b * s * h * d));
    for (int64_t n = 0; n < b; ++n)
        for (int64_t t = 0; t < s; ++t)
            for (int64_t k = 0; k < h; ++k)
                for (int64_t e = 0; e < d; ++e)
                    out[size_t(((n * h + k) * s + t) * d + e)] =
                        T(x[(n * s + t) * row + k * d + e]);
    return out;
}

template <typename T, typename U>
void fromHeads(const T *x, U *out, int64_t b, int64_t s, int64_t h, int64_t d, int64_t row = 0)
{
    if (row == 0)
        row = h * d;
    for (int64_t n = 0; n < b; ++n)
        for (int64_t t = 0; t < s; ++t)
            for (int64_t k = 0; k < h; ++k)
                for (int64_t e = 0; e < d; ++e)
                    out[(n * s + t) * row + k * d + e] = U(x[((n * h + k) * s + t) * d + e]);
}

/// com.microsoft Attention's projection: qkv [B S, Dtot] = X [B S, In] W [In, Dtot] + bias,
/// accumulated in double and rounded to float32 as the MatMul and the Add would round it.
void project(const ops::AttentionGeometry &g, const float *x, const float *w, const float *bias,
             float *qkv)
{
    const int64_t rows = g.lead[0] * g.sq, in = g.inHidden, out = g.qkvHidden;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < out; ++j) {
            double acc = 0;
            for (int64_t i = 0; i < in; ++i)
                acc += double(x[r * in + i]) * double(w[i * out + j]);
            qkv[r * out + j] = bias ? float(double(float(acc)) + double(bias[j])) : float(acc);
        }
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

/// `qkv`: the projected Q, K, V [B, S, Dq + Dk + Dv] of a projected attention.
Expected<Inputs> inputsOf(const KernelContext &c, const ops::AttentionGeometry &g,
                          const float *qkv = nullptr)
{
    if (g.projected) {
        Inputs in{nullptr, nullptr, nullptr, nullptr, nullptr, {}, {}, {}};
        if (!qkv)
            return c.error("the projected Q, K, V are missing");
        if (g.has[4])
            return c.error("a projected attention takes no boolean mask");
        const int64_t b = g.lead[0], row = g.qkvHidden, qk = g.heads * g.d;
        in.ownQ = toHeads<float>(qkv, b, g.sq, g.heads, g.d, row);
        in.ownK = toHeads<float>(qkv + qk, b, g.sk, g.kvHeads, g.d, row);
        in.ownV = toHeads<float>(qkv + 2 * qk, b, g.sk, g.kvHeads, g.dv, row);
        in.q = in.ownQ.data();
        in.k = in.ownK.data();
        in.v = in.ownV.data();
        if (g.has[3]) {
            REMAT_RETURN_IF_ERROR(c.require(c.input(3), "bias"));
            in.bias = c.input(3)->f();
        }
        return in;
    }
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
        if (g.qkvBias) { // + bias, rounded to float32 as the Add it stands for
            REMAT_RETURN_IF_ERROR(c.require(c.input(5), "Q, K, V bias"));
            if (c.input(5)->dtype != ir::DataType::Float)
                return c.error("the Q, K, V bias must be float32");
            const float *bias = c.input(5)->f();
            // [B, heads, S, D]: head h's D values are bias[h * D .. h * D + D)
            for (int64_t n = 0; n < b; ++n) {
                for (int64_t h = 0; h < g.heads; ++h)
                    for (int64_t t = 0; t < g.sq; ++t)
                        for (int64_t e = 0; e < g.d; ++e)
                            in.ownQ[size_t(((n * g.heads + h) * g.sq + t) * g.d + e)] +=
                                bias[h * g.d + e];
                for (int64_t h = 0; h < g.kvHeads; ++h)
                    for (int64_t t = 0; t < g.sk; ++t) {
                        for (int64_t e = 0; e < g.d; ++e)
                            in.ownK[size_t(((n * g.kvHeads + h) * g.sk + t) * g.d + e)] +=
                                bias[g.heads * g.d + h * g.d + e];
                        for (int64_t e = 0; e < g.dv; ++e)
                            in.ownV[size_t(((n * g.kvHeads + h) * g.sk + t) * g.dv + e)] +=
                                bias[(g.heads + g.kvHeads) * g.d + h * g.dv + e];
                    }
            }
        }
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

/// X, W and the projection bias of a projected attention, float32.
Status projectionInputs(const KernelContext &c, const ops::AttentionGeometry &g)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(0), "X"));
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "W"));
    if (g.projectionBias)
        REMAT_RETURN_IF_ERROR(c.require(c.input(2), "projection bias"));
    for (size_t k = 0; k < 3; ++k)
        if ((k < 2 || g.projectionBias) && c.input(k)->dtype != ir::DataType::Float)
            return c.error("the CPU kernel runs float32 attention");
    return Status::ok();
}

Status attentionForward(KernelContext &c)
{
    REMAT_ASSIGN_OR_RETURN(ops::AttentionGeometry g, geometryOf(c));
    std::vector<float> ownQkv;
    const float *qkv = nullptr;
    if (g.projected) {
        REMAT_RETURN_IF_ERROR(projectionInputs(c, g));
        KView *saved = c.output(2); // the saved QKV when a backward follows
        float *dst = nullptr;
        if (saved && saved->data) {
            if (saved->numel() != numelOf(g.qkvShape()))
                return c.error("QKV size mismatch");
            dst = saved->f();
        } else {
            ownQkv.resize(size_t(numelOf(g.qkvShape())));
            dst = ownQkv.data();
        }
        project(g, c.input(0)->f(), c.input(1)->f(), g.projectionBias ? c.input(2)->f() : nullptr,
                dst);
        qkv = dst;
    }
    REMAT_ASSIGN_OR_RETURN(Inputs in, inputsOf(c, g, qkv));
    KView *y = c.output(0), *lse = c.output(1), *rng = g.projected ? nullptr : c.output(2);
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
    const float *qkv = nullptr;
    if (g.projected) {
        REMAT_RETURN_IF_ERROR(projectionInputs(c, g));
        REMAT_RETURN_IF_ERROR(c.require(c.output(2), "saved QKV"));
        qkv = c.output(2)->f();
    }
    REMAT_ASSIGN_OR_RETURN(Inputs in, inputsOf(c, g, qkv));
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
    const int64_t rows = g.lead.empty() ? 0 : g.lead[0] * g.sq;
    std::vector<double> dq(size_t(g.projected ? rows * g.heads * g.d : c.input(0)->numel()), 0.0),
        dk(size_t(g.projected ? rows * g.kvHeads * g.d : c.input(1)->numel()), 0.0),
        dv(size_t(g.projected ? rows * g.kvHeads * g.dv : c.input(2)->numel()), 0.0),
        db(g.has[3] ? size_t(c.input(3)->numel()) : 0, 0.0);
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
    if (g.projected) {
        // dQKV [B S, Dtot], then dX = dQKV W^T, dW = X^T dQKV, dbias = the column sums
        const int64_t b = g.lead[0], row = g.qkvHidden, qk = g.heads * g.d, in = g.inHidden;
        std::vector<double> dqkv(size_t(rows * row), 0.0);
        fromHeads(dq.data(), dqkv.data(), b, g.sq, g.heads, g.d, row);
        fromHeads(dk.data(), dqkv.data() + qk, b, g.sk, g.kvHeads, g.d, row);
        fromHeads(dv.data(), dqkv.data() + 2 * qk, b, g.sk, g.kvHeads, g.dv, row);
        const float *x = c.input(0)->f(), *w = c.input(1)->f();
        if (KView *dx = c.inputGrad(0); dx && dx->data) {
            if (dx->numel() != rows * in)
                return c.error("gradient size mismatch");
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < in; ++i) {
                    double acc = 0;
                    for (int64_t j = 0; j < row; ++j)
                        acc += dqkv[size_t(r * row + j)] * double(w[i * row + j]);
                    dx->f()[r * in + i] = float(acc);
                }
        }
        if (KView *dw = c.inputGrad(1); dw && dw->data) {
            if (dw->numel() != in * row)
                return c.error("gradient size mismatch");
            for (int64_t i = 0; i < in; ++i)
                for (int64_t j = 0; j < row; ++j) {
                    double acc = 0;
                    for (int64_t r = 0; r < rows; ++r)
                        acc += double(x[r * in + i]) * dqkv[size_t(r * row + j)];
                    dw->f()[i * row + j] = float(acc);
                }
        }
        if (KView *dbias = g.projectionBias ? c.inputGrad(2) : nullptr; dbias && dbias->data) {
            if (dbias->numel() != row)
                return c.error("gradient size mismatch");
            for (int64_t j = 0; j < row; ++j) {
                double acc = 0;
                for (int64_t r = 0; r < rows; ++r)
                    acc += dqkv[size_t(r * row + j)];
                dbias->f()[j] = float(acc);
            }
        }
    } else {
        REMAT_RETURN_IF_ERROR(store(0, dq));
        REMAT_RETURN_IF_ERROR(store(1, dk));
        REMAT_RETURN_IF_ERROR(store(2, dv));
    }
    if (KView *dbias = g.qkvBias ? c.inputGrad(5) : nullptr; dbias && dbias->data) {
        // the bias of head h, element e: dQ (dK, dV) summed over batch and sequence
        const int64_t width = g.heads * g.d + g.kvHeads * (g.d + g.dv);
        if (dbias->numel() != width)
            return c.error("gradient size mismatch");
        std::vector<double> sum(size_t(width), 0.0);
        const auto reduce = [&](const std::vector<double> &grad, int64_t heads, int64_t s,
                                int64_t d, int64_t offset) {
            for (int64_t n = 0; n < g.lead[0]; ++n)
                for (int64_t h = 0; h < heads; ++h)
                    for (int64_t t = 0; t < s; ++t)
                        for (int64_t e = 0; e < d; ++e)
                            sum[size_t(offset + h * d + e)] +=
                                grad[size_t(((n * heads + h) * s + t) * d + e)];
        };
        reduce(dq, g.heads, g.sq, g.d, 0);
        reduce(dk, g.kvHeads, g.sk, g.d, g.heads * g.d);
        reduce(dv, g.kvHeads, g.sk, g.dv, (g.heads + g.kvHeads) * g.d);
        for (int64_t j = 0; j < width; ++j)
            dbias->f()[j] = float(sum[size_t(j)]);
    }
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
