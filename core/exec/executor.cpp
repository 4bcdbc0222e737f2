#include "core/exec/executor.h"

#include "core/exec/static_eval.h"
#include "core/ir/graph.h"
#include "core/schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace remat::core::exec {

using schedule::MemCategory;
using schedule::StepKind;
using training::Phase;
using training::TensorRole;

namespace {

using Clock = std::chrono::steady_clock;

uint64_t mix(uint64_t x)
{
    // splitmix64 finaliser: decorrelates neighbouring op ids
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

bool isLossCotangent(const training::TrainingGraph &g, const training::Tensor &t)
{
    for (OpId c : t.consumers) {
        const training::Op &op = g.op(c);
        if (op.phase != Phase::Loss)
            continue;
        for (size_t i = 1; i < op.inputs.size(); i += 2)
            if (op.inputs[i] == t.id)
                return true;
    }
    return false;
}

HostTensor randomTensor(ir::DataType dtype, const std::vector<int64_t> &shape, uint64_t seed,
                        double scale, double mean = 0.0)
{
    if (!ir::isFloatingPoint(dtype) && dtype != ir::DataType::Bool) {
        // integer data with no values given (token ids, class labels): 0 or 1, valid as an index
        // into any table and as a label of any loss with two classes or more
        HostTensor t = HostTensor::zeros(ir::DataType::Int64, shape);
        std::mt19937_64 rng(seed);
        std::vector<int64_t> v(size_t(t.numElements()));
        for (int64_t &x : v)
            x = int64_t(rng() & 1);
        return HostTensor::fromInt64s(shape, v).convertedTo(dtype);
    }
    HostTensor t = HostTensor::zeros(ir::DataType::Float, shape);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float &v : t.floats())
        v = float(mean + scale * dist(rng));
    return t.convertedTo(dtype);
}

} // namespace

struct Executor::Impl
{
    Backend &backend;
    const training::TrainingGraph &graph;
    const ir::Graph &forward;
    bool prepared = false;
    bool updated = false; ///< a run's optimizer step changed the preloaded data
    uint64_t seed = 1234;
    std::vector<HostTensor> preloadedHost; // by TensorId (empty when not preloaded)
    std::vector<Buffer> preloadedBuffers;  // by TensorId
    std::vector<const ir::Node *> nodes;   // by OpId

    class StepRun; // one run() (below)

    Impl(Backend &b, const training::TrainingGraph &g, const ir::Graph &f)
        : backend(b), graph(g), forward(f)
    {
    }

    ~Impl()
    {
        for (Buffer &b : preloadedBuffers)
            if (b.valid())
                (void)backend.release(b);
    }

