#pragma once
// One time step of RNN / GRU / LSTM on the device, one thread per (batch row, hidden unit), with
// the cell math of core/ops/recurrent_math.h (the CPU reference's). The products (X W^T, H R^T,
// the backward's dGates R) are cuBLAS calls in gpu/ops_recurrent.cpp between these kernels.
//   recurrentStepForward(stream, step, buffers);   // after hg = H R^T + Rb
//   recurrentStepBackward(stream, step, grads);    // then dhNext += dGatesR R

#include "core/ops/recurrent_math.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

enum class RecurrentCell : int { Rnn, Gru, Lstm };

/// Where one step of one direction stands (plain data, passed by value).
struct RecurrentStep
{
    core::ops::rnn::CellParams p;
    RecurrentCell cell = RecurrentCell::Lstm;
    int64_t seq = 0, batch = 0, hidden = 0, directions = 1, direction = 0, step = 0;
    bool batchFirst = false, reversed = false;
    const int64_t *lengths = nullptr; ///< device, one per batch row; null: every row runs seq steps
};

/// Device buffers of the forward (null when absent). Saved state as core/ops/recurrent.h lays
/// it out: RNN hidden; GRU hidden_in, gates, hidden_linear, new_gate, hidden_minus_new; LSTM
/// hidden_in, cell_in, gates, cell_act.
struct RecurrentForwardBuffers
{
    const float *proj = nullptr;      ///< X W^T + Wb, [T*B, G*H] in X's row order
    float *hg = nullptr;              ///< H R^T + Rb of this step, [B, G*H]
    float *h = nullptr, *c = nullptr; ///< running state [B, H]
    float *rh = nullptr;              ///< GRU without linear_before_reset: r * H [B, H]
    const float *peep = nullptr;      ///< LSTM P of this direction [3H]
    float *y = nullptr;
    float *saved[5] = {};
};

/// GRU without linear_before_reset: rh = r * H (0 on rows past their length), before the product
/// that finishes hg's h block.
cudaError_t gruResetHidden(cudaStream_t s, const RecurrentStep &st,
                           const RecurrentForwardBuffers &b);
/// The cell of this step: state update, Y, saved state.
cudaError_t recurrentStepForward(cudaStream_t s, const RecurrentStep &st,
                                 const RecurrentForwardBuffers &b);
/// RNN: the initial state's slot of the saved hidden states (step 0 only).
cudaError_t rnnSaveInitial(cudaStream_t s, const RecurrentStep &st, const float *h, float *saved);

struct RecurrentBackwardBuffers
{
    const float *saved[5] = {};
    const float *gy = nullptr;          ///< dY (full) or null
    const float *peep = nullptr;        ///< LSTM P of this direction [3H]
    float *dh = nullptr, *dc = nullptr; ///< running state gradients [B, H]
    float *dhNext = nullptr;    ///< [B, H]: the direct part and pass-through, products add to it
    float *dpreX = nullptr;     ///< [T*B, G*H] in X's row order
    float *dpreR = nullptr;     ///< [B, G*H]: pre-activation gradients read against hprev
    float *hprev = nullptr;     ///< [B, G*H]: what each gate block of R multiplied
    float *drh = nullptr;       ///< GRU without linear_before_reset: dpn Rh [B, H]
    float *peepSteps = nullptr; ///< LSTM with P: [T*B, 3H], row step * B + b
};

/// The cell's backward of this step (dh += dY first); rows past their length pass dh through.
cudaError_t recurrentStepBackward(cudaStream_t s, const RecurrentStep &st,
                                  const RecurrentBackwardBuffers &b);
/// GRU without linear_before_reset, after drh = dpn Rh: the reset gate's gradient, dhNext += drh r.
cudaError_t gruResetBackward(cudaStream_t s, const RecurrentStep &st,
                             const RecurrentBackwardBuffers &b);

/// dst [B, H] = state (d) of src laid out [D, B, H] (or [B, D, H] batch-first); src null: zeros.
cudaError_t loadRecurrentState(cudaStream_t s, const RecurrentStep &st, const float *src,
                               float *dst);
/// The reverse: dst (d) = src [B, H].
cudaError_t storeRecurrentState(cudaStream_t s, const RecurrentStep &st, const float *src,
                                float *dst);
/// Every one of `rows` rows of dst [rows, cols] = row (null: zeros).
cudaError_t fillRecurrentRows(cudaStream_t s, float *dst, const float *row, int64_t rows,
                              int64_t cols);

} // namespace remat::gpu::kernels
