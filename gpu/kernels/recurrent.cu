#include "gpu/kernels/launch.cuh"
#include "gpu/kernels/recurrent.h"

namespace remat::gpu::kernels {
using namespace detail;
namespace rnn = core::ops::rnn;

namespace {

/// Time position of this step for batch row b, or -1 past the row's length.
__device__ __forceinline__ int64_t timeOf(const RecurrentStep &st, int64_t b)
{
    const int64_t len = st.lengths ? st.lengths[b] : st.seq;
    if (st.step >= len)
        return -1;
    return st.reversed ? len - 1 - st.step : st.step;
}

__device__ __forceinline__ int64_t xRow(const RecurrentStep &st, int64_t t, int64_t b)
{
    return st.batchFirst ? b * st.seq + t : t * st.batch + b;
}

__device__ __forceinline__ int64_t yOffset(const RecurrentStep &st, int64_t t, int64_t b)
{
    const int64_t D = st.directions, d = st.direction;
    return (st.batchFirst ? ((b * st.seq + t) * D + d) : ((t * D + d) * st.batch + b)) * st.hidden;
}

__device__ __forceinline__ int64_t stateOffset(const RecurrentStep &st, int64_t b)
{
    const int64_t D = st.directions, d = st.direction;
    return (st.batchFirst ? (b * D + d) : (d * st.batch + b)) * st.hidden;
}

__device__ __forceinline__ int64_t savedOffset(const RecurrentStep &st, int64_t t, int64_t b,
                                               int64_t width)
{
    return ((t * st.directions + st.direction) * st.batch + b) * width;
}

__global__ void gruResetHiddenK(RecurrentStep st, RecurrentForwardBuffers b)
{
    const int64_t H = st.hidden, GH = 3 * H;
    REMAT_GRID_STRIDE(i, st.batch * H)
    {
        const int64_t row = i / H, j = i % H;
        const int64_t t = timeOf(st, row);
        float z = 0, r = 0;
        if (t >= 0)
            rnn::gruGates(st.p, b.proj + xRow(st, t, row) * GH, b.hg + row * GH, j, z, r);
        b.rh[i] = r * b.h[i];
    }
}

__global__ void stepForwardK(RecurrentStep st, RecurrentForwardBuffers b)
{
    const int64_t H = st.hidden;
    const int64_t G = st.cell == RecurrentCell::Lstm ? 4 : (st.cell == RecurrentCell::Gru ? 3 : 1),
                  GH = G * H;
    REMAT_GRID_STRIDE(i, st.batch * H)
    {
        const int64_t row = i / H, j = i % H;
        const int64_t t = timeOf(st, row);
        if (t < 0)
            continue;
        const float *xg = b.proj + xRow(st, t, row) * GH;
        float *hg = b.hg + row * GH;
        const int64_t off = savedOffset(st, t, row, H);
        float hn;
        if (st.cell == RecurrentCell::Lstm) {
            if (b.saved[0])
                b.saved[0][off + j] = b.h[i];
            if (b.saved[1])
                b.saved[1][off + j] = b.c[i];
            for (int64_t g = 0; g < 4; ++g)
                hg[g * H + j] += xg[g * H + j];
            float cn, hc;
            rnn::lstmForward(st.p, hg, j, b.c[i], b.peep, cn, hc, hn);
            b.c[i] = cn;
            if (b.saved[2]) {
                float *gr = b.saved[2] + savedOffset(st, t, row, GH);
                for (int64_t g = 0; g < 4; ++g)
                    gr[g * H + j] = hg[g * H + j];
            }
            if (b.saved[3])
                b.saved[3][off + j] = hc;
        } else if (st.cell == RecurrentCell::Gru) {
            const float hp = b.h[i];
            if (b.saved[0])
                b.saved[0][off + j] = hp;
            float z, r, n;
            rnn::gruGates(st.p, xg, hg, j, z, r);
            const float lin = hg[2 * H + j];
            const float scaled = st.p.linearBeforeReset ? r * lin : lin;
            rnn::gruOutput(st.p, xg[2 * H + j], scaled, z, hp, n, hn);
            if (b.saved[1]) {
                float *gr = b.saved[1] + savedOffset(st, t, row, GH);
                gr[j] = z;
                gr[H + j] = r;
                gr[2 * H + j] = st.p.linearBeforeReset ? scaled : r * hp;
            }
            if (b.saved[2])
                b.saved[2][off + j] = lin;
            if (b.saved[3])
                b.saved[3][off + j] = n;
            if (b.saved[4])
                b.saved[4][off + j] = hp - n;
        } else {
            hn = rnn::rnnForward(st.p, xg[j] + hg[j]);
            if (b.saved[0])
                b.saved[0][savedOffset(st, st.reversed ? t : t + 1, row, H) + j] = hn;
        }
        b.h[i] = hn;
        if (b.y)
            b.y[yOffset(st, t, row) + j] = hn;
    }
}

__global__ void rnnSaveInitialK(RecurrentStep st, const float *h, float *saved)
{
    const int64_t H = st.hidden;
    REMAT_GRID_STRIDE(i, st.batch * H)
    {
        const int64_t row = i / H, j = i % H;
        const int64_t len = st.lengths ? st.lengths[row] : st.seq;
        saved[savedOffset(st, st.reversed ? len : 0, row, H) + j] = h[i];
    }
}

__global__ void stepBackwardK(RecurrentStep st, RecurrentBackwardBuffers b)
{
    const int64_t H = st.hidden;
    const int64_t G = st.cell == RecurrentCell::Lstm ? 4 : (st.cell == RecurrentCell::Gru ? 3 : 1),
                  GH = G * H;
    REMAT_GRID_STRIDE(i, st.batch * H)
    {
        const int64_t row = i / H, j = i % H;
        const int64_t t = timeOf(st, row);
        float *dr = b.dpreR + row * GH, *hp = b.hprev + row * GH;
        if (t < 0) { // not run: the state's gradient passes through
            b.dhNext[i] = b.dh[i];
            for (int64_t g = 0; g < G; ++g) {
                dr[g * H + j] = 0.f;
                hp[g * H + j] = 0.f;
            }
            continue;
        }
        float dh = b.dh[i] + (b.gy ? b.gy[yOffset(st, t, row) + j] : 0.f);
        float *dx = b.dpreX + xRow(st, t, row) * GH;
        const int64_t off = savedOffset(st, t, row, H);
        if (st.cell == RecurrentCell::Lstm) {
            const float *gates = b.saved[2] + savedOffset(st, t, row, GH);
            float dcPrev, dPeep[3];
            rnn::lstmBackward(st.p, gates, j, b.saved[1][off + j], b.saved[3][off + j], b.peep, dh,
                              b.dc[i], dx, dcPrev, dPeep);
            b.dc[i] = dcPrev;
            if (b.peep && b.peepSteps)
                for (int k = 0; k < 3; ++k)
                    b.peepSteps[(st.step * st.batch + row) * 3 * H + k * H + j] = dPeep[k];
            for (int64_t g = 0; g < 4; ++g) {
                dr[g * H + j] = dx[g * H + j];
                hp[g * H + j] = b.saved[0][off + j];
            }
            b.dhNext[i] = 0.f;
        } else if (st.cell == RecurrentCell::Gru) {
            const float *gates = b.saved[1] + savedOffset(st, t, row, GH);
            float dpz, dpn, direct;
            rnn::gruBackwardZN(st.p, dh, gates[j], b.saved[3][off + j], b.saved[4][off + j], dpz,
                               dpn, direct);
            const float hpj = b.saved[0][off + j];
            dx[j] = dpz;
            dx[2 * H + j] = dpn;
            dr[j] = dpz;
            hp[j] = hpj;
            hp[H + j] = hpj;
            b.dhNext[i] = direct;
            if (st.p.linearBeforeReset) {
                const float r = gates[H + j];
                const float dpr =
                    dpn * b.saved[2][off + j] * rnn::gateDerivative(st.p.f, r, st.p.clip);
                dx[H + j] = dpr;
                dr[H + j] = dpr;
                dr[2 * H + j] = dpn * r;
                hp[2 * H + j] = hpj;
            } else {
                dr[H + j] = 0.f; // gruResetBackward fills it
                dr[2 * H + j] = dpn;
                hp[2 * H + j] = gates[2 * H + j];
            }
        } else {
            const float h = b.saved[0][savedOffset(st, st.reversed ? t : t + 1, row, H) + j];
            const float d = rnn::rnnBackward(st.p, h, dh);
            dx[j] = d;
            dr[j] = d;
            hp[j] = b.saved[0][savedOffset(st, st.reversed ? t + 1 : t, row, H) + j];
            b.dhNext[i] = 0.f;
        }
    }
}

__global__ void gruResetBackwardK(RecurrentStep st, RecurrentBackwardBuffers b)
{
    const int64_t H = st.hidden, GH = 3 * H;
    REMAT_GRID_STRIDE(i, st.batch * H)
    {
        const int64_t row = i / H, j = i % H;
        const int64_t t = timeOf(st, row);
        if (t < 0)
            continue;
        const int64_t off = savedOffset(st, t, row, H);
        const float r = b.saved[1][savedOffset(st, t, row, GH) + H + j], hpj = b.saved[0][off + j];
        const float dpr = b.drh[i] * hpj * rnn::gateDerivative(st.p.f, r, st.p.clip);
        b.dpreX[xRow(st, t, row) * GH + H + j] = dpr;
        b.dpreR[row * GH + H + j] = dpr;
        b.dhNext[i] += b.drh[i] * r;
    }
}

__global__ void loadStateK(RecurrentStep st, const float *src, float *dst)
{
    REMAT_GRID_STRIDE(i, st.batch * st.hidden)
    {
        const int64_t row = i / st.hidden, j = i % st.hidden;
        dst[i] = src ? src[stateOffset(st, row) + j] : 0.f;
    }
}

__global__ void storeStateK(RecurrentStep st, const float *src, float *dst)
{
    REMAT_GRID_STRIDE(i, st.batch * st.hidden)
    {
        const int64_t row = i / st.hidden, j = i % st.hidden;
        dst[stateOffset(st, row) + j] = src[i];
    }
}

__global__ void fillRowsK(float *dst, const float *row, int64_t rows, int64_t cols)
{
    REMAT_GRID_STRIDE(i, rows * cols)
    dst[i] = row ? row[i % cols] : 0.f;
}

} // namespace

cudaError_t gruResetHidden(cudaStream_t s, const RecurrentStep &st,
                           const RecurrentForwardBuffers &b)
{
    gruResetHiddenK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, b);
    return cudaGetLastError();
}