    Expected<HostTensor> preloadedData(const training::Tensor &t, const ExecInputs &in,
                                       StaticEvaluator &ev)
    {
        const std::vector<int64_t> shape =
            t.shape.isStatic() ? t.shape.sizes() : std::vector<int64_t>{};
        const int64_t elems = t.shape.isStatic() ? *t.shape.numElements() : 0;
        // A master weight takes its parameter's values (seeded from the parameter's id): the
        // half parameter is then the master's rounding, as a mixed-precision trainer starts.
        TensorId seedId = t.id;
        if (t.role == TensorRole::MasterWeight && t.source.valid())
            for (const training::Tensor &p : graph.tensors())
                if (p.role == TensorRole::Parameter && p.source == t.source) {
                    seedId = p.id;
                    break;
                }
        const uint64_t tensorSeed = mix(in.seed ^ mix(uint64_t(seedId.value) + 1));
        auto fromFeed = [&](const HostTensor &f, const std::string &key) -> Expected<HostTensor> {
            if (f.numElements() != elems)
                return makeError(
                    StatusCode::InvalidArgument,
                    fmt::format("feed entry '{}' has {} elements, tensor '{}' needs {}", key,
                                f.numElements(), t.name, elems));
            HostTensor c = f.convertedTo(t.dtype);
            c.shape = shape;
            return c;
        };
        // Optimizer state starts at zero (torch.optim's first step; a momentum buffer of zeros
        // gives torch's clone of the gradient exactly).
        if (t.role == TensorRole::OptimizerState)
            return HostTensor::zeros(t.dtype, shape);
        if (isLossCotangent(graph, t)) {
            const std::string outName =
                t.source.valid() ? forward.value(t.source).name : std::string();
            for (const std::string &key : {t.name, std::string("R:") + outName, std::string("R")})
                if (const HostTensor *f = in.feed.find(key))
                    return fromFeed(*f, key);
            return randomTensor(t.dtype, shape, tensorSeed, 1.0);
        }
        if (!t.source.valid())
            return makeError(
                StatusCode::Unsupported,
                fmt::format("preloaded tensor '{}' has no forward value to take data from",
                            t.name));
        const ir::Value &v = forward.value(t.source);
        if (const HostTensor *f = in.feed.find(v.name))
            return fromFeed(*f, v.name);
        if (ev.isStatic(t.source)) {
            REMAT_ASSIGN_OR_RETURN(const HostTensor *h, ev.evaluate(t.source));
            if (h->numElements() != elems)
                return makeError(StatusCode::Internal,
                                 fmt::format("constant '{}' has the wrong size", t.name));
            HostTensor c = h->convertedTo(t.dtype);
            c.shape = shape;
            return c;
        }
        // No data in the file: seeded values of a sensible scale.
        switch (v.kind) {
        case ir::ValueKind::Input: return randomTensor(t.dtype, shape, tensorSeed, 1.0);
        case ir::ValueKind::Parameter:
        case ir::ValueKind::Frozen: {
            const double fanIn =
                shape.size() >= 2 ? double(elems / std::max<int64_t>(shape[0], 1)) : 1.0;
            if (shape.size() <= 1 && v.name.find("weight") != std::string::npos)
                return randomTensor(t.dtype, shape, tensorSeed, 0.0, 1.0); // norm scales: ones
            return randomTensor(t.dtype, shape, tensorSeed,
                                shape.size() >= 2 ? 1.0 / std::sqrt(fanIn) : 0.0);
        }
        case ir::ValueKind::Buffer:
            if (v.name.find("var") != std::string::npos)
                return randomTensor(t.dtype, shape, tensorSeed, 0.0, 1.0);
            return HostTensor::zeros(t.dtype, shape);
        default:
            return makeError(
                StatusCode::Unsupported,
                fmt::format("no data for preloaded tensor '{}' (a {} value that is not constant)",
                            t.name, ir::valueKindName(v.kind)));
        }
    }
};

Executor::Executor(Backend &backend, const training::TrainingGraph &graph, const ir::Graph &forward)
    : m_impl(std::make_unique<Impl>(backend, graph, forward))
{
}

Executor::~Executor() = default;

const HostTensor *Executor::preloadedData(TensorId tensor) const
{
    if (!tensor.valid() || tensor.index() >= m_impl->preloadedHost.size())
        return nullptr;
    const HostTensor &h = m_impl->preloadedHost[tensor.index()];
    return h.data.empty() && h.shape.empty() ? nullptr : &h;
}

Status Executor::prepare(const ExecInputs &inputs)
{
    Impl &d = *m_impl;
    if (std::string why = d.graph.info().training.notExecutableReason(); !why.empty())
        return makeError(StatusCode::Unsupported, "cannot execute this training step: " + why);
    REMAT_RETURN_IF_ERROR(d.backend.prepare(d.graph, &d.forward));
    d.seed = inputs.seed;
    d.nodes.assign(d.graph.opCount(), nullptr);
    for (const training::Op &op : d.graph.ops())
        d.nodes[op.id.index()] = training::attributeNode(op, &d.forward);
    for (Buffer &b : d.preloadedBuffers)
        if (b.valid())
            REMAT_RETURN_IF_ERROR(d.backend.release(b));
    d.preloadedHost.assign(d.graph.tensorCount(), HostTensor{});
    d.preloadedBuffers.assign(d.graph.tensorCount(), Buffer{});
    StaticEvaluator ev(d.forward);
    for (const training::Tensor &t : d.graph.tensors()) {
        if (!t.preloaded)
            continue;
        auto host = d.preloadedData(t, inputs, ev);
        if (!host)
            return host.status();
        if (host->byteCount() != t.bytes)
            return makeError(StatusCode::Internal,
                             fmt::format("tensor '{}': {} bytes of data for {} bytes", t.name,
                                         host->byteCount(), t.bytes));
        REMAT_ASSIGN_OR_RETURN(Buffer b, d.backend.allocate(t.bytes));
        d.preloadedBuffers[t.id.index()] = b;
        REMAT_RETURN_IF_ERROR(d.backend.upload(b, host->data));
        d.preloadedHost[t.id.index()] = std::move(*host);
    }
    REMAT_RETURN_IF_ERROR(d.backend.synchronize());
    d.prepared = true;
    return Status::ok();
}

