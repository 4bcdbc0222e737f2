#pragma once
// The CPU reference backend: host memory, float32 kernels (kernel.h), OpenBLAS for products.
//   std::unique_ptr<Backend> be = exec::makeCpuBackend();
//   REMAT_RETURN_IF_ERROR(be->prepare(tg, &graph));
// Its byte count is the sum of live buffers' requested sizes, so its peak equals the simulator's.

#include "core/exec/backend.h"

#include <memory>

namespace remat::core::exec {

std::unique_ptr<Backend> makeCpuBackend();

} // namespace remat::core::exec
