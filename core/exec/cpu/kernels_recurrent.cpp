// RNN, GRU and LSTM (core/ops/recurrent.h: every direction, layout, sequence_lens, initial states,
// activation, clip, linear_before_reset, input_forget and peepholes), forward and backward. Per
// direction the input projection X W^T is one product over all steps; each step adds H R^T (one
// product over the batch) and runs the cell math of core/ops/recurrent_math.h per unit. The
// forward writes the saved state the gradient rule declares; the backward walks the steps in
// reverse from it, collecting the pre-activation gradients of every step, so dX and dW are again
// one product each. Sums over steps are taken in double.
#include "core/exec/cpu/kernel_util.h"
#include "core/ops/recurrent.h"

#include <algorithm>

namespace remat::core::exec::cpu {
namespace {

using ops::RecurrentConfig;
using ops::RecurrentKind;

struct Operands
{
    RecurrentConfig cfg;
    std::vector<int64_t> lengths; ///< per batch row
    KView *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr,
          *p = nullptr;
};

Expected<Operands> operandsOf(const KernelContext &c, RecurrentKind kind,
                              const std::vector<int64_t> &xShape,
                              const std::vector<int64_t> &wShape,
                              const std::vector<int64_t> &rShape)
{
    Operands o;
    auto cfg = ops::recurrentConfig(c.node, kind, xShape, wShape, rShape);
    if (!cfg)
        return c.error(cfg.status().message());
    o.cfg = *cfg;
    o.x = c.input(0);
    o.w = c.input(1);
    o.r = c.input(2);
    o.b = c.input(3);
    o.h0 = c.input(5);
    o.c0 = kind == RecurrentKind::Lstm ? c.input(6) : nullptr;
    o.p = kind == RecurrentKind::Lstm ? c.input(7) : nullptr;
    o.lengths.assign(size_t(o.cfg.batch), o.cfg.seq);
    if (KView *lens = c.input(4)) {
        const std::vector<int64_t> l = readInts(*lens);
        if (int64_t(l.size()) != o.cfg.batch)
            return c.error("sequence_lens needs one length per batch row");
        for (size_t i = 0; i < l.size(); ++i) {
            if (l[i] < 0 || l[i] > o.cfg.seq)
                return c.error(
                    fmt::format("sequence_lens[{}] = {} is outside [0, {}]", i, l[i], o.cfg.seq));
            o.lengths[i] = l[i];
        }
    }
    const int64_t D = o.cfg.directions, G = o.cfg.gates, H = o.cfg.hidden;
    if (o.b && o.b->numel() != D * 2 * G * H)
        return c.error("B must be [num_directions, 2 * gates * hidden_size]");
    if (o.h0 && o.h0->numel() != D * o.cfg.batch * H)
        return c.error("initial_h must be [num_directions, batch, hidden_size]");
    if (o.c0 && o.c0->numel() != D * o.cfg.batch * H)
        return c.error("initial_c must be [num_directions, batch, hidden_size]");
    if (o.p && o.p->numel() != D * 3 * H)
        return c.error("P must be [num_directions, 3 * hidden_size]");
    return o;
}

/// Time position of step s (0-based, in processing order) of batch row b, or -1 past its length.
int64_t timeOf(const Operands &o, int64_t d, int64_t s, int64_t b)
{
    const int64_t len = o.lengths[size_t(b)];
    if (s >= len)
        return -1;
    return o.cfg.reversed(d) ? len - 1 - s : s;
}

float *savedOut(const KernelContext &c, const RecurrentConfig &cfg, int k)
{
    KView *v = c.output(size_t(cfg.firstSaved() + k));
    return v ? v->f() : nullptr;
}

void zero(KView *v)
{
    if (v && v->data)
        std::fill(v->f(), v->f() + v->numel(), 0.0f);
}

template <typename T, int Slot> std::vector<T> &scratch(size_t elements)
{
    thread_local std::vector<T> buffer;
    if (buffer.size() < elements)
        buffer.resize(elements);
    return buffer;
}

Status recurrentForward(KernelContext &c, RecurrentKind kind)
{
    KView *x = c.input(0), *w = c.input(1), *r = c.input(2);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    REMAT_RETURN_IF_ERROR(c.require(r, "R"));
    REMAT_ASSIGN_OR_RETURN(const Operands o, operandsOf(c, kind, x->shape, w->shape, r->shape));
    const RecurrentConfig &cfg = o.cfg;
    const int64_t T = cfg.seq, B = cfg.batch, D = cfg.directions, G = cfg.gates, H = cfg.hidden,
                  GH = G * H;
    KView *y = c.output(0), *yh = c.output(1),
          *yc = kind == RecurrentKind::Lstm ? c.output(2) : nullptr;
    zero(y);
    for (size_t k = size_t(cfg.firstSaved()); k < c.out.size(); ++k)
        zero(c.output(k));
    float *sHidden = savedOut(c, cfg, 0);
    // GRU: gates 1, hidden_linear 2, new_gate 3, hidden_minus_new 4; LSTM: cell_in 1, gates 2, cell_act 3
    float *sA = savedOut(c, cfg, 1), *sB = savedOut(c, cfg, 2), *sC = savedOut(c, cfg, 3),
          *sD = savedOut(c, cfg, 4);
    std::vector<float> &proj = scratch<float, 0>(size_t(T * B * GH));
    std::vector<float> &hg = scratch<float, 1>(size_t(B * GH));
    std::vector<float> &h = scratch<float, 2>(size_t(B * H));
    std::vector<float> &cs = scratch<float, 3>(size_t(B * H));
    std::vector<float> &rh = scratch<float, 4>(size_t(B * H));
    std::vector<float> &gbuf = scratch<float, 5>(size_t(GH));
    for (int64_t d = 0; d < D; ++d) {
        const ops::rnn::CellParams &p = cfg.cell[d];
        const float *wd = w->f() + d * GH * cfg.input, *rd = r->f() + d * GH * H;
        const float *wb = o.b ? o.b->f() + d * 2 * GH : nullptr, *rb = wb ? wb + GH : nullptr;
        const float *peep = o.p ? o.p->f() + d * 3 * H : nullptr;
        // Input projection of every step: [T*B, I] x [I, GH] (+ Wb), rows in X's order.
        for (int64_t row = 0; row < T * B; ++row)
            for (int64_t k = 0; k < GH; ++k)
                proj[size_t(row * GH + k)] = wb ? wb[k] : 0.f;
        sgemm(false, true, T * B, GH, cfg.input, 1, x->f(), cfg.input, wd, cfg.input, 1,
              proj.data(), GH);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t j = 0; j < H; ++j) {
                h[size_t(b * H + j)] = o.h0 ? o.h0->f()[cfg.stateOffset(d, b) + j] : 0.f;
                cs[size_t(b * H + j)] = o.c0 ? o.c0->f()[cfg.stateOffset(d, b) + j] : 0.f;
            }
        if (kind == RecurrentKind::Rnn && sHidden) // the initial state's slot
            for (int64_t b = 0; b < B; ++b)
                std::copy(h.begin() + b * H, h.begin() + (b + 1) * H,
                          sHidden +
                              cfg.savedOffset(cfg.reversed(d) ? o.lengths[size_t(b)] : 0, d, b, H));
        for (int64_t s = 0; s < T; ++s) {
            // Hidden-side pre-activations H R^T (+ Rb); GRU without linear_before_reset takes
            // only z and r here, its h part after the reset.
            const int64_t hCols = kind == RecurrentKind::Gru && !p.linearBeforeReset ? 2 * H : GH;
            for (int64_t b = 0; b < B; ++b)
                for (int64_t k = 0; k < GH; ++k)
                    hg[size_t(b * GH + k)] = rb ? rb[k] : 0.f;
            sgemm(false, true, B, hCols, H, 1, h.data(), H, rd, H, 1, hg.data(), GH);
            if (kind == RecurrentKind::Gru && !p.linearBeforeReset) {
                for (int64_t b = 0; b < B; ++b) {
                    const int64_t t = timeOf(o, d, s, b);
                    for (int64_t j = 0; j < H; ++j) {
                        float z = 0, rr = 0;
                        if (t >= 0)
                            ops::rnn::gruGates(p, proj.data() + cfg.xRow(t, b) * GH,
                                               hg.data() + b * GH, j, z, rr);
                        rh[size_t(b * H + j)] = rr * h[size_t(b * H + j)];
                    }
                }
                sgemm(false, true, B, H, H, 1, rh.data(), H, rd + 2 * H * H, H, 1,
                      hg.data() + 2 * H, GH);
            }
            for (int64_t b = 0; b < B; ++b) {
                const int64_t t = timeOf(o, d, s, b);
                if (t < 0)
                    continue;
                const float *xg = proj.data() + cfg.xRow(t, b) * GH;
                float *hrow = h.data() + b * H, *crow = cs.data() + b * H;
                if (kind == RecurrentKind::Lstm) {
                    if (sHidden)
                        std::copy(hrow, hrow + H, sHidden + cfg.savedOffset(t, d, b, H));
                    if (sA)
                        std::copy(crow, crow + H, sA + cfg.savedOffset(t, d, b, H));
                    for (int64_t k = 0; k < GH; ++k)
                        gbuf[size_t(k)] = xg[k] + hg[size_t(b * GH + k)];
                    for (int64_t j = 0; j < H; ++j) {
                        float cn, hc, hn;
                        ops::rnn::lstmForward(p, gbuf.data(), j, crow[j], peep, cn, hc, hn);
                        crow[j] = cn;
                        hrow[j] = hn;
                        if (sC)
                            sC[cfg.savedOffset(t, d, b, H) + j] = hc;
                    }
                    if (sB)
                        std::copy(gbuf.begin(), gbuf.begin() + GH,
                                  sB + cfg.savedOffset(t, d, b, GH));
                } else if (kind == RecurrentKind::Gru) {
                    if (sHidden)
                        std::copy(hrow, hrow + H, sHidden + cfg.savedOffset(t, d, b, H));
                    const float *hgr = hg.data() + b * GH;
                    for (int64_t j = 0; j < H; ++j) {
                        float z, rr, n, hn;
                        ops::rnn::gruGates(p, xg, hgr, j, z, rr);
                        const float lin = hgr[2 * H + j];
                        const float scaled = p.linearBeforeReset ? rr * lin : lin;
                        const float hp = hrow[j];
                        ops::rnn::gruOutput(p, xg[2 * H + j], scaled, z, hp, n, hn);
                        const int64_t off = cfg.savedOffset(t, d, b, H) + j;
                        if (sA) {
                            float *gr = sA + cfg.savedOffset(t, d, b, GH);
                            gr[j] = z;
                            gr[H + j] = rr;
                            gr[2 * H + j] = p.linearBeforeReset ? scaled : rr * hp;
                        }
                        if (sB)
                            sB[off] = lin;
                        if (sC)
                            sC[off] = n;
                        if (sD)
                            sD[off] = hp - n;
                        hrow[j] = hn;
                    }
                } else {
                    for (int64_t j = 0; j < H; ++j)
                        hrow[j] = ops::rnn::rnnForward(p, xg[j] + hg[size_t(b * GH + j)]);
                    if (sHidden)
                        std::copy(hrow, hrow + H,
                                  sHidden + cfg.savedOffset(cfg.reversed(d) ? t : t + 1, d, b, H));
                }
                if (y)
                    std::copy(hrow, hrow + H, y->f() + cfg.yOffset(t, d, b));
            }
        }
        for (int64_t b = 0; b < B; ++b) {
            if (yh)
                std::copy(h.begin() + b * H, h.begin() + (b + 1) * H,
                          yh->f() + cfg.stateOffset(d, b));
            if (yc)
                std::copy(cs.begin() + b * H, cs.begin() + (b + 1) * H,
                          yc->f() + cfg.stateOffset(d, b));
        }
    }
    return Status::ok();
}

Status recurrentGrad(KernelContext &c, RecurrentKind kind)
{
    KView *x = c.input(0), *w = c.input(1), *r = c.input(2);
    KView *dx = c.inputGrad(0), *dw = c.inputGrad(1), *dr = c.inputGrad(2), *db = c.inputGrad(3);
    KView *dh0 = c.inputGrad(5), *dc0 = kind == RecurrentKind::Lstm ? c.inputGrad(6) : nullptr;
    KView *dp = kind == RecurrentKind::Lstm ? c.inputGrad(7) : nullptr;
    REMAT_RETURN_IF_ERROR(c.require(r, "R"));
    auto shapeOf = [&](KView *v, KView *g, size_t k) {
        return v ? v->shape
                 : (g ? g->shape
                      : (k < c.inShapes.size() ? c.inShapes[k] : std::vector<int64_t>{}));
    };
    REMAT_ASSIGN_OR_RETURN(const Operands o,
                           operandsOf(c, kind, shapeOf(x, dx, 0), shapeOf(w, dw, 1), r->shape));
    if (dx)
        REMAT_RETURN_IF_ERROR(c.require(w, "W"));
    if (dw)
        REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    const RecurrentConfig &cfg = o.cfg;
    const int64_t T = cfg.seq, B = cfg.batch, D = cfg.directions, G = cfg.gates, H = cfg.hidden,
                  GH = G * H;
    const float *sHidden = savedOut(c, cfg, 0);
    const float *sA = savedOut(c, cfg, 1), *sB = savedOut(c, cfg, 2), *sC = savedOut(c, cfg, 3),
                *sD = savedOut(c, cfg, 4);
    REMAT_RETURN_IF_ERROR(c.require(c.output(size_t(cfg.firstSaved())), "saved hidden state"));
    if (kind != RecurrentKind::Rnn && (!sA || !sB || !sC || (kind == RecurrentKind::Gru && !sD)))
        return c.error("missing operand: saved state");
    KView *gy = c.outputGrad(0), *gyh = c.outputGrad(1),
          *gyc = kind == RecurrentKind::Lstm ? c.outputGrad(2) : nullptr;
    std::vector<float> &dpreX = scratch<float, 10>(size_t(T * B * GH)); // rows in X's order
    std::vector<float> &dpreR = scratch<float, 11>(size_t(B * GH));
    std::vector<float> &hprev = scratch<float, 12>(size_t(B * GH)); // per gate block for GRU
    std::vector<float> &dh = scratch<float, 13>(size_t(B * H));
    std::vector<float> &dc = scratch<float, 14>(size_t(B * H));
    std::vector<float> &dhNext = scratch<float, 15>(size_t(B * H));
    std::vector<float> &drh = scratch<float, 16>(size_t(B * H));
    std::vector<double> &dxAcc = scratch<double, 17>(dx ? size_t(T * B * cfg.input) : 0);
    std::vector<double> &dRAcc = scratch<double, 18>(size_t(GH * H));
    std::vector<double> &bAcc = scratch<double, 19>(size_t(2 * GH + 3 * H));
    std::vector<float> &dpeep = scratch<float, 20>(3);
    for (int64_t d = 0; d < D; ++d) {
        const ops::rnn::CellParams &p = cfg.cell[d];
        const float *rd = r->f() + d * GH * H;
        const float *peep = o.p ? o.p->f() + d * 3 * H : nullptr;
        std::fill(dpreX.begin(), dpreX.begin() + T * B * GH, 0.f);
        std::fill(dRAcc.begin(), dRAcc.begin() + GH * H, 0.0);
        std::fill(bAcc.begin(), bAcc.begin() + 2 * GH + 3 * H, 0.0);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t j = 0; j < H; ++j) {
                dh[size_t(b * H + j)] = gyh ? gyh->f()[cfg.stateOffset(d, b) + j] : 0.f;
                dc[size_t(b * H + j)] = gyc ? gyc->f()[cfg.stateOffset(d, b) + j] : 0.f;
            }
        for (int64_t s = T; s-- > 0;) {
            std::fill(dpreR.begin(), dpreR.begin() + B * GH, 0.f);
            std::fill(hprev.begin(), hprev.begin() + B * GH, 0.f);
            std::fill(dhNext.begin(), dhNext.begin() + B * H, 0.f);
            for (int64_t b = 0; b < B; ++b) {
                const int64_t t = timeOf(o, d, s, b);
                float *dhr = dh.data() + b * H;
                if (t < 0) { // not run: the state passes through
                    std::copy(dhr, dhr + H, dhNext.begin() + b * H);
                    continue;
                }
                if (gy)
                    for (int64_t j = 0; j < H; ++j)
                        dhr[j] += gy->f()[cfg.yOffset(t, d, b) + j];
                float *dx_ = dpreX.data() + cfg.xRow(t, b) * GH, *dr_ = dpreR.data() + b * GH;
                float *hp = hprev.data() + b * GH;
                if (kind == RecurrentKind::Lstm) {
                    const int64_t off = cfg.savedOffset(t, d, b, H);
                    const float *gates = sB + cfg.savedOffset(t, d, b, GH);
                    for (int64_t j = 0; j < H; ++j) {
                        float dcPrev;
                        ops::rnn::lstmBackward(p, gates, j, sA[off + j], sC[off + j], peep, dhr[j],
                                               dc[size_t(b * H + j)], dx_, dcPrev, dpeep.data());
                        dc[size_t(b * H + j)] = dcPrev;
                        if (peep)
                            for (int k = 0; k < 3; ++k)
                                bAcc[size_t(2 * GH + k * H + j)] += dpeep[size_t(k)];
                    }
                    std::copy(dx_, dx_ + GH, dr_);
                    for (int64_t g = 0; g < G; ++g)
                        std::copy(sHidden + off, sHidden + off + H, hp + g * H);
                } else if (kind == RecurrentKind::Gru) {
                    const int64_t off = cfg.savedOffset(t, d, b, H);
                    const float *gates = sA + cfg.savedOffset(t, d, b, GH);
                    for (int64_t j = 0; j < H; ++j) {
                        float dpz, dpn, direct;
                        ops::rnn::gruBackwardZN(p, dhr[j], gates[j], sC[off + j], sD[off + j], dpz,
                                                dpn, direct);
                        dx_[j] = dpz;
                        dx_[2 * H + j] = dpn;
                        dhNext[size_t(b * H + j)] = direct;
                        dr_[j] = dpz;
                        const float hpj = sHidden[off + j];
                        hp[j] = hpj;
                        hp[H + j] = hpj;
                        if (p.linearBeforeReset) {
                            // n = g(xn + r * lin): dr from lin, d lin = dpn * r, read against H
                            const float rr = gates[H + j];
                            dx_[H + j] =
                                dpn * sB[off + j] * ops::rnn::gateDerivative(p.f, rr, p.clip);
                            dr_[2 * H + j] = dpn * rr;
                            hp[2 * H + j] = hpj;
                        } else {
                            dr_[2 * H + j] = dpn; // read against r * H
                            hp[2 * H + j] = gates[2 * H + j];
                        }
                    }
                } else {
                    const int64_t hOff = cfg.savedOffset(cfg.reversed(d) ? t : t + 1, d, b, H);
                    const int64_t pOff = cfg.savedOffset(cfg.reversed(d) ? t + 1 : t, d, b, H);
                    for (int64_t j = 0; j < H; ++j) {
                        dx_[j] = ops::rnn::rnnBackward(p, sHidden[hOff + j], dhr[j]);
                        dr_[j] = dx_[j];
                        hp[j] = sHidden[pOff + j];
                    }
                }
            }
            if (kind == RecurrentKind::Gru && !p.linearBeforeReset) {
                // d(r * H) = dpn Rh: the reset gate's gradient and a second path to H
                std::fill(drh.begin(), drh.begin() + B * H, 0.f);
                sgemm(false, false, B, H, H, 1, dpreR.data() + 2 * H, GH, rd + 2 * H * H, H, 0,
                      drh.data(), H);
                for (int64_t b = 0; b < B; ++b) {
                    const int64_t t = timeOf(o, d, s, b);
                    if (t < 0)
                        continue;
                    const int64_t off = cfg.savedOffset(t, d, b, H);
                    const float *gates = sA + cfg.savedOffset(t, d, b, GH);
                    float *dx_ = dpreX.data() + cfg.xRow(t, b) * GH;
                    for (int64_t j = 0; j < H; ++j) {
                        const float rr = gates[H + j], hpj = sHidden[off + j];
                        const float dpr = drh[size_t(b * H + j)] * hpj *
                                          ops::rnn::gateDerivative(p.f, rr, p.clip);
                        dx_[H + j] = dpr;
                        dpreR[size_t(b * GH + H + j)] = dpr;
                        dhNext[size_t(b * H + j)] += drh[size_t(b * H + j)] * rr;
                    }
                }
                // z and r reach H through R's first two blocks
                sgemm(false, false, B, H, 2 * H, 1, dpreR.data(), GH, rd, H, 1, dhNext.data(), H);
            } else if (kind == RecurrentKind::Gru) {
                for (int64_t b = 0; b < B; ++b) {
                    const int64_t t = timeOf(o, d, s, b);
                    if (t < 0)
                        continue;
                    float *dx_ = dpreX.data() + cfg.xRow(t, b) * GH;
                    std::copy(dx_ + H, dx_ + 2 * H, dpreR.begin() + b * GH + H);
                }
                sgemm(false, false, B, H, GH, 1, dpreR.data(), GH, rd, H, 1, dhNext.data(), H);
            } else {
                sgemm(false, false, B, H, GH, 1, dpreR.data(), GH, rd, H, 1, dhNext.data(), H);
            }
            // Inactive rows hold 0 in dpreR: their dhNext is the pass-through alone.
            // dR += dpreR^T H_prev per gate block (GRU's h block reads r * H without linear_before_reset)
            for (int64_t g = 0; g < G; ++g)
                gemmIntoDouble(true, false, H, H, B, 1, dpreR.data() + g * H, GH,
                               hprev.data() + g * H, GH, 1, dRAcc.data() + g * H * H, H);
            for (int64_t b = 0; b < B; ++b)
                for (int64_t k = 0; k < GH; ++k)
                    bAcc[size_t(GH + k)] += dpreR[size_t(b * GH + k)];
            std::copy(dhNext.begin(), dhNext.begin() + B * H, dh.begin());
        }
        if (dx)
            gemmIntoDouble(false, false, T * B, cfg.input, GH, 1, dpreX.data(), GH,
                           w->f() + d * GH * cfg.input, cfg.input, d == 0 ? 0.0 : 1.0, dxAcc.data(),
                           cfg.input);
        if (dw)
            sgemm(true, false, GH, cfg.input, T * B, 1, dpreX.data(), GH, x->f(), cfg.input, 0,
                  dw->f() + d * GH * cfg.input, cfg.input);
        if (dr)
            for (int64_t k = 0; k < GH * H; ++k)
                dr->f()[d * GH * H + k] = float(dRAcc[size_t(k)]);
        if (db) {
            for (int64_t row = 0; row < T * B; ++row)
                for (int64_t k = 0; k < GH; ++k)
                    bAcc[size_t(k)] += dpreX[size_t(row * GH + k)];
            for (int64_t k = 0; k < 2 * GH; ++k)
                db->f()[d * 2 * GH + k] = float(bAcc[size_t(k)]);
        }
        if (dp)
            for (int64_t k = 0; k < 3 * H; ++k)
                dp->f()[d * 3 * H + k] = float(bAcc[size_t(2 * GH + k)]);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t j = 0; j < H; ++j) {
                if (dh0)
                    dh0->f()[cfg.stateOffset(d, b) + j] = dh[size_t(b * H + j)];
                if (dc0)
                    dc0->f()[cfg.stateOffset(d, b) + j] = dc[size_t(b * H + j)];
            }
    }
    if (dx)
        for (int64_t i = 0; i < T * B * cfg.input; ++i)
            dx->f()[i] = float(dxAcc[size_t(i)]);
    return Status::ok();
}

Status rnnForward(KernelContext &c) { return recurrentForward(c, RecurrentKind::Rnn); }
Status gruForward(KernelContext &c) { return recurrentForward(c, RecurrentKind::Gru); }
Status lstmForward(KernelContext &c) { return recurrentForward(c, RecurrentKind::Lstm); }
Status rnnGrad(KernelContext &c) { return recurrentGrad(c, RecurrentKind::Rnn); }
Status gruGrad(KernelContext &c) { return recurrentGrad(c, RecurrentKind::Gru); }
Status lstmGrad(KernelContext &c) { return recurrentGrad(c, RecurrentKind::Lstm); }

} // namespace

void addRecurrentKernels(KernelTable &t)
{
    t["RNN"] = rnnForward;
    t["RNNGrad"] = rnnGrad;
    t["GRU"] = gruForward;
    t["GRUGrad"] = gruGrad;
    t["LSTM"] = lstmForward;
    t["LSTMGrad"] = lstmGrad;
}

} // namespace remat::core::exec::cpu