/// One Executor::run, as named passes: the streamed weights go to the host (stageStreamedWeights),
/// each step runs (runCompute, runFree, runOffload, runPrefetch) and is recorded (recordStep), the
/// gradients come back (downloadGradients), and everything goes back as prepare() left it, also
/// on an error or a cancellation (fail).
class Executor::Impl::StepRun
{
public:
    StepRun(Impl &d, const schedule::Schedule &sched, const ExecOptions &options)
        : d(d), g(d.graph), sched(sched), options(options), nt(g.tensorCount()), buf(nt),
          cat(nt, MemCategory::StoredActivations), ran(g.opCount(), 0), hostCopy(nt),
          prefetchPending(nt, 0)
    {
    }

    Expected<ExecResult> run()
    {
        for (const training::Tensor &t : g.tensors())
            if (t.preloaded) {
                buf[t.id.index()] = d.preloadedBuffers[t.id.index()];
                cat[t.id.index()] = schedule::memCategoryOf(t, false);
                bytesByCat[size_t(cat[t.id.index()])] += t.bytes;
            }
        REMAT_RETURN_IF_ERROR(stageStreamedWeights());

        result.timeline.points.reserve(sched.size());
        result.timeline.masterWeightBytes = bytesByCat[size_t(MemCategory::MasterWeights)];
        result.timeline.optimizerStateBytes = bytesByCat[size_t(MemCategory::OptimizerState)];
        result.timeline.weightBytes = bytesByCat[size_t(MemCategory::Weights)] +
                                      result.timeline.masterWeightBytes +
                                      result.timeline.optimizerStateBytes;
        result.timeline.hostPeakBytes = hostBytes;
        d.backend.resetPeak();
        d.backend.beginStep();

        stepStart = Clock::now();
        for (size_t i = 0; i < sched.steps.size(); ++i) {
            if (options.stop.stopRequested())
                return fail(makeError(StatusCode::Cancelled,
                                      fmt::format("run cancelled before step {}", i)));
            const schedule::Step &step = sched.steps[i];
            const StepIndex index{i};
            if (options.observer)
                options.observer->onStepBegin(index, step);
            const auto t0 = Clock::now();
            schedule::StepEvent ev;
            ev.index = index;
            ev.step = step;
            int64_t workspaceNow = 0;
            Status s = Status::ok();
            switch (step.kind) {
            case StepKind::Compute: s = runCompute(i, step, ev, workspaceNow); break;
            case StepKind::Free: s = runFree(i, step); break;
            case StepKind::Offload: s = runOffload(i, step); break;
            case StepKind::Prefetch: s = runPrefetch(i, step); break;
            case StepKind::Phase: break;
            }
            if (!s.isOk())
                return fail(s);
            recordStep(i, step, ev, t0, workspaceNow);
        }
        if (Status w = d.backend.waitCopies(); !w.isOk())
            return fail(w);
        result.stepSeconds = std::chrono::duration<double>(Clock::now() - stepStart).count();
        result.timeline.totalSeconds = lastEnd;
        result.timeline.oneComputeSeconds = result.timeline.computeSeconds;
        result.timeline.weightGradBytes = bytesByCat[size_t(MemCategory::WeightGrads)];
        const MemoryStats stats = d.backend.memoryStats();
        result.measuredPeakBytes = stats.peakBytes;
        result.devicePeakBytes = stats.devicePeakBytes;
        result.scratchPeakBytes = stats.scratchPeakBytes;

        if (options.downloadGradients)
            if (Status s = downloadGradients(); !s.isOk())
                return fail(s);
        if (options.downloadParameters)
            if (Status s = downloadParameters(); !s.isOk())
                return fail(s);
        result.gradients.set("loss",
                             HostTensor::fromDoubles({}, std::span<const double>(&result.loss, 1)));
        releaseAll();
        d.backend.endStep(true);
        REMAT_RETURN_IF_ERROR(restoreStreamed());
        return std::move(result);
    }

private:
    /// Weight streaming: preloaded tensors whose first copy step is a Prefetch start the step in
    /// host memory (schedule::preloadedOnHost, as the simulator has it). Their device copies go
    /// back before the step and come back after it (restoreStreamed), so the next run starts as
    /// prepare() left it.
    Status stageStreamedWeights()
    {
        const std::vector<unsigned char> onHost = schedule::preloadedOnHost(sched, g);
        for (const training::Tensor &t : g.tensors())
            if (t.preloaded && onHost[t.id.index()]) {
                streamed.push_back(t.id);
                REMAT_RETURN_IF_ERROR(d.backend.release(d.preloadedBuffers[t.id.index()]));
                d.preloadedBuffers[t.id.index()] = Buffer{};
                buf[t.id.index()] = Buffer{};
                bytesByCat[size_t(cat[t.id.index()])] -= t.bytes;
                const std::vector<std::byte> &data = d.preloadedHost[t.id.index()].data;
                hostCopy[t.id.index()].assign(data.begin(), data.end());
                hostBytes += t.bytes;
            }
        return Status::ok();
    }

