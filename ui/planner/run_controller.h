#pragma once
// Runs a plan's schedule on a backend (CPU, or a CUDA device the app registers) on a worker thread:
// a store-all reference step first, then the plan for N iterations. The executor's observer only
// appends samples to a mutex-guarded buffer; the GUI drains it on a timer (takeSamples()).
//   RunController run;  run.setBackends(backendChoices);
//   run.start({problem, plan.schedule, storeAllSchedule, "cpu", 3});
//   connect(&run, &RunController::finished, ...);   run.stop();

#include "core/exec/backend.h"
#include "core/exec/npz.h"
#include "core/schedule/schedule.h"
#include "ui/background_job.h"
#include "ui/planner/planner_problem.h"

#include <QMetaType>
#include <QMutex>
#include <QObject>

#include <functional>
#include <memory>
#include <vector>

namespace remat::ui {

/// A backend the run panel offers. The app adds CUDA devices; the ui library never links CUDA.
struct BackendChoice
{
    QString id;    ///< "cpu", "cuda:0"
    QString label; ///< "CPU reference", "NVIDIA H100 (cuda:0, 79.1 GiB free)"
    std::function<core::Expected<std::unique_ptr<core::exec::Backend>>()> create;
};

struct RunRequest
{
    std::shared_ptr<const PlannerProblem> problem;
    core::schedule::Schedule schedule;  ///< the plan's
    core::schedule::Schedule reference; ///< store-all, for the gradient check
    QString backend = QStringLiteral("cpu");
    int iterations = 1;
    core::exec::NpzArchive feed; ///< optional inputs (a corpus .npz)
};

/// One executed step, as the observer saw it.
struct RunSample
{
    int iteration = 0;
    int step = 0;
    int64_t bytesInUse = 0;
    int64_t peakDuringStep = 0;
    double seconds = 0; ///< the step's duration
};

struct RunSummary
{
    bool ok = false;
    bool cancelled = false;
    QString error;       ///< when !ok: the backend's message (OOM names its step)
    int failedStep = -1; ///< the step an error happened at, -1 if unknown
    int iterations = 0;  ///< completed
    int64_t measuredPeakBytes = 0;
    double stepSeconds = 0; ///< mean over completed iterations
    bool gradientsChecked = false;
    double maxRelativeError = 0;
    QString worstEntry;
    bool gradientsMatch = false;
};

class RunController : public QObject
{
    Q_OBJECT
public:
    /// A plan's gradients must equal store-all's within this relative error.
    static constexpr double kGradientTolerance = 1e-4;

    explicit RunController(QObject *parent = nullptr);
    ~RunController() override;

    void setBackends(std::vector<BackendChoice> backends);
    const std::vector<BackendChoice> &backends() const { return m_backends; }
    /// Devices found only when first asked for (listing CUDA devices opens the CUDA module): the
    /// first discoverBackends() call runs `discover` once and appends its choices.
    void setBackendDiscovery(std::function<std::vector<BackendChoice>()> discover);
    /// Runs the pending discovery; true when it added choices.
    bool discoverBackends();

    bool start(RunRequest request);
    void stop();
    bool isRunning() const { return m_job.busy(); }
    /// Moves the samples recorded since the last call out of the buffer (GUI thread).
    std::vector<RunSample> takeSamples();
    /// Blocks until the worker has returned (its summary stays queued for the event loop).
    void waitForDone() { m_job.waitForWorkers(); }

signals:
    void started();
    void iterationDone(int iteration);
    void finished(const remat::ui::RunSummary &summary);

private:
    RunSummary runOnWorker(const RunRequest &request, const BackendChoice &backend,
                           JobContext &ctx);

    std::vector<BackendChoice> m_backends;
    std::function<std::vector<BackendChoice>()> m_discover;
    QMutex m_mutex;
    std::vector<RunSample> m_buffer;
    BackgroundJob<RunSummary> m_job{
        "running the plan"}; ///< last: waited for before the buffer goes
};

} // namespace remat::ui

Q_DECLARE_METATYPE(remat::ui::RunSummary)
