#include "ui/planner/run_controller.h"

#include "core/exec/executor.h"

#include <QMutexLocker>
#include <QRegularExpression>
#include <QtConcurrent/QtConcurrentRun>

namespace remat::ui {

namespace {

// Appends every finished step to the controller's buffer; runs on the worker thread, no Qt calls
// beyond the mutex.
class BufferObserver : public core::schedule::ScheduleObserver
{
public:
    BufferObserver(QMutex *mutex, std::vector<RunSample> *buffer) : m_mutex(mutex), m_buffer(buffer) {}
    void setIteration(int i) { m_iteration = i; }
    int lastStep() const { return m_lastStep; }
    void onStepBegin(core::StepIndex index, const core::schedule::Step &) override { m_lastStep = index.value; }
    void onStepEnd(const core::schedule::StepEvent &e) override
    {
        RunSample s{m_iteration, e.index.value, e.bytesInUse, e.peakDuringStep, e.endSeconds - e.startSeconds};
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
    m_pool.setMaxThreadCount(1);
}

RunController::~RunController()
{
    stop();
    m_pool.waitForDone();
}

void RunController::setBackends(std::vector<BackendChoice> backends) { m_backends = std::move(backends); }

void RunController::stop()
{
    if (m_stop)
        m_stop->requestStop();
}

std::vector<RunSample> RunController::takeSamples()
{
    QMutexLocker lock(&m_mutex);
    std::vector<RunSample> out;
    out.swap(m_buffer);
    return out;
}

bool RunController::start(RunRequest request)
{
    if (m_running || !request.problem || !request.problem->forward || !request.problem->training)
        return false;
    const BackendChoice *choice = nullptr;
    for (const auto &b : m_backends)
        if (b.id == request.backend)
            choice = &b;
    if (!choice)
        return false;
    auto create = choice->create;
    m_stop = std::make_shared<core::StopSource>();
    m_running = true;
    {
        QMutexLocker lock(&m_mutex);
        m_buffer.clear();
    }
    emit started();
    (void)QtConcurrent::run(&m_pool, [this, request = std::move(request), create, stop = m_stop]() {
        RunSummary summary;
        BufferObserver observer(&m_mutex, &m_buffer);
        auto finish = [&] {
            QMetaObject::invokeMethod(this, [this, summary] {
                m_running = false;
                emit finished(summary);
            }, Qt::QueuedConnection);
        };
        auto fail = [&](const core::Status &status, int step) {
            summary.ok = false;
            summary.cancelled = status.code() == core::StatusCode::Cancelled || stop->stopRequested();
            summary.error = QString::fromStdString(status.toString());
            summary.failedStep = step >= 0 ? step : stepFromMessage(status.message());
            finish();
        };
        auto backend = create();
        if (!backend) {
            fail(backend.status(), -1);
            return;
        }
        const auto &tg = *request.problem->training;
        core::exec::Executor executor(**backend, tg, *request.problem->forward);
        core::exec::ExecInputs inputs;
        inputs.feed = request.feed;
        if (core::Status s = executor.prepare(inputs); !s.isOk()) {
            fail(s, -1);
            return;
        }
        // The store-all step gives the reference gradients the plan must reproduce.
        core::exec::ExecOptions refOptions;
        refOptions.stop = stop->token();
        auto reference = executor.run(request.reference, refOptions);
        if (!reference) {
            fail(reference.status().withContext("store-all reference step"), -1);
            return;
        }
        double total = 0;
        core::exec::NpzArchive lastGradients;
        for (int i = 0; i < request.iterations; ++i) {
            observer.setIteration(i);
            core::exec::ExecOptions options;
            options.observer = &observer;
            options.stop = stop->token();
            options.downloadGradients = i + 1 == request.iterations;
            auto result = executor.run(request.schedule, options);
            if (!result) {
                fail(result.status(), observer.lastStep());
                return;
            }
            summary.measuredPeakBytes = std::max(summary.measuredPeakBytes, result->measuredPeakBytes);
            total += result->stepSeconds;
            summary.iterations = i + 1;
            if (options.downloadGradients)
                lastGradients = std::move(result->gradients);
            QMetaObject::invokeMethod(this, [this, i] { emit iterationDone(i); }, Qt::QueuedConnection);
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
        finish();
    });
    return true;
}

} // namespace remat::ui
