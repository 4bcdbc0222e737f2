#include "ui/problem_cache.h"

#include "ui/import_settings.h"

#include <QFileInfo>

namespace remat::ui {

std::shared_ptr<const core::pipeline::Problem>
ProblemCache::find(const QString &path, int64_t batch, const core::onnx::ImportOptions &settings,
                   bool needTraining, const core::training::TrainingOptions &training) const
{
    const QFileInfo file(path);
    for (const Entry &e : m_entries) {
        if (e.path != file.absoluteFilePath() || e.modified != file.lastModified() ||
            e.size != file.size())
            continue;
        std::shared_ptr<const core::pipeline::Problem> p = e.problem.lock();
        if (!p || (needTraining && !p->isValid()) ||
            !sameImportSettings(p->options.import, settings) || p->options.training != training)
            continue;
        // Batch 0 asks for the file's own batch: only a problem loaded that way is known to be it.
        if (batch == 0 ? p->options.import.batch == 0 : p->batch == batch)
            return p;
    }
    return nullptr;
}

void ProblemCache::add(const std::shared_ptr<const core::pipeline::Problem> &problem)
{
    if (!problem || problem->modelPath.empty())
        return;
    std::erase_if(m_entries, [](const Entry &e) { return e.problem.expired(); });
    const QFileInfo file(QString::fromStdString(problem->modelPath));
    m_entries.push_back({problem, file.absoluteFilePath(), file.lastModified(), file.size()});
}

} // namespace remat::ui
