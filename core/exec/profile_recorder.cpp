#include "core/exec/profile_recorder.h"

#include "core/cost/calibrated.h"
#include "core/exec/executor.h"
#include "core/schedule/store_all.h"

#include <algorithm>
#include <unordered_map>

namespace remat::core::exec {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ProfileRecorder::ProfileRecorder(const training::TrainingGraph &graph)
    : m_graph(graph), m_first(graph.opCount()), m_recompute(graph.opCount())
{
}

void ProfileRecorder::onStepEnd(const schedule::StepEvent &e)
{
    if (e.step.kind != schedule::StepKind::Compute || e.step.op().index() >= m_graph.opCount())
        return;
    m_current.push_back({e.step.op(), e.endSeconds - e.startSeconds, e.recompute});
}

void ProfileRecorder::commitIteration(double stepSeconds)
{
    double inOps = 0;
    for (const Pending &p : m_current) {
        (p.recompute ? m_recompute : m_first)[p.op.index()].push_back(p.seconds);
        inOps += p.seconds;
    }
    m_current.clear();
    m_stepSeconds.push_back(stepSeconds);
    m_overheadSeconds.push_back(std::max(0.0, stepSeconds - inOps));
    m_computeSeconds.push_back(inOps);
}

void ProfileRecorder::discardIteration()
{
    m_current.clear();
    ++m_discarded;
}

double ProfileRecorder::medianStepSeconds() const { return median(m_stepSeconds); }

cost::Profile ProfileRecorder::profile(const ProfileContext &context) const
{
    cost::Profile p;
    const training::TrainingGraphInfo &info = m_graph.info();
    p.modelPath = info.modelPath;
    p.modelSha256 = info.modelSha256;
    p.batch = info.batch;
    p.backend = context.backend;
    p.device = context.device;
    p.schedule = context.schedule;
    p.iterations = timedIterations();
    p.warmupIterations = m_discarded;
    p.stepSeconds = median(m_stepSeconds);
    p.overheadSeconds = median(m_overheadSeconds);
    p.computeSeconds = median(m_computeSeconds);
    for (const training::Op &op : m_graph.ops()) {
        const std::vector<double> &first = m_first[op.id.index()];
        const std::vector<double> &again = m_recompute[op.id.index()];
        if (first.empty() && again.empty())
            continue;
        const cost::OpShape shape = cost::opShape(m_graph, op);
        cost::ProfiledOp o;
        o.name = op.name;
        o.type = shape.type;
        o.phase = shape.phase;
        o.family = shape.family;
        o.flops = shape.flops;
        o.bytes = shape.bytes;
        // An op timed only as a recompute (a plan that drops a first compute cannot exist, but a
        // profile should not depend on it) takes its recompute time.
        o.seconds = median(first.empty() ? again : first);
        o.samples = int(first.size());
        o.recomputeSeconds = median(again);
        o.recomputeSamples = int(again.size());
        p.ops.push_back(std::move(o));
    }
    return p;
}

Expected<cost::Profile> profileStoreAll(Backend &backend, const training::TrainingGraph &graph,
                                        const ir::Graph &forward, const ExecInputs &inputs,
                                        int iterations, const ProfileContext &context,
                                        const StopToken &stop)
{
    Executor executor(backend, graph, forward);
    REMAT_RETURN_IF_ERROR(executor.prepare(inputs));
    const schedule::Schedule s = schedule::storeAllSchedule(graph);
    ProfileRecorder recorder(graph);
    for (int i = 0; i <= std::max(1, iterations); ++i) {
        if (stop.stopRequested())
            return makeError(StatusCode::Cancelled, "profiling cancelled");
        ExecOptions o;
        o.observer = &recorder;
        o.stop = stop;
        o.downloadGradients = false;
        auto r = executor.run(s, o);
        if (!r)
            return r.status();
        if (i == 0)
            recorder.discardIteration(); // warm-up: caches and the allocator
        else
            recorder.commitIteration(r->stepSeconds);
    }
    return recorder.profile(context);
}

int64_t secondProfileBatch(int64_t batch) { return batch > 1 ? batch / 2 : 2; }

int addSecondPoint(cost::Profile &profile, const cost::Profile &other)
{
    std::unordered_map<std::string, const cost::ProfiledOp *> byName;
    for (const cost::ProfiledOp &op : other.ops)
        byName.emplace(op.name, &op);
    int added = 0;
    for (cost::ProfiledOp &op : profile.ops) {
        auto it = byName.find(op.name);
        if (it == byName.end() || !(it->second->seconds > 0) || it->second->flops < 0 ||
            it->second->bytes < 0)
            continue;
        op.secondFlops = it->second->flops;
        op.secondBytes = it->second->bytes;
        op.secondSeconds = it->second->seconds;
        ++added;
    }
    profile.secondBatch = added > 0 ? other.batch : 0;
    return added;
}

} // namespace remat::core::exec
