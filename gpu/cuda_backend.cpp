#include "gpu/cuda_backend.h"

#include "core/exec/cpu/kernel.h"
#include "core/exec/half.h"
#include "core/exec/memory_plan.h"
#include "core/exec/operand_context.h"
#include "core/exec/operand_slots.h"
#include "core/exec/static_eval.h"
#include "core/ir/graph.h"
#include "core/ops/attention.h"
#include "core/ops/op_def.h"
#include "core/training/autocast.h"
#include "gpu/attention_plan.h"
#include "gpu/cuda_devices.h"
#include "gpu/cuda_ops.h"
#include "gpu/cuda_status.h"
#include "gpu/kernels/half.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#if defined(REMAT_HAVE_CUDNN)
#include <cudnn.h>
#endif
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

namespace remat::gpu {

using core::Expected;
using core::makeError;
using core::Status;
using core::StatusCode;
using core::TensorId;
using core::exec::Buffer;
using core::exec::MemoryStats;
using core::exec::OpCall;
using core::ir::DataType;
namespace training = core::training;

namespace {

// ---- RAII owners of CUDA handles ------------------------------------------------------------

struct StreamOwner
{
    cudaStream_t s = nullptr;
    ~StreamOwner()
    {
        if (s)
            cudaStreamDestroy(s);
    }
};
struct EventOwner
{
    cudaEvent_t e = nullptr;
    ~EventOwner()
    {
        if (e)
            cudaEventDestroy(e);
    }
};
struct CublasOwner
{
    cublasHandle_t h = nullptr;
    ~CublasOwner()
    {
        if (h)
            cublasDestroy(h);
    }
};
#if defined(REMAT_HAVE_CUDNN)
struct CudnnOwner
{
    cudnnHandle_t h = nullptr;
    ~CudnnOwner()
    {
        if (h)
            cudnnDestroy(h);
    }
};
#endif
struct PoolOwner
{
    cudaMemPool_t p = nullptr;
    ~PoolOwner()
    {
        if (p)
            cudaMemPoolDestroy(p);
    }
};

/// Shape-arithmetic ops evaluated through the CPU reference (tiny integer tensors: shapes,
/// indices, masks), as frameworks keep shape computations on the host: the op table's host-only
/// producers, and any small forward op with no float output.
bool isHostShapeOp(const training::TrainingGraph &graph, const training::Op &op)
{
    if (op.phase != training::Phase::Forward || !core::exec::cpu::findCpuKernel(op.type))
        return false;
    int64_t bytes = 0;
    bool allNonFloat = true;
    for (TensorId t : op.outputs) {
        const training::Tensor &tensor = graph.tensor(t);
        bytes += tensor.bytes;
        allNonFloat =
            allNonFloat && tensor.dtype != DataType::Float && !core::exec::isHalfType(tensor.dtype);
    }
    for (TensorId t : op.inputs)
        bytes += graph.tensor(t).bytes;
    const core::ops::OpDef *def = core::ops::findOp(op.type);
    const bool producer = def && def->hostOnly;
    return (producer || allNonFloat) && bytes <= (int64_t(1) << 20);
}

int64_t elementBytes(DataType t) { return core::ir::elementSize(t); }

template <typename T> void appendAs(const std::byte *p, int64_t n, std::vector<T> &out)
{
    for (int64_t i = 0; i < n; ++i) {
        T v{};
        std::memcpy(&v, p + i * int64_t(sizeof(T)), sizeof(T));
        out.push_back(v);
    }
}

template <typename Out>
Expected<std::vector<Out>> convertHost(const std::vector<std::byte> &raw, DataType dtype, int64_t n,
                                       const std::string &what)
{
    std::vector<Out> out;
    out.reserve(size_t(n));
    auto push = [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> v;
        appendAs<T>(raw.data(), n, v);
        for (T x : v)
            out.push_back(static_cast<Out>(x));
    };
    switch (dtype) {
    case DataType::Float: push(float{}); break;
    case DataType::Double: push(double{}); break;
    case DataType::Int64: push(int64_t{}); break;
    case DataType::Int32: push(int32_t{}); break;
    case DataType::Int8: push(int8_t{}); break;
    case DataType::UInt8:
    case DataType::Bool: push(uint8_t{}); break;
    case DataType::Float16:
    case DataType::BFloat16:
        for (int64_t i = 0; i < n; ++i) {
            uint16_t h = 0;
            std::memcpy(&h, raw.data() + i * 2, 2);
            out.push_back(static_cast<Out>(core::exec::halfOfToFloat(dtype, h)));
        }
        break;
    default:
        return makeError(StatusCode::Unsupported,
                         fmt::format("{}: cannot read {} values on the host", what,
                                     core::ir::dataTypeName(dtype)));
    }
    return out;
}

kernels::HalfKind halfKindOf(DataType t)
{
    return t == DataType::BFloat16 ? kernels::HalfKind::BFloat16 : kernels::HalfKind::Float16;
}

/// Whether the floating dtypes (float32, float16, bfloat16) among `dtypes` are not all one.
template <typename Range> bool mixedFloating(const Range &dtypes)
{
    bool seen = false, mixed = false;
    DataType first = DataType::Float;
    for (DataType t : dtypes) {
        if (t != DataType::Float && !core::exec::isHalfType(t))
            continue;
        mixed = mixed || (seen && t != first);
        if (!seen)
            first = t;
        seen = true;
    }
    return mixed;
}

/// Where prepare() sends an op.
enum class OpRoute { Device, Host };

/// What the kernels do not cover in `op`'s attributes, by name. `slots`: its operand binding;
/// `device`: the device whose shared memory the fused attention's tiles must fit (-1: the current
/// one, none without a device).
Status checkAttributes(const training::TrainingGraph &graph, const training::Op &op,
                       const core::ir::Graph *forward, bool cudnn,
                       const core::exec::OperandSlots &slots, int device)
{
    const core::ir::Node *attrs = training::attributeNode(op, forward);
    if (!attrs)
        return Status::ok();
    const core::ir::Node &node = *attrs;
    if (op.type.rfind(core::ops::kAttentionOp, 0) == 0) {
        // the fused attention: what its kernels do not cover is refused here, by name
        // (gpu/attention_plan.h), before anything runs
        std::vector<std::vector<int64_t>> shapes(6);
        for (size_t i = 0; i < op.inputs.size() && i < slots.inputs.size(); ++i) {
            const core::exec::Slot &slot = slots.inputs[i];
            const training::Tensor &t = graph.tensor(op.inputs[i]);
            if (slot.where == core::exec::Slot::In && slot.index < 6 && t.shape.isStatic())
                shapes[size_t(slot.index)] = t.shape.sizes();
        }
        // (an operand the graph does not pass, a constant mask, is bound when the op runs:
        // only a refusal stops the step here)
        auto plan = attentionPlanOf(op.name, node, shapes, device);
        if (!plan && plan.status().code() == StatusCode::Unsupported)
            return plan.status();
    }
    if ((op.type == "Conv" || op.type == "ConvGrad") && cudnn) {
        const std::vector<int64_t> pads = node.attrInts("pads");
        for (size_t d = 0; d < pads.size() / 2; ++d)
            if (pads[d] != pads[d + pads.size() / 2])
                return makeError(StatusCode::Unsupported,
                                 fmt::format("no cuda kernel for op '{}' (type {}): asymmetric "
                                             "padding",
                                             op.name, op.type));
    }
    if (op.type == "Pad" || op.type == "PadGrad") {
        const std::string mode = node.attrString("mode", "constant");
        if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
            return makeError(StatusCode::Unsupported,
                             fmt::format("no cuda kernel for op '{}' (type {}): pad mode '{}'",
                                         op.name, op.type, mode));
    }
    return Status::ok();
}

/// Half operands an op's CUDA kernel cannot take, by op name with the way out. The kernels of
/// most ops compute in float32 on copies of their half operands (CudaBackend::runOnDevice); the
/// ones that take half operands themselves (takesHalfOperands) take these dtypes only.
Status checkHalfOperands(const training::TrainingGraph &graph, const training::Op &op)
{
    if (op.type != "Cast" && op.type != "CastGrad")
        return Status::ok();
    auto castable = [](DataType t) {
        return t == DataType::Float || t == DataType::Int64 || t == DataType::Bool ||
               core::exec::isHalfType(t);
    };
    bool half = false, other = true;
    for (const std::vector<TensorId> *list : {&op.inputs, &op.outputs})
        for (TensorId t : *list) {
            const DataType d = graph.tensor(t).dtype;
            half = half || core::exec::isHalfType(d);
            other = other && castable(d);
        }
    if (!half || other)
        return Status::ok();
    std::vector<std::string> types;
    for (const std::vector<TensorId> *list : {&op.inputs, &op.outputs})
        for (TensorId t : *list)
            types.push_back(core::ir::dataTypeName(graph.tensor(t).dtype));
    return makeError(StatusCode::Unsupported,
                     fmt::format("op '{}' (type {}): no cuda kernel casts between {}; the cuda "
                                 "casts of float16 / bfloat16 are with float32, int64 and bool. "
                                 "Run it with --backend cpu",
                                 op.name, op.type, fmt::join(types, " and ")));
}

/// Whether `op` runs on the device or through the CPU reference, or why the backend refuses it
/// (`slots`, `device`: see checkAttributes).
Expected<OpRoute> routeOf(const training::TrainingGraph &graph, const training::Op &op,
                          const core::ir::Graph *forward, bool cudnn,
                          const core::exec::OperandSlots &slots, int device)
{
    if (findCudaOp(op.type)) {
        REMAT_RETURN_IF_ERROR(checkAttributes(graph, op, forward, cudnn, slots, device));
        REMAT_RETURN_IF_ERROR(checkHalfOperands(graph, op));
        return OpRoute::Device;
    }
    if (isHostShapeOp(graph, op))
        return OpRoute::Host;
    return makeError(StatusCode::Unsupported,
                     fmt::format("no cuda kernel for op '{}' (type {})", op.name, op.type));
}

} // namespace

Status checkCudaSupport(const training::TrainingGraph &graph, const core::ir::Graph *forward,
                        bool cudnn, CudaSupportSummary *summary)
{
    CudaSupportSummary sum;
    for (const training::Op &op : graph.ops()) {
        const bool needsNode =
            op.type != "Loss" && op.type != "Accumulate" && op.phase != training::Phase::Optimizer;
        const core::exec::OperandSlots slots = core::exec::bindOperands(
            graph, op, needsNode && forward ? training::attributeNode(op, forward) : nullptr);
        REMAT_ASSIGN_OR_RETURN(const OpRoute route, routeOf(graph, op, forward, cudnn, slots, -1));
        std::vector<DataType> dtypes;
        for (const std::vector<TensorId> *list : {&op.inputs, &op.outputs})
            for (TensorId t : *list)
                dtypes.push_back(graph.tensor(t).dtype);
        const bool half = std::any_of(dtypes.begin(), dtypes.end(), core::exec::isHalfType);
        if (route == OpRoute::Host)
            ++sum.hostOps;
        else if (!half)
            ++sum.deviceOps;
        else if (!training::isProductEpilogue(op) &&
                 takesHalfOperands(op.type, cudnn, mixedFloating(dtypes)))
            ++sum.halfNativeOps;
        else
            ++sum.halfWidenedOps;
    }
    if (summary)
        *summary = sum;
    return Status::ok();
}

class CudaBackend final : public core::exec::Backend, public OpRuntime
{
public:
    explicit CudaBackend(const CudaBackendOptions &options) : m_options(options) {}
    ~CudaBackend() override
    {
        cudaSetDevice(m_options.device);
        cudaStreamSynchronize(m_stream.s);
        cudaStreamSynchronize(m_copyStream.s);
        for (auto &entry : m_buffers)
            if (!entry.second.inArena)
                cudaFreeAsync(entry.second.ptr, m_stream.s);
        if (m_arena)
            cudaFreeAsync(m_arena, m_stream.s);
        for (auto &entry : m_unrounded)
            if (entry.second.data)
                cudaFreeAsync(entry.second.data, m_stream.s);
        cudaStreamSynchronize(m_stream.s);
    }

