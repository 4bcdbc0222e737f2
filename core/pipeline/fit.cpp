#include "core/pipeline/fit.h"

#include <algorithm>
#include <chrono>

namespace remat::core::pipeline {

namespace {

constexpr DevicePreset kPresets[] = {
    {"16gb", 16, "V100 16GB, T4, RTX 4080"},
    {"24gb", 24, "RTX 3090 / 4090, A10, L4"},
    {"40gb", 40, "A100 40GB"},
    {"48gb", 48, "A6000, L40S"},
    {"80gb", 80, "A100 80GB, H100"},
    {"141gb", 141, "H200"},
};

Status cancelled() { return makeError(StatusCode::Cancelled, "fit search cancelled"); }

} // namespace

std::span<const DevicePreset> devicePresets() { return kPresets; }

Fitter::Fitter(std::string modelPath, LoadOptions options, FitSettings settings, StopToken stop,
               Progress progress)
    : m_modelPath(std::move(modelPath)), m_options(std::move(options)), m_settings(settings),
      m_stop(std::move(stop)), m_progress(std::move(progress))
{
    m_options.import.stop = {};
    m_options.import.progress = {};
}

Expected<std::shared_ptr<const Problem>> Fitter::problemAt(int64_t batch)
{
    if (auto it = m_cache.find(batch); it != m_cache.end())
        return it->second;
    LoadOptions o = m_options;
    o.import.batch = batch;
    Expected<std::shared_ptr<const Problem>> p = loadProblem(m_modelPath, o, m_stop);
    if (!p) {
        if (m_stop.stopRequested())
            return cancelled();
        return p.status().withContext("at batch " + std::to_string(batch));
    }
    if (!(*p)->training)
        return (*p)->trainingStatus.withContext("at batch " + std::to_string(batch));
    m_cache.emplace(batch, *p);
    return *p;
}

Expected<solvers::Plan> Fitter::planAt(const solvers::Solver *s, int64_t batch)
{
    REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const Problem> p, problemAt(batch));
    if (!s)
        return p->storeAll;
    solvers::SolveRequest r;
    r.graph = p->training.get();
    r.costs = p->costs.get();
    const bool minTime = s->capabilities().minTime;
    r.objective = minTime ? solvers::Objective::MinTime : solvers::Objective::MinPeak;
    r.budgetBytes = m_settings.memoryBytes;
    if (!minTime)
        r.maxOverheadPercent = m_settings.maxOverheadPercent;
    r.timeLimitSeconds = m_settings.timeLimitSeconds;
    r.stop = m_stop;
    Expected<solvers::Plan> plan = s->solve(r);
    if (m_stop.stopRequested())
        return cancelled();
    return plan;
}

bool Fitter::fits(const solvers::Plan &p) const
{
    const bool answered =
        p.status == solvers::SolveStatus::Optimal || p.status == solvers::SolveStatus::Feasible;
    const bool fast =
        m_settings.maxOverheadPercent < 0 ||
        solvers::timeOverheadPercent(p) <= m_settings.maxOverheadPercent * (1 + 1e-9) + 1e-9;
    return answered && fast && p.timeline.peakBytes <= m_settings.memoryBytes;
}

FitResult Fitter::fit(const std::string &id, const solvers::Solver *s)
{
    FitResult row;
    row.solver = id;
    const auto begin = std::chrono::steady_clock::now();
    std::map<int64_t, solvers::Plan> fitting;
    auto tryBatch = [&](int64_t b) -> Expected<bool> {
        if (m_stop.stopRequested())
            return cancelled();
        if (m_progress)
            m_progress(id, b, row.tries);
        ++row.tries;
        REMAT_ASSIGN_OR_RETURN(solvers::Plan plan, planAt(s, b));
        if (b == 1)
            row.smallestPeak = plan.timeline.peakBytes;
        const bool ok = fits(plan);
        row.trials.push_back({b, plan.timeline.peakBytes, ok});
        if (ok)
            fitting.insert_or_assign(b, std::move(plan));
        return ok;
    };
    auto run = [&]() -> Status {
        REMAT_ASSIGN_OR_RETURN(bool one, tryBatch(1));
        if (!one)
            return Status::ok();
        int64_t good = 1, bad = 0;
        while (bad == 0 && good < m_settings.maxBatch) {
            const int64_t next = std::min(good * 2, m_settings.maxBatch);
            REMAT_ASSIGN_OR_RETURN(bool ok, tryBatch(next));
            (ok ? good : bad) = next;
        }
        while (bad > good + 1) {
            const int64_t mid = good + (bad - good) / 2;
            REMAT_ASSIGN_OR_RETURN(bool ok, tryBatch(mid));
            (ok ? good : bad) = mid;
        }
        row.batch = good;
        row.plan = std::move(fitting.at(good));
        REMAT_ASSIGN_OR_RETURN(row.problem, problemAt(good));
        return Status::ok();
    };
    if (Status st = run(); !st.isOk()) {
        row.error = st.toString();
        row.cancelled = st.code() == StatusCode::Cancelled;
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return row;
}

} // namespace remat::core::pipeline
