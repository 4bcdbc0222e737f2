// Measured time on the CPU backend (or CUDA, --backend cuda): is a profile's prediction true? For every corpus model with
// weights, a profile is taken from store-all runs (the same thing `remat run --profile-out` does),
// plans are solved with the profile's costs (chen-sqrtn, feng-huang at minimum peak, rotor
// min-time at half store-all's activation peak) and each schedule's predicted step time (simulator, profile
// costs) is set beside its measured median; then a profile taken at batch 2 (with each op's second
// point at batch 1, as `remat run --profile-out` takes it) predicts batch 4, and the same profile
// without its second points ("2(one)") shows what the calibrated model alone does. The roofline's
// estimate is printed beside both.
//   bench_profile [iterations] [models...]      (default 5 timed iterations after 1 warm-up; a
//   model whose store-all step is short gets up to 101, about half a second of steps)
//   bench_profile [iterations] --backend cuda --batch 32 --model resnet50.onnx ...
//       any backend, base batch B (default: the file's) and model files (no feed: random data);
//       with --batch B the other profile is taken at B/2 (second points at B/4) and predicts B,
//       as `remat run --batch B/2 --profile-out` would for a step at B. Profile and plans run in
//       one process, interleaved, so what differs from one process to the next (which cores the
//       host thread gets, whose launch-and-wait latency is in every synchronous op's time: ±8%
//       between processes on an H200 machine) is the same for both.
// Two phases: store-all profiles (at the model's batch and at batch 2) to solve the plans with,
// then every schedule at both batches interleaved round-robin, store-all's runs recording the
// profiles the predictions use, so a change of load on a shared machine hits the profile and
// what it predicts alike; "spread" is (max - min) / median
// of each schedule's step times, the noise the comparison has to live with. On a shared machine
// run it single-threaded at real-time priority for a quiet core:
//   OPENBLAS_NUM_THREADS=1 chrt -f 1 bench_profile 5
#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"
#include "core/exec/cpu/cpu_backend.h"
#include "core/exec/executor.h"
#include "core/exec/npz.h"
#include "core/exec/profile_recorder.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/registry.h"
#include "core/training/builder.h"
#ifdef REMAT_HAVE_CUDA
#include "gpu/cuda_backend.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using namespace remat::core;