    Status init()
    {
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(m_options.device), "select CUDA device"));
        cudaDeviceProp prop{};
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaGetDeviceProperties(&prop, m_options.device), "device properties"));
        m_name = prop.name;
        m_totalBytes = static_cast<int64_t>(prop.totalGlobalMem);
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaStreamCreateWithFlags(&m_stream.s, cudaStreamNonBlocking),
                       "create compute stream"));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaStreamCreateWithFlags(&m_copyStream.s, cudaStreamNonBlocking),
                       "create copy stream"));
        for (EventOwner *e : {&m_start, &m_end})
            REMAT_RETURN_IF_ERROR(cudaStatus(cudaEventCreate(&e->e), "create timing event"));
        for (EventOwner *e : {&m_copyDone, &m_computeMark})
            REMAT_RETURN_IF_ERROR(cudaStatus(
                cudaEventCreateWithFlags(&e->e, cudaEventDisableTiming), "create copy event"));
        // A private stream-ordered pool that keeps freed memory for reuse (no cudaFree and no
        // device-wide synchronisation per tensor) and can be trimmed after an out-of-memory.
        cudaMemPoolProps props{};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = m_options.device;
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaMemPoolCreate(&m_pool.p, &props), "create memory pool"));
        uint64_t keep = UINT64_MAX;
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaMemPoolSetAttribute(m_pool.p, cudaMemPoolAttrReleaseThreshold, &keep),
                       "pool threshold"));
        REMAT_RETURN_IF_ERROR(cublasStatus(cublasCreate(&m_cublas.h), "create cuBLAS handle"));
        REMAT_RETURN_IF_ERROR(
            cublasStatus(cublasSetStream(m_cublas.h, m_stream.s), "cuBLAS stream"));
        // FP32 products stay FP32 (the default math mode uses no TF32), comparable with the CPU
        // reference; half products (cublasGemmEx, CUBLAS_COMPUTE_32F) reduce in float32 also
        // where a split-K GEMM could reduce partial sums in the half output type.
        REMAT_RETURN_IF_ERROR(cublasStatus(
            cublasSetMathMode(m_cublas.h,
                              cublasMath_t(CUBLAS_DEFAULT_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            "cuBLAS math mode"));
#if defined(REMAT_HAVE_CUDNN)
        REMAT_RETURN_IF_ERROR(cudnnStatusOf(cudnnCreate(&m_cudnn.h), "create cuDNN handle"));
        REMAT_RETURN_IF_ERROR(cudnnStatusOf(cudnnSetStream(m_cudnn.h, m_stream.s), "cuDNN stream"));
#endif
        sampleDevice();
        m_devicePeak = m_deviceUsed;
        return Status::ok();
    }

    // ---- Backend ----------------------------------------------------------------------------

    std::string id() const override { return "cuda"; }
    std::string description() const override
    {
        return fmt::format("{} (cuda:{}, cuBLAS, {})", m_name, m_options.device,
                           cudnn() ? "cuDNN convolution" : "im2col convolution");
    }

    Status prepare(const training::TrainingGraph &graph, const core::ir::Graph *forward) override
    {
        m_hostOps.assign(graph.opCount(), false);
        for (auto &entry : m_unrounded)
            if (entry.second.data)
                cudaFreeAsync(entry.second.data, m_stream.s);
        m_unrounded.clear();
        m_unroundedBytes = 0;
        m_hostCache.clear();
        m_bindings.clear();
        m_evaluator = forward ? std::make_unique<core::exec::StaticEvaluator>(*forward) : nullptr;
        for (const training::Op &op : graph.ops()) {
            const bool needsNode = op.type != "Loss" && op.type != "Accumulate" &&
                                   op.phase != training::Phase::Optimizer;
            if (needsNode && (!forward || !op.source.valid()))
                return makeError(
                    StatusCode::Unsupported,
                    fmt::format("op '{}' (type {}) has no ONNX node to take attributes from",
                                op.name, op.type));
            m_bindings.push_back(core::exec::bindOperands(
                graph, op, needsNode ? training::attributeNode(op, forward) : nullptr));
            REMAT_ASSIGN_OR_RETURN(const OpRoute route,
                                   routeOf(graph, op, forward, cudnn() != nullptr,
                                           m_bindings.back(), m_options.device));
            m_hostOps[op.id.index()] = route == OpRoute::Host;
        }
        // A product whose epilogue PyTorch runs in the same kernel under autocast (a linear's bias
        // Add, baddbmm's alpha and mask): its float32 result is kept for the epilogue, which then
        // rounds once, as the CPU reference (core/exec/cpu/cpu_backend.cpp) and PyTorch's kernel
        // do.
        m_keepUnrounded.assign(graph.tensorCount(), 0);
        for (const training::Op &op : graph.ops()) {
            if (!training::isProductEpilogue(op))
                continue;
            for (TensorId in : op.inputs) {
                const core::OpId p = graph.tensor(in).producer;
                if (!p.valid())
                    continue;
                const training::Op &prod = graph.op(p);
                if (training::isProductEpilogue(prod) ||
                    (prod.phase == training::Phase::Forward &&
                     (prod.type == "MatMul" || prod.type == "Gemm")))
                    m_keepUnrounded[in.index()] = 1;
            }
        }
        return Status::ok();
    }

    Expected<Buffer> allocate(int64_t bytes) override
    {
        if (bytes < 0)
            return makeError(StatusCode::InvalidArgument, fmt::format("allocate {} bytes", bytes));
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(m_options.device), "select device"));
        const size_t block = m_step.blocks.size();
        if (m_step.active) {
            m_step.events.push_back({true, bytes, block});
            m_step.blocks.push_back({bytes, int64_t(m_step.events.size() - 1), -1});
        }
        void *p = nullptr;
        if (m_step.onPlan && followsPlan(m_step.events.back())) {
            p = static_cast<char *>(m_arena) + m_plan.offsets[block];
            const Buffer b{m_nextId++, bytes};
            m_buffers[b.id] = Allocation{p, bytes, true};
            m_step.open[b.id] = block;
            m_inUse += bytes;
            m_peak = std::max(m_peak, m_inUse);
            return b;
        }
        // a zero-byte tensor still gets an address (counted as 0 bytes)
        cudaError_t err =
            cudaMallocFromPoolAsync(&p, size_t(std::max<int64_t>(bytes, 1)), m_pool.p, m_stream.s);
        if (err == cudaErrorMemoryAllocation) {
            // the pool may hold freed blocks of other sizes: hand them back and try once more
            trimPool();
            err = cudaMallocFromPoolAsync(&p, size_t(std::max<int64_t>(bytes, 1)), m_pool.p,
                                          m_stream.s);
        }
        if (err != cudaSuccess) {
            Status s = cudaStatus(err, fmt::format("allocate {} bytes ({} in use of {} on {})",
                                                   bytes, m_inUse, m_totalBytes, m_name));
            if (err == cudaErrorMemoryAllocation)
                trimPool();
            return s;
        }
        const Buffer b{m_nextId++, bytes};
        m_buffers[b.id] = Allocation{p, bytes};
        if (m_step.active)
            m_step.open[b.id] = block;
        m_inUse += bytes;
        m_peak = std::max(m_peak, m_inUse);
        return b;
    }

    Status release(Buffer buffer) override
    {
        const auto it = m_buffers.find(buffer.id);
        if (it == m_buffers.end() || it->second.bytes != buffer.bytes)
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format("release of unknown buffer {} ({} bytes)", buffer.id, buffer.bytes));
        // A pending offload may still read the buffer: order the free after the copy lane.
        if (m_copiesPending)
            REMAT_RETURN_IF_ERROR(
                cudaStatus(cudaStreamWaitEvent(m_stream.s, m_copyDone.e, 0), "order free"));
        if (const auto open = m_step.open.find(buffer.id); open != m_step.open.end()) {
            m_step.events.push_back({false, 0, open->second});
            m_step.blocks[open->second].end = int64_t(m_step.events.size() - 1);
            m_step.open.erase(open);
            if (m_step.onPlan)
                followsPlan(m_step.events.back());
        }
        // arena memory is reused in stream order by the planned offsets: nothing to free
        if (!it->second.inArena)
            REMAT_RETURN_IF_ERROR(cudaStatus(cudaFreeAsync(it->second.ptr, m_stream.s),
                                             fmt::format("release buffer {}", buffer.id)));
        m_inUse -= it->second.bytes;
        m_buffers.erase(it);
        return Status::ok();
    }

    Status upload(Buffer buffer, std::span<const std::byte> host) override
    {
        REMAT_ASSIGN_OR_RETURN(void *p, pointerOf(buffer, int64_t(host.size()), "upload"));
        REMAT_RETURN_IF_ERROR(cudaStatus(
            cudaMemcpyAsync(p, host.data(), host.size(), cudaMemcpyHostToDevice, m_stream.s),
            fmt::format("upload {} bytes", host.size())));
        return cudaStatus(cudaStreamSynchronize(m_stream.s), "upload");
    }

    Status download(Buffer buffer, std::span<std::byte> host) override
    {
        REMAT_ASSIGN_OR_RETURN(void *p, pointerOf(buffer, int64_t(host.size()), "download"));
        if (m_copiesPending)
            REMAT_RETURN_IF_ERROR(
                cudaStatus(cudaStreamWaitEvent(m_stream.s, m_copyDone.e, 0), "order"));
        REMAT_RETURN_IF_ERROR(cudaStatus(
            cudaMemcpyAsync(host.data(), p, host.size(), cudaMemcpyDeviceToHost, m_stream.s),
            fmt::format("download {} bytes", host.size())));
        return cudaStatus(cudaStreamSynchronize(m_stream.s), "download");
    }

    Status run(const OpCall &call) override
    {
        if (!call.graph || !call.op)
            return makeError(StatusCode::InvalidArgument, "run: no op");
        const training::Op &op = *call.op;
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(m_options.device), "select device"));
        if (m_copiesPending) // a prefetched operand must have arrived
            REMAT_RETURN_IF_ERROR(cudaStatus(cudaStreamWaitEvent(m_stream.s, m_copyDone.e, 0),
                                             op.name + ": wait for prefetch"));
        m_call = &call;
        m_workspacePtr = nullptr;
        if (call.workspace.valid()) {
            REMAT_ASSIGN_OR_RETURN(m_workspacePtr,
                                   pointerOf(call.workspace, call.workspace.bytes, "workspace"));
        }
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaEventRecord(m_start.e, m_stream.s), op.name + ": timing"));
        Status st = op.id.index() < m_hostOps.size() && m_hostOps[op.id.index()]
                        ? runOnHost(call)
                        : runOnDevice(call);
        const cudaError_t recorded = cudaEventRecord(m_end.e, m_stream.s);
        if (st.isOk())
            st = cudaStatus(recorded, op.name + ": timing");
        if (st.isOk() && m_options.synchronous)
            st = cudaStatus(cudaStreamSynchronize(m_stream.s),
                            fmt::format("op '{}' ({})", op.name, op.type));
        if (st.isOk() && m_options.synchronous) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, m_start.e, m_end.e) == cudaSuccess) {
                m_figures.lastOpSeconds = double(ms) * 1e-3;
                m_figures.totalOpSeconds += m_figures.lastOpSeconds;
            }
        }
        ++m_figures.runs;
        releaseScratch();
        m_call = nullptr;
        sampleDevice();
        if (!st.isOk() && st.code() == StatusCode::ResourceExhausted)
            trimPool();
        if (!st.isOk() && st.message().find(op.name) == std::string::npos)
            return st.withContext(fmt::format("op '{}' ({})", op.name, op.type));
        return st;
    }

    MemoryStats memoryStats() const override
    {
        MemoryStats m;
        m.bytesInUse = m_inUse;
        m.peakBytes = m_peak;
        m.liveBuffers = static_cast<int64_t>(m_buffers.size());
        m.deviceBytesInUse = m_deviceUsed;
        m.devicePeakBytes = m_devicePeak;
        m.deviceTotalBytes = m_totalBytes;
        m.privateScratchBytes = 0; // device scratch is reported in CudaRunFigures
        return m;
    }

    void resetPeak() override
    {
        m_peak = m_inUse;
        sampleDevice();
        m_devicePeak = m_deviceUsed;
        uint64_t zero = 0;
        cudaMemPoolSetAttribute(m_pool.p, cudaMemPoolAttrReservedMemHigh, &zero);
        cudaMemPoolSetAttribute(m_pool.p, cudaMemPoolAttrUsedMemHigh, &zero);
    }

    void beginStep() override
    {
        m_step = StepTrace{};
        m_step.active = m_options.planMemory;
        m_step.onPlan = m_step.active && m_arena && !m_planEvents.empty();
    }

    void endStep(bool completed) override
    {
        if (!m_step.active)
            return;
        if (completed && m_step.onPlan && m_step.position == m_planEvents.size())
            ++m_figures.plannedSteps;
        else if (completed && m_step.open.empty())
            replan();
        m_step = StepTrace{};
    }

    Status synchronize() override
    {
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaStreamSynchronize(m_copyStream.s), "copy lane"));
        m_copiesPending = false;
        return cudaStatus(cudaStreamSynchronize(m_stream.s), "compute stream");
    }

    Status offloadToHost(Buffer buffer, std::span<std::byte> host) override
    {
        REMAT_ASSIGN_OR_RETURN(void *p, pointerOf(buffer, int64_t(host.size()), "offload"));
        // the copy lane starts once the producing kernels have run
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaEventRecord(m_computeMark.e, m_stream.s), "offload order"));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaStreamWaitEvent(m_copyStream.s, m_computeMark.e, 0), "offload order"));
        REMAT_RETURN_IF_ERROR(cudaStatus(
            cudaMemcpyAsync(host.data(), p, host.size(), cudaMemcpyDeviceToHost, m_copyStream.s),
            fmt::format("offload {} bytes", host.size())));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaEventRecord(m_copyDone.e, m_copyStream.s), "offload event"));
        m_copiesPending = true;
        return Status::ok();
    }

    Status prefetchFromHost(Buffer buffer, std::span<const std::byte> host) override
    {
        REMAT_ASSIGN_OR_RETURN(void *p, pointerOf(buffer, int64_t(host.size()), "prefetch"));
        // the buffer was allocated in stream order on the compute stream
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaEventRecord(m_computeMark.e, m_stream.s), "prefetch order"));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaStreamWaitEvent(m_copyStream.s, m_computeMark.e, 0), "prefetch order"));
        REMAT_RETURN_IF_ERROR(cudaStatus(
            cudaMemcpyAsync(p, host.data(), host.size(), cudaMemcpyHostToDevice, m_copyStream.s),
            fmt::format("prefetch {} bytes", host.size())));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaEventRecord(m_copyDone.e, m_copyStream.s), "prefetch event"));
        m_copiesPending = true;
        return Status::ok();
    }

    Status waitCopies() override
    {
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaStreamSynchronize(m_copyStream.s), "copy lane"));
        m_copiesPending = false;
        return Status::ok();
    }

    Status zero(Buffer buffer) override
    {
        REMAT_ASSIGN_OR_RETURN(void *p, pointerOf(buffer, buffer.bytes, "zero"));
        REMAT_RETURN_IF_ERROR(
            cudaStatus(cudaMemsetAsync(p, 0, size_t(buffer.bytes), m_stream.s), "zero"));
        return cudaStatus(cudaStreamSynchronize(m_stream.s), "zero");
    }

    // ---- OpRuntime --------------------------------------------------------------------------

    cudaStream_t stream() const override { return m_stream.s; }
    cublasHandle_t cublas() const override { return m_cublas.h; }
    void *cudnn() const override
    {
#if defined(REMAT_HAVE_CUDNN)
        return m_options.useCudnn ? m_cudnn.h : nullptr;
#else
        return nullptr;
#endif
    }
    void *workspace() const override { return m_workspacePtr; }
    int64_t workspaceBytes() const override
    {
        return m_call && m_call->workspace.valid() ? m_call->workspace.bytes : 0;
    }

    Expected<void *> scratch(int64_t bytes) override
    {
        void *p = nullptr;
        const cudaError_t err =
            cudaMallocFromPoolAsync(&p, size_t(std::max<int64_t>(bytes, 1)), m_pool.p, m_stream.s);
        if (err != cudaSuccess)
            return cudaStatus(err, fmt::format("kernel scratch of {} bytes", bytes));
        m_scratch.push_back(p);
        m_scratchBytes += bytes;
        m_figures.scratchPeakBytes = std::max(m_figures.scratchPeakBytes, m_scratchBytes);
        return p;
    }

    Expected<std::vector<int64_t>> hostInts(const DView &v) override
    {
        REMAT_ASSIGN_OR_RETURN(const std::vector<std::byte> *raw, hostBytes(v));
        return convertHost<int64_t>(*raw, v.dtype, v.numel(), opLabel());
    }

    Expected<std::vector<double>> hostDoubles(const DView &v) override
    {
        REMAT_ASSIGN_OR_RETURN(const std::vector<std::byte> *raw, hostBytes(v));
        return convertHost<double>(*raw, v.dtype, v.numel(), opLabel());
    }

    Status uploadAsync(void *dst, const void *src, int64_t bytes) override
    {
        return cudaStatus(
            cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyHostToDevice, m_stream.s),
            opLabel() + ": upload");
    }

    const CudaRunFigures &figures()
    {
        size_t v = 0;
        if (cudaMemPoolGetAttribute(m_pool.p, cudaMemPoolAttrReservedMemCurrent, &v) == cudaSuccess)
            m_figures.poolReservedBytes = int64_t(v);
        if (cudaMemPoolGetAttribute(m_pool.p, cudaMemPoolAttrReservedMemHigh, &v) == cudaSuccess)
            m_figures.poolReservedPeak = int64_t(v);
        return m_figures;
    }

    void releaseCached()
    {
        trimPool();
        resetPeak();
    }

