#pragma once
// Off-GUI-thread work for the explorer: importing a model and laying it out. Each job gets copies
// of its inputs and a stop token; results come back as queued signals carrying value types; a
// newer request cancels and supersedes an older one.
//   ModelLoader loader;  connect(&loader, &ModelLoader::loaded, ...);  loader.load(path, batch);
//   LayoutRunner runner; connect(&runner, &LayoutRunner::finished, ...); runner.run(layouter, set);

#include "core/layout/graph_layout.h"
#include "core/util/stop_token.h"
#include "ui/model_document.h"

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>

#include <memory>
#include <optional>
#include <vector>

namespace remat::ui {

class ModelLoader : public QObject
{
    Q_OBJECT
public:
    explicit ModelLoader(QObject *parent = nullptr);
    ~ModelLoader() override;

    /// Imports `path` at `batch` (0: the file's batch) with the user's other import `settings`
    /// (their batch is ignored) and computes its metrics on a worker.
    void load(const QString &path, int64_t batch, const core::onnx::ImportOptions &settings = {});
    void cancel();
    bool busy() const { return m_busy; }

signals:
    void progress(double fraction, const QString &phase);
    void loaded(const remat::ui::LoadedModel &model);
    void failed(const QString &path, const QString &message);
    /// After loaded(): the model is browsable but its training step is blocked by input sizes
    /// or scalar values the user can give (InputSettingsDialog); `message` says what blocks it.
    void inputsNeeded(const QString &path, const QString &message, const core::onnx::ModelSignature &signature,
                      const core::onnx::ImportOptions &settings);

private:
    struct Outcome
    {
        LoadedModel model;
        QString error;
        std::optional<core::onnx::ModelSignature> signature; ///< set when inputs are open
    };
    QFutureWatcher<Outcome> *m_watcher = nullptr;
    std::unique_ptr<core::StopSource> m_stop;
    /// Every job not known to be finished, superseded ones included: the destructor waits for
    /// all of them (a superseded import still running at exit would use the ONNX library while
    /// the process tears it down).
    std::vector<QFuture<void>> m_inFlight;
    quint64 m_generation = 0;
    bool m_busy = false;
};

class LayoutRunner : public QObject
{
    Q_OBJECT
public:
    explicit LayoutRunner(QObject *parent = nullptr);
    ~LayoutRunner() override;

    void run(std::shared_ptr<core::layout::GraphLayouter> layouter, core::layout::CollapseSet collapsed);
    void cancel();
    bool busy() const { return m_busy; }

signals:
    void finished(std::shared_ptr<const core::layout::GraphLayout> layout, double milliseconds);
    void failed(const QString &message);

private:
    struct Outcome
    {
        std::shared_ptr<const core::layout::GraphLayout> layout;
        QString error;
        double ms = 0;
        bool cancelled = false;
    };
    QFutureWatcher<Outcome> *m_watcher = nullptr;
    std::unique_ptr<core::StopSource> m_stop;
    std::vector<QFuture<void>> m_inFlight; ///< as ModelLoader's
    quint64 m_generation = 0;
    bool m_busy = false;
};

/// Drops the finished futures from `inFlight` and adds `next`.
void trackInFlight(std::vector<QFuture<void>> &inFlight, QFuture<void> next);
/// Waits for every future in `inFlight`.
void waitForAll(std::vector<QFuture<void>> &inFlight);

} // namespace remat::ui
