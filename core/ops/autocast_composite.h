#pragma once
// Ops whose autocast is more than one policy row (OpDef::autocast): PyTorch runs them as a
// composite of listed ops, or through an autocast wrapper of their own, rather than as one
// listed kernel. nn.LSTM / nn.GRU / nn.RNN are the ones (core/ops/rnn.cpp says how, per device).
// The autocast pass (core/training/autocast.cpp) asks each op type:
//   if (const ops::AutocastComposite *rule = ops::autocastComposite(op.type)) { ... }
// A composite op's policy row still says what its products run in (for display).

#include "core/ir/dtype.h"
#include "core/ops/op_def.h"

#include <cstdint>
#include <string>
#include <vector>

namespace remat::core::ops {

/// What a composite rule is told about one node.
struct AutocastCompositeContext
{
    const ir::Node *node = nullptr; ///< null: attributes unknown
    AutocastDevice device = AutocastDevice::Cuda;
    ir::DataType half = ir::DataType::BFloat16; ///< autocast's lower precision
    /// Each ONNX input's dtype as it arrives, before any cast (Undefined: absent), and its static
    /// sizes (empty: unknown or absent).
    std::vector<ir::DataType> inputs;
    std::vector<std::vector<int64_t>> inputSizes;
    /// Per input: computed from constants alone (no weight, no data): a tensor the module makes
    /// in forward, such as nn.LSTM's zero initial states (torch makes them in the input's dtype;
    /// the export, made without autocast, says float32).
    std::vector<char> fromConstants;
};

struct AutocastComposite
{
    /// The dtype the op reads ONNX input `position` in (Undefined: as it arrives, no cast), and in
    /// `copies` (1 on entry) how many separate casts PyTorch makes of it when the cast is not
    /// cached (one per direction, one per time step).
    ir::DataType (*input)(const AutocastCompositeContext &c, int position, int &copies) = nullptr;
    /// The dtype of floating-point output `position` (SavedState extras included).
    ir::DataType (*output)(const AutocastCompositeContext &c, int position) = nullptr;
};

/// The composite rule of `opType`, or null where its policy row says all.
const AutocastComposite *autocastComposite(const std::string &opType);

} // namespace remat::core::ops