private:
    /// A float32 copy of a half operand for one call (runOnDevice).
    struct HalfCopy
    {
        enum Kind { Input, Output, Constant };
        void *storage = nullptr; ///< the half tensor
        float *data = nullptr;   ///< its float32 copy (scratch)
        DataType dtype = DataType::Float16;
        int64_t n = 0;
        int kind = Input;
    };
    /// The float32 result of a product its epilogue reads (device memory of the pool, outside
    /// the byte count, as the CPU reference keeps it in its scratch).
    struct Unrounded
    {
        float *data = nullptr;
        int64_t n = 0;
    };

    struct Allocation
    {
        void *ptr = nullptr;
        int64_t bytes = 0;
        bool inArena = false; ///< inside m_arena (planned), not a pool block
    };

    /// One allocation or release of a step, in call order; `block` numbers allocations.
    struct MemEvent
    {
        bool allocation = false;
        int64_t bytes = 0;
        size_t block = 0;
        bool operator==(const MemEvent &) const = default;
    };
    /// The current step's allocations (recorded for the next plan) and whether it still follows
    /// the plan made from the last completed step.
    struct StepTrace
    {
        bool active = false;
        bool onPlan = false;
        size_t position = 0; ///< next event of m_planEvents to match
        std::vector<MemEvent> events;
        std::vector<core::exec::BlockLifetime> blocks;
        std::unordered_map<uint64_t, size_t> open; ///< buffer id -> block
    };

    /// Matches the step's latest event against the plan; the first difference leaves the plan
    /// for the rest of the step (arena blocks already handed out stay valid: nothing new is
    /// placed in the arena after that).
    bool followsPlan(const MemEvent &e)
    {
        if (m_step.position < m_planEvents.size() && m_planEvents[m_step.position] == e) {
            ++m_step.position;
            return true;
        }
        m_step.onPlan = false;
        return false;
    }

    std::string opLabel() const
    {
        return m_call && m_call->op
                   ? fmt::format("op '{}' ({})", m_call->op->name, m_call->op->type)
                   : std::string("cuda backend");
    }

    Expected<void *> pointerOf(Buffer b, int64_t bytes, const char *what) const
    {
        const auto it = m_buffers.find(b.id);
        if (it == m_buffers.end())
            return makeError(StatusCode::InvalidArgument,
                             fmt::format("{}: unknown buffer {}", what, b.id));
        if (bytes > it->second.bytes)
            return makeError(StatusCode::InvalidArgument,
                             fmt::format("{}: {} bytes do not fit buffer {} of {} bytes", what,
                                         bytes, b.id, it->second.bytes));
        return it->second.ptr;
    }

    void sampleDevice()
    {
        size_t freeB = 0, totalB = 0;
        if (cudaMemGetInfo(&freeB, &totalB) == cudaSuccess) {
            m_deviceUsed = int64_t(totalB) - int64_t(freeB);
            m_devicePeak = std::max(m_devicePeak, m_deviceUsed);
        } else {
            cudaGetLastError();
        }
    }

    /// Plans an arena for the allocations of the step that just completed (every block of which
    /// is released) and holds it for the next steps; without the memory for it, no plan.
    void replan()
    {
        core::exec::MemoryPlan plan = core::exec::planOffsets(m_step.blocks, 256);
        const bool grow = plan.arenaBytes > m_arenaBytes;
        const bool shrink = plan.arenaBytes < m_arenaBytes - m_arenaBytes / 8;
        if (m_arena && (grow || shrink)) {
            cudaFreeAsync(m_arena, m_stream.s);
            m_arena = nullptr;
            m_arenaBytes = 0;
        }
        if (!m_arena && plan.arenaBytes > 0) {
            void *p = nullptr;
            if (cudaMallocFromPoolAsync(&p, size_t(plan.arenaBytes), m_pool.p, m_stream.s) !=
                cudaSuccess) {
                cudaGetLastError(); // the pool serves the next steps as before
                m_planEvents.clear();
                m_figures.arenaBytes = 0;
                return;
            }
            m_arena = p;
            m_arenaBytes = plan.arenaBytes;
        }
        m_plan = std::move(plan);
        m_planEvents = std::move(m_step.events);
        m_figures.arenaBytes = m_arenaBytes;
    }

    void trimPool()
    {
        cudaStreamSynchronize(m_stream.s);
        cudaGetLastError();
        cudaMemPoolTrimTo(m_pool.p, 0);
        sampleDevice();
    }

    void releaseScratch()
    {
        for (void *p : m_scratch)
            cudaFreeAsync(p, m_stream.s);
        m_scratch.clear();
        m_scratchBytes = 0;
    }

    Expected<const std::vector<std::byte> *> hostBytes(const DView &v)
    {
        if (v.host)
            return v.host;
        const bool cacheable = v.role == training::TensorRole::Constant && v.tensor.valid();
        const int64_t bytes = v.numel() * elementBytes(v.dtype);
        if (cacheable) {
            // (a half constant read as its float32 copy has other bytes: not the cached ones)
            const auto it = m_hostCache.find(v.tensor.value);
            if (it != m_hostCache.end() && int64_t(it->second.size()) == bytes)
                return &it->second;
        }
        std::vector<std::byte> raw(size_t(std::max<int64_t>(bytes, 0)));
        if (bytes > 0) {
            REMAT_RETURN_IF_ERROR(cudaStatus(cudaMemcpyAsync(raw.data(), v.data, size_t(bytes),
                                                             cudaMemcpyDeviceToHost, m_stream.s),
                                             opLabel() + ": read operand"));
            REMAT_RETURN_IF_ERROR(
                cudaStatus(cudaStreamSynchronize(m_stream.s), opLabel() + ": read operand"));
        }
        auto &slot = cacheable ? m_hostCache[v.tensor.value] : m_hostTemp;
        slot = std::move(raw);
        return &slot;
    }

    Status runOnDevice(const OpCall &call)
    {
        const training::Op &op = *call.op;
        const OpFn *fn = findCudaOp(op.type);
        if (!fn)
            return makeError(StatusCode::Unsupported,
                             fmt::format("no cuda kernel for op '{}' (type {})", op.name, op.type));
        if (op.id.index() >= m_bindings.size())
            return makeError(StatusCode::Internal, "run() before prepare() or with a foreign op");
        OpContext ctx;
        ctx.opType = op.type;
        ctx.rt = this;
        // Half operands (float16, bfloat16) are stored in 2 bytes, as the simulator counts them.
        // A kernel that takes them itself (takesHalfOperands: Cast, the cuBLAS half GEMMs, cuDNN
        // convolution, the element-wise table, the fused attention) reads them in place when its
        // operands share one half type; every other kernel computes in float32 on widened
        // copies in scratch, and its results are rounded back to nearest even, as the CPU
        // reference does (core/exec/cpu/cpu_backend.cpp's HalfScratch). A product whose epilogue
        // reads its float32 result (m_keepUnrounded) writes a float32 copy either way.
        std::vector<DataType> dtypes;
        for (const std::vector<core::exec::TensorArg> *list : {&call.inputs, &call.outputs})
            for (const core::exec::TensorArg &a : *list)
                dtypes.push_back(a.dtype);
        // (an epilogue reads its product's float32 result beside half operands: widened)
        const bool epilogue = training::isProductEpilogue(op);
        const bool widen =
            epilogue || !takesHalfOperands(op.type, cudnn() != nullptr, mixedFloating(dtypes));
        std::vector<HalfCopy> copies;
        std::vector<std::pair<TensorId, size_t>> keep; // outputs kept unrounded: copy index
        auto isOutput = [&](const core::exec::TensorArg &arg) {
            return !call.outputs.empty() && &arg >= call.outputs.data() &&
                   &arg < call.outputs.data() + call.outputs.size();
        };
        std::vector<DView> views, constViews;
        REMAT_RETURN_IF_ERROR(core::exec::bindCall(
            ctx, m_bindings[op.id.index()], call, views,
            [&](const core::exec::TensorArg &arg, DView &view) -> Status {
                REMAT_RETURN_IF_ERROR(viewOf(call, arg, view));
                if (!view.data || !core::exec::isHalfType(view.dtype))
                    return Status::ok();
                const bool output = isOutput(arg);
                const bool kept = output && arg.tensor.valid() &&
                                  arg.tensor.index() < m_keepUnrounded.size() &&
                                  m_keepUnrounded[arg.tensor.index()];
                if (!output && epilogue && arg.tensor.valid())
                    if (auto u = m_unrounded.find(arg.tensor.value);
                        u != m_unrounded.end() && u->second.n == view.numel()) {
                        view.data = u->second.data;
                        view.dtype = DataType::Float;
                        return Status::ok();
                    }
                if (!widen && !kept)
                    return Status::ok();
                REMAT_ASSIGN_OR_RETURN(
                    const size_t at,
                    widenView(copies, view, output ? HalfCopy::Output : HalfCopy::Input));
                if (kept)
                    keep.emplace_back(arg.tensor, at);
                return Status::ok();
            }));
        // Constant operands the training graph did not pass to a backward op (Slice starts, Pad
        // pads, Clip bounds): from the model, copied to device scratch for the duration of the op.
        REMAT_RETURN_IF_ERROR(core::exec::fillStaticOperands(
            ctx, call, m_evaluator.get(), constViews,
            [&](const core::exec::HostTensor &h, DView &dv) -> Status {
                dv.dtype = h.dtype;
                dv.shape = h.shape;
                dv.role = training::TensorRole::Constant;
                dv.host = &h.data;
                REMAT_ASSIGN_OR_RETURN(dv.data, scratch(std::max<int64_t>(h.byteCount(), 1)));
                if (h.byteCount() > 0)
                    REMAT_RETURN_IF_ERROR(uploadAsync(dv.data, h.data.data(), h.byteCount()));
                if (widen && core::exec::isHalfType(dv.dtype)) {
                    REMAT_RETURN_IF_ERROR(widenView(copies, dv, HalfCopy::Constant).status());
                    dv.host = nullptr; // read back from the float32 copy when a kernel asks
                }
                return Status::ok();
            }));
        REMAT_RETURN_IF_ERROR((*fn)(ctx));
        for (const auto &[tensor, at] : keep) {
            const HalfCopy &c = copies[at];
            Unrounded &u = m_unrounded[tensor.value];
            if (u.n != c.n) {
                if (u.data)
                    cudaFreeAsync(u.data, m_stream.s);
                m_unroundedBytes -= u.n * 4;
                u = Unrounded{};
                void *p = nullptr;
                REMAT_RETURN_IF_ERROR(
                    cudaStatus(cudaMallocFromPoolAsync(&p, size_t(std::max<int64_t>(c.n, 1) * 4),
                                                       m_pool.p, m_stream.s),
                               opLabel() + ": float32 result kept for the epilogue"));
                u.data = static_cast<float *>(p);
                u.n = c.n;
                m_unroundedBytes += u.n * 4;
            }
            REMAT_RETURN_IF_ERROR(cudaStatus(cudaMemcpyAsync(u.data, c.data, size_t(c.n) * 4,
                                                             cudaMemcpyDeviceToDevice, m_stream.s),
                                             opLabel() + ": keep the float32 result"));
        }
        m_figures.scratchPeakBytes =
            std::max(m_figures.scratchPeakBytes, m_scratchBytes + m_unroundedBytes);
        // Outputs are rounded to their dtype; an input a kernel updated in place (an optimizer
        // step's parameter and state) is written back where its rounded value changed.
        for (const HalfCopy &c : copies) {
            if (c.kind == HalfCopy::Output)
                REMAT_RETURN_IF_ERROR(cudaStatus(
                    kernels::narrowHalf(m_stream.s, halfKindOf(c.dtype), c.data, c.storage, c.n),
                    opLabel() + ": round the result to " + core::ir::dataTypeName(c.dtype)));
            else if (c.kind == HalfCopy::Input)
                REMAT_RETURN_IF_ERROR(
                    cudaStatus(kernels::narrowHalfChanged(m_stream.s, halfKindOf(c.dtype), c.data,
                                                          c.storage, c.n),
                               opLabel() + ": write back " + core::ir::dataTypeName(c.dtype)));
        }
        return Status::ok();
    }

    /// Points `view` (a half operand) at a float32 copy in scratch: an input's or constant's
    /// values widened, an output's left for the kernel to write whole. An operand passed twice
    /// (x * x) shares one copy, so an in-place update is not undone by the other's write-back.
    /// Returns the copy's index in `copies`.
    Expected<size_t> widenView(std::vector<HalfCopy> &copies, DView &view, int kind)
    {
        const int64_t n = view.numel();
        for (size_t i = 0; i < copies.size(); ++i) {
            const HalfCopy &c = copies[i];
            if (c.storage == view.data && c.kind == kind && c.n == n && c.dtype == view.dtype) {
                view.data = c.data;
                view.dtype = DataType::Float;
                return i;
            }
        }
        REMAT_ASSIGN_OR_RETURN(void *p, scratch(std::max<int64_t>(n, 1) * 4));
        HalfCopy c{view.data, static_cast<float *>(p), view.dtype, n, kind};
        if (kind != HalfCopy::Output)
            REMAT_RETURN_IF_ERROR(cudaStatus(
                kernels::widenHalf(m_stream.s, halfKindOf(view.dtype), view.data, c.data, n),
                opLabel() + ": widen " + core::ir::dataTypeName(view.dtype) + " to float32"));
        view.data = c.data;
        view.dtype = DataType::Float;
        copies.push_back(c);
        return copies.size() - 1;
    }

    Status viewOf(const OpCall &call, const core::exec::TensorArg &arg, DView &v)
    {
        v = DView{};
        v.dtype = arg.dtype;
        v.shape = arg.shape;
        v.tensor = arg.tensor;
        if (arg.tensor.valid() && arg.tensor.index() < call.graph->tensorCount())
            v.role = call.graph->tensor(arg.tensor).role;
        if (!arg.buffer.valid())
            return Status::ok();
        REMAT_ASSIGN_OR_RETURN(
            v.data,
            pointerOf(arg.buffer, arg.numElements() * elementBytes(arg.dtype), opLabel().c_str()));
        return Status::ok();
    }

    /// Shape arithmetic through the CPU reference kernel: inputs down, kernel, outputs up.
    Status runOnHost(const OpCall &call)
    {
        namespace cpu = core::exec::cpu;
        const training::Op &op = *call.op;
        const cpu::KernelFn *fn = cpu::findCpuKernel(op.type);
        if (!fn)
            return makeError(StatusCode::Unsupported,
                             fmt::format("no kernel for op '{}' (type {})", op.name, op.type));
        std::vector<std::vector<std::byte>> inData(call.inputs.size()),
            outData(call.outputs.size());
        std::vector<cpu::KView> inViews(call.inputs.size()), outViews(call.outputs.size());
        // half operands reach the CPU kernels as float32 (its backend's rule), results rounded
        const bool widen = !cpu::takesHalfOperands(op.type);
        for (size_t i = 0; i < call.inputs.size(); ++i) {
            const core::exec::TensorArg &a = call.inputs[i];
            inViews[i].dtype = a.dtype;
            inViews[i].shape = a.shape;
            if (!a.buffer.valid())
                continue;
            DView dv;
            REMAT_RETURN_IF_ERROR(viewOf(call, a, dv));
            REMAT_ASSIGN_OR_RETURN(const std::vector<std::byte> *raw, hostBytes(dv));
            if (widen && core::exec::isHalfType(a.dtype)) {
                const int64_t n = a.numElements();
                inData[i].resize(size_t(n) * 4);
                core::exec::widenToFloat(a.dtype, raw->data(),
                                         reinterpret_cast<float *>(inData[i].data()), n);
                inViews[i].dtype = DataType::Float;
            } else {
                inData[i] = *raw;
            }
            inViews[i].data = inData[i].data();
        }
        for (size_t j = 0; j < call.outputs.size(); ++j) {
            const core::exec::TensorArg &a = call.outputs[j];
            const bool wide = widen && core::exec::isHalfType(a.dtype);
            outData[j].assign(size_t(a.numElements() * (wide ? 4 : elementBytes(a.dtype))),
                              std::byte{0});
            outViews[j].dtype = wide ? DataType::Float : a.dtype;
            outViews[j].shape = a.shape;
            outViews[j].data = a.buffer.valid() ? outData[j].data() : nullptr;
        }
        if (op.id.index() >= m_bindings.size())
            return makeError(StatusCode::Internal, "run() before prepare() or with a foreign op");
        cpu::KernelContext ctx;
        std::vector<cpu::KView> views;
        REMAT_RETURN_IF_ERROR(
            core::exec::bindCall(ctx, m_bindings[op.id.index()], call, views,
                                 [&](const core::exec::TensorArg &arg, cpu::KView &view) {
                                     for (size_t i = 0; i < call.inputs.size(); ++i)
                                         if (&call.inputs[i] == &arg)
                                             view = inViews[i];
                                     for (size_t j = 0; j < call.outputs.size(); ++j)
                                         if (&call.outputs[j] == &arg)
                                             view = outViews[j];
                                     return Status::ok();
                                 }));
        REMAT_RETURN_IF_ERROR((*fn)(ctx));
        for (size_t j = 0; j < call.outputs.size(); ++j) {
            if (!call.outputs[j].buffer.valid() || outData[j].empty())
                continue;
            const core::exec::TensorArg &a = call.outputs[j];
            if (widen && core::exec::isHalfType(a.dtype)) {
                std::vector<std::byte> narrow(size_t(a.numElements()) * 2);
                core::exec::narrowFromFloat(a.dtype,
                                            reinterpret_cast<const float *>(outData[j].data()),
                                            narrow.data(), a.numElements());
                outData[j] = std::move(narrow);
            }
            REMAT_ASSIGN_OR_RETURN(
                void *p,
                pointerOf(call.outputs[j].buffer, int64_t(outData[j].size()), "host op output"));
            REMAT_RETURN_IF_ERROR(
                cudaStatus(cudaMemcpyAsync(p, outData[j].data(), outData[j].size(),
                                           cudaMemcpyHostToDevice, m_stream.s),
                           opLabel() + ": upload result"));
        }
        // the host vectors die with this frame
        REMAT_RETURN_IF_ERROR(cudaStatus(cudaStreamSynchronize(m_stream.s), opLabel()));
        ++m_figures.hostEvaluatedOps;
        return Status::ok();
    }

    CudaBackendOptions m_options;
    std::string m_name;
    int64_t m_totalBytes = 0;
    StreamOwner m_stream, m_copyStream;
    EventOwner m_start, m_end, m_copyDone, m_computeMark;
    PoolOwner m_pool;
    CublasOwner m_cublas;
