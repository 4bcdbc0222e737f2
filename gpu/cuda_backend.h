#pragma once
// The CUDA implementation of core::exec::Backend: cuBLAS for matrix products, cuDNN (when found)
// for convolution, own kernels for everything else; exact byte accounting plus the device's own
// figure; every CUDA error becomes a Status naming the op or buffer.
//   Expected<std::unique_ptr<core::exec::Backend>> be = gpu::makeCudaBackend(0);
//   if (!be) report(be.status());            // "no CUDA device" on machines without one
//   core::exec::Executor ex(**be, tg, graph);  ex.prepare(inputs);  ex.run(schedule);

#include "core/exec/backend.h"
#include "core/util/status.h"

#include <memory>
#include <string>
#include <vector>

namespace remat::core::ir {
class Graph;
}
namespace remat::core::training {
class TrainingGraph;
}

namespace remat::gpu {

/// Options of the CUDA backend.
struct CudaBackendOptions
{
    int device = 0;
    /// Wait for every op before run() returns, so errors (and out-of-memory inside a library)
    /// are reported at the step that caused them and per-op times are exact. Off: ops queue up
    /// and errors surface at the next synchronize().
    bool synchronous = true;
    /// Convolution through cuDNN when the build has it; off: im2col + cuBLAS (1-D and 2-D).
    bool useCudnn = true;
    /// Serve a training step from one arena planned from the previous completed step's allocations
    /// (core/exec/memory_plan.h) while the step allocates the same sequence; off (or at the first
    /// difference): the stream-ordered pool. The byte count is the same either way; the device
    /// then holds about the plan's peak instead of the pool's fragmented high-water mark.
    bool planMemory = true;
};

/// Figures the generic Backend interface has no slot for.
struct CudaRunFigures
{
    double lastOpSeconds = 0;  ///< device time of the last run() (CUDA events)
    double totalOpSeconds = 0; ///< sum since creation / resetFigures()
    int64_t runs = 0;
    int64_t poolReservedBytes = 0; ///< the stream-ordered pool's reserved bytes now
    int64_t poolReservedPeak = 0;  ///< and its high-water mark
    int64_t scratchPeakBytes = 0;  ///< largest private scratch one op used
    int64_t hostEvaluatedOps = 0;  ///< shape-arithmetic ops run through the CPU reference
    int64_t arenaBytes = 0;        ///< the planned arena now held (planMemory)
    int64_t plannedSteps = 0;      ///< steps served entirely from the arena
};

/// A backend on CUDA device `device`. Errors: Unsupported when the build has no CUDA device to
/// offer ("no CUDA device: ..."), DeviceError when the device cannot be initialised.
core::Expected<std::unique_ptr<core::exec::Backend>> makeCudaBackend(int device = 0);
core::Expected<std::unique_ptr<core::exec::Backend>>
makeCudaBackend(const CudaBackendOptions &options);

/// The CUDA-specific figures of a backend made by makeCudaBackend (null for any other backend).
const CudaRunFigures *cudaRunFigures(const core::exec::Backend &backend);

/// Returns the memory the backend's stream-ordered pool keeps for reuse to the device (after the
/// queued work finishes) and restarts the pool's high-water mark, so the next run's reserved peak
/// is its own; live buffers stay. False for any other backend.
bool releaseCachedMemory(core::exec::Backend &backend);

/// How the ops of a graph would run on the CUDA backend (checkCudaSupport).
struct CudaSupportSummary
{
    int64_t deviceOps = 0;      ///< CUDA kernels on float32 / integer operands
    int64_t halfNativeOps = 0;  ///< CUDA kernels that read and write half operands themselves
    int64_t halfWidenedOps = 0; ///< CUDA float32 kernels on float32 copies of half operands
    int64_t hostOps = 0;        ///< shape arithmetic through the CPU reference
};

/// What the backend's prepare() checks of a training graph, without a device: each op has a CUDA
/// kernel for its operands' dtypes (float16 / bfloat16 included) or runs on the host as shape
/// arithmetic, with attributes the kernels take; else the first op that has not, by name, with
/// the way out. `cudnn`: check as a backend using cuDNN would. `summary` (optional): the counts.
core::Status checkCudaSupport(const core::training::TrainingGraph &graph,
                              const core::ir::Graph *forward, bool cudnn,
                              CudaSupportSummary *summary = nullptr);

/// True for the op types whose CUDA kernels read and write float16 / bfloat16 operands themselves
/// (Cast; the matrix products through cuBLAS's half GEMMs; when the call's floating operands are
/// of one dtype, not `mixedFloating`: the shared table's unary ops and their gradients, its binary
/// arithmetic ops (forward), and convolution through cuDNN when `cudnn`; the fused attention
/// always). The backend gives every other kernel float32 copies of its half operands and rounds
/// the float32 results back (to nearest even), as the CPU reference does.
bool takesHalfOperands(const std::string &opType, bool cudnn, bool mixedFloating = false);

/// Op types with a CUDA kernel (forward and "<Type>Grad"), sorted; for docs and messages.
std::vector<std::string> cudaKernelTypes();

} // namespace remat::gpu
