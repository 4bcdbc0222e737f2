#include "core/solvers/offload_pins.h"

#include "core/sim/simulator.h"

#include "core/util/bytes.h"

#include <fmt/format.h>

#include <algorithm>

namespace remat::core::solvers {

bool hasOffloadPins(const SolveRequest &request)
{
    return std::any_of(request.pins.begin(), request.pins.end(),
                       [](const Pin &p) { return p.kind == PinKind::Offload; });
}

SolveRequest offloadPinsAsKeep(const SolveRequest &request)
{
    SolveRequest out = request;
    for (Pin &p : out.pins)
        if (p.kind == PinKind::Offload)
            p.kind = PinKind::Keep;
    return out;
}

std::string describeFirstPin(const SolveRequest &request, std::optional<PinKind> kind)
{
    for (const Pin &p : request.pins)
        if (!kind || p.kind == *kind) {
            const std::string name =
                request.graph && p.tensor.index() < request.graph->tensorCount()
                    ? request.graph->tensor(p.tensor).name
                    : "#" + std::to_string(p.tensor.value);
            return std::string(pinKindName(p.kind)) + " pin on " + name;
        }
    return "pin";
}

namespace {

bool reads(const training::Op &op, TensorId t)
{
    return std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end();
}

bool writes(const training::Op &op, TensorId t)
{
    return std::find(op.outputs.begin(), op.outputs.end(), t) != op.outputs.end();
}

} // namespace

Expected<Plan> streamOffloadPins(Plan plan, const SolveRequest &request)
{
    const training::TrainingGraph &g = *request.graph;
    const std::vector<schedule::Step> &steps = plan.schedule.steps;
    const size_t n = steps.size();
    std::vector<std::vector<schedule::Step>> after(n), before(n);
    std::vector<std::string> streamed;
    for (const Pin &pin : request.pins) {
        if (pin.kind != PinKind::Offload)
            continue;
        const TensorId t = pin.tensor;
        const std::string name = g.tensor(t).name;
        // The forward phase ends at the first backward marker.
        size_t backwardAt = n;
        for (size_t i = 0; i < n; ++i)
            if (steps[i].kind == schedule::StepKind::Phase &&
                steps[i].mark() == schedule::PhaseMark::BackwardBegin) {
                backwardAt = i;
                break;
            }
        long lastForward = -1;
        for (size_t i = 0; i < backwardAt; ++i)
            if (steps[i].kind == schedule::StepKind::Compute &&
                (reads(g.op(steps[i].op()), t) || writes(g.op(steps[i].op()), t)))
                lastForward = long(i);
        if (lastForward < 0)
            return makeError(StatusCode::InvalidArgument,
                             "offload pin on " + name + ": the plan never computes it in forward");
        long nextRead = -1;
        for (size_t i = size_t(lastForward) + 1; i < n && nextRead < 0; ++i) {
            const schedule::Step &s = steps[i];
            if ((s.kind == schedule::StepKind::Free || s.kind == schedule::StepKind::Offload) &&
                s.tensor() == t)
                return makeError(StatusCode::InvalidArgument,
                                 "offload pin on " + name +
                                     ": the plan does not keep it for backward");
            if (s.kind == schedule::StepKind::Compute) {
                if (writes(g.op(s.op()), t))
                    return makeError(StatusCode::InvalidArgument,
                                     "offload pin on " + name + ": the plan recomputes it");
                if (reads(g.op(s.op()), t))
                    nextRead = long(i);
            }
        }
        if (nextRead < 0)
            continue; // nothing reads it after forward: nothing to stream
        // Prefetch early enough for the compute in between to cover the copy.
        const double copySeconds = double(g.tensor(t).bytes) / request.costs->hostToDeviceBandwidth;
        double covered = 0;
        long at = nextRead;
        while (at - 1 > lastForward && covered < copySeconds) {
            --at;
            if (steps[size_t(at)].kind == schedule::StepKind::Compute)
                covered += request.costs->opSeconds[steps[size_t(at)].op().index()];
        }
        after[size_t(lastForward)].push_back({schedule::StepKind::Offload, t.value});
        after[size_t(lastForward)].push_back({schedule::StepKind::Free, t.value});
        before[size_t(at)].push_back({schedule::StepKind::Prefetch, t.value});
        streamed.push_back(name);
    }
    schedule::Schedule out;
    out.steps.reserve(n + 3 * streamed.size());
    for (size_t i = 0; i < n; ++i) {
        for (const schedule::Step &s : before[i])
            out.steps.push_back(s);
        out.steps.push_back(steps[i]);
        for (const schedule::Step &s : after[i])
            out.steps.push_back(s);
    }
    sim::SimOptions o;
    o.recordPoints = false;
    o.validate = true;
    REMAT_ASSIGN_OR_RETURN(sim::Timeline t, sim::simulate(out, g, *request.costs, o));
    plan.schedule = std::move(out);
    plan.timeline = t;
    plan.pins = request.pins;
    if (!streamed.empty()) {
        std::string names;
        for (const std::string &s : streamed)
            names += (names.empty() ? "" : ", ") + s;
        const std::string text = fmt::format(
            "offload pins: {} kept off the device between forward and backward (solved as kept, "
            "then streamed: offloaded after the last forward read, prefetched ahead of the next)",
            names);
        plan.note = plan.note.empty() ? text : text + "; " + plan.note;
    }
    return plan;
}

Plan streamKeptTensors(Plan plan, const SolveRequest &request, double limitSeconds,
                       size_t maxCandidates)
{
    if (!request.pins.empty() || !request.graph || !request.costs)
        return plan;
    const training::TrainingGraph &g = *request.graph;
    const std::vector<schedule::Step> &steps = plan.schedule.steps;
    std::vector<unsigned char> resident(g.tensorCount(), 0);
    for (const schedule::Step &s : steps) {
        if (s.kind == schedule::StepKind::Offload || s.kind == schedule::StepKind::Prefetch)
            return plan; // a plan that already streams: left as it is
        if (s.kind == schedule::StepKind::Phase && s.mark() == schedule::PhaseMark::BackwardBegin)
            break;
        if (s.kind == schedule::StepKind::Compute)
            for (TensorId out : g.op(s.op()).outputs)
                resident[out.index()] = 1;
        else if (s.kind == schedule::StepKind::Free)
            resident[s.tensor().index()] = 0;
    }
    std::vector<TensorId> candidates;
    for (size_t t = 0; t < resident.size(); ++t)
        if (resident[t] && !g.tensors()[t].preloaded && g.tensors()[t].bytes > 0)
            candidates.push_back(TensorId(static_cast<int32_t>(t)));
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](TensorId a, TensorId b) { return g.tensor(a).bytes > g.tensor(b).bytes; });
    if (candidates.size() > maxCandidates) // each try is a simulation of the whole step
        candidates.resize(maxCandidates);
    SolveRequest r = request;
    Plan best = plan;
    int64_t streamedBytes = 0;
    size_t streamed = 0;
    for (TensorId t : candidates) {
        if (request.stop.stopRequested())
            break;
        r.pins.push_back({t, PinKind::Offload});
        Expected<Plan> p = streamOffloadPins(plan, r);
        if (p && p->timeline.peakBytes < best.timeline.peakBytes &&
            stepSeconds(p->timeline) <= limitSeconds * (1 + 1e-9)) {
            best = std::move(*p);
            streamedBytes += g.tensor(t).bytes;
            ++streamed;
        } else {
            r.pins.pop_back();
        }
    }
    if (streamed == 0)
        return plan;
    best.pins = request.pins;
    best.note =
        fmt::format("then {} kept tensors ({}) streamed to the host under compute: peak "
                    "{} -> {}, step {:.4g} -> {:.4g} s",
                    streamed, formatBytes(streamedBytes), formatBytes(plan.timeline.peakBytes),
                    formatBytes(best.timeline.peakBytes), stepSeconds(plan.timeline),
                    stepSeconds(best.timeline)) +
        (plan.note.empty() ? std::string() : "; " + plan.note);
    return best;
}

} // namespace remat::core::solvers