#if defined(REMAT_HAVE_CUDNN)
    CudnnOwner m_cudnn;
#endif
    std::unordered_map<int64_t, Allocation> m_buffers;
    int64_t m_nextId = 0;
    StepTrace m_step;
    std::vector<MemEvent> m_planEvents; ///< the allocations the arena was planned for
    core::exec::MemoryPlan m_plan;
    void *m_arena = nullptr;
    int64_t m_arenaBytes = 0;
    int64_t m_inUse = 0, m_peak = 0;
    int64_t m_deviceUsed = 0, m_devicePeak = 0;
    bool m_copiesPending = false;
    const OpCall *m_call = nullptr;
    void *m_workspacePtr = nullptr;
    std::vector<void *> m_scratch;
    int64_t m_scratchBytes = 0;
    std::vector<bool> m_hostOps;
    std::vector<core::exec::OperandSlots> m_bindings;
    std::unique_ptr<core::exec::StaticEvaluator> m_evaluator;
    std::map<int32_t, std::vector<std::byte>> m_hostCache;
    std::vector<std::byte> m_hostTemp;
    CudaRunFigures m_figures;
    std::vector<char> m_keepUnrounded; ///< by tensor: a product's result an epilogue reads
    std::map<int32_t, Unrounded> m_unrounded;
    int64_t m_unroundedBytes = 0;
};

