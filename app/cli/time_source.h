#pragma once
// `--profile P.json` for the commands that show times (simulate, solve, train-graph, run): the
// costs every time figure, recompute % and min-time objective then uses, and how they are
// labelled ("estimate" for the roofline, "profile", "calibrated").
//   std::string profile;  addProfileOption(*cmd, profile);
//   Expected<cost::Costs> c = costsFor(profile, tg);   // warnings already printed to stderr
//   j["time_source"] = cost::timeSourceName(c->timeSource);

#include "core/cost/calibrated.h"
#include "core/cost/costs.h"
#include "core/pipeline/problem.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace remat::app {

CLI::Option *addProfileOption(CLI::App &cmd, std::string &path);

/// The roofline estimate when `profilePath` is empty, else the profile's costs for `tg`
/// (cost::profileCosts); the profile's warnings (another model, another batch, ops it lacks) go
/// to stderr as "warning: ...". An unreadable profile is an error naming the file.
core::Expected<core::cost::Costs> costsFor(const std::string &profilePath,
                                           const core::training::TrainingGraph &tg,
                                           core::cost::ProfileCostsReport *report = nullptr);

/// `problem` with the profile's costs (its store-all timeline re-simulated with them), or
/// `problem` itself when `profilePath` is empty.
core::Expected<std::shared_ptr<const core::pipeline::Problem>>
withProfile(std::shared_ptr<const core::pipeline::Problem> problem, const std::string &profilePath,
            core::cost::ProfileCostsReport *report = nullptr);

/// "time_source" and, with a profile, "time_sources" (ops per source) for --json output.
void addTimeSourceJson(nlohmann::json &j, const core::cost::Costs &costs,
                       const core::cost::ProfileCostsReport *report);

/// "estimate (roofline)", "profile (p.json)", "calibrated (p.json: 12 ops scaled, 3 fitted)".
std::string timeSourceText(const core::cost::Costs &costs,
                           const core::cost::ProfileCostsReport *report);

} // namespace remat::app
