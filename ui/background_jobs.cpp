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

void ModelLoader::load(const QString &path, int64_t batch)
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
    QFuture<Outcome> future = QtConcurrent::run([file, batch, token, report, path]() -> Outcome {
        onnx::ImportOptions opt;
        opt.batch = batch;
        opt.stop = token;
        opt.progress = report;
        Outcome out;
        Expected<ir::Graph> g = onnx::importModel(file, opt);
        if (!g) {
            out.error = QString::fromStdString(g.status().toString());
            return out;
        }
        out.model.path = path;
        out.model.requestedBatch = batch;
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
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation, path] {
        watcher->deleteLater();
        if (m_watcher == watcher)
            m_watcher = nullptr;
        if (generation != m_generation)
            return; // superseded
        m_busy = false;
        Outcome out = watcher->result();
        if (!out.error.isEmpty())
            emit failed(path, out.error);
        else
            emit loaded(out.model);
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
