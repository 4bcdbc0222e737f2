#pragma once
// Off-GUI-thread work for the explorer: loading a model (core's pipeline) and laying it out, each
// on a BackgroundJob (copied inputs, stop token, results as queued value types); a newer request
// cancels and supersedes an older one.
//   ModelLoader loader(cache);  connect(&loader, &ModelLoader::loaded, ...);  loader.load(path, batch);
//   LayoutRunner runner; connect(&runner, &LayoutRunner::finished, ...); runner.run(layouter, set);

#include "core/layout/graph_layout.h"
#include "ui/background_job.h"
#include "ui/model_document.h"
#include "ui/problem_cache.h"

#include <QObject>

#include <memory>
#include <optional>

namespace remat::ui {

class ModelLoader : public QObject
{
    Q_OBJECT
public:
    /// `cache` (may be null) holds the problems loaded in this window: one found there is not
    /// loaded again, and every problem loaded here goes into it.
    explicit ModelLoader(std::shared_ptr<ProblemCache> cache = nullptr, QObject *parent = nullptr);

    /// Loads `path` at `batch` (0: the file's batch) with the user's other import `settings`
    /// (their batch is ignored) and computes its metrics on a worker.
    /// `training`: the optimizer, precision, ... of the training step built (the beside pane
    /// uses the planner's, so its figures compare with the planner's step).
    void load(const QString &path, int64_t batch, const core::onnx::ImportOptions &settings = {},
              const core::training::TrainingOptions &training = {});
    void cancel();
    bool busy() const { return m_job.busy(); }

signals:
    void progress(double fraction, const QString &phase);
    void loaded(const remat::ui::LoadedModel &model);
    void failed(const QString &path, const QString &message);
    /// After loaded(): the model is browsable but its training step is blocked by input sizes
    /// or scalar values the user can give (InputSettingsDialog); `message` says what blocks it.
    void inputsNeeded(const QString &path, const QString &message,
                      const core::onnx::ModelSignature &signature,
                      const core::onnx::ImportOptions &settings);

private:
    struct Outcome
    {
        LoadedModel model;
        std::optional<core::onnx::ModelSignature> signature; ///< set when inputs are open
    };
    std::shared_ptr<ProblemCache> m_cache;
    BackgroundJob<Outcome> m_job{"loading the model"};
};

class LayoutRunner : public QObject
{
    Q_OBJECT
public:
    explicit LayoutRunner(QObject *parent = nullptr);

    void run(std::shared_ptr<core::layout::GraphLayouter> layouter,
             core::layout::CollapseSet collapsed);
    void cancel();
    bool busy() const { return m_job.busy(); }

signals:
    void finished(std::shared_ptr<const core::layout::GraphLayout> layout, double milliseconds);
    void failed(const QString &message);

private:
    struct Outcome
    {
        std::shared_ptr<const core::layout::GraphLayout> layout;
        double ms = 0;
    };
    BackgroundJob<Outcome> m_job{"laying out the graph"};
};

} // namespace remat::ui