namespace {

struct Model
{
    std::string name, onnx, feed;
};

/// What the command line chose: the backend, and the batches (base 0: the file's; a profile at
/// `low` (second points at `lowSecond`) predicts `high`).
struct Setup
{
    std::string backend = "cpu";
    int64_t base = 0, low = 2, lowSecond = 1, high = 4;
} g_setup;

Expected<std::unique_ptr<exec::Backend>> makeBackend()
{
    if (g_setup.backend == "cpu")
        return exec::makeCpuBackend();
#ifdef REMAT_HAVE_CUDA
    if (g_setup.backend == "cuda")
        return remat::gpu::makeCudaBackend(remat::gpu::CudaBackendOptions{});
#endif
    return makeError(StatusCode::Unsupported, "backend " + g_setup.backend + " not in this build");
}

struct Sched
{
    std::string name;
    schedule::Schedule schedule;
    std::vector<double> seconds; ///< measured step times
    double recomputePercent = 0;
};

/// A model at one batch, ready to run.
struct Loaded
{
    std::unique_ptr<ir::Graph> graph;
    std::unique_ptr<training::TrainingGraph> tg;
    std::unique_ptr<exec::Backend> backend;
    std::unique_ptr<exec::Executor> ex;
};

Expected<Loaded> load(const Model &m, int64_t batch, bool feed)
{
    Loaded l;
    onnx::ImportOptions o;
    o.batch = batch;
    REMAT_ASSIGN_OR_RETURN(ir::Graph g, onnx::importModel(m.onnx, o));
    l.graph = std::make_unique<ir::Graph>(std::move(g));
    REMAT_ASSIGN_OR_RETURN(training::TrainingGraph tg, training::buildTrainingGraph(*l.graph));
    l.tg = std::make_unique<training::TrainingGraph>(std::move(tg));
    REMAT_ASSIGN_OR_RETURN(l.backend, makeBackend());
    l.ex = std::make_unique<exec::Executor>(*l.backend, *l.tg, *l.graph);
    exec::ExecInputs in;
    if (feed && !m.feed.empty())
        if (auto f = exec::readNpz(m.feed))
            in.feed = std::move(*f);
    REMAT_RETURN_IF_ERROR(l.ex->prepare(in));
    return l;
}

/// store-all, chen-sqrtn, feng-huang (min-peak) and rotor (min-time at store-all's peak less half
/// its activation peak), solved with `costs`.
std::vector<Sched> plans(const training::TrainingGraph &tg, const cost::Costs &costs)
{
    std::vector<Sched> out;
    out.push_back({"store-all", schedule::storeAllSchedule(tg), {}, 0});
    // Half of store-all's whole peak is below what any plan reaches on these small models (weights
    // and their gradients are most of it: rotor answers infeasible), so rotor's budget is the fixed
    // part plus half of store-all's activation peak.
    // On the small models rotor's smallest peak is above that (its chain keeps more than half the
    // activations live): then three quarters of the activation peak, said as "rotor 3/4act".
    int64_t storeAllPeak = 0, activationPeak = 0;
    if (auto t = sim::simulate(out[0].schedule, tg, costs, {.recordPoints = false})) {
        storeAllPeak = t->peakBytes;
        activationPeak = t->activationPeakBytes;
    }
    const solvers::SolverRegistry reg = solvers::makeRegistry();
    for (const char *id : {"chen-sqrtn", "feng-huang", "rotor"}) {
        const solvers::Solver *solver = reg.find(id);
        if (!solver)
            continue;
        const bool rotor = std::string(id) == "rotor";
        for (const auto &[name, quarters] :
             rotor ? std::vector<std::pair<const char *, int>>{{"rotor 1/2act", 2},
                                                               {"rotor 3/4act", 1}}
                   : std::vector<std::pair<const char *, int>>{{id, 0}}) {
            solvers::SolveRequest req;
            req.graph = &tg;
            req.costs = &costs;
            req.timeLimitSeconds = 30;
            req.objective = rotor ? solvers::Objective::MinTime : solvers::Objective::MinPeak;
            req.budgetBytes = rotor ? storeAllPeak - activationPeak * quarters / 4 : 0;
            auto plan = solver->solve(req);
            if (!plan) {
                std::printf("  %s: %s\n", name, plan.status().toString().c_str());
                break;
            }
            if (plan->status == solvers::SolveStatus::Infeasible) {
                std::printf("  %s: infeasible (%s)\n", name, plan->note.c_str());
                continue; // rotor: the next, larger budget
            }
            out.push_back({name, plan->schedule, {}, plan->timeline.tdiPercent()});
            break;
        }
    }
    return out;
}

double spreadPercent(const std::vector<double> &v)
{
    if (v.empty())
        return 0;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return 100.0 * (*hi - *lo) / exec::median(v);
}

/// One schedule on one executor, timed; its runs feed `recorder` when given.
struct Job
{
    exec::Executor *ex;
    Sched *sched;
    exec::ProfileRecorder *recorder = nullptr;
};

/// Runs every job `iterations` times after one warm-up round, round-robin, so a change of load
/// on a shared machine hits every job alike.
Status measure(std::vector<Job> jobs, int iterations)
{
    for (int i = 0; i <= iterations; ++i)
        for (Job &j : jobs) {
            exec::ExecOptions eo;
            eo.downloadGradients = false;
            eo.observer = j.recorder;
            auto r = j.ex->run(j.sched->schedule, eo);
            if (!r)
                return r.status().withContext(j.sched->name);
            if (j.recorder)
                i == 0 ? j.recorder->discardIteration()
                       : j.recorder->commitIteration(r->stepSeconds);
            if (i > 0)
                j.sched->seconds.push_back(r->stepSeconds);
        }
    return Status::ok();
}

struct Tally
{
    int rows = 0, within = 0;
    double worst = 0;
    void add(double errorPercent, double limit)
    {
        ++rows;
        within += std::abs(errorPercent) <= limit;
        worst = std::max(worst, std::abs(errorPercent));
    }
};

void printRow(const std::string &model, const std::string &batch, const Sched &s, double predicted,
              double roofline, const char *source, Tally &tally, double limit)
{
    const double measured = exec::median(s.seconds);
    const double err = 100.0 * (predicted - measured) / measured;
    tally.add(err, limit);
    std::printf("%-20s %-7s %-11s %7.1f %11.2f %11.2f %+8.1f%% %7.1f%% %12.3f  %-10s %s\n",
                model.c_str(), batch.c_str(), s.name.c_str(), s.recomputePercent, measured * 1e3,
                predicted * 1e3, err, spreadPercent(s.seconds), roofline * 1e3, source,
                std::abs(err) <= limit ? "ok" : "OVER");
}

void header()
{
    std::printf("%-20s %-7s %-11s %7s %11s %11s %9s %8s %12s  %-10s %s\n", "model", "batch",
                "schedule", "recomp%", "measured ms", "predicted", "error", "spread", "roofline ms",
                "source", "");
}

void benchModel(const Model &m, int iterations, Tally &sameBatch, Tally &otherBatch)
{
    auto base = load(m, g_setup.base, true);
    auto b2 = load(m, g_setup.low, false);
    auto b4 = load(m, g_setup.high, false);
    auto b1 = load(m, g_setup.lowSecond, false); // the low profile's second point, as `run
                                                 // --profile-out` takes it
    if (!base || !b2 || !b4 || !b1) {
        std::printf("%-20s skipped: %s\n", m.name.c_str(),
                    (!base ? base.status()
                     : !b2 ? b2.status()
                     : !b4 ? b4.status()
                           : b1.status())
                        .toString()
                        .c_str());
        return;
    }
    const training::TrainingGraph &tg = *base->tg;
    auto profileOf = [](const exec::ProfileRecorder &rec, const Loaded &l) {
        return rec.profile({g_setup.backend, l.backend->description(), "store-all"});
    };

    // Phase 1: store-all profiles at the model's batch and at batch 2, to solve the plans with
    // (chen-sqrtn and feng-huang ignore times; rotor's min-time objective reads them).
    exec::ProfileRecorder first(tg), first2(*b2->tg);
    Sched warmBase{"store-all", schedule::storeAllSchedule(tg), {}, 0};
    Sched warm2{"store-all", schedule::storeAllSchedule(*b2->tg), {}, 0};
    if (Status s = measure({{base->ex.get(), &warmBase, &first}, {b2->ex.get(), &warm2, &first2}},
                           iterations);
        !s.isOk()) {
        std::printf("%-20s failed: %s\n", m.name.c_str(), s.toString().c_str());
        return;
    }
    auto solveCosts = cost::profileCosts(profileOf(first, *base), tg, cost::Roofline{}, m.name);
    auto solveCosts4 =
        cost::profileCosts(profileOf(first2, *b2), *b4->tg, cost::Roofline{}, m.name + " b2");
    if (!solveCosts || !solveCosts4) {
        std::printf("%-20s failed: %s\n", m.name.c_str(),
                    (!solveCosts ? solveCosts.status() : solveCosts4.status()).toString().c_str());
        return;
    }
    std::vector<Sched> schedules = plans(tg, *solveCosts);
    std::vector<Sched> at4 = plans(*b4->tg, *solveCosts4);

    // Phase 2: every schedule at both batches, interleaved; store-all's runs at the model's
    // batch and at batch 2 are the profiles the predictions use (taken beside what they predict).
    exec::ProfileRecorder rec(tg), rec2(*b2->tg), rec1(*b1->tg);
    Sched store2{"store-all", schedule::storeAllSchedule(*b2->tg), {}, 0};
    Sched store1{"store-all", schedule::storeAllSchedule(*b1->tg), {}, 0};
    std::vector<Job> jobs;
    for (Sched &s : schedules)
        jobs.push_back({base->ex.get(), &s, &s == &schedules.front() ? &rec : nullptr});
    jobs.push_back({b2->ex.get(), &store2, &rec2});
    jobs.push_back({b1->ex.get(), &store1, &rec1});
    for (Sched &s : at4)
        jobs.push_back({b4->ex.get(), &s, nullptr});
    // Small models step in microseconds to milliseconds, where one preemption is a large share:
    // they get more steps (about half a second of store-all, at most 101).
    const double step = std::max(exec::median(warmBase.seconds), exec::median(warm2.seconds));
    const int steps = step > 0 ? std::clamp(int(0.5 / step), iterations, 101) : iterations;
    if (Status s = measure(jobs, steps); !s.isOk()) {
        std::printf("%-20s failed: %s\n", m.name.c_str(), s.toString().c_str());
        return;
    }

    const cost::Profile profile = profileOf(rec, *base);
    cost::ProfileCostsReport rep;
    auto costs = cost::profileCosts(profile, tg, cost::Roofline{}, m.name + " profile", &rep);
    // The batch-2 profile as `remat run --profile-out` writes it (each op also at batch 1), and
    // the same without its second points (one batch: the calibrated model alone scales it).
    const cost::Profile oneBatch = profileOf(rec2, *b2);
    cost::Profile p2 = oneBatch;
    exec::addSecondPoint(p2, profileOf(rec1, *b1));
    cost::ProfileCostsReport rep4, rep4one;
    auto costs4 = cost::profileCosts(p2, *b4->tg, cost::Roofline{}, m.name + " b2 profile", &rep4);
    auto costs4one =
        cost::profileCosts(oneBatch, *b4->tg, cost::Roofline{}, m.name + " b2 one", &rep4one);
    if (!costs || !costs4 || !costs4one) {
        std::printf("%-20s failed: %s\n", m.name.c_str(),
                    (!costs    ? costs.status()
                     : !costs4 ? costs4.status()
                               : costs4one.status())
                        .toString()
                        .c_str());
        return;
    }
    const cost::Costs roofline = cost::rooflineCosts(tg);
    const std::string batch = std::to_string(tg.info().batch);
    for (const Sched &s : schedules) {
        auto p = sim::simulate(s.schedule, tg, *costs, {.recordPoints = false});
        auto r = sim::simulate(s.schedule, tg, roofline, {.recordPoints = false});
        if (p && r)
            printRow(m.name, batch, s, p->totalSeconds, r->totalSeconds,
                     cost::timeSourceName(costs->timeSource), sameBatch, 10);
    }
    std::printf("%-20s profile: %zu ops, %d timed steps per schedule, overhead outside ops %.3f ms "
                "of %.3f ms, load factor %.3f\n",
                m.name.c_str(), profile.ops.size(), profile.iterations,
                profile.overheadSeconds * 1e3, profile.stepSeconds * 1e3, rep.loadFactor);

    const cost::Costs roofline4 = cost::rooflineCosts(*b4->tg);
    const std::string lowHigh = fmt::format("{} -> {}", g_setup.low, g_setup.high);
    const std::string oneHigh = fmt::format("{}(one)->{}", g_setup.low, g_setup.high);
    for (const Sched &s : at4) {
        auto p = sim::simulate(s.schedule, *b4->tg, *costs4, {.recordPoints = false});
        auto r = sim::simulate(s.schedule, *b4->tg, roofline4, {.recordPoints = false});
        if (p && r)
            printRow(m.name, lowHigh, s, p->totalSeconds, r->totalSeconds,
                     cost::timeSourceName(costs4->timeSource), otherBatch, 20);
    }
    Tally oneBatchTally; // before the second point: for the comparison only
    for (const Sched &s : at4) {
        auto p = sim::simulate(s.schedule, *b4->tg, *costs4one, {.recordPoints = false});
        auto r = sim::simulate(s.schedule, *b4->tg, roofline4, {.recordPoints = false});
        if (p && r)
            printRow(m.name, oneHigh, s, p->totalSeconds, r->totalSeconds,
                     cost::timeSourceName(costs4one->timeSource), oneBatchTally, 20);
    }
    std::printf("%-20s batch %lld from the batch-%lld profile (%.3f ms a step at batch %lld): %zu "
                "ops scaled (%zu along their own two sizes, batches %lld and %lld), %zu fitted, "
                "%zu measured, %zu estimated, load factor %.3f; \"%s\": the same profile "
                "without its batch-%lld points\n",
                m.name.c_str(), (long long)g_setup.high, (long long)g_setup.low,
                p2.stepSeconds * 1e3, (long long)g_setup.low, rep4.scaled, rep4.twoPoint,
                (long long)g_setup.low, (long long)g_setup.lowSecond, rep4.fitted, rep4.measured,
                rep4.estimated, rep4.loadFactor, oneHigh.c_str(), (long long)g_setup.lowSecond);
}

} // namespace