Expected<std::unique_ptr<core::exec::Backend>> makeCudaBackend(const CudaBackendOptions &options)
{
    const std::vector<DeviceInfo> devices = listDevices();
    if (devices.empty())
        return makeError(StatusCode::Unsupported,
                         "no CUDA device: the driver reports none on this machine");
    if (options.device < 0 || options.device >= int(devices.size()))
        return makeError(
            StatusCode::InvalidArgument,
            fmt::format("no CUDA device {} (this machine has {})", options.device, devices.size()));
    auto backend = std::make_unique<CudaBackend>(options);
    REMAT_RETURN_IF_ERROR(backend->init());
    return std::unique_ptr<core::exec::Backend>(std::move(backend));
}

Expected<std::unique_ptr<core::exec::Backend>> makeCudaBackend(int device)
{
    CudaBackendOptions o;
    o.device = device;
    return makeCudaBackend(o);
}

const CudaRunFigures *cudaRunFigures(const core::exec::Backend &backend)
{
    auto *cuda = dynamic_cast<const CudaBackend *>(&backend);
    return cuda ? &const_cast<CudaBackend *>(cuda)->figures() : nullptr;
}

bool releaseCachedMemory(core::exec::Backend &backend)
{
    auto *cuda = dynamic_cast<CudaBackend *>(&backend);
    if (!cuda)
        return false;
    cuda->releaseCached();
    return true;
}

std::vector<std::string> cudaKernelTypes() { return cudaOpTypes(); }

} // namespace remat::gpu