    /// A streamed tensor still on the device at the end becomes the preloaded copy again (its data
    /// came from the same host copy); one that is not is uploaded anew.
    Status restoreStreamed()
    {
        Status first = Status::ok();
        for (TensorId t : streamed) {
            Buffer &b = buf[t.index()];
            if (!b.valid()) {
                auto nb = d.backend.allocate(g.tensor(t).bytes);
                if (!nb) {
                    first = first.isOk() ? nb.status() : first;
                    continue;
                }
                b = *nb;
                if (Status u = d.backend.upload(b, d.preloadedHost[t.index()].data);
                    !u.isOk() && first.isOk())
                    first = u;
            }
            d.preloadedBuffers[t.index()] = b;
            b = Buffer{};
        }
        return first;
    }

    /// Everything the step allocated goes back, also on an error or cancellation.
    void releaseAll()
    {
        for (size_t i = 0; i < nt; ++i)
            if (buf[i].valid() && !g.tensors()[i].preloaded) {
                (void)d.backend.release(buf[i]);
                buf[i] = Buffer{};
            }
    }

    Expected<ExecResult> fail(Status s)
    {
        (void)d.backend.synchronize();
        (void)d.backend.waitCopies();
        releaseAll();
        d.backend.endStep(false);
        (void)restoreStreamed();
        return s;
    }

    TensorArg argOf(TensorId id) const
    {
        const training::Tensor &t = g.tensor(id);
        TensorArg a;
        a.buffer = buf[id.index()];
        a.dtype = t.dtype;
        a.shape = t.shape.isStatic() ? t.shape.sizes() : std::vector<int64_t>{};
        a.tensor = id;
        return a;
    }

    Expected<HostTensor> downloadTensor(TensorId id)
    {
        const training::Tensor &t = g.tensor(id);
        HostTensor h = HostTensor::zeros(t.dtype, t.shape.isStatic() ? t.shape.sizes()
                                                                     : std::vector<int64_t>{});
        REMAT_RETURN_IF_ERROR(d.backend.download(buf[id.index()], h.data));
        return h;
    }

