#include "core/sim/simulator.h"

#include "core/schedule/step_text.h"

#include <algorithm>
#include <fmt/format.h>

namespace remat::core::sim {

using schedule::MemCategory;
using schedule::Step;
using schedule::StepKind;
using training::TensorRole;

namespace {

constexpr unsigned char cat(MemCategory c) { return static_cast<unsigned char>(c); }

/// The graph flattened for the hot loop: CSR operand lists and per-tensor categories, so a step
/// touches only contiguous integer arrays.
struct FlatGraph
{
    std::vector<int32_t> inBegin, inIds, outBegin, outIds; // CSR over ops
    std::vector<int64_t> bytes;
    std::vector<unsigned char> firstCat, recomputeCat, preloaded, requiredAtEnd;
    std::vector<int64_t> workspace;
    std::vector<unsigned char> optimizerOp; ///< per op: an update op of the optimizer step

    explicit FlatGraph(const training::TrainingGraph &g)
    {
        const size_t nOps = g.opCount(), nTensors = g.tensorCount();
        inBegin.reserve(nOps + 1);
        outBegin.reserve(nOps + 1);
        workspace.reserve(nOps);
        for (const training::Op &op : g.ops()) {
            inBegin.push_back(static_cast<int32_t>(inIds.size()));
            outBegin.push_back(static_cast<int32_t>(outIds.size()));
            for (size_t k = 0; k < op.inputs.size(); ++k) {
                // An op reading one tensor twice needs it resident once.
                const auto first = op.inputs.begin(), here = first + static_cast<std::ptrdiff_t>(k);
                if (std::find(first, here, op.inputs[k]) == here)
                    inIds.push_back(op.inputs[k].value);
            }
            for (TensorId t : op.outputs)
                outIds.push_back(t.value);
            workspace.push_back(op.workspaceBytes);
            optimizerOp.push_back(op.phase == training::Phase::Optimizer ? 1 : 0);
        }
        inBegin.push_back(static_cast<int32_t>(inIds.size()));
        outBegin.push_back(static_cast<int32_t>(outIds.size()));
        bytes.resize(nTensors);
        firstCat.resize(nTensors);
        recomputeCat.resize(nTensors);
        preloaded.resize(nTensors);
        requiredAtEnd.resize(nTensors);
        for (const training::Tensor &t : g.tensors()) {
            const size_t i = t.id.index();
            bytes[i] = t.bytes;
            preloaded[i] = t.preloaded;
            requiredAtEnd[i] = t.requiredAtEnd;
            const MemCategory first = schedule::memCategoryOf(t, false),
                              again = schedule::memCategoryOf(t, true);
            firstCat[i] = cat(first);
            recomputeCat[i] = cat(again);
        }
    }
};

// Per-tensor walk state bits.
constexpr unsigned char kResident = 1;
constexpr unsigned char kHostCopy = 2;
constexpr unsigned char kPrefetchUnread = 4;

} // namespace

Expected<Timeline> simulate(const schedule::Schedule &schedule,
                            const training::TrainingGraph &graph, const cost::Costs &costs,
                            const SimOptions &options)
{
    const size_t nOps = graph.opCount(), nTensors = graph.tensorCount();
    if (costs.opSeconds.size() != nOps)
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("costs cover {} ops but the training graph has {}",
                                     costs.opSeconds.size(), nOps));
    if (!(costs.hostToDeviceBandwidth > 0) || !(costs.deviceToHostBandwidth > 0))
        return makeError(StatusCode::InvalidArgument, "copy bandwidths must be positive");

    const FlatGraph fg(graph);
    const bool check = options.validate;
    const bool record = options.recordPoints;
    schedule::ScheduleObserver *observer = options.observer;
    const double *opSeconds = costs.opSeconds.data();
    const double invH2D = 1.0 / costs.hostToDeviceBandwidth;
    const double invD2H = 1.0 / costs.deviceToHostBandwidth;

    std::vector<unsigned char> state(nTensors, 0), curCat(nTensors, 0), ran(nOps, 0);
    std::vector<double> readyAt(nTensors, 0.0), offloadDoneAt(nTensors, 0.0);
    // Only read to word errors; kept even without validation so a failure can be explained.
    std::vector<int32_t> freedAt(nTensors, -1), offloadedAt(nTensors, -1);

