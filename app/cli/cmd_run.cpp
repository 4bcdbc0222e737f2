// remat run MODEL [--plan plan.json] [--backend cpu|cuda] [--iters N] [--feed F.npz]
//            [--dump-gradients F.npz] [--dump-parameters F.npz] [--check] [--json] [--batch N]
//            [--seed S] [training options]
//            [--profile-out P.json] [--profile P.json]
// Executes a training step (store-all, or a plan's schedule) on a backend: measured peak from the
// backend's allocator (and the device's own figure on CUDA) beside the simulator's prediction for
// the same schedule, step time per iteration, loss; --check also runs store-all and compares every
// gradient. --profile-out writes each op's measured time (docs/profile-format.md).
#include "commands.h"
#include "model_loading.h"
#include "time_source.h"

#include "core/cost/roofline.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/device_module.h"
#include "core/exec/executor.h"
#include "core/exec/npz.h"
#include "core/exec/profile_recorder.h"
#include "core/io/plan_file.h"
#include "core/io/profile_file.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/builder.h"
#include "core/util/bytes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace remat::app {

namespace {

using namespace remat::core;

struct RunOptions
{
    ModelInput input;
    std::string plan;
    std::string backend = "cpu";
    int iters = 1;
    std::string feed;
    std::string dumpGradients;
    std::string dumpParameters;
    bool check = false;
    bool json = false;
    uint64_t seed = 1234;
    std::string convolution = "cudnn";
    std::string profileOut;
    bool oneBatchProfile = false;
    std::string profile;
};

Expected<std::unique_ptr<exec::Backend>> makeBackend(const std::string &id,
                                                     const std::string &convolution)
{
    if (id == "cpu")
        return exec::makeCpuBackend();
    if (id == "cuda") {
        // The CUDA backend's library is opened here, the first time a run asks for it.
        REMAT_ASSIGN_OR_RETURN(const exec::DeviceModule *cuda, exec::loadCudaModule());
        exec::DeviceBackendOptions o;
        o.useCudnn = convolution == "cudnn";
        return cuda->makeBackend(o);
    }
    return makeError(StatusCode::InvalidArgument,
                     fmt::format("unknown backend '{}' (cpu, cuda)", id));
}

int fail(const Status &s)
{
    std::fprintf(stderr, "error: %s\n", s.toString().c_str());
    return 1;
}

int runRun(const RunOptions &o)
{
    // A plan names the ops and tensors of the training graph it was solved on (`remat solve`
    // builds without the input gradient); without a plan the input gradient is computed too.
    // A profile is taken on the graph simulate / solve / train-graph plan (no input gradient), so
    // every op it times matches theirs, unless gradients are to be checked or dumped.
    training::BuildOptions build;
    build.inputGradients =
        o.plan.empty() && (o.profileOut.empty() || o.check || !o.dumpGradients.empty());
    LoadStage failed = LoadStage::Import;
    Expected<LoadedModel> loaded = loadTrainingModel(o.input, build, &failed);
    if (!loaded)
        return fail(failed == LoadStage::Build ? loaded.status().withContext(o.input.model)
                                               : loaded.status());
    const ir::Graph &graph = loaded->graph;
    std::shared_ptr<const training::TrainingGraph> tg = loaded->problem->training;
    cost::Costs costs = *loaded->problem->costs;
    schedule::Schedule sched = loaded->problem->storeAll.schedule;
    std::string scheduleName = "store-all";
    if (!o.plan.empty()) {
        auto plan = io::readPlan(o.plan, *tg, &costs);
        if (!plan) {
            // maybe solved on a graph with the input gradient
            training::BuildOptions withInput = build;
            withInput.inputGradients = true;
            withInput.attention = tg->info().training.attention;
            auto tg2 = training::buildTrainingGraph(graph, withInput);
            Expected<solvers::Plan> plan2 = plan.status();
            if (tg2) {
                costs = cost::rooflineCosts(*tg2);
                plan2 = io::readPlan(o.plan, *tg2, &costs);
            }
            if (!plan2)
                return fail(plan.status());
            tg = std::make_shared<const training::TrainingGraph>(std::move(*tg2));
            plan = std::move(plan2);
        }
        sched = plan->schedule;
        scheduleName = plan->solver.empty() ? o.plan : plan->solver;
    }
    // The step time is predicted with the profile's costs where one is given (the plan itself was
    // read with the roofline's, which only its validation uses).
    cost::ProfileCostsReport report;
    auto timeCosts = costsFor(o.profile, *tg, &report);
    if (!timeCosts)
        return fail(timeCosts.status());
    const cost::ProfileCostsReport *rep = o.profile.empty() ? nullptr : &report;
    auto predicted = sim::simulate(sched, *tg, *timeCosts, {.recordPoints = false});
    if (!predicted)
        return fail(predicted.status());

    auto backend = makeBackend(o.backend, o.convolution);
    if (!backend)
        return fail(backend.status());
    exec::Executor executor(**backend, *tg, graph);
    exec::ExecInputs inputs;
    inputs.seed = o.seed;
    if (!o.feed.empty()) {
        auto feed = exec::readNpz(o.feed);
        if (!feed)
            return fail(feed.status());
        inputs.feed = std::move(*feed);
    }
    if (Status s = executor.prepare(inputs); !s.isOk())
        return fail(s);

    std::vector<double> stepSeconds;
    exec::ExecResult last;
    int64_t measuredPeak = 0;
    int64_t scratchPeak = 0; // the backend's scratch outside the byte count
    std::optional<int64_t> devicePeak;
    // With --profile-out, the first of two or more iterations warms caches and the allocator up
    // and is not timed into the profile.
    exec::ProfileRecorder recorder(*tg);
    const bool profiling = !o.profileOut.empty();
    const int iters = std::max(1, o.iters);
    for (int i = 0; i < iters; ++i) {
        exec::ExecOptions eo;
        eo.downloadGradients = o.check || !o.dumpGradients.empty() || i + 1 == iters;
        eo.downloadParameters = !o.dumpParameters.empty() && i + 1 == iters;
        eo.observer = profiling ? &recorder : nullptr;
        auto r = executor.run(sched, eo);
        if (!r)
            return fail(r.status());
        if (profiling) {
            if (i == 0 && iters > 1)
                recorder.discardIteration();
            else
                recorder.commitIteration(r->stepSeconds);
        }
        stepSeconds.push_back(r->stepSeconds);
        measuredPeak = std::max(measuredPeak, r->measuredPeakBytes);
        scratchPeak = std::max(scratchPeak, r->scratchPeakBytes);
        if (r->devicePeakBytes)
            devicePeak = std::max(devicePeak.value_or(0), *r->devicePeakBytes);
        last = std::move(*r);
    }

    std::optional<exec::GradientComparison> comparison;
    if (o.check) {
        auto reference = executor.run(schedule::storeAllSchedule(*tg));
        if (!reference)
            return fail(reference.status().withContext("store-all check run"));
        auto cmp = exec::compareGradients(last.gradients, reference->gradients);
        if (!cmp)
            return fail(cmp.status());
        comparison = *cmp;
    }
    // Bitwise on a deterministic backend; 1e-5 relative allows a device's reordered sums.
    const bool gradientsMatch =
        comparison && (comparison->bitwiseEqual || comparison->maxRelativeError <= 1e-5);

    if (!o.dumpGradients.empty())
        if (Status s = exec::writeNpz(o.dumpGradients, last.gradients); !s.isOk())
            return fail(s);
    if (!o.dumpParameters.empty())
        if (Status s = exec::writeNpz(o.dumpParameters, last.parameters); !s.isOk())
            return fail(s);
    std::string secondPoint; // what the profile's second batch gave, for the report
    if (profiling) {
        cost::Profile profile =
            recorder.profile({(*backend)->id(), (*backend)->description(), scheduleName});
        // A second point per op, the same model's store-all step at another batch: with two sizes
        // an op's time at a third follows its own line (cost::twoPointSeconds).
        if (!o.oneBatchProfile && tg->info().batch > 0) {
            ModelInput other = o.input;
            other.batch = exec::secondProfileBatch(tg->info().batch);
            Expected<LoadedModel> at = loadTrainingModel(other, build);
            Expected<cost::Profile> second =
                at ? exec::profileStoreAll(
                         **backend, at->training, at->graph,
                         exec::ExecInputs{.feed = {}, .seed = o.seed}, std::max(1, iters - 1),
                         {(*backend)->id(), (*backend)->description(), "store-all"})
                   : Expected<cost::Profile>(at.status());
            if (second) {
                const int n = exec::addSecondPoint(profile, *second);
                secondPoint = fmt::format("; {} ops also at batch {}", n, other.batch);
            } else {
                secondPoint = fmt::format("; no second batch: {}", second.status().message());
                std::fprintf(stderr,
                             "warning: the profile times batch %lld only (batch %lld: %s); it "
                             "scales to other batches through the calibrated model\n",
                             (long long)tg->info().batch, (long long)other.batch,
                             second.status().message().c_str());
            }
        }
        if (Status s = io::saveProfile(o.profileOut, profile); !s.isOk())
            return fail(s);
    }
    const double medianStep = exec::median(stepSeconds);

    if (o.json) {
        nlohmann::json j = {
            {"model", o.input.model},
            {"batch", tg->info().batch},
            {"schedule", scheduleName},
            {"backend", (*backend)->id()},
            {"device", (*backend)->description()},
            {"measured_peak_bytes", measuredPeak},
            {"device_peak_bytes",
             devicePeak ? nlohmann::json(*devicePeak) : nlohmann::json(nullptr)},
            {"predicted_peak_bytes", predicted->peakBytes},
            {"backend_scratch_peak_bytes", scratchPeak},
            {"peak_matches_prediction", measuredPeak == predicted->peakBytes},
            {"step_seconds", stepSeconds},
            {"median_step_seconds", medianStep},
            {"predicted_step_seconds", predicted->totalSeconds},
            {"loss", last.loss},
            {"recompute_steps", last.timeline.recomputeSteps},
        };
        addTimeSourceJson(j, *timeCosts, rep);
        if (profiling)
            j["profile_out"] = o.profileOut;
        j["profile_second_point"] = secondPoint.empty() ? std::string() : secondPoint.substr(2);
        if (comparison) {
            j["gradients_match"] = gradientsMatch;
            j["gradients_bitwise_equal"] = comparison->bitwiseEqual;
            j["gradients_max_rel_error"] = comparison->maxRelativeError;
        }
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s at batch %lld, schedule %s, backend %s (%s)\n", o.input.model.c_str(),
                    (long long)tg->info().batch, scheduleName.c_str(), (*backend)->id().c_str(),
                    (*backend)->description().c_str());
        std::printf("  measured peak   %s (%lld B)%s\n", formatBytes(measuredPeak).c_str(),
                    (long long)measuredPeak,
                    measuredPeak == predicted->peakBytes ? "  = predicted" : "");
        std::printf("  predicted peak  %s (%lld B)\n", formatBytes(predicted->peakBytes).c_str(),
                    (long long)predicted->peakBytes);
        if (scratchPeak > 0)
            std::printf("  kernel scratch  %s (%lld B, float32 copies of one op's half operands: "
                        "the backend's, outside the modelled memory)\n",
                        formatBytes(scratchPeak).c_str(), (long long)scratchPeak);
        if (devicePeak)
            std::printf("  device peak     %s (%lld B, the device's own figure)\n",
                        formatBytes(*devicePeak).c_str(), (long long)*devicePeak);
        std::string times;
        for (double s : stepSeconds)
            times += fmt::format("{}{:.4f}", times.empty() ? "" : " ", s);
        std::printf("  step seconds    %s (median %.4f)\n", times.c_str(), medianStep);
        std::printf("  predicted step  %.4f s (times: %s)\n", predicted->totalSeconds,
                    timeSourceText(*timeCosts, rep).c_str());
        if (profiling)
            std::printf("  profile         %s (%d timed iterations%s%s)\n", o.profileOut.c_str(),
                        recorder.timedIterations(),
                        recorder.warmupIterations() ? " after 1 warm-up" : "", secondPoint.c_str());
        std::printf("  loss            %.9g\n", last.loss);
        if (comparison)
            std::printf("  gradients       %s store-all (%s, max rel error %.3g)\n",
                        gradientsMatch ? "match" : "DIFFER from",
                        comparison->bitwiseEqual ? "bitwise" : "not bitwise",
                        comparison->maxRelativeError);
    }
    if (comparison && !gradientsMatch)
        return 2;
    return 0;
}

} // namespace

void addRunCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<RunOptions>();
    CLI::App *cmd = app.add_subcommand(
        "run", "Execute a training step on a backend: measured vs predicted peak, "
               "step time, loss, gradient check");
    addModelArgument(*cmd, opts->input)->check(CLI::ExistingFile);
    cmd->add_option("--plan", opts->plan, "plan JSON from `remat solve` (default: store-all)");
    cmd->add_option("--backend", opts->backend, "cpu or cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_option("--iters", opts->iters, "training steps to time")->check(CLI::PositiveNumber);
    cmd->add_option("--feed", opts->feed,
                    "npz with the input (named as the graph input) and R (the loss cotangent)");
    cmd->add_option("--dump-gradients", opts->dumpGradients,
                    "write loss, grad_input, grad:<param> to this npz");
    cmd->add_option("--dump-parameters", opts->dumpParameters,
                    "write every parameter after the step (updated by --optimizer) to this npz");
    cmd->add_flag("--check", opts->check, "also run store-all and compare every gradient");
    cmd->add_flag("--json", opts->json, "JSON output");
    addBatchOption(*cmd, opts->input, "batch size (default: as in the file)", BatchCheck::None);
    addTrainingOptions(*cmd, opts->input);
    cmd->add_option(
           "--cuda-convolution", opts->convolution,
           "cuda: convolutions through cudnn (default) or im2col (im2col + cuBLAS, 1-D and 2-D)")
        ->check(CLI::IsMember({"cudnn", "im2col"}));
    cmd->add_option("--seed", opts->seed, "seed for data the file and the feed do not give");
    cmd->add_option(
        "--profile-out", opts->profileOut,
        "write each op's measured time (median over the iterations; the first of several is a "
        "warm-up) for `simulate`, `solve`, `train-graph --profile` (use --iters 5 or more)");
    cmd->add_flag("--profile-one-batch", opts->oneBatchProfile,
                  "with --profile-out: time only this batch (by default the store-all step is "
                  "also timed at half the batch, or 2 from 1, so each op's time scales along its "
                  "own two sizes)");
    addProfileOption(*cmd, opts->profile);
    cmd->callback([opts, &ctx] { ctx.exitCode = runRun(*opts); });
}

} // namespace remat::app
