// remat simulate MODEL [--batch N] [--plan plan.json] [--profile P.json] [--csv timeline.csv]
// [--json]: simulates a plan's schedule (store-all without --plan) on the model's training graph
// and prints the timeline summary; --csv writes one row per step with every memory category.
#include "commands.h"
#include "model_loading.h"
#include "time_source.h"

#include "core/io/plan_file.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/util/bytes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

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
    bool json = false;
};

std::string stepName(const schedule::Step &step, const training::TrainingGraph &tg)
{
    switch (step.kind) {
    case schedule::StepKind::Compute: return tg.op(step.op()).name;
    case schedule::StepKind::Phase: return schedule::phaseMarkName(step.mark());
    default: return tg.tensor(step.tensor()).name;
    }
}

/// RFC 4180 quoting: ONNX names may hold commas.
std::string csvField(const std::string &s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

Status writeCsv(const std::string &path, const schedule::Schedule &s, const training::TrainingGraph &tg,
                const sim::Timeline &t)
{
    std::ofstream out(path, std::ios::binary);
    if (!out)
        return makeError(StatusCode::NotFound, "cannot write '" + path + "'");
    out << "step,kind,name,bytes_in_use,peak_during_step";
    for (size_t c = 0; c < kMemCategoryCount; ++c)
        out << ',' << schedule::memCategoryName(static_cast<MemCategory>(c));
    out << ",end_seconds\n";
    for (size_t i = 0; i < s.steps.size(); ++i) {
        const sim::TimelinePoint &p = t.points[i];
        out << i << ',' << schedule::stepKindName(s.steps[i].kind) << ',' << csvField(stepName(s.steps[i], tg)) << ','
            << p.bytesInUse << ',' << p.peakDuringStep;
        for (int64_t b : p.byCategory)
            out << ',' << b;
        out << ',' << fmt::format("{:.9g}", p.endSeconds) << '\n';
    }
    return out ? Status::ok() : makeError(StatusCode::Internal, "write to '" + path + "' failed");
}

int runSimulate(const SimulateOptions &o)
{
    LoadStage failed = LoadStage::Import;
    Expected<LoadedModel> loaded = loadTrainingModel(o.input, {}, &failed);
    if (!loaded)
        return reportLoadError(o.input, loaded.status(), failed);
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
    if (o.plan.empty()) {
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
        Status w = writeCsv(o.csv, s, tg, *t);
        if (!w.isOk()) {
            std::fprintf(stderr, "error: %s\n", w.toString().c_str());
            return 1;
        }
    }
    const std::string peakName = s.steps.empty() ? std::string() : stepName(s.steps[t->peakStep], tg);
    if (o.json) {
        nlohmann::json cats = nlohmann::json::object();
        for (size_t c = 0; c < kMemCategoryCount; ++c)
            cats[schedule::memCategoryName(static_cast<MemCategory>(c))] = t->peakByCategory[c];
        nlohmann::json j = {
            {"model", o.input.model},
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
            {"weight_grad_bytes", t->weightGradBytes},
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
    std::printf("%s at batch %lld, schedule %s, %zu steps, times: %s\n", o.input.model.c_str(),
                (long long)tg.info().batch, scheduleName.c_str(), s.steps.size(), timeSourceText(costs, rep).c_str());
    std::printf("  peak                 %s at step %zu (%s)\n", formatBytes(t->peakBytes).c_str(), t->peakStep,
                peakName.c_str());
    for (size_t c = 0; c < kMemCategoryCount; ++c)
        std::printf("    %-24s %s\n", schedule::memCategoryName(static_cast<MemCategory>(c)),
                    formatBytes(t->peakByCategory[c]).c_str());
    std::printf("  activation peak      %s\n", formatBytes(t->activationPeakBytes).c_str());
    std::printf("  weights / grads      %s / %s\n", formatBytes(t->weightBytes).c_str(),
                formatBytes(t->weightGradBytes).c_str());
    std::printf("  time                 %.6g s (compute %.6g, recompute %.6g, copy %.6g), TDI %.2f%%\n",
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
    addModelArgument(*cmd, opts->input);
    addBatchOption(*cmd, opts->input);
    cmd->add_option("--plan", opts->plan, "Plan file to simulate (default: the store-all schedule)");
    addProfileOption(*cmd, opts->profile);
    cmd->add_option("--csv", opts->csv, "Write the per-step timeline as CSV");
    cmd->add_flag("--json", opts->json, "Print JSON with stable keys");
    cmd->callback([opts, &ctx] { ctx.exitCode = runSimulate(*opts); });
}

} // namespace remat::app