    Timeline tl;
    schedule::CategoryBytes bytesBy{};
    int64_t inUse = 0;
    int64_t hostBytes = 0;
    // Weight streaming: preloaded tensors first prefetched start in host memory.
    const std::vector<unsigned char> onHost = schedule::preloadedOnHost(schedule, graph);
    for (size_t t = 0; t < nTensors; ++t) {
        if (!fg.preloaded[t])
            continue;
        if (onHost[t]) {
            state[t] = kHostCopy;
            curCat[t] = fg.firstCat[t];
            hostBytes += fg.bytes[t];
            continue;
        }
        state[t] = kResident;
        curCat[t] = fg.firstCat[t];
        bytesBy[fg.firstCat[t]] += fg.bytes[t];
        inUse += fg.bytes[t];
        const TensorRole role = graph.tensor(TensorId(t)).role;
        if (role == TensorRole::OptimizerState)
            tl.optimizerStateBytes += fg.bytes[t];
        else if (role == TensorRole::MasterWeight)
            tl.masterWeightBytes += fg.bytes[t];
        else if (role == TensorRole::Input)
            tl.inputBytes += fg.bytes[t];
        if (observer)
            observer->onTensorResident(TensorId(t), fg.bytes[t]);
    }
    tl.weightBytes = bytesBy[cat(MemCategory::Weights)] + bytesBy[cat(MemCategory::MasterWeights)] +
                     bytesBy[cat(MemCategory::OptimizerState)];
    tl.peakBytes = inUse;
    tl.peakByCategory = bytesBy;
    for (size_t i = 0; i < nOps; ++i)
        tl.oneComputeSeconds += opSeconds[i];
    if (record)
        tl.points.resize(schedule.steps.size());

    const auto fail = [&](size_t i, const std::string &what) {
        return makeError(StatusCode::InvalidArgument,
                         schedule::describeStep(schedule, i, graph) + ": " + what);
    };
    const auto tensorName = [&](int32_t t) -> const std::string & {
        return graph.tensor(TensorId(t)).name;
    };

    double computeClock = 0, copyClock = 0, lastEnd = 0;
    tl.hostPeakBytes = hostBytes;
    const Step *steps = schedule.steps.data();
    const size_t nSteps = schedule.steps.size();
    constexpr size_t kWorkspace = static_cast<size_t>(MemCategory::Workspace);
    constexpr size_t kWeights = static_cast<size_t>(MemCategory::Weights);
    constexpr size_t kMaster = static_cast<size_t>(MemCategory::MasterWeights);
    constexpr size_t kOptState = static_cast<size_t>(MemCategory::OptimizerState);
    constexpr size_t kWeightGrads = static_cast<size_t>(MemCategory::WeightGrads);
    // Model state: what the activation peak leaves out (schedule::isModelStateCategory).
    const auto modelStateBytes = [&] {
        return bytesBy[kWeights] + bytesBy[kMaster] + bytesBy[kOptState] + bytesBy[kWeightGrads];
    };
    constexpr unsigned char kInFlight = cat(MemCategory::OffloadInFlight);

