// Session files (.rematproj, QtCore's JSON): parseSessionFile, then restorePlans against the
// small model, as the planner does on open once the model has loaded.
#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "ui/planner/session_file.h"

namespace remat::fuzz {

using namespace remat::core;

Status runSessionFile(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const SmallModel &m = smallModel();
    // A folder that does not exist: the reader's relative-path lookup must not find anything.
    const QString origin = QStringLiteral("/nonexistent-remat-fuzz/fuzz.rematproj");
    auto session = ui::parseSessionFile(QByteArray(reinterpret_cast<const char *>(data), qsizetype(size)), origin);
    requireNamesOrigin(session.status(), origin.toStdString(), "ui::parseSessionFile");
    if (!session)
        return session.status();
    ui::PlannerProblem problem;
    problem.forward = m.graph;
    problem.training = m.training;
    problem.costs = m.costs;
    auto plans = ui::restorePlans(*session, problem, origin);
    requireNamesOrigin(plans.status(), origin.toStdString(), "ui::restorePlans");
    if (plans)
        for (const solvers::Plan &p : *plans)
            if (p.timeline.points.size() != p.schedule.steps.size())
                fail("a restored plan has no per-step timeline");
    return plans.status();
}

} // namespace remat::fuzz
