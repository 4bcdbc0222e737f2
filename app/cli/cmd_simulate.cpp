// remat simulate MODEL [--batch N] [--plan plan.json] [--profile P.json] [--csv timeline.csv]
// [--json]: simulates a plan's schedule (store-all without --plan) on the model's training graph
// and prints the timeline summary; --csv writes one row per step with every memory category
// (docs/timeline-csv.md). `--session S.rematproj` (MODEL optional) re-simulates the session's
// current plan with the session's batch and import settings, as the planner shows it.
#include "commands.h"
#include "model_loading.h"
#include "time_source.h"

#include "core/io/plan_file.h"
#include "core/io/session_file.h"
#include "core/io/timeline_csv.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/util/bytes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>

namespace remat::app {

namespace {

using namespace remat::core;
using schedule::kMemCategoryCount;
using schedule::MemCategory;

struct SimulateOptions
{
    ModelInput input;
    std::string plan;
    std::string profile;
    std::string csv;
    std::string session;
    bool json = false;
    bool importOptionsGiven = false; ///< --batch or another import option was on the command line
};

/// The session's model loaded as the planner loads it: its batch and import settings, the
/// default training options (ui/planner/planner_problem.cpp).
Expected<LoadedModel> loadSessionModel(const std::string &model, const io::Session &session,
                                       LoadStage *failed)
{
    pipeline::LoadOptions options;
    options.import = session.importSettings;
    options.import.batch = session.batch;
    options.training = session.training;
    *failed = LoadStage::Import;
    REMAT_ASSIGN_OR_RETURN(std::shared_ptr<const pipeline::Problem> problem,
                           pipeline::loadProblem(model, options));
    *failed = LoadStage::Build;
    if (!problem->training)
        return problem->trainingStatus;
    return LoadedModel{problem, *problem->forward, *problem->training};
}

int runSimulate(const SimulateOptions &o)
{
    std::optional<io::Session> session;
    ModelInput input = o.input;
    if (!o.session.empty()) {
        if (o.importOptionsGiven) {
            std::fprintf(stderr,
                         "error: --session fixes the batch and the import settings (%s): drop "
                         "--batch, --dim, --input-shape, --input-value, --branch, --classify and "
                         "--semantics\n",
                         o.session.c_str());
            return 1;
        }
        Expected<io::Session> read = io::readSession(o.session);
        if (!read) {
            std::fprintf(stderr, "error: %s\n", read.status().toString().c_str());
            return 1;
        }
        session = std::move(*read);
        if (input.model.empty())
            input.model = session->modelPath;
        if (input.model.empty()) {
            std::fprintf(stderr, "error: %s names no model: give MODEL before --session\n",
                         o.session.c_str());
            return 1;
        }
    } else if (input.model.empty()) {
        std::fprintf(stderr, "error: MODEL is required (or --session S.rematproj)\n");
        return 1;
    }
    LoadStage failed = LoadStage::Import;
    Expected<LoadedModel> loaded = session ? loadSessionModel(input.model, *session, &failed)
                                           : loadTrainingModel(input, {}, &failed);
    if (!loaded)
        return reportLoadError(input, loaded.status(), failed);
    const training::TrainingGraph &tg = loaded->training;
    cost::ProfileCostsReport report;
    auto costsOr = costsFor(o.profile, tg, &report);
    if (!costsOr) {
        std::fprintf(stderr, "error: %s\n", costsOr.status().toString().c_str());
        return 1;
    }
    const cost::Costs costs = std::move(*costsOr);
    const cost::ProfileCostsReport *rep = o.profile.empty() ? nullptr : &report;
    schedule::Schedule s;
    std::string scheduleName = "store-all";
    if (session) {
        // The planner's figures: the plans parsed against this graph and re-simulated.
        auto plans = io::restoreSessionPlans(*session, tg, costs, o.session);
        if (!plans) {
            std::fprintf(stderr, "error: %s\n", plans.status().toString().c_str());
            return 1;
        }
        if (session->currentPlan < 0 || size_t(session->currentPlan) >= plans->size()) {
            s = schedule::storeAllSchedule(tg);
            scheduleName = "store-all (" + o.session + " has no current plan)";
        } else {
            const solvers::Plan &plan = (*plans)[size_t(session->currentPlan)];
            s = plan.schedule;
            scheduleName =
                fmt::format("{} plan {} ({})", o.session, session->currentPlan + 1, plan.solver);
        }
    } else if (o.plan.empty()) {
        s = schedule::storeAllSchedule(tg);
    } else {
        auto plan = core::io::readPlan(o.plan, tg);
        if (!plan) {
            std::fprintf(stderr, "error: %s\n", plan.status().toString().c_str());
            return 1;
        }
        s = std::move(plan->schedule);
        scheduleName = o.plan + " (" + plan->solver + ")";
    }
    auto t = sim::simulate(s, tg, costs, {.recordPoints = !o.csv.empty()});
    if (!t) {
        std::fprintf(stderr, "error: %s\n", t.status().toString().c_str());
        return 1;
    }
    if (!o.csv.empty()) {
        Status w = io::saveTimelineCsv(o.csv, s, tg, *t);
        if (!w.isOk()) {
            std::fprintf(stderr, "error: %s\n", w.toString().c_str());
            return 1;
        }
    }
    const std::string peakName =
        s.steps.empty() ? std::string() : io::timelineStepName(s.steps[t->peakStep], tg);
    if (o.json) {
        nlohmann::json cats = nlohmann::json::object();
        for (size_t c = 0; c < kMemCategoryCount; ++c)
            cats[schedule::memCategoryName(static_cast<MemCategory>(c))] = t->peakByCategory[c];
        nlohmann::json j = {
            {"model", input.model},
            {"batch", tg.info().batch},
            {"schedule", scheduleName},
            {"cost_model", costs.source},
            {"steps", s.steps.size()},
            {"peak_bytes", t->peakBytes},
            {"peak_step", t->peakStep},
            {"peak_step_name", peakName},
            {"peak_by_category", cats},
            {"activation_peak_bytes", t->activationPeakBytes},
            {"weight_bytes", t->weightBytes},
            {"optimizer_state_bytes", t->optimizerStateBytes},
            {"master_weight_bytes", t->masterWeightBytes},
            {"weight_grad_bytes", t->weightGradBytes},
            {"optimizer", training::optimizerName(tg.info().training.optimizer)},
            {"precision", training::precisionName(tg.info().training.precision)},
            {"autocast_device",
             training::isAutocast(tg.info().training.precision)
                 ? training::autocastDeviceName(tg.info().training.autocastDevice)
                 : ""},
            {"shard", training::shardingName(tg.info().training.shard)},
            {"ranks", tg.info().training.ranks},
            {"host_peak_bytes", t->hostPeakBytes},
            {"compute_seconds", t->computeSeconds},
            {"recompute_seconds", t->recomputeSeconds},
            {"copy_seconds", t->copySeconds},
            {"total_seconds", t->totalSeconds},
            {"one_compute_seconds", t->oneComputeSeconds},
            {"tdi_percent", t->tdiPercent()},
            {"compute_steps", t->computeSteps},
            {"recompute_steps", t->recomputeSteps},
        };
        addTimeSourceJson(j, costs, rep);
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s at batch %lld, schedule %s, %zu steps, times: %s\n", input.model.c_str(),
                (long long)tg.info().batch, scheduleName.c_str(), s.steps.size(),
                timeSourceText(costs, rep).c_str());
    std::printf("  peak                 %s at step %zu (%s)\n", formatBytes(t->peakBytes).c_str(),
                t->peakStep, peakName.c_str());
    for (size_t c = 0; c < kMemCategoryCount; ++c)
        std::printf("    %-24s %s\n", schedule::memCategoryName(static_cast<MemCategory>(c)),
                    formatBytes(t->peakByCategory[c]).c_str());
    std::printf("  activation peak      %s\n", formatBytes(t->activationPeakBytes).c_str());
    std::printf("  weights / grads      %s / %s\n", formatBytes(t->weightBytes).c_str(),
                formatBytes(t->weightGradBytes).c_str());
    std::printf(
        "  time                 %.6g s (compute %.6g, recompute %.6g, copy %.6g), TDI %.2f%%\n",
        t->totalSeconds, t->computeSeconds, t->recomputeSeconds, t->copySeconds, t->tdiPercent());
    if (!o.csv.empty())
        std::printf("  timeline             %s\n", o.csv.c_str());
    return 0;
}

} // namespace

void addSimulateCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<SimulateOptions>();
    CLI::App *cmd = app.add_subcommand("simulate", "Simulate a schedule: peak memory and time");
    addModelArgument(*cmd, opts->input,
                     "ONNX model file or benchmark graph (with --session: the session's "
                     "own when left out)")
        ->required(false);
    addBatchOption(*cmd, opts->input);
    addTrainingOptions(*cmd, opts->input);
    CLI::Option *plan = cmd->add_option("--plan", opts->plan,
                                        "Plan file to simulate (default: the store-all schedule)");
    cmd->add_option(
           "--session", opts->session,
           "Session file (.rematproj): simulate its current plan at its batch and import settings")
        ->excludes(plan);
    addProfileOption(*cmd, opts->profile);
    cmd->add_option("--csv", opts->csv, "Write the per-step timeline as CSV");
    cmd->add_flag("--json", opts->json, "Print JSON with stable keys");
    cmd->callback([opts, cmd, &ctx] {
        for (const char *name : {"--batch", "--dim", "--input-shape", "--input-value", "--branch",
                                 "--classify", "--semantics"})
            opts->importOptionsGiven = opts->importOptionsGiven || cmd->count(name) > 0;
        ctx.exitCode = runSimulate(*opts);
    });
}

} // namespace remat::app
