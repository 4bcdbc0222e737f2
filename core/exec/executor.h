#pragma once
// Runs a Schedule on a Backend: allocates, computes, recomputes, frees, offloads and prefetches
// exactly as the schedule says, times every step and reports through the same observer events as
// the simulator, so measured and predicted curves are drawn by one chart code.
//   Executor ex(*backend, tg, graph);                       // backend: cpu or cuda
//   REMAT_RETURN_IF_ERROR(ex.prepare(inputs));             // kernels exist, data is ready
//   Expected<ExecResult> r = ex.run(schedule, {.observer = &rec});  r->loss; r->timeline.peakBytes;

#include "core/exec/backend.h"
#include "core/exec/host_tensor.h"
#include "core/exec/npz.h"
#include "core/schedule/observer.h"
#include "core/schedule/schedule.h"
#include "core/sim/timeline.h"
#include "core/training/training_graph.h"
#include "core/util/stop_token.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::ir {
class Graph;
}

namespace remat::core::exec {

/// The data a step starts from. Missing entries are filled with seeded random values.
struct ExecInputs
{
    /// By name: forward value names (the data input "input", a parameter "fc1.weight") and "R",
    /// the loss cotangent (shaped like the graph output). Typically a corpus .npz (--feed).
    NpzArchive feed;
    /// Seed for every value not in `feed` and not an ONNX initializer, and for Dropout masks.
    uint64_t seed = 1234;
};

struct ExecOptions
{
    schedule::ScheduleObserver *observer = nullptr; ///< optional; called on the running thread
    StopToken stop;                                 ///< checked between steps
    /// Download every parameter gradient and the input gradient after the step.
    bool downloadGradients = true;
    /// Also download the graph output (entry "output").
    bool downloadOutput = false;
    /// Download every parameter after the step (ExecResult::parameters): the optimizer step's
    /// updated weights.
    bool downloadParameters = false;
};

/// Measured figures of one step.
struct ExecResult
{
    /// Same layout as the simulator's: one point per schedule step, bytes from the backend's
    /// allocator (exact tensor bytes), times measured (seconds from the step's start).
    sim::Timeline timeline;
    int64_t measuredPeakBytes = 0;          ///< allocator peak during the step
    std::optional<int64_t> devicePeakBytes; ///< the device's own figure (CUDA), else nullopt
    /// The backend's kernel scratch outside the byte count (MemoryStats::scratchPeakBytes): on
    /// the CPU reference, the float32 copies of one op's float16 / bfloat16 operands. Not part of
    /// the modelled memory and not in measuredPeakBytes; reported beside it.
    int64_t scratchPeakBytes = 0;
    double stepSeconds = 0; ///< wall time of the whole step
    double loss = 0;
    /// "grad_input", "grad:<parameter name>" (and "output" on request), in the corpus layout.
    NpzArchive gradients;
    /// With ExecOptions::downloadParameters: each parameter after the step, by value name.
    NpzArchive parameters;
};

class Executor
{
public:
    /// `backend`, `graph` and `forward` must outlive the executor.
    Executor(Backend &backend, const training::TrainingGraph &graph, const ir::Graph &forward);
    ~Executor();
    Executor(const Executor &) = delete;
    Executor &operator=(const Executor &) = delete;

    /// Asks the backend to refuse unsupported ops (naming the op), builds the host data of every
    /// preloaded tensor (initializers, Constant nodes, feed or seeded random input and R) and
    /// uploads it. Must succeed before run(). Training options that are simulated only
    /// (sharding, micro-batches, adafactor) are refused here, saying so; half-precision tensors
    /// run where the backend's prepare() accepts them (the CPU reference does).
    Status prepare(const ExecInputs &inputs);

    /// Runs one training step. The schedule is validated first. Preloaded tensors stay resident
    /// between runs (those an optimizer step updates are uploaded again before the next run, so
    /// every run is the same step from the prepared weights and zero optimizer state); everything the step allocated is released before returning (also on error).
    Expected<ExecResult> run(const schedule::Schedule &schedule, const ExecOptions &options = {});

    /// The host data a preloaded tensor was given (after prepare()); null if none.
    const HostTensor *preloadedData(TensorId tensor) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Compares two gradient archives entry by entry: max over entries of
/// max|a-b| / max(max|b|, tiny). Missing entries are an error.
struct GradientComparison
{
    double maxRelativeError = 0;
    std::string worstEntry;
    bool bitwiseEqual = true;
};
Expected<GradientComparison> compareGradients(const NpzArchive &a, const NpzArchive &b);

} // namespace remat::core::exec
