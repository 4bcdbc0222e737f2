#pragma once
// The tile steps of the CUDA fused attention (ScaledDotProductAttention, core/ops/attention.h),
// written once as __host__ __device__ functions: attention.cu's kernels call them with the block's
// threads, and the host drivers at the bottom (forwardTiled / backwardTiled) call them with one
// "thread", so tests/exec/tst_attention_tiles.cpp proves the tiled algorithm on the CPU.
//   Problem p = ...;  // gpu/attention_plan.h builds it from an AttentionGeometry
//   forwardTiled(p, q, k, v, bias, mask, o, lse);
//   backwardTiled(p, q, k, v, bias, mask, o, dO, lse, dq, dk, dv, dbias);
// Forward (flash attention): per (batch, tile of kBr query rows), K / V streamed in tiles of kBc
// keys; scores -> online softmax (running max m, running sum l, accumulator rescaled) -> O = acc /
// l, the float32 log-sum-exp m + log l. Backward: D = rowsum(dO * O) first; per (batch, tile of
// kBc keys), every query tile recomputes P = exp(S - lse), then dV += P^T dO, dS = P (dP - D)
// taken back through the logit ops (scale, bias: dBias, masks and causal: zero), dK += dS^T Q in
// the block, dQ += dS K added into the float accumulator (atomically on the device).
// Storage may be float, __half or __nv_bfloat16 (toF / fromF); the math is float.

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define REMAT_ATTN_HD __host__ __device__ inline
#else
#define REMAT_ATTN_HD inline
#endif

