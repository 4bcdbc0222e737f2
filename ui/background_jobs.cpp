#include "ui/background_jobs.h"

#include "core/onnx/importer.h"
#include "ui/gui_wording.h"

#include <QElapsedTimer>

namespace remat::ui {

using namespace core;

ModelLoader::ModelLoader(std::shared_ptr<ProblemCache> cache, QObject *parent)
    : QObject(parent), m_cache(std::move(cache))
{
}

void ModelLoader::cancel() { m_job.stopAll(); }

namespace {

/// Whether the user could make a failed import work by giving sizes or values: the file has
/// free dims, a scalar input (an If may branch on it) or an If the settings leave open.
bool opensInputs(const onnx::ModelSignature &sig, const onnx::ImportOptions &settings)
{
    if (sig.hasFreeDims())
        return true;
    for (const std::string &node : sig.ifNodes)
        if (!settings.branches.count(node))
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

void ModelLoader::load(const QString &path, int64_t batch, const onnx::ImportOptions &settings,
                       const training::TrainingOptions &training)
{
    onnx::ImportOptions userSettings = settings;
    userSettings.stop = {};
    userSettings.progress = {};
    // Loaded already (the planner's session, or this file at this batch a moment ago): only the
    // metrics are computed again.
    std::shared_ptr<const pipeline::Problem> known =
        m_cache ? m_cache->find(path, batch, userSettings, false, training) : nullptr;
    auto work = [this, file = path.toStdString(), batch, userSettings, known, path,
                 training](JobContext &ctx) -> Expected<Outcome> {
        std::shared_ptr<const pipeline::Problem> problem = known;
        if (!problem) {
            pipeline::LoadOptions options;
            options.import = userSettings;
            options.import.batch = batch;
            options.training = training;
            options.import.progress = [this, &ctx](double f, const std::string &phase) {
                ctx.postProgress(
                    [this, f, text = QString::fromStdString(phase)] { emit progress(f, text); });
            };
            // The explorer browses any valid file: values whose shape cannot be inferred stay
            // unknown, and what blocks the training step is shown instead of refusing the file.
            options.import.allowUnknownShapes = true;
            // If / Loop / Scan boxes expand into their subgraphs like namespace groups.
            options.import.expandSubgraphs = true;
            REMAT_ASSIGN_OR_RETURN(problem, pipeline::loadProblem(file, options, ctx.stop()));
        }
        Outcome out;
        const ir::Graph &graph = *problem->forward;
        // The importer's advice names the settings that unblock training (--dim, --input-shape,
        // --input-value, --branch): then the Model Inputs dialog can ask for them.
        if (!graph.info().trainingBlockers.empty()) {
            const std::string &msg = graph.info().trainingBlockers.front();
            const bool aboutInputs = msg.find("--dim ") != std::string::npos ||
                                     msg.find("--input-shape ") != std::string::npos ||
                                     msg.find("--input-value ") != std::string::npos ||
                                     msg.find("--branch ") != std::string::npos;
            if (aboutInputs)
                if (auto sig = onnx::readModelSignature(file);
                    sig && opensInputs(*sig, userSettings))
                    out.signature = std::move(*sig);
        }
        out.model.path = path;
        out.model.requestedBatch = batch;
        out.model.settings = userSettings;
        out.model.problem = problem;
        out.model.graph = problem->forward;
        out.model.metrics = std::make_shared<const ModelMetrics>(computeMetrics(graph));
        out.model.training = problem->training;
        if (!problem->training)
            out.model.trainingError =
                guiWording(QString::fromStdString(problem->trainingStatus.toString()));
        if (ctx.stop().stopRequested())
            return makeError(StatusCode::Cancelled, "Cancelled: loading stopped");
        return out;
    };
    m_job.replace(std::move(work), [this, path, userSettings](quint64, Expected<Outcome> out) {
        if (!out) {
            emit failed(path, QString::fromStdString(out.status().toString()));
            return;
        }
        if (m_cache)
            m_cache->add(out->model.problem);
        emit loaded(out->model);
        if (out->signature)
            emit inputsNeeded(path,
                              guiWording(QString::fromStdString(
                                  out->model.graph->info().trainingBlockers.front())),
                              *out->signature, userSettings);
    });
}

LayoutRunner::LayoutRunner(QObject *parent) : QObject(parent) {}

void LayoutRunner::cancel() { m_job.stopAll(); }

void LayoutRunner::run(std::shared_ptr<layout::GraphLayouter> layouter,
                       layout::CollapseSet collapsed)
{
    auto work = [layouter, collapsed = std::move(collapsed)](JobContext &ctx) -> Expected<Outcome> {
        QElapsedTimer timer;
        timer.start();
        REMAT_ASSIGN_OR_RETURN(layout::GraphLayout l, layouter->layout(collapsed, ctx.stop()));
        return Outcome{std::make_shared<const layout::GraphLayout>(std::move(l)),
                       double(timer.nsecsElapsed()) / 1e6};
    };
    m_job.replace(std::move(work), [this](quint64, Expected<Outcome> out) {
        if (out)
            emit finished(out->layout, out->ms);
        else if (out.status().code() != StatusCode::Cancelled)
            emit failed(QString::fromStdString(out.status().toString()));
    });
}

} // namespace remat::ui