cudaError_t recurrentStepForward(cudaStream_t s, const RecurrentStep &st,
                                 const RecurrentForwardBuffers &b)
{
    stepForwardK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, b);
    return cudaGetLastError();
}

cudaError_t rnnSaveInitial(cudaStream_t s, const RecurrentStep &st, const float *h, float *saved)
{
    rnnSaveInitialK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, h, saved);
    return cudaGetLastError();
}

cudaError_t recurrentStepBackward(cudaStream_t s, const RecurrentStep &st,
                                  const RecurrentBackwardBuffers &b)
{
    stepBackwardK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, b);
    return cudaGetLastError();
}

cudaError_t gruResetBackward(cudaStream_t s, const RecurrentStep &st,
                             const RecurrentBackwardBuffers &b)
{
    gruResetBackwardK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, b);
    return cudaGetLastError();
}

cudaError_t loadRecurrentState(cudaStream_t s, const RecurrentStep &st, const float *src,
                               float *dst)
{
    loadStateK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, src, dst);
    return cudaGetLastError();
}

cudaError_t storeRecurrentState(cudaStream_t s, const RecurrentStep &st, const float *src,
                                float *dst)
{
    storeStateK<<<gridFor(st.batch * st.hidden), kThreads, 0, s>>>(st, src, dst);
    return cudaGetLastError();
}

cudaError_t fillRecurrentRows(cudaStream_t s, float *dst, const float *row, int64_t rows,
                              int64_t cols)
{
    fillRowsK<<<gridFor(rows * cols), kThreads, 0, s>>>(dst, row, rows, cols);
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
