// Session files (.rematproj, core/io/session_file.h): io::parseSession, then
// io::restoreSessionPlans against the small model, as the planner and `remat simulate --session`
// do once the model has loaded.
#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/io/session_file.h"

namespace remat::fuzz {

using namespace remat::core;

Status runSessionFile(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const SmallModel &m = smallModel();
    // A folder that does not exist: the reader's relative-path lookup must not find anything.
    const std::string origin = "/nonexistent-remat-fuzz/fuzz.rematproj";
    auto session =
        io::parseSession(std::string(reinterpret_cast<const char *>(data), size), origin);
    requireNamesOrigin(session.status(), origin, "io::parseSession");
    if (!session)
        return session.status();
    auto plans = io::restoreSessionPlans(*session, *m.training, *m.costs, origin);
    requireNamesOrigin(plans.status(), origin, "io::restoreSessionPlans");
    if (plans)
        for (const solvers::Plan &p : *plans)
            if (p.timeline.points.size() != p.schedule.steps.size())
                fail("a restored plan has no per-step timeline");
    return plans.status();
}

} // namespace remat::fuzz
