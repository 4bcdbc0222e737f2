// Measured-time profiles (`remat simulate --profile`): the versioned reader (io::parseProfile,
// which also reads the older {"op": seconds} form) -> profileCosts against the small model (the
// calibrated model's fit included) -> simulate; and the older cost::parseProfile, strict and with
// the roofline fallback. Invariants: an error names the input; costs time every op with a finite,
// non-negative figure; store-all simulates with them.
#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"
#include "core/io/profile_file.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"

#include <cmath>

namespace remat::fuzz {

using namespace remat::core;

namespace {

void requireUsable(const cost::Costs &c, const training::TrainingGraph &tg, const char *what)
{
    if (c.opSeconds.size() != tg.opCount())
        fail(std::string(what) + ": a profile gives a time to some ops only");
    for (double s : c.opSeconds)
        if (!std::isfinite(s) || s < 0)
            fail(std::string(what) + ": an op time that is negative or not finite");
    auto t = sim::simulate(schedule::storeAllSchedule(tg), tg, c, {.recordPoints = false});
    if (!t)
        fail(std::string(what) +
             ": store-all does not simulate with a profile's costs: " + t.status().toString());
}

} // namespace

Status runProfile(const uint8_t *data, size_t size)
{
    if (size > kMaxInputBytes)
        return makeError(StatusCode::Unsupported, "fuzz: input over the size cap");
    const SmallModel &m = smallModel();
    const std::string text(reinterpret_cast<const char *>(data), size);
    const cost::Roofline hw;

    const std::string origin = "fuzz.profile.json";
    auto profile = io::parseProfile(text, origin);
    requireNamesOrigin(profile.status(), origin, "io::parseProfile");
    if (profile) {
        auto costs = cost::profileCosts(*profile, *m.training, hw, origin);
        requireNamesOrigin(costs.status(), origin, "cost::profileCosts");
        if (costs)
            requireUsable(*costs, *m.training, "profileCosts");
    }

    auto strict = cost::parseProfile(text, *m.training, nullptr);
    auto withFallback = cost::parseProfile(text, *m.training, &hw);
    if (withFallback)
        requireUsable(*withFallback, *m.training, "cost::parseProfile");
    return profile.status();
}

} // namespace remat::fuzz