namespace remat::gpu::kernels::attn {

inline constexpr int kMaxLogitOps = 8;
inline constexpr int kBr = 32; ///< query rows per tile
inline constexpr int kBc = 32; ///< keys per tile

/// core::ops::LogitOp's values.
enum LogitCode : int { Scale = 1, AddBias = 2, MaskKeepTrue = 3, MaskKeepFalse = 4, Causal = 5 };

/// One operand's addressing: element (batch b, row r, column c) at offset[b] + r * row + c * col.
/// `offset` has one entry per output batch (broadcast and grouped-query K / V map several batches
/// to one matrix); host or device memory, as the caller runs.
struct Operand
{
    const int64_t *offset = nullptr;
    int64_t row = 0, col = 1;
    REMAT_ATTN_HD int64_t at(int64_t b, int64_t r, int64_t c) const
    {
        return offset[b] + r * row + c * col;
    }
};

/// One attention call. q [sq, d], k [sk, d] (any layout through `row` / `col`: K^T is col = sk,
/// row = 1), v [sk, dv], o and dO [sq, dv], lse [batches, sq] contiguous. bias / mask [rows, cols]
/// with rows (cols) 1 or sq (sk), at biasOffset[b] / maskOffset[b].
struct Problem
{
    int64_t batches = 0, sq = 0, sk = 0, d = 0, dv = 0;
    int nOps = 0;
    int ops[kMaxLogitOps] = {};
    float values[kMaxLogitOps] = {};
    Operand q, k, v, o;
    const int64_t *biasOffset = nullptr, *maskOffset = nullptr;
    int64_t biasRows = 1, biasCols = 1, maskRows = 1, maskCols = 1;
};

REMAT_ATTN_HD float toF(float x) { return x; }
REMAT_ATTN_HD void fromF(float x, float *dst) { *dst = x; }
#ifdef __CUDACC__
REMAT_ATTN_HD float toF(__half x) { return __half2float(x); }
REMAT_ATTN_HD float toF(__nv_bfloat16 x) { return __bfloat162float(x); }
REMAT_ATTN_HD void fromF(float x, __half *dst) { *dst = __float2half_rn(x); }
REMAT_ATTN_HD void fromF(float x, __nv_bfloat16 *dst) { *dst = __float2bfloat16_rn(x); }
#endif

/// *p += v: atomically on the device (several blocks add into one dQ, dK, dV or dBias element).
REMAT_ATTN_HD void addTo(float *p, float v)
{
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

/// The logit of query row i and key j of batch b from qk = q_i . k_j: the file's ops in order,
/// as the CPU reference (core/exec/cpu/kernels_attention.cpp) applies them.
template <typename B>
REMAT_ATTN_HD float logitOf(const Problem &p, float qk, int64_t b, int64_t i, int64_t j,
                            const B *bias, const bool *mask)
{
    for (int o = 0; o < p.nOps; ++o) {
        switch (p.ops[o]) {
        case Scale: qk *= p.values[o]; break;
        case AddBias:
            qk += toF(bias[p.biasOffset[b] + (p.biasRows == 1 ? 0 : i) * p.biasCols +
                           (p.biasCols == 1 ? 0 : j)]);
            break;
        case MaskKeepTrue:
        case MaskKeepFalse: {
            const bool m = mask[p.maskOffset[b] + (p.maskRows == 1 ? 0 : i) * p.maskCols +
                                (p.maskCols == 1 ? 0 : j)];
            if (m != (p.ops[o] == MaskKeepTrue))
                qk = p.values[o];
            break;
        }
        case Causal:
            if (j > i)
                qk = p.values[o];
            break;
        default: break;
        }
    }
    return qk;
}

/// dS (of the logit) back to d(q_i . k_j) through the ops in reverse; *dBias receives the
/// gradient at the bias (0 when no bias or masked after it).
REMAT_ATTN_HD float logitGrad(const Problem &p, float ds, int64_t b, int64_t i, int64_t j,
                              const bool *mask, float *dBias)
{
    *dBias = 0.f;
    for (int o = p.nOps; o-- > 0;) {
        switch (p.ops[o]) {
        case Scale: ds *= p.values[o]; break;
        case AddBias: *dBias += ds; break;
        case MaskKeepTrue:
        case MaskKeepFalse: {
            const bool m = mask[p.maskOffset[b] + (p.maskRows == 1 ? 0 : i) * p.maskCols +
                                (p.maskCols == 1 ? 0 : j)];
            if (m != (p.ops[o] == MaskKeepTrue))
                ds = 0.f;
            break;
        }
        case Causal:
            if (j > i)
                ds = 0.f;
            break;
        default: break;
        }
    }
    return ds;
}

/// The row stride of a K or V tile in shared memory: odd, so the 32 keys a warp reads at once
/// (scoreTile, dsTile) lie in 32 different banks.
REMAT_ATTN_HD int64_t tileStride(int64_t width) { return width | 1; }

/// dst[r * ld + c] = src(b, r0 + r, c) for r < rows, c < width (rows past `limit` zero), as float.
template <typename T>
REMAT_ATTN_HD void loadTile(float *dst, int64_t ld, const T *src, const Operand &op, int64_t b,
                            int64_t r0, int rows, int64_t limit, int64_t width, int tid,
                            int nThreads)
{
    for (int64_t e = tid; e < int64_t(rows) * width; e += nThreads) {
        const int64_t r = e / width, c = e - r * width;
        dst[r * ld + c] = r0 + r < limit ? toF(src[op.at(b, r0 + r, c)]) : 0.f;
    }
}

/// s[r * kBc + c] = the logit of query i0 + r and key j0 + c (r < nr, c < nc) from the Q tile
/// qs [kBr, d] and the K tile ks [kBc, d] (row stride tileStride(d)).
template <typename B>
REMAT_ATTN_HD void scoreTile(const Problem &p, int64_t b, int64_t i0, int64_t j0, int nr, int nc,
                             const float *qs, const float *ks, const B *bias, const bool *mask,
                             float *s, int tid, int nThreads)
{
    const int64_t ldk = tileStride(p.d);
    for (int e = tid; e < nr * kBc; e += nThreads) {
        const int r = e / kBc, c = e - r * kBc;
        if (c >= nc)
            continue;
        float acc = 0.f;
        for (int64_t t = 0; t < p.d; ++t)
            acc += qs[r * p.d + t] * ks[c * ldk + t];
        s[e] = logitOf(p, acc, b, i0 + r, j0 + c, bias, mask);
    }
}

/// The online softmax step of one row: folds the nc logits s[0..nc) into the running max m and
/// sum l; s becomes exp(s - m_new); returns the factor the row's accumulator is scaled by. A row
/// with every logit -inf so far keeps m = -inf, l = 0 and probabilities 0 (flash attention's rule;
/// the unfused graph gives NaN there).
REMAT_ATTN_HD float onlineSoftmaxRow(float &m, float &l, float *s, int nc)
{
    float mNew = m;
    for (int c = 0; c < nc; ++c)
        mNew = fmaxf(mNew, s[c]);
    const float scale = mNew == -INFINITY ? 1.f : expf(m - mNew);
    float sum = 0.f;
    for (int c = 0; c < nc; ++c) {
        s[c] = mNew == -INFINITY ? 0.f : expf(s[c] - mNew);
        sum += s[c];
    }
    l = l * scale + sum;
    m = mNew;
    return scale;
}

/// Rows of a score tile through onlineSoftmaxRow; rowScale[r] receives each row's factor.
REMAT_ATTN_HD void softmaxTile(float *m, float *l, float *rowScale, float *s, int nr, int nc,
                               int tid, int nThreads)
{
    for (int r = tid; r < nr; r += nThreads)
        rowScale[r] = onlineSoftmaxRow(m[r], l[r], s + r * kBc, nc);
}

/// acc [kBr, dv] = acc * rowScale + P V_tile (P = s [kBr, kBc], vs [kBc, dv], row stride
/// tileStride(dv)).
REMAT_ATTN_HD void accumulateTile(float *acc, const float *rowScale, const float *s,
                                  const float *vs, int nr, int nc, int64_t dv, int tid,
                                  int nThreads)
{
    const int64_t ldv = tileStride(dv);
    for (int64_t e = tid; e < int64_t(nr) * dv; e += nThreads) {
        const int64_t r = e / dv, c = e - r * dv;
        float sum = acc[e] * rowScale[r];
        for (int j = 0; j < nc; ++j)
            sum += s[r * kBc + j] * vs[j * ldv + c];
        acc[e] = sum;
    }
}

/// The log-sum-exp of a finished row (-inf for a row with no finite logit).
REMAT_ATTN_HD float rowLse(float m, float l) { return l > 0.f ? m + logf(l) : -INFINITY; }

/// Writes O = acc / l for the tile's rows and their log-sum-exp (lse may be null).
template <typename T>
REMAT_ATTN_HD void finishTile(const Problem &p, int64_t b, int64_t i0, int nr, const float *acc,
                              const float *m, const float *l, T *o, float *lse, int tid,
                              int nThreads)
{
    for (int64_t e = tid; e < int64_t(nr) * p.dv; e += nThreads) {
        const int64_t r = e / p.dv, c = e - r * p.dv;
        fromF(l[r] > 0.f ? acc[e] / l[r] : 0.f, &o[p.o.at(b, i0 + r, c)]);
    }
    if (lse)
        for (int r = tid; r < nr; r += nThreads)
            lse[b * p.sq + i0 + r] = rowLse(m[r], l[r]);
}

// ---- backward ------------------------------------------------------------------------------

/// D[b * sq + i] = sum_e dO(b, i, e) O(b, i, e): the row term of the softmax backward.
template <typename T>
REMAT_ATTN_HD float rowDelta(const Problem &p, const T *o, const T *dO, int64_t b, int64_t i)
{
    float acc = 0.f;
    for (int64_t e = 0; e < p.dv; ++e) {
        const int64_t at = p.o.at(b, i, e);
        acc += toF(dO[at]) * toF(o[at]);
    }
    return acc;
}

/// s (the tile's logits, scoreTile) becomes P = exp(s - lse) of its rows.
REMAT_ATTN_HD void probabilityTile(float *s, const float *lseRows, int nr, int nc, int tid,
                                   int nThreads)
{
    for (int e = tid; e < nr * kBc; e += nThreads) {
        const int r = e / kBc, c = e - r * kBc;
        if (c < nc)
            s[e] = lseRows[r] == -INFINITY ? 0.f : expf(s[e] - lseRows[r]);
    }
}

/// dvAcc [kBc, dv] += P^T dO (P = s [kBr, kBc], dos [kBr, dv]).
REMAT_ATTN_HD void dvTile(float *dvAcc, const float *s, const float *dos, int nr, int nc,
                          int64_t dv, int tid, int nThreads)
{
    for (int64_t e = tid; e < int64_t(nc) * dv; e += nThreads) {
        const int64_t j = e / dv, c = e - j * dv;
        float sum = 0.f;
        for (int r = 0; r < nr; ++r)
            sum += s[r * kBc + j] * dos[r * dv + c];
        dvAcc[e] += sum;
    }
}

/// s (P) becomes dS of q_i . k_j: P (dO_i . v_j - D_i) back through the logit ops; the bias's
/// share is added into dbias (null: not wanted).
REMAT_ATTN_HD void dsTile(const Problem &p, int64_t b, int64_t i0, int64_t j0, int nr, int nc,
                          float *s, const float *dos, const float *vs, const float *deltaRows,
                          const bool *mask, float *dbias, int tid, int nThreads)
{
    const int64_t ldv = tileStride(p.dv);
    for (int e = tid; e < nr * kBc; e += nThreads) {
        const int r = e / kBc, c = e - r * kBc;
        if (c >= nc)
            continue;
        float dp = 0.f;
        for (int64_t t = 0; t < p.dv; ++t)
            dp += dos[r * p.dv + t] * vs[c * ldv + t];
        float db = 0.f;
        const int64_t i = i0 + r, j = j0 + c;
        s[e] = logitGrad(p, s[e] * (dp - deltaRows[r]), b, i, j, mask, &db);
        if (dbias && db != 0.f)
            addTo(&dbias[p.biasOffset[b] + (p.biasRows == 1 ? 0 : i) * p.biasCols +
                         (p.biasCols == 1 ? 0 : j)],
                  db);
    }
}

/// dkAcc [kBc, d] += dS^T Q_tile.
REMAT_ATTN_HD void dkTile(float *dkAcc, const float *s, const float *qs, int nr, int nc, int64_t d,
                          int tid, int nThreads)
{
    for (int64_t e = tid; e < int64_t(nc) * d; e += nThreads) {
        const int64_t j = e / d, c = e - j * d;
        float sum = 0.f;
        for (int r = 0; r < nr; ++r)
            sum += s[r * kBc + j] * qs[r * d + c];
        dkAcc[e] += sum;
    }
}

/// dq (float, Q's layout) += dS K_tile for the tile's rows.
REMAT_ATTN_HD void dqTile(const Problem &p, int64_t b, int64_t i0, float *dq, const float *s,
                          const float *ks, int nr, int nc, int tid, int nThreads)
{
    const int64_t ldk = tileStride(p.d);
    for (int64_t e = tid; e < int64_t(nr) * p.d; e += nThreads) {
        const int64_t r = e / p.d, c = e - r * p.d;
        float sum = 0.f;
        for (int j = 0; j < nc; ++j)
            sum += s[r * kBc + j] * ks[j * ldk + c];
        addTo(&dq[p.q.at(b, i0 + r, c)], sum);
    }
}

/// Adds a block's dK or dV tile [nc, width] into the float gradient (the operand's layout).
REMAT_ATTN_HD void flushTile(const Operand &op, int64_t b, int64_t j0, const float *acc, int nc,
                             int64_t width, float *grad, int tid, int nThreads)
{
    for (int64_t e = tid; e < int64_t(nc) * width; e += nThreads) {
        const int64_t j = e / width, c = e - j * width;
        addTo(&grad[op.at(b, j0 + j, c)], acc[e]);
    }
}

/// Floats of shared memory a forward / backward block uses.
REMAT_ATTN_HD int64_t forwardSharedFloats(int64_t d, int64_t dv)
{
    return kBr * d + kBc * tileStride(d) + kBc * tileStride(dv) + kBr * dv + kBr * kBc + 3 * kBr;
}
REMAT_ATTN_HD int64_t backwardSharedFloats(int64_t d, int64_t dv)
{
    return kBc * (tileStride(d) + tileStride(dv) + d + dv) + kBr * d + kBr * dv + kBr * kBc +
           2 * kBr;
}

/// One forward block: batch b, query rows [i0, i0 + kBr); `smem` holds forwardSharedFloats. On
/// the device every thread of the block calls it (sync = __syncthreads); on the host one caller.
template <typename T, typename B>
REMAT_ATTN_HD void forwardBlock(const Problem &p, int64_t b, int64_t i0, const T *q, const T *k,
                                const T *v, const B *bias, const bool *mask, T *o, float *lse,
                                float *smem, int tid, int nThreads)
{
    float *qs = smem, *ks = qs + kBr * p.d, *vs = ks + kBc * tileStride(p.d),
          *acc = vs + kBc * tileStride(p.dv), *s = acc + kBr * p.dv, *m = s + kBr * kBc,
          *l = m + kBr, *rowScale = l + kBr;
    const int nr = int(p.sq - i0 < kBr ? p.sq - i0 : kBr);
    loadTile(qs, p.d, q, p.q, b, i0, kBr, p.sq, p.d, tid, nThreads);
    for (int64_t e = tid; e < int64_t(kBr) * p.dv; e += nThreads)
        acc[e] = 0.f;
    for (int r = tid; r < kBr; r += nThreads) {
        m[r] = -INFINITY;
        l[r] = 0.f;
    }
    for (int64_t j0 = 0; j0 < p.sk; j0 += kBc) {
        const int nc = int(p.sk - j0 < kBc ? p.sk - j0 : kBc);
#ifdef __CUDA_ARCH__
        __syncthreads(); // the previous tile's K / V are no longer read
#endif
        loadTile(ks, tileStride(p.d), k, p.k, b, j0, kBc, p.sk, p.d, tid, nThreads);
        loadTile(vs, tileStride(p.dv), v, p.v, b, j0, kBc, p.sk, p.dv, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        scoreTile(p, b, i0, j0, nr, nc, qs, ks, bias, mask, s, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        softmaxTile(m, l, rowScale, s, nr, nc, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        accumulateTile(acc, rowScale, s, vs, nr, nc, p.dv, tid, nThreads);
    }
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
    finishTile(p, b, i0, nr, acc, m, l, o, lse, tid, nThreads);
}

/// One backward block: batch b, keys [j0, j0 + kBc), every query tile. dq / dk / dv / dbias:
/// float accumulators in their operands' layouts (null: not wanted), zeroed before the call.
template <typename T, typename B>
REMAT_ATTN_HD void backwardBlock(const Problem &p, int64_t b, int64_t j0, const T *q, const T *k,
                                 const T *v, const B *bias, const bool *mask, const T *dO,
                                 const float *lse, const float *delta, float *dq, float *dk,
                                 float *dv, float *dbias, float *smem, int tid, int nThreads)
{
    float *ks = smem, *vs = ks + kBc * tileStride(p.d), *dkAcc = vs + kBc * tileStride(p.dv),
          *dvAcc = dkAcc + kBc * p.d, *qs = dvAcc + kBc * p.dv, *dos = qs + kBr * p.d,
          *s = dos + kBr * p.dv, *lseRows = s + kBr * kBc, *deltaRows = lseRows + kBr;
    const int nc = int(p.sk - j0 < kBc ? p.sk - j0 : kBc);
    loadTile(ks, tileStride(p.d), k, p.k, b, j0, kBc, p.sk, p.d, tid, nThreads);
    loadTile(vs, tileStride(p.dv), v, p.v, b, j0, kBc, p.sk, p.dv, tid, nThreads);
    for (int64_t e = tid; e < int64_t(kBc) * p.d; e += nThreads)
        dkAcc[e] = 0.f;
    for (int64_t e = tid; e < int64_t(kBc) * p.dv; e += nThreads)
        dvAcc[e] = 0.f;
    for (int64_t i0 = 0; i0 < p.sq; i0 += kBr) {
        const int nr = int(p.sq - i0 < kBr ? p.sq - i0 : kBr);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        loadTile(qs, p.d, q, p.q, b, i0, kBr, p.sq, p.d, tid, nThreads);
        loadTile(dos, p.dv, dO, p.o, b, i0, kBr, p.sq, p.dv, tid, nThreads);
        for (int r = tid; r < kBr; r += nThreads) {
            lseRows[r] = r < nr ? lse[b * p.sq + i0 + r] : 0.f;
            deltaRows[r] = r < nr ? delta[b * p.sq + i0 + r] : 0.f;
        }
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        scoreTile(p, b, i0, j0, nr, nc, qs, ks, bias, mask, s, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        probabilityTile(s, lseRows, nr, nc, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        if (dv)
            dvTile(dvAcc, s, dos, nr, nc, p.dv, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads(); // dvTile reads P before dsTile overwrites it with dS
#endif
        dsTile(p, b, i0, j0, nr, nc, s, dos, vs, deltaRows, mask, dbias, tid, nThreads);
#ifdef __CUDA_ARCH__
        __syncthreads();
#endif
        if (dk)
            dkTile(dkAcc, s, qs, nr, nc, p.d, tid, nThreads);
        if (dq)
            dqTile(p, b, i0, dq, s, ks, nr, nc, tid, nThreads);
    }
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
    if (dk)
        flushTile(p.k, b, j0, dkAcc, nc, p.d, dk, tid, nThreads);
    if (dv)
        flushTile(p.v, b, j0, dvAcc, nc, p.dv, dv, tid, nThreads);
}

// ---- host drivers (the CPU test of the tiled algorithm) -------------------------------------

#ifndef __CUDA_ARCH__
/// The forward kernel's grid run block by block on the host.
template <typename T, typename B>
void forwardTiled(const Problem &p, const T *q, const T *k, const T *v, const B *bias,
                  const bool *mask, T *o, float *lse, float *smem)
{
    for (int64_t b = 0; b < p.batches; ++b)
        for (int64_t i0 = 0; i0 < p.sq; i0 += kBr)
            forwardBlock(p, b, i0, q, k, v, bias, mask, o, lse, smem, 0, 1);
}

/// The backward kernels run on the host: delta (batches * sq floats) first, then the blocks.
template <typename T, typename B>
void backwardTiled(const Problem &p, const T *q, const T *k, const T *v, const B *bias,
                   const bool *mask, const T *o, const T *dO, const float *lse, float *delta,
                   float *dq, float *dk, float *dv, float *dbias, float *smem)
{
    for (int64_t b = 0; b < p.batches; ++b)
        for (int64_t i = 0; i < p.sq; ++i)
            delta[b * p.sq + i] = rowDelta(p, o, dO, b, i);
    for (int64_t b = 0; b < p.batches; ++b)
        for (int64_t j0 = 0; j0 < p.sk; j0 += kBc)
            backwardBlock(p, b, j0, q, k, v, bias, mask, dO, lse, delta, dq, dk, dv, dbias, smem, 0,
                          1);
}
#endif

} // namespace remat::gpu::kernels::attn
