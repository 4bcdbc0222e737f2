#include "ui/planner/solve_controller.h"

#include "core/sim/simulator.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>

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
}

SolveController::~SolveController()
{
    cancelAll();
    m_pool.waitForDone();
}

void SolveController::waitForIdle()
{
    m_pool.waitForDone();
    QCoreApplication::sendPostedEvents(this);
}

namespace {

core::Expected<Plan> runJobUnguarded(const SolveJob &job, const core::StopToken &stop,
                                     const std::function<void(const core::solvers::SolveProgress &)> &progress);

// Runs the solver and fills the timeline with per-step points for the charts. Worker thread.
// Solver::solve already turns a solver's exceptions into a Status; this catch covers the
// simulation of the full timeline too, so a worker always reports back (no exception may cross
// the event loop, and a job that never reports leaves the planner waiting).
core::Expected<Plan> runJob(const SolveJob &job, const core::StopToken &stop,
                            const std::function<void(const core::solvers::SolveProgress &)> &progress)
{
    try {
        return runJobUnguarded(job, stop, progress);
    } catch (const std::bad_alloc &) {
        return core::makeError(core::StatusCode::ResourceExhausted, "out of host memory while solving");
    } catch (const std::exception &e) {
        return core::makeError(core::StatusCode::Internal, std::string("solve failed: ") + e.what());
    } catch (...) {
        return core::makeError(core::StatusCode::Internal, "solve failed with an unknown exception");
    }
}

core::Expected<Plan> runJobUnguarded(const SolveJob &job, const core::StopToken &stop,
                                     const std::function<void(const core::solvers::SolveProgress &)> &progress)
{
    if (!job.solver || !job.problem || !job.problem->isValid())
        return core::makeError(core::StatusCode::InvalidArgument, "no model loaded");
    core::solvers::SolveRequest request;
    request.graph = job.problem->training.get();
    request.costs = job.problem->costs.get();
    request.objective = job.objective;
    request.budgetBytes = job.budgetBytes;
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
    plan->pins = job.pins;
    // Solvers return summary timelines; the charts need one point per step.
    core::Expected<core::sim::Timeline> full =
        core::sim::simulate(plan->schedule, *job.problem->training, *job.problem->costs);
    if (!full)
        return full.status().withContext(job.solver->id() + " produced a schedule the simulator refuses");
    plan->timeline = std::move(*full);
    return plan;
}

} // namespace

quint64 SolveController::start(SolveJob job) { return launch(std::move(job), false); }

quint64 SolveController::startLatest(SolveJob job)
{
    if (m_latestId != 0 && m_running.contains(m_latestId)) {
        auto &r = m_running[m_latestId];
        r->dropResult = true;
        r->stop.requestStop();
        m_pendingLatest = std::move(job); // started when the stopped one has wound down
        return 0;
    }
    m_latestId = launch(std::move(job), true);
    return m_latestId;
}

quint64 SolveController::launch(SolveJob job, bool latest)
{
    const quint64 id = m_nextId++;
    auto running = std::make_shared<Running>();
    running->latest = latest;
    m_running.insert(id, running);
    if (m_running.size() == 1)
        emit busyChanged(true);
    const core::StopToken token = running->stop.token();
    const QString solverId = job.solver ? QString::fromStdString(job.solver->id()) : QString();
    (void)QtConcurrent::run(&m_pool, [this, id, job = std::move(job), token, solverId]() {
        QElapsedTimer throttle;
        throttle.start();
        qint64 lastMs = -1000;
        auto reportProgress = [&](const core::solvers::SolveProgress &p) {
            // At most ~10 progress events a second reach the GUI thread.
            const qint64 now = throttle.elapsed();
            if (now - lastMs < 100)
                return;
            lastMs = now;
            SolveProgressInfo info{solverId, p.fraction, p.incumbent, p.bound, p.elapsedSeconds,
                                   QString::fromStdString(p.message)};
            QMetaObject::invokeMethod(this, [this, id, info] { emit this->progress(id, info); },
                                      Qt::QueuedConnection);
        };
        core::Expected<Plan> result = runJob(job, token, reportProgress);
        const int replaceIndex = job.replaceIndex;
        const quint64 tag = job.tag;
        QMetaObject::invokeMethod(
            this,
            [this, id, solverId, replaceIndex, tag, result = std::move(result), cancelled = token.stopRequested()] {
                auto it = m_running.find(id);
                const bool drop = it != m_running.end() && (*it)->dropResult;
                if (!drop) {
                    if (result)
                        emit solved(id, *result, replaceIndex, tag);
                    else
                        emit failed(id, solverId, QString::fromStdString(result.status().message()),
                                    cancelled || result.status().code() == core::StatusCode::Cancelled, tag);
                }
                jobDone(id);
            },
            Qt::QueuedConnection);
    });
    return id;
}

quint64 SolveController::startSweep(SweepJob job)
{
    const quint64 id = m_nextId++;
    auto running = std::make_shared<Running>();
    m_running.insert(id, running);
    if (m_running.size() == 1)
        emit busyChanged(true);
    const core::StopToken token = running->stop.token();
    (void)QtConcurrent::run(&m_pool, [this, id, job = std::move(job), token]() {
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
                if (plan && plan->status != core::solvers::SolveStatus::Infeasible
                    && plan->status != core::solvers::SolveStatus::Cancelled) {
                    point.peakBytes = plan->timeline.peakBytes;
                    point.overheadPercent = plan->timeline.tdiPercent();
                    point.feasible = plan->timeline.peakBytes <= budget;
                }
                QMetaObject::invokeMethod(this, [this, id, point] { emit sweepPoint(id, point); },
                                          Qt::QueuedConnection);
            }
        }
        QMetaObject::invokeMethod(
            this,
            [this, id, cancelled = token.stopRequested()] {
                emit sweepFinished(id, cancelled);
                jobDone(id);
            },
            Qt::QueuedConnection);
    });
    return id;
}

void SolveController::jobDone(quint64 id)
{
    m_running.remove(id);
    if (id == m_latestId) {
        m_latestId = 0;
        if (m_pendingLatest) {
            SolveJob next = std::move(*m_pendingLatest);
            m_pendingLatest.reset();
            m_latestId = launch(std::move(next), true);
        }
    }
    if (m_running.isEmpty() && !m_pendingLatest)
        emit busyChanged(false);
}

void SolveController::cancel(quint64 id)
{
    auto it = m_running.find(id);
    if (it != m_running.end())
        (*it)->stop.requestStop();
    if (id == m_latestId)
        m_pendingLatest.reset();
}

void SolveController::cancelAll()
{
    m_pendingLatest.reset();
    for (auto &r : m_running)
        r->stop.requestStop();
}

} // namespace remat::ui
