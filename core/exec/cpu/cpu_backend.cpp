#include "core/exec/cpu/cpu_backend.h"

#include "core/exec/cpu/kernel.h"
#include "core/exec/half.h"
#include "core/exec/operand_context.h"
#include "core/exec/operand_slots.h"
#include "core/exec/static_eval.h"
#include "core/ir/graph.h"
#include "core/training/autocast.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace remat::core::exec {

namespace {

/// The float32 copies of one op call's half operands: widen() points a view at a float32 copy,
/// narrow() rounds what the kernel wrote back into the 2-byte storage.
class HalfScratch
{
public:
    enum Kind { Input, Output, Constant };
    int64_t bytes = 0; ///< float32 bytes held

    void widen(cpu::KView &view, Kind kind)
    {
        const int64_t n = view.numel();
        // an operand passed twice (x * x) shares one copy, so an in-place update is not undone
        for (const Copy &c : m_copies)
            if (c.storage == view.data && c.kind == kind && c.n == n && c.dtype == view.dtype) {
                view.data = reinterpret_cast<std::byte *>(c.data.get());
                view.dtype = ir::DataType::Float;
                return;
            }
        Copy c{std::make_unique_for_overwrite<float[]>(size_t(std::max<int64_t>(n, 1))), view.data,
               view.dtype, n, kind};
        if (kind != Output) // an output is written whole by its kernel
            widenToFloat(view.dtype, view.data, c.data.get(), n);
        view.data = reinterpret_cast<std::byte *>(c.data.get());
        view.dtype = ir::DataType::Float;
        bytes += n * int64_t(sizeof(float));
        m_copies.push_back(std::move(c));
    }

    void narrow()
    {
        for (const Copy &c : m_copies) {
            if (c.kind == Output)
                narrowFromFloat(c.dtype, c.data.get(), c.storage, c.n);
            else if (c.kind == Input)
                narrowChangedFromFloat(c.dtype, c.data.get(), c.storage, c.n);
        }
    }

private:
    struct Copy
    {
        std::unique_ptr<float[]> data;
        std::byte *storage;
        ir::DataType dtype;
        int64_t n;
        Kind kind;
    };
    std::vector<Copy> m_copies;
};

class CpuBackend final : public Backend
{
public:
    std::string id() const override { return "cpu"; }
    std::string description() const override
    {
        return "CPU reference (float32 math on float32 / float16 / bfloat16 tensors, double "
               "accumulation, OpenBLAS)";
    }

