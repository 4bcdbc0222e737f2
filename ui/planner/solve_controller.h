#pragma once
// Runs solves and budget sweeps off the GUI thread on a BackgroundJob: each job gets a copy of its
// inputs and its own stop token; results, progress and errors (a throwing solver's too) come back
// as queued signals carrying value types.
//   SolveController c;  connect(&c, &SolveController::solved, ...);
//   quint64 id = c.start(job);       c.cancel(id);
//   c.startLatest(job);              // live re-solve: an older live job is stopped, latest wins
//   c.startSweep(sweep);             // Pareto: every solver over a list of budgets

#include "core/solvers/solver.h"
#include "ui/background_job.h"
#include "ui/planner/planner_problem.h"

#include <QMetaType>
#include <QObject>
#include <QString>
#include <QThreadPool>

#include <memory>
#include <optional>
#include <vector>

namespace remat::ui {

struct SolveJob
{
    std::shared_ptr<const core::solvers::Solver> solver;
    std::shared_ptr<const PlannerProblem> problem;
    core::solvers::Objective objective = core::solvers::Objective::MinTime;
    int64_t budgetBytes = 0;
    double maxOverheadPercent = -1; ///< min-peak within this % of store-all's step (-1: none)
    std::vector<core::solvers::Pin> pins;
    double timeLimitSeconds = 60;
    std::map<std::string, std::string> settings;
    int replaceIndex = -1; ///< the plan row the result replaces; -1 appends a row
    quint64 tag = 0;       ///< the caller's own marker, handed back with the result
};

/// Live progress of one job, marshalled to the GUI thread.
struct SolveProgressInfo
{
    QString solver;
    double fraction = -1, incumbent = -1, bound = -1, elapsedSeconds = 0;
    QString message;
    /// The objective's unit: bytes (min-peak: incumbent and bound are peaks) or seconds
    /// (min-time: recompute seconds).
    bool objectiveInBytes = false;
    /// Relative MILP gap in percent, or -1 when there is no incumbent or bound.
    double gapPercent() const;
};

/// One point of the budget-versus-overhead chart.
struct ParetoPoint
{
    QString solver;
    int64_t budgetBytes = 0;
    int64_t peakBytes = 0;
    double overheadPercent = 0; ///< the simulated step over store-all's, in percent
    bool feasible = false;
};

struct SweepJob
{
    std::vector<std::shared_ptr<const core::solvers::Solver>> solvers;
    std::shared_ptr<const PlannerProblem> problem;
    std::vector<int64_t> budgets;
    std::vector<core::solvers::Pin> pins;
    double timeLimitSeconds = 10; ///< per solve
};

/// Evenly spaced budgets from a floor to the store-all peak (both included).
std::vector<int64_t> sweepBudgets(int64_t lowest, int64_t storeAllPeak, int count);

class SolveController : public QObject
{
    Q_OBJECT
public:
    explicit SolveController(QObject *parent = nullptr);
    ~SolveController() override; ///< stops every job and waits for the workers

    quint64 start(SolveJob job);
    /// Starts a live job: a running live job is stopped and its result dropped; while it winds
    /// down only the newest request waits (so a dragged slider never queues stale solves).
    quint64 startLatest(SolveJob job);
    quint64 startSweep(SweepJob job);
    void cancel(quint64 id);
    void cancelAll();
    bool isBusy() const { return m_jobs.busy() || m_pendingLatest.has_value(); }
    int runningCount() const { return m_jobs.running(); }
    /// Blocks until every job has finished (tests, shutdown).
    void waitForIdle();

signals:
    void progress(quint64 id, const remat::ui::SolveProgressInfo &info);
    void solved(quint64 id, const remat::core::solvers::Plan &plan, int replaceIndex, quint64 tag);
    void failed(quint64 id, const QString &solver, const QString &message, bool cancelled,
                quint64 tag);
    void sweepPoint(quint64 id, const remat::ui::ParetoPoint &point);
    void sweepFinished(quint64 id, bool cancelled);
    void busyChanged(bool busy);

private:
    quint64 launch(SolveJob job);
    void jobSettled(quint64 id);

    QThreadPool m_pool; ///< before m_jobs: the jobs are waited for before the pool goes
    /// Solves and sweeps (a sweep's points arrive as it goes; its result is an empty plan).
    BackgroundJob<core::solvers::Plan> m_jobs{"solving", &m_pool};
    std::optional<SolveJob> m_pendingLatest;
    quint64 m_latestId = 0;
};

} // namespace remat::ui

Q_DECLARE_METATYPE(remat::ui::SolveProgressInfo)
Q_DECLARE_METATYPE(remat::ui::ParetoPoint)
