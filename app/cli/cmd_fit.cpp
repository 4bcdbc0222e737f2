// remat fit MODEL (--memory 24GiB | --device NAME) [--solver ID]... [--compare] [training options]
//   [--max-batch N] [--time-limit S] [--json]: per solver, the largest batch whose simulated peak
// fits the memory, and the best plan at it. The search is core's (core/pipeline/fit.h), shared
// with the planner's "Largest batch for this GPU" dialog; this file parses and prints.
#include "commands.h"
#include "model_loading.h"

#include "core/pipeline/fit.h"
#include "core/solvers/registry.h"
#include "core/util/bytes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>

namespace remat::app {

namespace {

using namespace remat::core;

struct FitOptions
{
    ModelInput input;
    std::string memory;
    std::string device;
    std::vector<std::string> solvers;
    bool compare = false;
    int64_t maxBatch = 65536;
    double timeLimit = 10;
    double searchLimit = 2;  ///< --search-limit S: one solver's whole batch search; 0: none
    double maxOverhead = -1; ///< --max-overhead P (percent); < 0: none
    bool json = false;
};

std::string presetList()
{
    std::string s;
    for (const pipeline::DevicePreset &p : pipeline::devicePresets())
        s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", p.name, p.example);
    return s;
}

using FitRow = pipeline::FitResult;

nlohmann::json planJson(const FitRow &r)
{
    if (!r.plan)
        return nullptr;
    const solvers::Plan &p = *r.plan;
    nlohmann::json checkpoints = nlohmann::json::array();
    for (TensorId t : p.checkpoints)
        checkpoints.push_back(r.problem->training->tensor(t).name);
    return {{"status", solvers::solveStatusName(p.status)},
            {"objective", solvers::objectiveName(p.objective)},
            {"steps", p.schedule.size()},
            {"recompute_steps", p.timeline.recomputeSteps},
            {"checkpoints", std::move(checkpoints)},
            {"note", p.note}};
}

int runFit(const FitOptions &o)
{
    if (o.memory.empty() == o.device.empty()) {
        std::fprintf(stderr,
                     "error: give the device memory: --memory 24GiB or --device NAME (%s)\n",
                     presetList().c_str());
        return 1;
    }
    int64_t memory = 0;
    if (!o.device.empty()) {
        for (const pipeline::DevicePreset &p : pipeline::devicePresets())
            if (o.device == p.name)
                memory = p.gib << 30;
        if (memory == 0) {
            std::fprintf(stderr, "error: --device %s: unknown preset (known: %s)\n",
                         o.device.c_str(), presetList().c_str());
            return 1;
        }
    } else {
        Expected<int64_t> m = parseBytes(o.memory);
        if (!m || *m <= 0) {
            std::fprintf(stderr, "error: --memory %s: %s\n", o.memory.c_str(),
                         m ? "must be more than 0 bytes" : m.status().message().c_str());
            return 1;
        }
        memory = *m;
    }
    if (o.input.batch != 0) {
        std::fprintf(stderr, "error: fit searches the batch: drop --batch\n");
        return 1;
    }
    if (Expected<training::TrainingOptions> t = trainingOptions(o.input); !t) {
        std::fprintf(stderr, "error: %s\n", t.status().toString().c_str());
        return 1;
    }

    const solvers::SolverRegistry registry = solvers::makeRegistry();
    std::vector<std::pair<std::string, const solvers::Solver *>> chosen;
    chosen.emplace_back("store-all", nullptr);
    std::vector<std::string> ids = o.solvers;
    if (o.compare)
        for (const auto &s : registry.solvers())
            if (s->capabilities().speed == solvers::SpeedClass::Interactive &&
                s->id() != "store-all" && std::find(ids.begin(), ids.end(), s->id()) == ids.end())
                ids.push_back(s->id());
    for (const std::string &id : ids) {
        if (id == "store-all")
            continue;
        const solvers::Solver *s = registry.find(id);
        if (!s) {
            std::string known;
            for (const std::string &k : registry.ids())
                known += (known.empty() ? "" : ", ") + k;
            std::fprintf(stderr, "error: --solver %s: unknown solver (known: %s)\n", id.c_str(),
                         known.c_str());
            return 1;
        }
        chosen.emplace_back(id, s);
    }

    pipeline::LoadOptions load;
    if (Status st = applyModelInput(o.input, load.import); !st.isOk()) {
        // Worded as before the search moved to core: the first import (batch 1) reported it.
        std::fprintf(stderr, "error: %s\n", st.withContext("at batch 1").toString().c_str());
        return 1;
    }
    load.training = *trainingOptions(o.input);
    pipeline::Fitter fitter(o.input.model, load,
                            {memory, o.maxBatch, o.timeLimit, o.searchLimit, o.maxOverhead});
    // A model that cannot be imported or trained fails once, here, not per solver.
    if (auto first = fitter.problemAt(1); !first) {
        std::fprintf(stderr, "error: %s\n", first.status().toString().c_str());
        return 1;
    }
    std::vector<FitRow> rows;
    for (const auto &[id, s] : chosen)
        rows.push_back(fitter.fit(id, s));

    const training::TrainingOptions opts = *trainingOptions(o.input);
    if (o.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const FitRow &r : rows) {
            const sim::Timeline *t = r.plan ? &r.plan->timeline : nullptr;
            nlohmann::json j = {
                {"solver", r.solver},
                {"batch", r.batch},
                {"effective_batch", r.batch * opts.microBatches},
                {"memory_bytes", memory},
                {"peak_bytes", t ? t->peakBytes : 0},
                {"recompute_percent", t ? t->tdiPercent() : 0.0},
                {"step_seconds", t ? t->totalSeconds : 0.0},
                {"time_overhead_percent", r.plan ? solvers::timeOverheadPercent(*r.plan) : 0.0},
                {"max_overhead_percent", o.maxOverhead},
                {"peak_at_batch_1", r.smallestPeak},
                {"search_seconds", r.seconds},
                {"batches_tried", r.tries},
                {"plan", planJson(r)},
                {"optimizer", training::optimizerName(opts.optimizer)},
                {"precision", training::precisionName(opts.precision)},
                {"autocast_device", training::isAutocast(opts.precision)
                                        ? training::autocastDeviceName(opts.autocastDevice)
                                        : ""},
                {"shard", training::shardingName(opts.shard)},
                {"ranks", opts.ranks},
                {"attention", training::attentionName(opts.attention)},
                {"tensor_parallel", opts.tensorParallel},
                {"sequence_parallel", opts.sequenceParallel},
                {"time_source", "estimate"},
            };
            if (!r.error.empty())
                j["error"] = r.error;
            j["search_stopped"] = r.searchStopped;
            j["first_batch_not_fitting"] = r.firstMiss;
            j["solves_timed_out"] = r.solvesTimedOut;
            j["out_of_time"] = r.outOfTime;
            arr.push_back(std::move(j));
        }
        std::printf("%s\n", arr.dump(2).c_str());
    } else {
        std::printf("%s on %s: optimizer %s, precision %s, shard %s over %lld ranks, %lld "
                    "micro-batches, attention %s, tensor parallel %lld%s (times: estimate)\n",
                    o.input.model.c_str(), formatBytes(memory).c_str(),
                    training::optimizerName(opts.optimizer),
                    training::precisionName(opts.precision), training::shardingName(opts.shard),
                    (long long)opts.ranks, (long long)opts.microBatches,
                    training::attentionName(opts.attention), (long long)opts.tensorParallel,
                    opts.sequenceParallel ? " + sequence parallel" : "");
        if (o.maxOverhead >= 0)
            std::printf("  a plan fits only when its step is at most %g%% slower than "
                        "store-all's at the same batch\n",
                        o.maxOverhead);
        std::printf("  %-14s %7s %12s %10s %8s %10s %8s\n", "solver", "batch", "peak", "recompute",
                    "time %", "search", "tries");
        for (const FitRow &r : rows) {
            if (r.outOfTime) {
                std::printf("  %-14s %7s  stopped at its time limit before any plan at this size "
                            "(raise --time-limit and --search-limit)\n",
                            r.solver.c_str(), "none");
                continue;
            }
            if (!r.error.empty()) {
                std::printf("  %-14s error: %s\n", r.solver.c_str(), r.error.c_str());
                continue;
            }
            if (!r.plan) {
                std::printf("  %-14s %7s %12s %10s %8s %9.2fs %8d  (batch 1 needs %s)\n",
                            r.solver.c_str(), "none", "-", "-", "-", r.seconds, r.tries,
                            formatBytes(r.smallestPeak).c_str());
                continue;
            }
            std::string why;
            if (r.batch >= o.maxBatch)
                why += "  (--max-batch reached)";
            if (r.searchStopped)
                why += r.firstMiss > 0
                           ? fmt::format("  (search stopped at --search-limit {:g}s: {} not "
                                         "tried, {} does not fit)",
                                         o.searchLimit,
                                         r.firstMiss == r.batch + 2
                                             ? std::to_string(r.batch + 1)
                                             : fmt::format("{}..{}", r.batch + 1, r.firstMiss - 1),
                                         r.firstMiss)
                           : fmt::format("  (search stopped at --search-limit {:g}s: larger "
                                         "batches not tried)",
                                         o.searchLimit);
            if (r.solvesTimedOut > 0)
                why += fmt::format("  ({} of {} solves stopped at their time limit: best plan "
                                   "found so far)",
                                   r.solvesTimedOut, r.tries);
            std::printf("  %-14s %7lld %12s %9.1f%% %+7.1f%% %9.2fs %8d%s\n", r.solver.c_str(),
                        (long long)r.batch, formatBytes(r.plan->timeline.peakBytes).c_str(),
                        r.plan->timeline.tdiPercent(), solvers::timeOverheadPercent(*r.plan),
                        r.seconds, r.tries, why.c_str());
        }
        std::printf("  %zu batches imported\n", fitter.imports());
    }
    // A solver out of time at this size says so in its row; the others' answers stand.
    for (const FitRow &r : rows)
        if (!r.error.empty() && !r.outOfTime)
            return 1;
    return 0;
}

} // namespace

void addFitCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<FitOptions>();
    CLI::App *cmd = app.add_subcommand(
        "fit", "Find the largest batch whose training step fits the GPU memory, per solver");
    addModelArgument(*cmd, opts->input);
    cmd->add_option("--memory", opts->memory, "Device memory, e.g. 24GiB");
    cmd->add_option("--device", opts->device, "Memory preset: " + presetList());
    cmd->add_option("--solver", opts->solvers,
                    "Solver to compare with store-all (repeatable; default: store-all only)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_flag("--compare", opts->compare,
                  "Every interactive solver (MILP and search solvers only when named)");
    addBatchOption(*cmd, opts->input, "(not taken: fit searches the batch)");
    addTrainingOptions(*cmd, opts->input);
    cmd->add_option("--max-batch", opts->maxBatch, "Largest batch tried (default 65536)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--time-limit", opts->timeLimit, "Seconds per solve (default 10)");
    cmd->add_option(
           "--search-limit", opts->searchLimit,
           "Seconds for one solver's whole batch search; each solve gets at most a third "
           "of what is left, and the row says where the search stopped (default 2; 0: none)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-overhead", opts->maxOverhead,
                    "A plan fits only when its simulated step is at most P percent slower than "
                    "store-all's at the same batch (e.g. 35)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--json", opts->json, "One JSON object per solver");
    cmd->callback([opts, &ctx]() { ctx.exitCode = runFit(*opts); });
}

} // namespace remat::app
