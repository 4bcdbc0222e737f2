#pragma once
// Where an ONNX Slice reads from, shared by every backend (the kernels differ, the geometry not).
//   Expected<SliceGeometry> g = sliceGeometry(starts, ends, axes, steps, xShape);
//   out[i] = x[g->offset + sum_d idx_d * g->strides[d]]  for idx over g->outShape

#include "core/util/status.h"

#include <cstdint>
#include <vector>

namespace remat::core::exec {

struct SliceGeometry
{
    int64_t offset = 0;           ///< element offset of the first output element in the input
    std::vector<int64_t> strides; ///< input element strides per output dim (negative for step < 0)
    std::vector<int64_t> outShape;
};

/// ONNX Slice semantics: negative starts/ends count from the end, both clamp to the dim, empty
/// axes mean 0..n-1, empty steps mean 1. The error says which operand is malformed.
Expected<SliceGeometry> sliceGeometry(std::vector<int64_t> starts, std::vector<int64_t> ends,
                                      std::vector<int64_t> axes, std::vector<int64_t> steps,
                                      const std::vector<int64_t> &dataShape);

} // namespace remat::core::exec
