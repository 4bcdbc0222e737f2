#include "core/pipeline/fit.h"

#include <algorithm>
#include <chrono>
#include <cmath>

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

Expected<solvers::Plan> Fitter::planAt(const solvers::Solver *s, int64_t batch,
                                       double timeLimitSeconds)
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
    r.timeLimitSeconds = timeLimitSeconds > 0
                             ? std::min(timeLimitSeconds, m_settings.timeLimitSeconds)
                             : m_settings.timeLimitSeconds;
    r.stop = m_stop;
    Expected<solvers::Plan> plan = s->solve(r);
    if (m_stop.stopRequested())
        return cancelled();
    return plan;
}

bool Fitter::fits(const solvers::Plan &p) const
{
    const bool answered = p.status == solvers::SolveStatus::Optimal ||
                          p.status == solvers::SolveStatus::Feasible ||
                          p.status == solvers::SolveStatus::TimedOut;
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
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    const double budget = m_settings.searchSeconds;
    std::map<int64_t, solvers::Plan> fitting;
    std::map<int64_t, int64_t> peaks; // every batch tried -> its plan's simulated peak
    auto tryBatch = [&](int64_t b) -> Expected<bool> {
        if (m_stop.stopRequested())
            return cancelled();
        if (m_progress)
            m_progress(id, b, row.tries);
        ++row.tries;
        // A third of what is left of the search: a search takes 3 to 5 batches, and a solver
        // that would spend it all on batch 1 (a local search at 8B) still answers at several.
        const double left = budget > 0 ? std::max(0.05, (budget - elapsed()) / 3) : -1;
        REMAT_ASSIGN_OR_RETURN(solvers::Plan plan, planAt(s, b, left));
        if (plan.status == solvers::SolveStatus::TimedOut)
            ++row.solvesTimedOut;
        if (b == 1)
            row.smallestPeak = plan.timeline.peakBytes;
        const bool ok = fits(plan);
        row.trials.push_back({b, plan.timeline.peakBytes, ok});
        peaks[b] = plan.timeline.peakBytes;
        if (ok)
            fitting.insert_or_assign(b, std::move(plan));
        return ok;
    };
    // Where the line through two tried batches' peaks crosses the memory (0: it does not rise).
    auto crossing = [&](int64_t b0, int64_t b1) -> double {
        const double p0 = double(peaks.at(b0)), p1 = double(peaks.at(b1));
        if (p1 <= p0)
            return 0;
        return double(b0) + (double(m_settings.memoryBytes) - p0) * double(b1 - b0) / (p1 - p0);
    };
    auto run = [&]() -> Status {
        REMAT_ASSIGN_OR_RETURN(bool one, tryBatch(1));
        if (!one)
            return Status::ok();
        int64_t good = 1, bad = 0, previousGood = 0;
        // Bracketed: false position on peak - memory between the largest fit and the smallest
        // miss, the Illinois way (an end kept twice in a row has its excess halved, so a bent
        // peak curve does not stall the guesses on one side); three steps in a row that do not
        // halve the bracket are followed by a bisection.
        double overGood = 0, overBad = 0; // peak - memory at good and bad (weighted)
        int lastMoved = 0;                // +1: good moved last, -1: bad, 0: none yet
        int slowSteps = 0;
        // A min-time plan fills the memory it is given, so its peak says nothing about where
        // the batch stops fitting: those searches double and bisect.
        const bool peakFollowsBatch = !s || !s->capabilities().minTime;
        while (bad == 0 ? good < m_settings.maxBatch : bad > good + 1) {
            if (budget > 0 && elapsed() >= budget) {
                row.searchStopped = true;
                break;
            }
            int64_t next = 0;
            const int64_t width = bad - good;
            if (bad == 0) {
                // Unbounded: the line through the two largest batches that fit says where the
                // memory runs out; one past it, so that a right guess brackets the answer.
                if (peakFollowsBatch && previousGood > 0)
                    if (const double x = crossing(previousGood, good); x > double(good))
                        next = int64_t(std::min(std::floor(x), double(m_settings.maxBatch))) + 1;
                if (next <= good)
                    next = good * 2;
                next = std::min(next, m_settings.maxBatch);
            } else if (!peakFollowsBatch || slowSteps >= 3 || overBad <= overGood) {
                next = good + width / 2;
                slowSteps = 0;
            } else {
                const double x = double(good) - overGood * double(width) / (overBad - overGood);
                next = std::clamp<int64_t>(int64_t(std::floor(x)), good + 1, bad - 1);
            }
            REMAT_ASSIGN_OR_RETURN(bool ok, tryBatch(next));
            const double over = double(peaks.at(next)) - double(m_settings.memoryBytes);
            if (ok) {
                previousGood = good;
                good = next;
                overGood = over;
                if (lastMoved == 1)
                    overBad /= 2;
                lastMoved = 1;
            } else {
                const bool first = bad == 0;
                bad = next;
                overBad = over;
                if (lastMoved == -1)
                    overGood /= 2;
                lastMoved = first ? 0 : -1;
                if (first)
                    overGood = double(peaks.at(good)) - double(m_settings.memoryBytes);
            }
            if (width > 0 && bad > 0)
                slowSteps = 2 * (bad - good) > width ? slowSteps + 1 : 0;
        }
        row.batch = good;
        row.firstMiss = bad;
        row.plan = std::move(fitting.at(good));
        REMAT_ASSIGN_OR_RETURN(row.problem, problemAt(good));
        return Status::ok();
    };
    if (Status st = run(); !st.isOk()) {
        row.error = st.toString();
        row.cancelled = st.code() == StatusCode::Cancelled;
        row.outOfTime = st.code() == StatusCode::DeadlineExceeded;
    }
    row.seconds = elapsed();
    return row;
}

} // namespace remat::core::pipeline
