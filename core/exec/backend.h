#pragma once
// The device a training step runs on: owns device memory and runs one training-graph op at a time.
//   std::unique_ptr<Backend> be = exec::makeCpuBackend();      // or gpu::makeCudaBackend()
//   REMAT_RETURN_IF_ERROR(be->prepare(tg, &graph));            // refuses ops without a kernel
//   REMAT_ASSIGN_OR_RETURN(Buffer b, be->allocate(bytes));  be->upload(b, data);  be->run(call);
//
// The Executor (executor.h) is the only intended caller: it allocates every tensor exactly as the
// schedule says, so the backend's byte count (sum of the bytes of live buffers) equals the
// simulator's bytesInUse step for step. A backend must therefore count the *requested* bytes of a
// buffer, not a rounded-up size; the device's own figure (pool, alignment, context) is reported
// apart in MemoryStats::deviceBytesInUse.
//
// Required members are pure virtual. Optional hooks have a working default (documented at each)
// and a backend overrides them only when it can do better (asynchronous copies, a device figure).
// Nothing here aborts: every failure is a Status that names the op or buffer.

#include "core/ir/dtype.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace remat::core::ir {
class Graph;
struct Node;
} // namespace remat::core::ir

namespace remat::core::exec {

/// A device allocation. `id` is the backend's own handle (an index, never a raw pointer the
/// executor could dereference); `bytes` is what was requested and what the byte count includes.
struct Buffer
{
    int64_t id = -1;
    int64_t bytes = 0;
    bool valid() const { return id >= 0; }
    bool operator==(const Buffer &) const = default;
};

/// One operand of an op call: where it lives and what it holds.
struct TensorArg
{
    Buffer buffer; ///< invalid for an omitted optional operand
    ir::DataType dtype = ir::DataType::Float;
    std::vector<int64_t> shape; ///< static sizes; {} for a scalar
    TensorId tensor;            ///< the training-graph tensor (for messages)

    int64_t numElements() const
    {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return n;
    }
};

/// Everything a kernel needs to run one training-graph op.
///
/// Operand meaning comes from the op's roles, never from guessing positions:
///  - forward op (Phase::Forward): inputs/outputs are the ONNX node's inputs/outputs that the
///    training graph kept, in the order of `op->inputs` / `op->outputs`; `op->inputRoles[i]` is
///    Plain or FwdInput{k} (k = the ONNX input slot). Attributes come from `node`.
///  - backward op ("<Type>Grad"): `op->inputRoles[i]` says FwdInput{k} (forward input k: X, W),
///    FwdOutput{k} (forward output k: Y, saved mean / indices / mask), OutputGrad{k} (dY_k);
///    `op->outputRoles[j]` is InputGrad{k} (the gradient of forward input k). Attributes come from
///    `node` (the forward node the op differentiates).
///  - "Loss": L = sum(output * R) and the seed gradient dL/doutput = R (see training_graph.h for
///    which operand is which); "Accumulate": outputs[0] = sum of inputs (gradient partials).
struct OpCall
{
    const training::TrainingGraph *graph = nullptr;
    const training::Op *op = nullptr;
    /// The ONNX node the op is or differentiates; null for Loss / Accumulate and for graphs that
    /// have no ONNX behind them (benchmark graphs cannot be executed). For an op the training
    /// builder fused from a pattern (Gelu from torch's erf form) it is the pattern's last node:
    /// dispatch on op->type, never on node->opType. operand_slots.h maps operands to node slots.
    const ir::Node *node = nullptr;
    /// The forward graph, for kernels that read a value's static data (null when absent).
    const ir::Graph *forward = nullptr;
    std::vector<TensorArg> inputs;  ///< parallel to op->inputs
    std::vector<TensorArg> outputs; ///< parallel to op->outputs; already allocated
    /// Scratch of op->workspaceBytes bytes (invalid when 0). Counted like a tensor while the op
    /// runs; a kernel that needs more keeps it private (and the figure it reports is unchanged).
    Buffer workspace;
    /// False for the op's first compute in this iteration, true for a recompute. A recompute must
    /// produce bitwise the same outputs and must not change state twice (BN running statistics).
    bool recompute = false;
    /// Seed for random ops (Dropout): fixed per op and iteration, so a recompute replays the same
    /// mask. Derived by the executor from its run seed and the op id.
    uint64_t seed = 0;
    /// Outputs that were already resident before this call (a recompute of a tensor the schedule
    /// kept): the kernel still writes them, with identical values; parallel to outputs.
    std::vector<bool> outputWasResident;
};

/// Memory figures. Byte counts are exact sums of requested buffer sizes.
struct MemoryStats
{
    int64_t bytesInUse = 0; ///< sum of live buffers' requested bytes
    int64_t peakBytes = 0;  ///< max of bytesInUse since the last resetPeak()
    int64_t liveBuffers = 0;
    /// The device's own figures where it has them (CUDA: cudaMemGetInfo used bytes, pool
    /// reserved bytes); nullopt on the CPU.
    std::optional<int64_t> deviceBytesInUse;
    std::optional<int64_t> devicePeakBytes;
    std::optional<int64_t> deviceTotalBytes;
    /// Memory the backend holds privately, outside the byte count (kernel scratch beyond the
    /// declared workspace, released blocks kept for reuse).
    int64_t privateScratchBytes = 0;
    /// The most kernel scratch one op call held since the last resetPeak(), outside the byte
    /// count: the CPU reference's float32 copies of float16 / bfloat16 operands (its kernels
    /// compute in float32). An implementation detail of the backend, not modelled memory.
    int64_t scratchPeakBytes = 0;
};

class Backend
{
public:
    Backend() = default;
    virtual ~Backend() = default;
    Backend(const Backend &) = delete;
    Backend &operator=(const Backend &) = delete;

