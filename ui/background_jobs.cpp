#include "ui/background_jobs.h"

#include "core/onnx/importer.h"
#include "core/training/builder.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace remat::ui {

using namespace core;

ModelLoader::ModelLoader(QObject *parent) : QObject(parent) {}

void trackInFlight(std::vector<QFuture<void>> &inFlight, QFuture<void> next)
{
    std::erase_if(inFlight, [](const QFuture<void> &f) { return f.isFinished(); });
    inFlight.push_back(std::move(next));
}

void waitForAll(std::vector<QFuture<void>> &inFlight)
{
    for (QFuture<void> &f : inFlight)
        f.waitForFinished();
    inFlight.clear();
}

ModelLoader::~ModelLoader()
{
    cancel();
    waitForAll(m_inFlight);
}

void ModelLoader::cancel()
{
    if (m_stop)
        m_stop->requestStop();
}

namespace {

/// Whether the user could make a failed import work by giving sizes or values: the file has
/// free dims, or a scalar input (an If may branch on it) the settings leave open.
bool opensInputs(const onnx::ModelSignature &sig, const onnx::ImportOptions &settings)
{
    if (sig.hasFreeDims())
        return true;
    for (const onnx::DeclaredInput &in : sig.inputs) {
        bool scalar = true;
        for (const ir::Dim &d : in.shape.dims)
            scalar = scalar && d.isStatic() && d.value == 1;
        if (scalar && !settings.inputValues.count(in.name))
            return true;
    }
    return false;
}

} // namespace

void ModelLoader::load(const QString &path, int64_t batch, const onnx::ImportOptions &settings)
{
    cancel();
    const quint64 generation = ++m_generation;
    m_stop = std::make_unique<StopSource>();
    const StopToken token = m_stop->token();
    QPointer<ModelLoader> self(this);
    auto report = [self, generation](double f, const std::string &phase) {
        QMetaObject::invokeMethod(
            self.data(),
            [self, generation, f, text = QString::fromStdString(phase)] {
                if (self && self->m_generation == generation)
                    emit self->progress(f, text);
            },
            Qt::QueuedConnection);
    };
    const std::string file = path.toStdString();
    onnx::ImportOptions userSettings = settings;
    userSettings.stop = {};
    userSettings.progress = {};
    QFuture<Outcome> future = QtConcurrent::run([file, batch, userSettings, token, report, path]() -> Outcome {
        onnx::ImportOptions opt = userSettings;
        opt.batch = batch;
        opt.stop = token;
        opt.progress = report;
        // The explorer browses any valid file: values whose shape cannot be inferred stay
        // unknown, and what blocks the training step is shown instead of refusing the file.
        opt.allowUnknownShapes = true;
        Outcome out;
        Expected<ir::Graph> g = onnx::importModel(file, opt);
        if (!g) {
            out.error = QString::fromStdString(g.status().toString());
            return out;
        }
        // The importer's advice names the settings that unblock training (--dim, --input-shape,
        // --input-value): then the Model Inputs dialog can ask for them.
        if (!g->info().trainingBlockers.empty()) {
            const std::string &msg = g->info().trainingBlockers.front();
            const bool aboutInputs = msg.find("--dim ") != std::string::npos ||
                                     msg.find("--input-shape ") != std::string::npos ||
                                     msg.find("--input-value ") != std::string::npos;
            if (aboutInputs)
                if (auto sig = onnx::readModelSignature(file); sig && opensInputs(*sig, userSettings))
                    out.signature = std::move(*sig);
        }
        out.model.path = path;
        out.model.requestedBatch = batch;
        out.model.settings = userSettings;
        auto graph = std::make_shared<const ir::Graph>(std::move(*g));
        out.model.metrics = std::make_shared<const ModelMetrics>(computeMetrics(*graph));
        if (token.stopRequested()) {
            out.error = QStringLiteral("Cancelled: loading stopped");
            return out;
        }
        report(0.95, "training graph");
        Expected<training::TrainingGraph> tg = training::buildTrainingGraph(*graph);
        if (tg) {
            out.model.forwardOpOfNode.assign(graph->nodeCount(), OpId());
            for (const training::Op &op : tg->ops())
                if (op.phase == training::Phase::Forward && op.source.valid() &&
                    op.source.index() < graph->nodeCount())
                    out.model.forwardOpOfNode[op.source.index()] = op.id;
            out.model.training = std::make_shared<const training::TrainingGraph>(std::move(*tg));
        } else {
            out.model.trainingError = QString::fromStdString(tg.status().toString());
        }
        out.model.graph = std::move(graph);
        return out;
    });
    auto *watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation, path, userSettings] {
        watcher->deleteLater();
        if (m_watcher == watcher)
            m_watcher = nullptr;
        if (generation != m_generation)
            return; // superseded
        m_busy = false;
        Outcome out = watcher->result();
        if (!out.error.isEmpty()) {
            emit failed(path, out.error);
            return;
        }
        emit loaded(out.model);
        if (out.signature)
            emit inputsNeeded(path, QString::fromStdString(out.model.graph->info().trainingBlockers.front()),
                              *out.signature, userSettings);
    });
    m_watcher = watcher;
    m_busy = true;
    trackInFlight(m_inFlight, QFuture<void>(future));
    watcher->setFuture(future);
}

LayoutRunner::LayoutRunner(QObject *parent) : QObject(parent) {}

LayoutRunner::~LayoutRunner()
{
    cancel();
    waitForAll(m_inFlight);
}

void LayoutRunner::cancel()
{
    if (m_stop)
        m_stop->requestStop();
}

void LayoutRunner::run(std::shared_ptr<layout::GraphLayouter> layouter, layout::CollapseSet collapsed)
{
    cancel();
    const quint64 generation = ++m_generation;
    m_stop = std::make_unique<StopSource>();
    const StopToken token = m_stop->token();
    QFuture<Outcome> future = QtConcurrent::run([layouter, collapsed = std::move(collapsed), token]() -> Outcome {
        Outcome out;
        QElapsedTimer timer;
        timer.start();
        Expected<layout::GraphLayout> l = layouter->layout(collapsed, token);
        out.ms = double(timer.nsecsElapsed()) / 1e6;
        if (!l) {
            out.cancelled = l.status().code() == StatusCode::Cancelled;
            out.error = QString::fromStdString(l.status().toString());
            return out;
        }
        out.layout = std::make_shared<const layout::GraphLayout>(std::move(*l));
        return out;
    });
    auto *watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation] {
        watcher->deleteLater();
        if (m_watcher == watcher)
            m_watcher = nullptr;
        if (generation != m_generation)
            return;
        m_busy = false;
        Outcome out = watcher->result();
        if (out.layout)
            emit finished(out.layout, out.ms);
        else if (!out.cancelled)
            emit failed(out.error);
    });
    m_watcher = watcher;
    m_busy = true;
    trackInFlight(m_inFlight, QFuture<void>(future));
    watcher->setFuture(future);
}

} // namespace remat::ui
