// RNN, GRU and LSTM on the device: the CPU reference's algorithm (core/exec/cpu/kernels_recurrent.cpp)
// with cuBLAS products and one kernel per step (gpu/kernels/recurrent.cu). Per direction: the input
// projection of every step is one product; each step multiplies the state by R and runs the cell;
// the backward walks the steps in reverse from the saved state, collecting every step's
// pre-activation gradients so that dX and dW are one product each.
#include "gpu/kernels/recurrent.h"
#include "gpu/ops_internal.h"

#include "core/ops/recurrent.h"

#include <fmt/format.h>

namespace remat::gpu {
namespace {

using core::Status;
using core::ops::RecurrentConfig;
using core::ops::RecurrentKind;
using namespace kernels;

/// Row-major C[m, n] = alpha op(A) op(B) + beta C with leading dims (elements).
Status ldGemm(const OpContext &c, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
              float *out, int64_t ldc)
{
    if (m == 0 || n == 0)
        return Status::ok();
    const int64_t limit = (int64_t(1) << 31) - 1;
    if (m > limit || n > limit || k > limit || lda > limit || ldb > limit || ldc > limit)
        return c.unsupported("matrix dims above 2^31");
    return c.checkBlas(cublasSgemm(c.rt->cublas(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   transA ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m), int(k),
                                   &alpha, b, int(ldb), a, int(lda), &beta, out, int(ldc)),
                       "sgemm");
}

struct Setup
{
    RecurrentConfig cfg;
    RecurrentKind kind;
    const int64_t *lengths = nullptr; ///< device copy, null when every row runs seq steps
    std::vector<int64_t> hostLengths;
};

core::Expected<Setup> setupOf(OpContext &c, RecurrentKind kind, const std::vector<int64_t> &x,
                              const std::vector<int64_t> &w, const std::vector<int64_t> &r)
{
    Setup s;
    s.kind = kind;
    auto cfg = core::ops::recurrentConfig(c.node, kind, x, w, r);
    if (!cfg)
        return c.error(cfg.status().message());
    s.cfg = *cfg;
    if (DView *lens = c.input(4)) {
        REMAT_ASSIGN_OR_RETURN(s.hostLengths, c.rt->hostInts(*lens));
        if (int64_t(s.hostLengths.size()) != s.cfg.batch)
            return c.error("sequence_lens needs one length per batch row");
        for (size_t i = 0; i < s.hostLengths.size(); ++i)
            if (s.hostLengths[i] < 0 || s.hostLengths[i] > s.cfg.seq)
                return c.error(fmt::format("sequence_lens[{}] = {} is outside [0, {}]", i,
                                           s.hostLengths[i], s.cfg.seq));
        REMAT_ASSIGN_OR_RETURN(void *dev, c.rt->scratch(s.cfg.batch * 8));
        REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(dev, s.hostLengths.data(), s.cfg.batch * 8));
        // the host vector must outlive the copy
        REMAT_RETURN_IF_ERROR(
            c.check(cudaStreamSynchronize(c.rt->stream()), "sequence_lens upload"));
        s.lengths = static_cast<const int64_t *>(dev);
    }
    const int64_t D = s.cfg.directions, G = s.cfg.gates, H = s.cfg.hidden;
    if (DView *b = c.input(3); b && b->numel() != D * 2 * G * H)
        return c.error("B must be [num_directions, 2 * gates * hidden_size]");
    if (DView *h0 = c.input(5); h0 && h0->numel() != D * s.cfg.batch * H)
        return c.error("initial_h must be [num_directions, batch, hidden_size]");
    if (kind == RecurrentKind::Lstm) {
        if (DView *c0 = c.input(6); c0 && c0->numel() != D * s.cfg.batch * H)
            return c.error("initial_c must be [num_directions, batch, hidden_size]");
        if (DView *p = c.input(7); p && p->numel() != D * 3 * H)
            return c.error("P must be [num_directions, 3 * hidden_size]");
    }
    return s;
}

RecurrentStep stepOf(const Setup &s, int64_t d)
{
    RecurrentStep st;
    st.p = s.cfg.cell[d];
    st.cell = s.kind == RecurrentKind::Lstm
                  ? RecurrentCell::Lstm
                  : (s.kind == RecurrentKind::Gru ? RecurrentCell::Gru : RecurrentCell::Rnn);
    st.seq = s.cfg.seq;
    st.batch = s.cfg.batch;
    st.hidden = s.cfg.hidden;
    st.directions = s.cfg.directions;
    st.direction = d;
    st.batchFirst = s.cfg.batchFirst;
    st.reversed = s.cfg.reversed(d);
    st.lengths = s.lengths;
    return st;
}

float *savedOf(const OpContext &c, const RecurrentConfig &cfg, int k)
{
    DView *v = c.output(size_t(cfg.firstSaved() + k));
    return v && v->data ? v->f() : nullptr;
}

float *dataOf(DView *v) { return v && v->data ? v->f() : nullptr; }

Status recurrentF(OpContext &c, RecurrentKind kind)
{
    DView *x = c.input(0), *w = c.input(1), *r = c.input(2);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(r, "R"));
    REMAT_ASSIGN_OR_RETURN(const Setup s, setupOf(c, kind, x->shape, w->shape, r->shape));
    const RecurrentConfig &cfg = s.cfg;
    const int64_t T = cfg.seq, B = cfg.batch, D = cfg.directions, G = cfg.gates, H = cfg.hidden,
                  GH = G * H, I = cfg.input;
    cudaStream_t stream = c.rt->stream();
    DView *y = c.output(0), *yh = c.output(1),
          *yc = kind == RecurrentKind::Lstm ? c.output(2) : nullptr;
    for (size_t k = 0; k < c.out.size(); ++k)
        if (DView *o = c.output(k); o && o->data && (k == 0 || k >= size_t(cfg.firstSaved())))
            REMAT_RETURN_IF_ERROR(zeroDevice(c, o->data, o->numel() * 4));
    REMAT_ASSIGN_OR_RETURN(void *raw, c.rt->scratch((T * B * GH + B * GH + 3 * B * H) * 4));
    float *proj = static_cast<float *>(raw), *hg = proj + T * B * GH, *h = hg + B * GH,
          *cs = h + B * H, *rh = cs + B * H;
    RecurrentForwardBuffers buf;
    buf.proj = proj;
    buf.hg = hg;
    buf.h = h;
    buf.c = cs;
    buf.rh = rh;
    buf.y = dataOf(y);
    for (int k = 0; k < 5; ++k)
        buf.saved[k] = savedOf(c, cfg, k);
    DView *bias = c.input(3), *h0 = c.input(5),
          *c0 = kind == RecurrentKind::Lstm ? c.input(6) : nullptr;
    DView *peep = kind == RecurrentKind::Lstm ? c.input(7) : nullptr;
    for (int64_t d = 0; d < D; ++d) {
        RecurrentStep st = stepOf(s, d);
        const float *wd = w->f() + d * GH * I, *rd = r->f() + d * GH * H;
        const float *wb = dataOf(bias) ? bias->f() + d * 2 * GH : nullptr,
                    *rb = wb ? wb + GH : nullptr;
        buf.peep = dataOf(peep) ? peep->f() + d * 3 * H : nullptr;
        REMAT_RETURN_IF_ERROR(c.check(fillRecurrentRows(stream, proj, wb, T * B, GH), "bias rows"));
        REMAT_RETURN_IF_ERROR(
            ldGemm(c, false, true, T * B, GH, I, 1.f, x->f(), I, wd, I, 1.f, proj, GH));
        REMAT_RETURN_IF_ERROR(c.check(loadRecurrentState(stream, st, dataOf(h0), h), "initial_h"));
        REMAT_RETURN_IF_ERROR(c.check(loadRecurrentState(stream, st, dataOf(c0), cs), "initial_c"));
        if (kind == RecurrentKind::Rnn && buf.saved[0])
            REMAT_RETURN_IF_ERROR(
                c.check(rnnSaveInitial(stream, st, h, buf.saved[0]), "saved initial state"));
        const bool twoPhase = kind == RecurrentKind::Gru && !st.p.linearBeforeReset;
        for (int64_t step = 0; step < T; ++step) {
            st.step = step;
            REMAT_RETURN_IF_ERROR(c.check(fillRecurrentRows(stream, hg, rb, B, GH), "bias rows"));
            REMAT_RETURN_IF_ERROR(
                ldGemm(c, false, true, B, twoPhase ? 2 * H : GH, H, 1.f, h, H, rd, H, 1.f, hg, GH));
            if (twoPhase) {
                REMAT_RETURN_IF_ERROR(c.check(gruResetHidden(stream, st, buf), "reset hidden"));
                REMAT_RETURN_IF_ERROR(ldGemm(c, false, true, B, H, H, 1.f, rh, H, rd + 2 * H * H, H,
                                             1.f, hg + 2 * H, GH));
            }
            REMAT_RETURN_IF_ERROR(c.check(recurrentStepForward(stream, st, buf), "step"));
        }
        if (dataOf(yh))
            REMAT_RETURN_IF_ERROR(c.check(storeRecurrentState(stream, st, h, yh->f()), "Y_h"));
        if (dataOf(yc))
            REMAT_RETURN_IF_ERROR(c.check(storeRecurrentState(stream, st, cs, yc->f()), "Y_c"));
    }
    return Status::ok();
}

