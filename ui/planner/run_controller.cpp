#include "ui/planner/run_controller.h"

#include "core/exec/executor.h"

#include <QMutexLocker>
#include <QRegularExpression>

namespace remat::ui {

namespace {

// Appends every finished step to the controller's buffer; runs on the worker thread, no Qt calls
// beyond the mutex.
class BufferObserver : public core::schedule::ScheduleObserver
{
public:
    BufferObserver(QMutex *mutex, std::vector<RunSample> *buffer) : m_mutex(mutex), m_buffer(buffer)
    {
    }
    void setIteration(int i) { m_iteration = i; }
    int lastStep() const { return m_lastStep; }
    void onStepBegin(core::StepIndex index, const core::schedule::Step &) override
    {
        m_lastStep = index.value;
    }
    void onStepEnd(const core::schedule::StepEvent &e) override
    {
        RunSample s{m_iteration, e.index.value, e.bytesInUse, e.peakDuringStep,
                    e.endSeconds - e.startSeconds};
        QMutexLocker lock(m_mutex);
        m_buffer->push_back(s);
    }

private:
    QMutex *m_mutex;
    std::vector<RunSample> *m_buffer;
    int m_iteration = 0;
    int m_lastStep = -1;
};

int stepFromMessage(const std::string &message)
{
    static const QRegularExpression re(QStringLiteral("step (\\d+)"));
    const auto m = re.match(QString::fromStdString(message));
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

} // namespace

RunController::RunController(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<remat::ui::RunSummary>();
    m_job.ownPool()->setMaxThreadCount(1);
}

RunController::~RunController() { stop(); }

void RunController::setBackends(std::vector<BackendChoice> backends)
{
    m_backends = std::move(backends);
}

void RunController::setBackendDiscovery(std::function<std::vector<BackendChoice>()> discover)
{
    m_discover = std::move(discover);
}

bool RunController::discoverBackends()
{
    if (!m_discover)
        return false;
    const std::vector<BackendChoice> found = std::exchange(m_discover, nullptr)();
    m_backends.insert(m_backends.end(), found.begin(), found.end());
    return !found.empty();
}

void RunController::stop() { m_job.stopAll(); }

std::vector<RunSample> RunController::takeSamples()
{
    QMutexLocker lock(&m_mutex);
    std::vector<RunSample> out;
    out.swap(m_buffer);
    return out;
}

bool RunController::start(RunRequest request)
{
    if (isRunning() || !request.problem || !request.problem->forward || !request.problem->training)
        return false;
    auto find = [&]() -> const BackendChoice * {
        for (const auto &b : m_backends)
            if (b.id == request.backend)
                return &b;
        return nullptr;
    };
    const BackendChoice *choice = find();
    if (!choice && discoverBackends())
        choice = find();
    if (!choice)
        return false;
    {
        QMutexLocker lock(&m_mutex);
        m_buffer.clear();
    }
    emit started();
    m_job.start([this, request = std::move(request), backend = *choice](JobContext &ctx)
                    -> core::Expected<RunSummary> { return runOnWorker(request, backend, ctx); },
                [this](quint64, core::Expected<RunSummary> summary) {
                    if (summary) {
                        emit finished(*summary);
                        return;
                    }
                    RunSummary failed; // the work threw (out of host memory, ...)
                    failed.error = QString::fromStdString(summary.status().toString());
                    emit finished(failed);
                });
    return true;
}

RunSummary RunController::runOnWorker(const RunRequest &request, const BackendChoice &choice,
                                      JobContext &ctx)
{
    RunSummary summary;
    BufferObserver observer(&m_mutex, &m_buffer);
    const core::StopToken &stop = ctx.stop();
    auto fail = [&](const core::Status &status, int step) {
        summary.ok = false;
        summary.cancelled = status.code() == core::StatusCode::Cancelled || stop.stopRequested();
        summary.error = QString::fromStdString(status.toString());
        summary.failedStep = step >= 0 ? step : stepFromMessage(status.message());
        return summary;
    };
    auto backend = choice.create();
    if (!backend)
        return fail(backend.status(), -1);
    const auto &tg = *request.problem->training;
    core::exec::Executor executor(**backend, tg, *request.problem->forward);
    core::exec::ExecInputs inputs;
    inputs.feed = request.feed;
    if (core::Status s = executor.prepare(inputs); !s.isOk())
        return fail(s, -1);
    // The store-all step gives the reference gradients the plan must reproduce.
    core::exec::ExecOptions refOptions;
    refOptions.stop = stop;
    auto reference = executor.run(request.reference, refOptions);
    if (!reference)
        return fail(reference.status().withContext("store-all reference step"), -1);
    double total = 0;
    core::exec::NpzArchive lastGradients;
    for (int i = 0; i < request.iterations; ++i) {
        observer.setIteration(i);
        core::exec::ExecOptions options;
        options.observer = &observer;
        options.stop = stop;
        options.downloadGradients = i + 1 == request.iterations;
        auto result = executor.run(request.schedule, options);
        if (!result)
            return fail(result.status(), observer.lastStep());
        summary.measuredPeakBytes = std::max(summary.measuredPeakBytes, result->measuredPeakBytes);
        total += result->stepSeconds;
        summary.iterations = i + 1;
        if (options.downloadGradients)
            lastGradients = std::move(result->gradients);
        ctx.post([this, i] { emit iterationDone(i); });
    }
    summary.stepSeconds = summary.iterations > 0 ? total / summary.iterations : 0;
    auto cmp = core::exec::compareGradients(lastGradients, reference->gradients);
    if (cmp) {
        summary.gradientsChecked = true;
        summary.maxRelativeError = cmp->maxRelativeError;
        summary.worstEntry = QString::fromStdString(cmp->worstEntry);
        summary.gradientsMatch = cmp->maxRelativeError <= kGradientTolerance;
    } else {
        summary.error = QString::fromStdString(cmp.status().toString());
    }
    summary.ok = true;
    return summary;
}

} // namespace remat::ui