    /// Allocates the op's missing outputs and its workspace, runs its kernel, and after the first
    /// loss op reads the loss (and the network's output when asked).
    Status runCompute(size_t i, const schedule::Step &step, schedule::StepEvent &ev,
                      int64_t &workspaceNow)
    {
        const training::Op &op = g.op(step.op());
        const bool recompute = ran[op.id.index()] != 0;
        ev.recompute = recompute;
        OpCall call;
        call.graph = &g;
        call.op = &op;
        call.node = d.nodes[op.id.index()];
        call.forward = &d.forward;
        call.recompute = recompute;
        call.seed = mix(d.seed ^ mix(uint64_t(op.id.value) * 0x100000001b3ull + 7));
        for (TensorId in : op.inputs) {
            if (!buf[in.index()].valid())
                return makeError(StatusCode::Internal,
                                 fmt::format("step {} ({}): input '{}' is not resident", i, op.name,
                                             g.tensor(in).name));
            call.inputs.push_back(argOf(in));
            if (prefetchPending[in.index()]) {
                // a prefetched tensor counts as in flight until its first reader runs
                prefetchPending[in.index()] = 0;
                bytesByCat[size_t(MemCategory::OffloadInFlight)] -= g.tensor(in).bytes;
                bytesByCat[size_t(cat[in.index()])] += g.tensor(in).bytes;
            }
        }
        for (TensorId out : op.outputs) {
            const bool resident = buf[out.index()].valid();
            call.outputWasResident.push_back(resident);
            if (!resident) {
                const training::Tensor &t = g.tensor(out);
                auto b = d.backend.allocate(t.bytes);
                if (!b)
                    return b.status().withContext(fmt::format("step {} ({})", i, op.name));
                buf[out.index()] = *b;
                cat[out.index()] = schedule::memCategoryOf(t, recompute);
                bytesByCat[size_t(cat[out.index()])] += t.bytes;
                if (options.observer)
                    options.observer->onTensorResident(out, t.bytes);
            }
            call.outputs.push_back(argOf(out));
        }
        if (op.workspaceBytes > 0) {
            auto w = d.backend.allocate(op.workspaceBytes);
            if (!w)
                return w.status().withContext(fmt::format("step {} ({}) workspace", i, op.name));
            call.workspace = *w;
            workspaceNow = op.workspaceBytes;
        }
        ev.peakDuringStep = d.backend.memoryStats().bytesInUse;
        Status s = d.backend.run(call);
        if (s.isOk() && call.workspace.valid())
            s = d.backend.release(call.workspace);
        if (s.isOk())
            s = d.backend.synchronize();
        if (!s.isOk())
            return s.withContext(fmt::format("step {} ({})", i, op.name));
        if (op.phase == Phase::Loss && !lossSeen && !op.outputs.empty()) {
            lossSeen = true;
            REMAT_ASSIGN_OR_RETURN(HostTensor l, downloadTensor(op.outputs[0]));
            result.loss = l.toDoubles().empty() ? 0.0 : l.toDoubles()[0];
            if (options.downloadOutput && !op.inputs.empty()) {
                REMAT_ASSIGN_OR_RETURN(HostTensor o, downloadTensor(op.inputs[0]));
                result.gradients.set("output", std::move(o));
            }
        }
        ran[op.id.index()] = 1;
        if (recompute) {
            ++result.timeline.recomputeSteps;
        } else {
            ++result.timeline.computeSteps;
        }
        return Status::ok();
    }

    Status runFree(size_t i, const schedule::Step &step)
    {
        const TensorId t = step.tensor();
        // a preloaded tensor may leave the device only while a host copy keeps it (streaming)
        if (!buf[t.index()].valid() || (g.tensor(t).preloaded && hostCopy[t.index()].empty()))
            return makeError(
                StatusCode::Internal,
                fmt::format("step {}: free of '{}' that is not resident", i, g.tensor(t).name));
        if (!hostCopy[t.index()].empty())
            REMAT_RETURN_IF_ERROR(d.backend.waitCopies()); // the copy reads the device buffer
        REMAT_RETURN_IF_ERROR(d.backend.release(buf[t.index()]));
        buf[t.index()] = Buffer{};
        const MemCategory c =
            prefetchPending[t.index()] ? MemCategory::OffloadInFlight : cat[t.index()];
        prefetchPending[t.index()] = 0;
        bytesByCat[size_t(c)] -= g.tensor(t).bytes;
        if (options.observer)
            options.observer->onTensorFreed(t);
        return Status::ok();
    }

