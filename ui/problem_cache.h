#pragma once
// The problems (core::pipeline::Problem) loaded in one window, shared by the explorer's loader and
// the planner so that one open imports a model once: each asks here before it loads. Holds them
// weakly: a problem nobody shows any more is gone, and a file changed on disk is loaded again.
//   auto cache = std::make_shared<ProblemCache>();
//   if (auto p = cache->find(path, batch, settings, true)) use(p); else { load...; cache->add(p); }

#include "core/onnx/importer.h"
#include "core/pipeline/problem.h"

#include <QDateTime>
#include <QString>

#include <memory>
#include <vector>

namespace remat::ui {

class ProblemCache
{
public:
    /// A problem loaded for `path` with the user's `settings` (batch, stop and progress aside) at
    /// `batch` (0: the file's own), still held elsewhere, its file unchanged since; else null.
    /// `needTraining`: only one whose training step was built. Only a problem built with the
    /// same `training` options (optimizer, precision, ...) matches.
    std::shared_ptr<const core::pipeline::Problem>
    find(const QString &path, int64_t batch, const core::onnx::ImportOptions &settings,
         bool needTraining, const core::training::TrainingOptions &training = {}) const;
    /// Remembers a problem loaded from a file (one with an empty model path is ignored).
    void add(const std::shared_ptr<const core::pipeline::Problem> &problem);

private:
    struct Entry
    {
        std::weak_ptr<const core::pipeline::Problem> problem;
        QString path; ///< absolute
        QDateTime modified;
        qint64 size = 0;
    };
    std::vector<Entry> m_entries;
};

} // namespace remat::ui
