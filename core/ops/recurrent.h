#pragma once
// ONNX's recurrent ops (RNN, GRU, LSTM) resolved once for shape inference, the gradient rule and
// every backend: sizes, direction, layout, activations (with alpha / beta), clip and the GRU / LSTM
// switches, checked against the inputs; and the saved state the training step keeps.
//   Expected<RecurrentConfig> cfg = recurrentConfig(&node, "LSTM", xShape, wShape, rShape);
//   cfg->cell[d]  (core/ops/recurrent_math.h);  cfg->seq, cfg->batch, cfg->hidden ...
//
// Saved state (SavedState outputs after the ONNX ones, indexed by time position t, direction d,
// batch row b; what PyTorch's autograd keeps per step on its non-cuDNN path, so memory agrees):
//   RNN  2 "hidden" [T+1, D, B, H]: the state after each step and the initial one (slot t + 1
//        after time t going forward, slot t after time t going in reverse)
//   GRU  2 "hidden_in" [T, D, B, H] (state each step starts from), 3 "gates" [T, D, B, 3H]
//        (z, r, reset-scaled hidden part), 4 "hidden_linear" [T, D, B, H] (H Rh^T + Rbh),
//        5 "new_gate" [T, D, B, H], 6 "hidden_minus_new" [T, D, B, H]
//   LSTM 3 "hidden_in" [T, D, B, H], 4 "cell_in" [T, D, B, H], 5 "gates" [T, D, B, 4H]
//        (activated i o f c), 6 "cell_act" [T, D, B, H] (h(C_t))
// Steps past a row's sequence length are not run: their saved state is zero.

#include "core/ops/recurrent_math.h"
#include "core/util/status.h"

#include <string>
#include <vector>

namespace remat::core::ir {
struct Node;
}

namespace remat::core::ops {

enum class RecurrentKind { Rnn, Gru, Lstm };

struct RecurrentConfig
{
    RecurrentKind kind = RecurrentKind::Lstm;
    int64_t gates = 4; ///< RNN 1, GRU 3, LSTM 4
    int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1;
    bool reverse = false; ///< direction "reverse" (bidirectional: direction 1 is the reverse one)
    bool batchFirst = false; ///< layout 1: X [B, T, I], Y [B, T, D, H], states [B, D, H]
    rnn::CellParams cell[2]; ///< per direction

    /// Whether direction d runs from the last time step to the first.
    bool reversed(int64_t d) const { return reverse || d == 1; }
    /// Row of X (as [T*B, I] or [B*T, I]) holding time t of batch row b.
    int64_t xRow(int64_t t, int64_t b) const { return batchFirst ? b * seq + t : t * batch + b; }
    /// Offset of Y's unit 0 at (t, d, b).
    int64_t yOffset(int64_t t, int64_t d, int64_t b) const
    {
        return (batchFirst ? ((b * seq + t) * directions + d)
                           : ((t * directions + d) * batch + b)) *
               hidden;
    }
    /// Offset of a state's (Y_h, initial_h ...) unit 0 at (d, b).
    int64_t stateOffset(int64_t d, int64_t b) const
    {
        return (batchFirst ? (b * directions + d) : (d * batch + b)) * hidden;
    }
    /// Offset of saved state [T', D, B, width] at (t, d, b).
    int64_t savedOffset(int64_t t, int64_t d, int64_t b, int64_t width) const
    {
        return ((t * directions + d) * batch + b) * width;
    }
    /// Position of the first saved-state output (RNN, GRU 2; LSTM 3).
    int firstSaved() const { return kind == RecurrentKind::Lstm ? 3 : 2; }
};

RecurrentKind recurrentKind(const std::string &opType);

/// x, w, r are X's, W's and R's static shapes. InvalidArgument names what does not fit (a size,
/// the direction, an activation ONNX does not allow, an attribute list's length).
[[nodiscard]] Expected<RecurrentConfig> recurrentConfig(const ir::Node *node, RecurrentKind kind,
                                                        const std::vector<int64_t> &x,
                                                        const std::vector<int64_t> &w,
                                                        const std::vector<int64_t> &r);

/// The saved-state outputs (position, name suffix, shape) of a configuration.
struct SavedStateSpec
{
    int position;
    const char *suffix;
    std::vector<int64_t> shape;
};
std::vector<SavedStateSpec> recurrentSavedState(const RecurrentConfig &cfg);

} // namespace remat::core::ops