Status recurrentB(OpContext &c, RecurrentKind kind)
{
    DView *x = c.input(0), *w = c.input(1), *r = c.input(2);
    DView *dx = c.inputGrad(0), *dw = c.inputGrad(1), *dr = c.inputGrad(2), *db = c.inputGrad(3);
    DView *dh0 = c.inputGrad(5), *dc0 = kind == RecurrentKind::Lstm ? c.inputGrad(6) : nullptr;
    DView *dp = kind == RecurrentKind::Lstm ? c.inputGrad(7) : nullptr;
    REMAT_RETURN_IF_ERROR(c.requireFloat(r, "R"));
    const std::vector<int64_t> xs = x ? x->shape : (dx ? dx->shape : c.inShapes.at(0));
    const std::vector<int64_t> wsh = w ? w->shape : (dw ? dw->shape : c.inShapes.at(1));
    REMAT_ASSIGN_OR_RETURN(const Setup s, setupOf(c, kind, xs, wsh, r->shape));
    if (dx)
        REMAT_RETURN_IF_ERROR(c.requireFloat(w, "W"));
    if (dw)
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    const RecurrentConfig &cfg = s.cfg;
    const int64_t T = cfg.seq, B = cfg.batch, D = cfg.directions, G = cfg.gates, H = cfg.hidden,
                  GH = G * H, I = cfg.input;
    const int needed = kind == RecurrentKind::Rnn ? 1 : (kind == RecurrentKind::Gru ? 5 : 4);
    RecurrentBackwardBuffers buf;
    for (int k = 0; k < needed; ++k) {
        buf.saved[k] = savedOf(c, cfg, k);
        if (!buf.saved[k])
            return c.error("missing operand: saved state");
    }
    cudaStream_t stream = c.rt->stream();
    DView *gy = c.outputGrad(0), *gyh = c.outputGrad(1),
          *gyc = kind == RecurrentKind::Lstm ? c.outputGrad(2) : nullptr;
    buf.gy = dataOf(gy);
    DView *peep = kind == RecurrentKind::Lstm ? c.input(7) : nullptr;
    const int64_t floats = T * B * GH + 2 * B * GH + 4 * B * H +
                           (dataOf(peep) ? T * B * 3 * H : 0) + T * B + GH * H + 2 * GH;
    REMAT_ASSIGN_OR_RETURN(void *raw, c.rt->scratch(floats * 4));
    float *p = static_cast<float *>(raw);
    auto take = [&p](int64_t n) {
        float *q = p;
        p += n;
        return q;
    };
    buf.dpreX = take(T * B * GH);
    buf.dpreR = take(B * GH);
    buf.hprev = take(B * GH);
    buf.dh = take(B * H);
    buf.dc = take(B * H);
    buf.dhNext = take(B * H);
    buf.drh = take(B * H);
    buf.peepSteps = dataOf(peep) ? take(T * B * 3 * H) : nullptr;
    float *ones = take(T * B);
    float *dRScratch = take(GH * H);
    float *dRbScratch = take(2 * GH);
    {
        const std::vector<float> host(size_t(T * B), 1.f); // bias gradients: ones^T dGates
        REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(ones, host.data(), T * B * 4));
        REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(stream), "ones upload"));
    }
    for (int64_t d = 0; d < D; ++d) {
        RecurrentStep st = stepOf(s, d);
        const float *rd = r->f() + d * GH * H;
        buf.peep = dataOf(peep) ? peep->f() + d * 3 * H : nullptr;
        float *dRd = dataOf(dr) ? dr->f() + d * GH * H : dRScratch;
        float *dbd = dataOf(db) ? db->f() + d * 2 * GH : dRbScratch; // [dWb, dRb]
        REMAT_RETURN_IF_ERROR(zeroDevice(c, buf.dpreX, T * B * GH * 4));
        REMAT_RETURN_IF_ERROR(zeroDevice(c, dRd, GH * H * 4));
        REMAT_RETURN_IF_ERROR(zeroDevice(c, dbd, 2 * GH * 4));
        if (buf.peepSteps)
            REMAT_RETURN_IF_ERROR(zeroDevice(c, buf.peepSteps, T * B * 3 * H * 4));
        REMAT_RETURN_IF_ERROR(c.check(loadRecurrentState(stream, st, dataOf(gyh), buf.dh), "dY_h"));
        REMAT_RETURN_IF_ERROR(c.check(loadRecurrentState(stream, st, dataOf(gyc), buf.dc), "dY_c"));
        const bool twoPhase = kind == RecurrentKind::Gru && !st.p.linearBeforeReset;
        for (int64_t step = T; step-- > 0;) {
            st.step = step;
            REMAT_RETURN_IF_ERROR(c.check(recurrentStepBackward(stream, st, buf), "step backward"));
            if (twoPhase) {
                REMAT_RETURN_IF_ERROR(ldGemm(c, false, false, B, H, H, 1.f, buf.dpreR + 2 * H, GH,
                                             rd + 2 * H * H, H, 0.f, buf.drh, H));
                REMAT_RETURN_IF_ERROR(c.check(gruResetBackward(stream, st, buf), "reset backward"));
                REMAT_RETURN_IF_ERROR(ldGemm(c, false, false, B, H, 2 * H, 1.f, buf.dpreR, GH, rd,
                                             H, 1.f, buf.dhNext, H));
            } else {
                REMAT_RETURN_IF_ERROR(ldGemm(c, false, false, B, H, GH, 1.f, buf.dpreR, GH, rd, H,
                                             1.f, buf.dhNext, H));
            }
            for (int64_t g = 0; g < G; ++g)
                REMAT_RETURN_IF_ERROR(ldGemm(c, true, false, H, H, B, 1.f, buf.dpreR + g * H, GH,
                                             buf.hprev + g * H, GH, 1.f, dRd + g * H * H, H));
            REMAT_RETURN_IF_ERROR(
                ldGemm(c, false, false, 1, GH, B, 1.f, ones, B, buf.dpreR, GH, 1.f, dbd + GH, GH));
            REMAT_RETURN_IF_ERROR(copyDevice(c, buf.dh, buf.dhNext, B * H * 4));
        }
        if (dataOf(dx))
            REMAT_RETURN_IF_ERROR(ldGemm(c, false, false, T * B, I, GH, 1.f, buf.dpreX, GH,
                                         w->f() + d * GH * I, I, d == 0 ? 0.f : 1.f, dx->f(), I));
        if (dataOf(dw))
            REMAT_RETURN_IF_ERROR(ldGemm(c, true, false, GH, I, T * B, 1.f, buf.dpreX, GH, x->f(),
                                         I, 0.f, dw->f() + d * GH * I, I));
        REMAT_RETURN_IF_ERROR(
            ldGemm(c, false, false, 1, GH, T * B, 1.f, ones, T * B, buf.dpreX, GH, 0.f, dbd, GH));
        if (dataOf(dp))
            REMAT_RETURN_IF_ERROR(ldGemm(c, false, false, 1, 3 * H, T * B, 1.f, ones, T * B,
                                         buf.peepSteps, 3 * H, 0.f, dp->f() + d * 3 * H, 3 * H));
        if (dataOf(dh0))
            REMAT_RETURN_IF_ERROR(
                c.check(storeRecurrentState(stream, st, buf.dh, dh0->f()), "d initial_h"));
        if (dataOf(dc0))
            REMAT_RETURN_IF_ERROR(
                c.check(storeRecurrentState(stream, st, buf.dc, dc0->f()), "d initial_c"));
    }
    return Status::ok();
}

Status rnnF(OpContext &c) { return recurrentF(c, RecurrentKind::Rnn); }
Status gruF(OpContext &c) { return recurrentF(c, RecurrentKind::Gru); }
Status lstmF(OpContext &c) { return recurrentF(c, RecurrentKind::Lstm); }
Status rnnB(OpContext &c) { return recurrentB(c, RecurrentKind::Rnn); }
Status gruB(OpContext &c) { return recurrentB(c, RecurrentKind::Gru); }
Status lstmB(OpContext &c) { return recurrentB(c, RecurrentKind::Lstm); }

} // namespace

void addRecurrentOps(OpTable &t)
{
    t["RNN"] = rnnF;
    t["RNNGrad"] = rnnB;
    t["GRU"] = gruF;
    t["GRUGrad"] = gruB;
    t["LSTM"] = lstmF;
    t["LSTMGrad"] = lstmB;
}

} // namespace remat::gpu
