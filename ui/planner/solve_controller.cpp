#include "ui/planner/solve_controller.h"

#include "core/sim/simulator.h"

#include <QElapsedTimer>

#include <algorithm>
#include <cmath>

namespace remat::ui {

using core::solvers::Plan;

double SolveProgressInfo::gapPercent() const
{
    if (incumbent < 0 || bound < 0 || incumbent == 0)
        return -1;
    return 100.0 * std::abs(incumbent - bound) / std::abs(incumbent);
}

std::vector<int64_t> sweepBudgets(int64_t lowest, int64_t storeAllPeak, int count)
{
    std::vector<int64_t> out;
    if (count < 2 || storeAllPeak <= lowest) {
        out.push_back(storeAllPeak);
        return out;
    }
    for (int i = 0; i < count; ++i)
        out.push_back(lowest + int64_t(double(storeAllPeak - lowest) * i / (count - 1)));
    return out;
}

SolveController::SolveController(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<remat::ui::SolveProgressInfo>();
    qRegisterMetaType<remat::ui::ParetoPoint>();
    qRegisterMetaType<remat::core::solvers::Plan>();
    // Two workers: one long MILP solve must not block the live re-solves of the slider.
    m_pool.setMaxThreadCount(2);
    m_jobs.setSettledHandler([this](quint64 id) { jobSettled(id); });
}

SolveController::~SolveController() { cancelAll(); }

void SolveController::waitForIdle() { m_jobs.waitAndDeliver(); }

namespace {

// Runs the solver and fills the timeline with per-step points for the charts. Worker thread;
// whatever it throws becomes the job's error result (BackgroundJob).
core::Expected<Plan>
runJob(const SolveJob &job, const core::StopToken &stop,
       const std::function<void(const core::solvers::SolveProgress &)> &progress)
{
    if (!job.solver || !job.problem || !job.problem->isValid())
        return core::makeError(core::StatusCode::InvalidArgument, "no model loaded");
    core::solvers::SolveRequest request;
    request.graph = job.problem->training.get();
    request.costs = job.problem->costs.get();
    request.objective = job.objective;
    request.budgetBytes = job.budgetBytes;
    request.maxOverheadPercent = job.maxOverheadPercent;
    request.pins = job.pins;
    request.timeLimitSeconds = job.timeLimitSeconds;
    request.stop = stop;
    request.progress = progress;
    request.settings = job.settings;
    QElapsedTimer clock;
    clock.start();
    core::Expected<Plan> plan = job.solver->solve(request);
    if (!plan)
        return plan;
    if (plan->solveSeconds <= 0)
        plan->solveSeconds = double(clock.nsecsElapsed()) * 1e-9;
    if (plan->solver.empty())
        plan->solver = job.solver->id();
    // The plan records the inputs it was solved for: the planner caches and restores by them.
    plan->objective = job.objective;
    plan->budgetBytes = job.budgetBytes;
    plan->maxOverheadPercent = job.maxOverheadPercent;
    plan->pins = job.pins;
    // Solvers return summary timelines; the charts need one point per step.
    core::Expected<core::sim::Timeline> full =
        core::sim::simulate(plan->schedule, *job.problem->training, *job.problem->costs);
    if (!full)
        return full.status().withContext(job.solver->id() +
                                         " produced a schedule the simulator refuses");
    plan->timeline = std::move(*full);
    return plan;
}

} // namespace

quint64 SolveController::start(SolveJob job) { return launch(std::move(job)); }

quint64 SolveController::startLatest(SolveJob job)
{
    if (m_latestId != 0 && m_jobs.isRunning(m_latestId)) {
        m_jobs.drop(m_latestId);
        m_pendingLatest = std::move(job); // started when the stopped one has wound down
        return 0;
    }
    m_latestId = launch(std::move(job));
    return m_latestId;
}

quint64 SolveController::launch(SolveJob job)
{
    if (!m_jobs.busy())
        emit busyChanged(true);
    const QString solverId = job.solver ? QString::fromStdString(job.solver->id()) : QString();
    const int replaceIndex = job.replaceIndex;
    const quint64 tag = job.tag;
    auto work = [this, job = std::move(job), solverId](JobContext &ctx) -> core::Expected<Plan> {
        auto reportProgress = [&](const core::solvers::SolveProgress &p) {
            SolveProgressInfo info{solverId,
                                   p.fraction,
                                   p.incumbent,
                                   p.bound,
                                   p.elapsedSeconds,
                                   QString::fromStdString(p.message),
                                   job.objective == core::solvers::Objective::MinPeak};
            ctx.postProgress([this, id = ctx.id(), info] { emit progress(id, info); });
        };
        core::Expected<Plan> plan = runJob(job, ctx.stop(), reportProgress);
        if (!plan && ctx.stop().stopRequested() &&
            plan.status().code() != core::StatusCode::Cancelled)
            return core::makeError(core::StatusCode::Cancelled, plan.status().message());
        return plan;
    };
    return m_jobs.start(std::move(work), [this, solverId, replaceIndex,
                                          tag](quint64 id, core::Expected<Plan> result) {
        if (result)
            emit solved(id, *result, replaceIndex, tag);
        else
            emit failed(id, solverId, QString::fromStdString(result.status().message()),
                        result.status().code() == core::StatusCode::Cancelled, tag);
    });
}

quint64 SolveController::startSweep(SweepJob job)
{
    if (!m_jobs.busy())
        emit busyChanged(true);
    auto work = [this, job = std::move(job)](JobContext &ctx) -> core::Expected<Plan> {
        const core::StopToken &token = ctx.stop();
        for (const auto &solver : job.solvers) {
            for (int64_t budget : job.budgets) {
                if (token.stopRequested())
                    break;
                core::solvers::SolveRequest request;
                request.graph = job.problem->training.get();
                request.costs = job.problem->costs.get();
                request.objective = core::solvers::Objective::MinTime;
                request.budgetBytes = budget;
                request.pins = job.pins;
                request.timeLimitSeconds = job.timeLimitSeconds;
                request.stop = token;
                core::Expected<Plan> plan = solver->solve(request); // guarded: never throws
                ParetoPoint point;
                point.solver = QString::fromStdString(solver->id());
                point.budgetBytes = budget;
                if (plan && plan->status != core::solvers::SolveStatus::Infeasible &&
                    plan->status != core::solvers::SolveStatus::Cancelled) {
                    point.peakBytes = plan->timeline.peakBytes;
                    point.overheadPercent = core::solvers::timeOverheadPercent(*plan);
                    point.feasible = plan->timeline.peakBytes <= budget;
                }
                ctx.post([this, id = ctx.id(), point] { emit sweepPoint(id, point); });
            }
        }
        Plan done;
        done.status = token.stopRequested() ? core::solvers::SolveStatus::Cancelled
                                            : core::solvers::SolveStatus::Optimal;
        return done;
    };
    // A sweep that threw stopped short of its budgets: reported as cancelled, not done.
    return m_jobs.start(std::move(work), [this](quint64 id, core::Expected<Plan> result) {
        emit sweepFinished(id, !result.hasValue() ||
                                   result->status == core::solvers::SolveStatus::Cancelled);
    });
}

void SolveController::jobSettled(quint64 id)
{
    if (id == m_latestId) {
        m_latestId = 0;
        if (m_pendingLatest) {
            SolveJob next = std::move(*m_pendingLatest);
            m_pendingLatest.reset();
            m_latestId = launch(std::move(next));
        }
    }
    if (!m_jobs.busy() && !m_pendingLatest)
        emit busyChanged(false);
}

void SolveController::cancel(quint64 id)
{
    m_jobs.stop(id);
    if (id == m_latestId)
        m_pendingLatest.reset();
}

void SolveController::cancelAll()
{
    m_pendingLatest.reset();
    m_jobs.stopAll();
}

} // namespace remat::ui