    for (size_t i = 0; i < nSteps; ++i) {
        const Step step = steps[i];
        const int32_t target = step.target;
        if (observer)
            observer->onStepBegin(StepIndex(i), step);
        int64_t peakDuring = inUse;
        int64_t workspace = 0;
        double start = computeClock, end = computeClock;
        bool recompute = false;
        bool update = false; // an optimizer update: its transients are not activations
        switch (step.kind) {
        case StepKind::Compute: {
            if (target < 0 || static_cast<size_t>(target) >= nOps)
                return fail(i,
                            fmt::format("op id {} out of range (graph has {} ops)", target, nOps));
            double ready = computeClock;
            for (int32_t k = fg.inBegin[target], e = fg.inBegin[target + 1]; k < e; ++k) {
                const int32_t t = fg.inIds[k];
                const unsigned char s = state[t];
                if (check && !(s & kResident))
                    return fail(
                        i, fmt::format("input '{}' is not resident ({})", tensorName(t),
                                       schedule::notResidentReason(freedAt[t], offloadedAt[t])));
                ready = std::max(ready, readyAt[t]);
                if (s & kPrefetchUnread) {
                    state[t] = s & ~kPrefetchUnread;
                    bytesBy[kInFlight] -= fg.bytes[t];
                    bytesBy[fg.firstCat[t]] += fg.bytes[t];
                    curCat[t] = fg.firstCat[t];
                }
            }
            recompute = ran[target] != 0;
            ran[target] = 1;
            start = ready;
            end = ready + opSeconds[target];
            computeClock = end;
            if (recompute) {
                tl.recomputeSeconds += opSeconds[target];
                ++tl.recomputeSteps;
            } else {
                tl.computeSeconds += opSeconds[target];
                ++tl.computeSteps;
            }
            const unsigned char *catOf = recompute ? fg.recomputeCat.data() : fg.firstCat.data();
            for (int32_t k = fg.outBegin[target], e = fg.outBegin[target + 1]; k < e; ++k) {
                const int32_t t = fg.outIds[k];
                if (state[t] & kResident) {
                    if (check && !recompute)
                        return fail(i,
                                    fmt::format("output '{}' is already resident", tensorName(t)));
                    continue;
                }
                state[t] |= kResident;
                const unsigned char c = catOf[t];
                curCat[t] = c;
                bytesBy[c] += fg.bytes[t];
                inUse += fg.bytes[t];
                readyAt[t] = end;
                if (observer)
                    observer->onTensorResident(TensorId(t), fg.bytes[t]);
            }
            workspace = fg.workspace[target];
            peakDuring = inUse + workspace;
            update = fg.optimizerOp[target] != 0;
            break;
        }
        case StepKind::Free:
        case StepKind::Offload:
        case StepKind::Prefetch: {
            if (target < 0 || static_cast<size_t>(target) >= nTensors)
                return fail(i, fmt::format("tensor id {} out of range (graph has {} tensors)",
                                           target, nTensors));
            const int32_t t = target;
            const unsigned char s = state[t];
            if (step.kind == StepKind::Prefetch) {
                if (check && !(s & kHostCopy))
                    return fail(
                        i, fmt::format("'{}' has no host copy (never offloaded)", tensorName(t)));
                if (check && (s & kResident))
                    return fail(i, fmt::format("'{}' is already resident", tensorName(t)));
                state[t] = s | kResident | kPrefetchUnread;
                curCat[t] = kInFlight;
                bytesBy[kInFlight] += fg.bytes[t];
                inUse += fg.bytes[t];
                start = std::max({copyClock, computeClock, offloadDoneAt[t]});
                end = start + static_cast<double>(fg.bytes[t]) * invH2D;
                copyClock = end;
                tl.copySeconds += end - start;
                readyAt[t] = end;
                peakDuring = inUse;
                if (observer)
                    observer->onTensorResident(TensorId(t), fg.bytes[t]);
                break;
            }
            if (check) {
                if (!(s & kResident))
                    return fail(
                        i, fmt::format("'{}' is not resident ({})", tensorName(t),
                                       schedule::notResidentReason(freedAt[t], offloadedAt[t])));
                // A preloaded tensor may leave the device only when a host copy keeps it.
                if (fg.preloaded[t] && step.kind == StepKind::Free && !(s & kHostCopy)) {
                    const training::Tensor &tensor = graph.tensor(TensorId(t));
                    return fail(
                        i, fmt::format("'{}' is a preloaded {} without a host copy: offload it "
                                       "before freeing it",
                                       tensor.name, training::tensorRoleName(tensor.role)));
                }
            }
            if (step.kind == StepKind::Offload) {
                if (check && (s & kHostCopy))
                    return fail(i,
                                fmt::format("'{}' already has a host copy (offloaded at step {})",
                                            tensorName(t), offloadedAt[t]));
                state[t] = s | kHostCopy;
                offloadedAt[t] = static_cast<int32_t>(i);
                start = std::max({copyClock, computeClock, readyAt[t]});
                end = start + static_cast<double>(fg.bytes[t]) * invD2H;
                copyClock = end;
                tl.copySeconds += end - start;
                offloadDoneAt[t] = end;
                hostBytes += fg.bytes[t];
                tl.hostPeakBytes = std::max(tl.hostPeakBytes, hostBytes);
            } else {
                if (!(s & kResident))
                    break; // only reachable with validation off: nothing to release
                // The memory cannot be reused before its outgoing copy has finished.
                if (s & kHostCopy)
                    computeClock = std::max(computeClock, offloadDoneAt[t]);
                state[t] = s & ~(kResident | kPrefetchUnread);
                freedAt[t] = static_cast<int32_t>(i);
                bytesBy[curCat[t]] -= fg.bytes[t];
                inUse -= fg.bytes[t];
                peakDuring = inUse; // the bytes before were already the previous step's figure
                start = end = computeClock;
                if (observer)
                    observer->onTensorFreed(TensorId(t));
            }
            break;
        }
        case StepKind::Phase:
            if (check && (target < 0 || target > static_cast<int32_t>(schedule::PhaseMark::End)))
                return fail(i, fmt::format("unknown phase mark {}", target));
            break;
        default: return fail(i, fmt::format("unknown step kind {}", static_cast<int>(step.kind)));
        }

        lastEnd = std::max(lastEnd, end);
        if (peakDuring > tl.peakBytes) {
            tl.peakBytes = peakDuring;
            tl.peakStep = i;
            tl.peakByCategory = bytesBy;
            tl.peakByCategory[kWorkspace] = workspace;
        }
        const int64_t activation = update ? 0 : peakDuring - modelStateBytes();
        if (activation > tl.activationPeakBytes)
            tl.activationPeakBytes = activation;
        if (record) {
            TimelinePoint &p = tl.points[i];
            p.bytesInUse = inUse;
            p.peakDuringStep = peakDuring;
            p.byCategory = bytesBy;
            p.byCategory[kWorkspace] = workspace;
            p.endSeconds = lastEnd;
        }
        if (observer) {
            schedule::StepEvent ev;
            ev.index = StepIndex(i);
            ev.step = step;
            ev.startSeconds = start;
            ev.endSeconds = end;
            ev.bytesInUse = inUse;
            ev.peakDuringStep = peakDuring;
            ev.recompute = recompute;
            observer->onStepEnd(ev);
        }
    }

    if (check) {
        for (size_t t = 0; t < nTensors; ++t) {
            if (fg.requiredAtEnd[t] && !(state[t] & kResident))
                return makeError(
                    StatusCode::InvalidArgument,
                    fmt::format("end of schedule: required tensor '{}' is not resident ({})",
                                graph.tensor(TensorId(t)).name,
                                schedule::notResidentReason(freedAt[t], offloadedAt[t])));
        }
    }
    tl.weightGradBytes = bytesBy[kWeightGrads];
    tl.totalSeconds = std::max({computeClock, copyClock, lastEnd});
    return tl;
}

} // namespace remat::core::sim
