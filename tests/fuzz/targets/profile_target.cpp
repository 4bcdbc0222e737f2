// Measured-time profiles (`remat simulate --profile`): parseProfile against the small model, with
// and without the roofline fallback.
#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/cost/roofline.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"

namespace remat::fuzz {

using namespace remat::core;

Status runProfile(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const SmallModel &m = smallModel();
    const std::string text(reinterpret_cast<const char *>(data), size);
    const cost::Roofline hw;
    auto strict = cost::parseProfile(text, *m.training, nullptr);
    auto withFallback = cost::parseProfile(text, *m.training, &hw);
    if (withFallback) {
        if (withFallback->opSeconds.size() != m.training->opCount())
            fail("a profile gives a time to some ops only");
        auto t = sim::simulate(schedule::storeAllSchedule(*m.training), *m.training, *withFallback,
                               {.recordPoints = false});
        if (!t)
            fail("store-all does not simulate with a profile's costs: " + t.status().toString());
    }
    return strict.status();
}

} // namespace remat::fuzz