    Status prepare(const training::TrainingGraph &graph, const ir::Graph *forward) override
    {
        m_graph = &graph;
        m_forward = forward;
        m_bindings.clear();
        m_bindings.reserve(graph.opCount());
        m_evaluator = forward ? std::make_unique<StaticEvaluator>(*forward) : nullptr;
        for (const training::Op &op : graph.ops()) {
            if (!cpu::findCpuKernel(op.type))
                return makeError(
                    StatusCode::Unsupported,
                    fmt::format("no cpu kernel for op '{}' (type {})", op.name, op.type));
            const bool needsNode = op.type != "Loss" && op.type != "Accumulate" &&
                                   op.phase != training::Phase::Optimizer;
            if (needsNode && (!forward || !op.source.valid()))
                return makeError(
                    StatusCode::Unsupported,
                    fmt::format("op '{}' (type {}) has no ONNX node to take attributes from",
                                op.name, op.type));
            const ir::Node *node = needsNode ? training::attributeNode(op, forward) : nullptr;
            m_bindings.push_back(bindOperands(graph, op, node));
        }
        // A product whose epilogue PyTorch runs in the same kernel (autocast's linear bias Add,
        // baddbmm's alpha and mask): its float32 result is kept for the epilogue, which rounds
        // once, as PyTorch's kernel does.
        m_keepUnrounded.assign(graph.tensorCount(), 0);
        m_unrounded.clear();
        m_unroundedBytes = 0;
        for (const training::Op &op : graph.ops()) {
            if (!training::isProductEpilogue(op))
                continue;
            for (TensorId in : op.inputs) {
                const OpId p = graph.tensor(in).producer;
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
            return makeError(StatusCode::InvalidArgument, "negative allocation");
        int64_t id;
        if (!m_freeIds.empty()) {
            id = m_freeIds.back();
            m_freeIds.pop_back();
        } else {
            id = int64_t(m_slots.size());
            m_slots.emplace_back();
        }
        Storage &s = m_slots[size_t(id)];
        // Reuse a block of the same size from an earlier step: fresh pages cost a zero-fill and
        // a page fault each, which dominated the step time. The byte count is unaffected.
        if (auto it = m_cache.find(bytes); it != m_cache.end()) {
            s.data = std::move(it->second);
            m_cached -= bytes;
            m_cache.erase(it);
        } else {
            try {
                // at least one element so a zero-byte tensor still has an address
                s.data = std::make_unique_for_overwrite<std::byte[]>(
                    size_t(std::max<int64_t>(bytes, 8)));
            } catch (const std::bad_alloc &) {
                m_freeIds.push_back(id);
                return makeError(StatusCode::ResourceExhausted,
                                 fmt::format("host allocation of {} bytes failed", bytes));
            }
        }
        s.bytes = bytes;
        s.live = true;
        m_inUse += bytes;
        m_peak = std::max(m_peak, m_inUse);
        ++m_live;
        return Buffer{id, bytes};
    }

    Status release(Buffer buffer) override
    {
        Storage *s = slot(buffer);
        if (!s)
            return makeError(StatusCode::InvalidArgument,
                             fmt::format("release of unknown buffer {}", buffer.id));
        if (m_cached + s->bytes <= kMaxCachedBytes) {
            m_cache.emplace(s->bytes, std::move(s->data));
            m_cached += s->bytes;
        }
        s->data.reset();
        s->live = false;
        m_inUse -= s->bytes;
        --m_live;
        m_freeIds.push_back(buffer.id);
        return Status::ok();
    }

    Status upload(Buffer buffer, std::span<const std::byte> host) override
    {
        Storage *s = slot(buffer);
        if (!s || int64_t(host.size()) != s->bytes)
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format(
                    "upload of {} bytes into buffer {} that is not live or has another size",
                    host.size(), buffer.id));
        std::memcpy(s->data.get(), host.data(), host.size());
        return Status::ok();
    }

    Status download(Buffer buffer, std::span<std::byte> host) override
    {
        Storage *s = slot(buffer);
        if (!s || int64_t(host.size()) != s->bytes)
            return makeError(
                StatusCode::InvalidArgument,
                fmt::format("download of buffer {} that is not live or has another size",
                            buffer.id));
        std::memcpy(host.data(), s->data.get(), host.size());
        return Status::ok();
    }

    Status zero(Buffer buffer) override
    {
        Storage *s = slot(buffer);
        if (!s)
            return makeError(StatusCode::InvalidArgument, "zero of a buffer that is not live");
        std::memset(s->data.get(), 0, size_t(s->bytes));
        return Status::ok();
    }

    Status run(const OpCall &call) override
    {
        if (!call.op || !m_graph || call.op->id.index() >= m_bindings.size())
            return makeError(StatusCode::Internal, "run() before prepare() or with a foreign op");
        const training::Op &op = *call.op;
        const cpu::KernelFn *fn = cpu::findCpuKernel(op.type);
        if (!fn)
            return makeError(StatusCode::Unsupported,
                             fmt::format("no cpu kernel for op '{}' (type {})", op.name, op.type));
        // Half operands (float16, bfloat16) are stored in 2 bytes, as the simulator counts them;
        // the kernels compute in float32 on widened copies (PyTorch's CPU kernels also accumulate
        // half data in float32). The copies are this backend's scratch, outside the byte count.
        const bool widen = !cpu::takesHalfOperands(op.type);
        HalfScratch scratch;
        auto isOutput = [&](const TensorArg &arg) {
            return !call.outputs.empty() && &arg >= call.outputs.data() &&
                   &arg < call.outputs.data() + call.outputs.size();
        };
        cpu::KernelContext ctx;
        std::vector<cpu::KView> views, constViews;
        struct Unrounded
        {
            TensorId tensor;
            const float *data;
            int64_t n;
        };
        std::vector<Unrounded> keep; // this call's outputs an epilogue reads unrounded
        REMAT_RETURN_IF_ERROR(bindCall(
            ctx, m_bindings[op.id.index()], call, views,
            [&](const TensorArg &arg, cpu::KView &view) -> Status {
                Storage *s = slotOf(arg.buffer);
                if (!s)
                    return makeError(StatusCode::Internal,
                                     fmt::format("{}: operand '{}' is not resident",
                                                 op.name.empty() ? op.type : op.name,
                                                 tensorName(arg.tensor)));
                view = cpu::KView{s->data.get(), arg.dtype, arg.shape};
                if (!widen || !isHalfType(arg.dtype))
                    return Status::ok();
                const bool output = isOutput(arg);
                if (!output && training::isProductEpilogue(op) && arg.tensor.valid())
                    if (auto u = m_unrounded.find(arg.tensor.value);
                        u != m_unrounded.end() && int64_t(u->second.size()) == view.numel()) {
                        view.data = reinterpret_cast<std::byte *>(u->second.data());
                        view.dtype = ir::DataType::Float;
                        return Status::ok();
                    }
                scratch.widen(view, output ? HalfScratch::Output : HalfScratch::Input);
                if (output && arg.tensor.valid() && arg.tensor.index() < m_keepUnrounded.size() &&
                    m_keepUnrounded[arg.tensor.index()])
                    keep.push_back(
                        {arg.tensor, reinterpret_cast<const float *>(view.data), view.numel()});
                return Status::ok();
            }));
        // Constant operands the training graph did not pass: read from the model, in place.
        REMAT_RETURN_IF_ERROR(fillStaticOperands(
            ctx, call, m_evaluator.get(), constViews,
            [&](const HostTensor &t, cpu::KView &view) -> Status {
                view = cpu::KView{const_cast<std::byte *>(t.data.data()), t.dtype, t.shape};
                if (widen && isHalfType(t.dtype))
                    scratch.widen(view, HalfScratch::Constant);
                return Status::ok();
            }));
        Status s = (*fn)(ctx);
        if (!s.isOk())
            return s.withContext(fmt::format("cpu kernel {}", op.type));
        for (const Unrounded &k : keep) {
            std::vector<float> &copy = m_unrounded[k.tensor.value];
            m_unroundedBytes += (k.n - int64_t(copy.size())) * int64_t(sizeof(float));
            copy.assign(k.data, k.data + k.n);
        }
        m_scratchPeak = std::max(m_scratchPeak, scratch.bytes + m_unroundedBytes);
        // Outputs are rounded to their dtype; an input a kernel updated in place (an optimizer
        // step's parameter and state) is written back where its rounded value changed.
        scratch.narrow();
        return Status::ok();
    }

    MemoryStats memoryStats() const override
    {
        MemoryStats m;
        m.bytesInUse = m_inUse;
        m.peakBytes = m_peak;
        m.liveBuffers = m_live;
        m.privateScratchBytes = m_cached + m_scratchPeak;
        m.scratchPeakBytes = m_scratchPeak;
        return m;
    }

    void resetPeak() override
    {
        m_peak = m_inUse;
        m_scratchPeak = 0;
    }

private:
    struct Storage
    {
        std::unique_ptr<std::byte[]> data;
        int64_t bytes = 0;
        bool live = false;
    };

    Storage *slotOf(Buffer b)
    {
        if (b.id < 0 || size_t(b.id) >= m_slots.size() || !m_slots[size_t(b.id)].live)
            return nullptr;
        return &m_slots[size_t(b.id)];
    }
    Storage *slot(Buffer b) { return slotOf(b); }
    std::string tensorName(TensorId t) const
    {
        return m_graph && t.valid() && t.index() < m_graph->tensorCount() ? m_graph->tensor(t).name
                                                                          : "?";
    }

    const training::TrainingGraph *m_graph = nullptr;
    const ir::Graph *m_forward = nullptr;
    std::vector<OperandSlots> m_bindings;
    std::unique_ptr<StaticEvaluator> m_evaluator;
    std::vector<Storage> m_slots;
    std::vector<int64_t> m_freeIds;
    int64_t m_inUse = 0, m_peak = 0, m_live = 0;
    static constexpr int64_t kMaxCachedBytes = int64_t(4) << 30;
    std::multimap<int64_t, std::unique_ptr<std::byte[]>> m_cache; // released blocks by size
    int64_t m_cached = 0;
    int64_t m_scratchPeak = 0; ///< float32 copies of half operands, most at once in one call
    /// Products whose epilogue (training::isProductEpilogue) reads their float32 result: the
    /// flags by tensor, and the latest result of each (scratch, outside the byte count).
    std::vector<char> m_keepUnrounded;
    std::map<int32_t, std::vector<float>> m_unrounded;
    int64_t m_unroundedBytes = 0;
};

} // namespace

std::unique_ptr<Backend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

} // namespace remat::core::exec