    Status runOffload(size_t i, const schedule::Step &step)
    {
        const TensorId t = step.tensor();
        if (!buf[t.index()].valid())
            return makeError(
                StatusCode::Internal,
                fmt::format("step {}: offload of '{}' that is not resident", i, g.tensor(t).name));
        hostCopy[t.index()].assign(size_t(g.tensor(t).bytes), std::byte{0});
        REMAT_RETURN_IF_ERROR(d.backend.offloadToHost(buf[t.index()], hostCopy[t.index()]));
        int64_t host = 0;
        for (const auto &h : hostCopy)
            host += int64_t(h.size());
        result.timeline.hostPeakBytes = std::max(result.timeline.hostPeakBytes, host);
        return Status::ok();
    }

    Status runPrefetch(size_t i, const schedule::Step &step)
    {
        const TensorId t = step.tensor();
        if (hostCopy[t.index()].empty() && g.tensor(t).bytes > 0)
            return makeError(StatusCode::Internal,
                             fmt::format("step {}: prefetch of '{}' that was never offloaded", i,
                                         g.tensor(t).name));
        REMAT_RETURN_IF_ERROR(d.backend.waitCopies()); // its offload must have finished
        auto b = d.backend.allocate(g.tensor(t).bytes);
        if (!b)
            return b.status().withContext(
                fmt::format("step {} (prefetch {})", i, g.tensor(t).name));
        buf[t.index()] = *b;
        REMAT_RETURN_IF_ERROR(d.backend.prefetchFromHost(*b, hostCopy[t.index()]));
        prefetchPending[t.index()] = 1;
        cat[t.index()] = schedule::memCategoryOf(g.tensor(t), false);
        bytesByCat[size_t(MemCategory::OffloadInFlight)] += g.tensor(t).bytes;
        if (options.observer)
            options.observer->onTensorResident(t, g.tensor(t).bytes);
        return Status::ok();
    }

    double secondsSince(Clock::time_point t) const
    {
        return std::chrono::duration<double>(t - stepStart).count();
    }

    /// The step's timeline point, its share of the time lanes and the running peaks; the observer
    /// hears of its end.
    void recordStep(size_t i, const schedule::Step &step, schedule::StepEvent &ev,
                    Clock::time_point t0, int64_t workspaceNow)
    {
        const auto t1 = Clock::now();
        const MemoryStats stats = d.backend.memoryStats();
        ev.startSeconds = secondsSince(t0);
        ev.endSeconds = secondsSince(t1);
        ev.bytesInUse = stats.bytesInUse;
        if (step.kind != StepKind::Compute)
            ev.peakDuringStep = stats.bytesInUse;
        ev.peakDuringStep = std::max(ev.peakDuringStep, ev.bytesInUse);
        const double dt = ev.endSeconds - ev.startSeconds;
        if (step.kind == StepKind::Compute)
            (ev.recompute ? result.timeline.recomputeSeconds : result.timeline.computeSeconds) +=
                dt;
        else if (step.kind == StepKind::Offload || step.kind == StepKind::Prefetch)
            result.timeline.copySeconds += dt;
        lastEnd = ev.endSeconds;
        sim::TimelinePoint p;
        p.bytesInUse = ev.bytesInUse;
        p.peakDuringStep = ev.peakDuringStep;
        p.byCategory = bytesByCat;
        p.byCategory[size_t(MemCategory::Workspace)] = workspaceNow;
        p.endSeconds = ev.endSeconds;
        if (p.peakDuringStep > result.timeline.peakBytes) {
            result.timeline.peakBytes = p.peakDuringStep;
            result.timeline.peakStep = i;
            result.timeline.peakByCategory = p.byCategory;
        }
        int64_t act = p.peakDuringStep;
        for (size_t c = 0; c < schedule::kMemCategoryCount; ++c)
            if (schedule::isModelStateCategory(static_cast<MemCategory>(c)))
                act -= p.byCategory[c];
        result.timeline.activationPeakBytes = std::max(result.timeline.activationPeakBytes, act);
        result.timeline.points.push_back(p);
        if (options.observer)
            options.observer->onStepEnd(ev);
    }

    /// The parameters as the step left them (updated by the optimizer step), by value name.
    Status downloadParameters()
    {
        for (const training::Tensor &t : g.tensors()) {
            if (t.role != TensorRole::Parameter || !buf[t.id.index()].valid() || !t.source.valid())
                continue;
            REMAT_ASSIGN_OR_RETURN(HostTensor h, downloadTensor(t.id));
            result.parameters.set(d.forward.value(t.source).name, std::move(h));
        }
        return Status::ok();
    }

