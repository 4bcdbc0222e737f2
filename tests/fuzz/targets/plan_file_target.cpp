// Plan files against the small model (fuzz_model.h): parsePlan with costs (validates, then
// re-simulates) and without (takes the recorded figures), then simulates what was read.
#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/io/plan_file.h"
#include "core/sim/simulator.h"

namespace remat::fuzz {

using namespace remat::core;

Status runPlanFile(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const SmallModel &m = smallModel();
    const std::string text(reinterpret_cast<const char *>(data), size);
    const std::string origin = "fuzz.plan.json";
    auto withCosts = io::parsePlan(text, *m.training, m.costs.get(), origin);
    requireNamesOrigin(withCosts.status(), origin, "io::parsePlan");
    auto recorded = io::parsePlan(text, *m.training, nullptr, origin);
    requireNamesOrigin(recorded.status(), origin, "io::parsePlan");
    if (withCosts.hasValue() != recorded.hasValue() && withCosts.hasValue())
        fail("a plan valid with costs is refused without them: " + recorded.status().toString());
    if (recorded) {
        // What `remat simulate MODEL --plan FILE` does next.
        auto t = sim::simulate(recorded->schedule, *m.training, *m.costs);
        if (!t)
            fail("a plan that validated does not simulate: " + t.status().toString());
    }
    return withCosts.status();
}

} // namespace remat::fuzz