    // ---- required -------------------------------------------------------------------------

    /// Short id: "cpu", "cuda".
    virtual std::string id() const = 0;
    /// For reports: "CPU reference (float32, OpenBLAS)", "NVIDIA H100 80GB HBM3 (cuda:0)".
    virtual std::string description() const = 0;

    /// Checks, before anything runs, that every op of `graph` has a kernel for its type, dtypes
    /// and attributes. The error names the first op without one:
    /// "no cpu kernel for op '/attn/Einsum' (type Einsum)". `forward` may be null only for graphs
    /// without ONNX (which then fail here on their first forward op).
    virtual Status prepare(const training::TrainingGraph &graph, const ir::Graph *forward) = 0;

    /// Allocates `bytes` (> 0) of device memory. ResourceExhausted when it does not fit.
    virtual Expected<Buffer> allocate(int64_t bytes) = 0;
    /// Releases a buffer from allocate(). Releasing an invalid or unknown buffer is an error.
    virtual Status release(Buffer buffer) = 0;

    /// Host -> device, `host.size()` must equal buffer.bytes. Synchronous.
    virtual Status upload(Buffer buffer, std::span<const std::byte> host) = 0;
    /// Device -> host, `host.size()` must equal buffer.bytes. Synchronous (waits for kernels).
    virtual Status download(Buffer buffer, std::span<std::byte> host) = 0;

    /// Runs one op (see OpCall). May be asynchronous on a device; synchronize() waits.
    virtual Status run(const OpCall &call) = 0;

    virtual MemoryStats memoryStats() const = 0;
    /// Restarts peak tracking at the current bytes in use (device peak too, where there is one).
    virtual void resetPeak() = 0;

    // ---- optional hooks (defaults are correct, just not overlapped) -----------------------

    /// Waits until every queued kernel and copy has finished. Default: nothing is queued.
    virtual Status synchronize() { return Status::ok(); }

    /// Starts a device -> host copy for an Offload step on the copy lane; the host span must stay
    /// valid until waitCopies(). Default: a synchronous download().
    virtual Status offloadToHost(Buffer buffer, std::span<std::byte> host)
    {
        return download(buffer, host);
    }
    /// Starts a host -> device copy for a Prefetch step on the copy lane; a later run() that reads
    /// `buffer` must see the data (a device backend orders it with an event). Default: upload().
    virtual Status prefetchFromHost(Buffer buffer, std::span<const std::byte> host)
    {
        return upload(buffer, host);
    }
    /// Waits for every copy started by offloadToHost / prefetchFromHost. Default: none pending.
    virtual Status waitCopies() { return Status::ok(); }

    /// A training step starts / has released everything it allocated (Executor::run, around
    /// its allocations; `completed`: the step ran to its end). A device backend may plan its memory
    /// from the allocations an earlier step of the same schedule made (gpu/: one arena, offsets
    /// from core/exec/memory_plan.h). Default: nothing.
    virtual void beginStep() {}
    virtual void endStep(bool completed) { (void)completed; }

    /// Fills a buffer with zero bytes. Default: uploads zeros from the host.
    virtual Status zero(Buffer buffer)
    {
        std::vector<std::byte> zeros(static_cast<size_t>(buffer.bytes));
        return upload(buffer, zeros);
    }
};

} // namespace remat::core::exec