    /// The gradients still resident at the end (parameters', and the data input's as "grad_input").
    Status downloadGradients()
    {
        std::string inputGradName;
        for (ValueId in : d.forward.inputs())
            if (d.forward.value(in).kind == ir::ValueKind::Input) {
                if (inputGradName.empty() || d.forward.value(in).name == "input")
                    inputGradName = d.forward.value(in).name;
            }
        for (const training::Tensor &t : g.tensors()) {
            if (!t.requiredAtEnd || !buf[t.id.index()].valid() || !t.source.valid())
                continue;
            if (t.role != TensorRole::ParameterGrad && t.role != TensorRole::ActivationGrad)
                continue;
            REMAT_ASSIGN_OR_RETURN(HostTensor h, downloadTensor(t.id));
            const ir::Value &v = d.forward.value(t.source);
            if (v.kind == ir::ValueKind::Input && v.name == inputGradName)
                result.gradients.set("grad_input", h);
            result.gradients.set("grad:" + v.name, std::move(h));
        }
        return Status::ok();
    }

    Impl &d;
    const training::TrainingGraph &g;
    const schedule::Schedule &sched;
    const ExecOptions &options;
    const size_t nt;
    // per tensor
    std::vector<Buffer> buf;
    std::vector<MemCategory> cat;
    std::vector<char> ran; ///< per op: has run (a second run is a recompute)
    std::vector<std::vector<std::byte>> hostCopy;
    std::vector<char> prefetchPending;
    schedule::CategoryBytes bytesByCat{};
    std::vector<TensorId> streamed; ///< preloaded tensors that start on the host
    int64_t hostBytes = 0;
    ExecResult result;
    bool lossSeen = false;
    Clock::time_point stepStart;
    double lastEnd = 0;
};

Expected<ExecResult> Executor::run(const schedule::Schedule &sched, const ExecOptions &options)
{
    Impl &d = *m_impl;
    if (!d.prepared)
        return makeError(StatusCode::InvalidArgument,
                         "Executor::run before a successful prepare()");
    REMAT_RETURN_IF_ERROR(schedule::validate(sched, d.graph));
    // The optimizer step updates parameters and state in place: every run starts from the
    // prepared data again, so each run is the same step (timings repeat, gradients compare).
    if (d.updated) {
        for (const training::Op &op : d.graph.ops()) {
            if (op.phase != Phase::Optimizer)
                continue;
            for (TensorId t : op.inputs) {
                const Buffer b = d.preloadedBuffers[t.index()];
                if (d.graph.tensor(t).preloaded && b.valid())
                    REMAT_RETURN_IF_ERROR(d.backend.upload(b, d.preloadedHost[t.index()].data));
            }
        }
    }
    d.updated = d.graph.optimizerOpCount() > 0;
    return Impl::StepRun(d, sched, options).run();
}

Expected<GradientComparison> compareGradients(const NpzArchive &a, const NpzArchive &b)
{
    GradientComparison c;
    for (const auto &[name, tb] : b.entries()) {
        if (name.rfind("grad", 0) != 0)
            continue;
        const HostTensor *ta = a.find(name);
        if (!ta)
            return makeError(StatusCode::NotFound, fmt::format("gradient '{}' is missing", name));
        if (ta->numElements() != tb.numElements())
            return makeError(StatusCode::InvalidArgument,
                             fmt::format("gradient '{}' differs in size", name));
        const std::vector<double> x = ta->toDoubles(), y = tb.toDoubles();
        double maxDiff = 0, maxRef = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            maxDiff = std::max(maxDiff, std::abs(x[i] - y[i]));
            maxRef = std::max(maxRef, std::abs(y[i]));
        }
        if (ta->data != tb.data)
            c.bitwiseEqual = false;
        const double rel = maxDiff / std::max(maxRef, 1e-30);
        if (maxDiff > 0 && rel > c.maxRelativeError) {
            c.maxRelativeError = rel;
            c.worstEntry = name;
        }
    }
    return c;
}

} // namespace remat::core::exec
