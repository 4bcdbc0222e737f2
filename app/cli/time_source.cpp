#include "time_source.h"

#include "core/cost/roofline.h"
#include "core/io/profile_file.h"

#include <fmt/format.h>

#include <cstdio>

namespace remat::app {

using namespace remat::core;

CLI::Option *addProfileOption(CLI::App &cmd, std::string &path)
{
    return cmd.add_option(
        "--profile", path,
        "measured op times from `remat run MODEL --profile-out P.json`: every time figure, "
        "recompute % and the min-time objective use them (default: the roofline estimate)");
}

Expected<cost::Costs> costsFor(const std::string &profilePath, const training::TrainingGraph &tg,
                               cost::ProfileCostsReport *report)
{
    const cost::Roofline hw;
    if (profilePath.empty())
        return cost::rooflineCosts(tg, hw);
    REMAT_ASSIGN_OR_RETURN(cost::Profile profile, io::readProfile(profilePath));
    cost::ProfileCostsReport local;
    cost::ProfileCostsReport &rep = report ? *report : local;
    REMAT_ASSIGN_OR_RETURN(cost::Costs costs,
                           cost::profileCosts(profile, tg, hw, profilePath, &rep));
    for (const std::string &w : rep.warnings)
        std::fprintf(stderr, "warning: %s\n", w.c_str());
    return costs;
}

void addTimeSourceJson(nlohmann::json &j, const cost::Costs &costs,
                       const cost::ProfileCostsReport *report)
{
    j["time_source"] = cost::timeSourceName(costs.timeSource);
    if (report)
        j["time_sources"] = {{"profile", report->measured},
                             {"calibrated", report->scaled + report->fitted},
                             {"estimate", report->estimated}};
}

std::string timeSourceText(const cost::Costs &costs, const cost::ProfileCostsReport *report)
{
    const char *name = cost::timeSourceName(costs.timeSource);
    if (!report || costs.source.rfind("profile:", 0) != 0)
        return fmt::format("{} ({})", name, costs.source);
    const std::string file = costs.source.substr(8);
    if (report->scaled + report->fitted + report->estimated == 0)
        return fmt::format("{} ({})", name, file);
    return fmt::format("{} ({}: {} ops measured, {} scaled, {} fitted, {} estimated)", name, file,
                       report->measured, report->scaled, report->fitted, report->estimated);
}

Expected<std::shared_ptr<const pipeline::Problem>>
withProfile(std::shared_ptr<const pipeline::Problem> problem, const std::string &profilePath,
            cost::ProfileCostsReport *report)
{
    if (profilePath.empty() || !problem || !problem->training)
        return problem;
    REMAT_ASSIGN_OR_RETURN(cost::Costs costs, costsFor(profilePath, *problem->training, report));
    return pipeline::makeProblem(problem->forward, problem->training,
                                 std::make_shared<const cost::Costs>(std::move(costs)));
}

} // namespace remat::app