int main(int argc, char **argv)
{
    int iterations = 5;
    std::vector<std::string> names;
    std::vector<Model> extra;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--backend" && i + 1 < argc) {
            g_setup.backend = argv[++i];
        } else if (a == "--batch" && i + 1 < argc) {
            g_setup.base = g_setup.high = std::max<int64_t>(1, std::atoll(argv[++i]));
            g_setup.low = std::max<int64_t>(1, g_setup.high / 2);
            g_setup.lowSecond = std::max<int64_t>(1, g_setup.low / 2);
        } else if (a == "--model" && i + 1 < argc) {
            const std::filesystem::path path = argv[++i];
            extra.push_back({path.stem().string(), path.string(), ""});
        } else if (i == 1 && std::isdigit(static_cast<unsigned char>(a[0]))) {
            iterations = std::max(1, std::atoi(a.c_str()));
        } else {
            names.push_back(a);
        }
    }
    const std::string corpus = std::string(REMAT_SHARED_DIR) + "/corpus/with_weights/";
    std::vector<Model> models;
    if (extra.empty() || !names.empty()) {
        std::error_code ec;
        for (const auto &e : std::filesystem::directory_iterator(corpus, ec))
            if (e.path().extension() == ".onnx") {
                const std::string stem = e.path().stem().string();
                const std::filesystem::path feed = e.path().parent_path() / (stem + ".npz");
                models.push_back(
                    {stem, e.path().string(), std::filesystem::exists(feed) ? feed.string() : ""});
            }
        std::sort(models.begin(), models.end(),
                  [](const Model &a, const Model &b) { return a.name < b.name; });
    }
    if (!names.empty()) {
        std::vector<Model> chosen;
        for (const std::string &n : names)
            for (const Model &m : models)
                if (m.name == n)
                    chosen.push_back(m);
        models = chosen;
    }
    models.insert(models.end(), extra.begin(), extra.end());
    auto probe = makeBackend();
    if (!probe) {
        std::printf("%s\n", probe.status().toString().c_str());
        return 0;
    }
    std::printf("%s: predicted (simulator, profile costs) vs measured step time, median of %d "
                "steps after 1 warm-up\n",
                (*probe)->description().c_str(), iterations);
    probe->reset();
    header();
    Tally same, other;
    for (const Model &m : models)
        benchModel(m, iterations, same, other);
    std::printf("same batch: %d of %d within 10%% (worst %.1f%%); batch %lld -> %lld: %d of %d "
                "within 20%% (worst %.1f%%)\n",
                same.within, same.rows, same.worst, (long long)g_setup.low, (long long)g_setup.high,
                other.within, other.rows, other.worst);
    return 0;
}
