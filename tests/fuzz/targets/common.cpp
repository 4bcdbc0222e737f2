#include "fuzz_model.h"
#include "fuzz_targets.h"
#include "pipeline.h"

#include "core/cost/roofline.h"
#include "core/io/plan_file.h"
#include "core/onnx/importer.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/checkpoint_solvers.h"
#include "core/training/builder.h"

#include <cstdio>
#include <cstdlib>

#ifndef REMAT_SHARED_DIR_DEFAULT
#define REMAT_SHARED_DIR_DEFAULT "../shared"
#endif

namespace remat::fuzz {

using namespace remat::core;

const std::vector<Target> &targets()
{
    static const std::vector<Target> list = {
        {"onnx", runOnnx},
        {"plan_file", runPlanFile},
        {"session_file", runSessionFile},
        {"node_link", runNodeLink},
        {"npz", runNpz},
        {"profile", runProfile},
        {"cli_args", runCliArgs},
    };
    return list;
}

const Target *findTarget(const std::string &name)
{
    for (const Target &t : targets())
        if (name == t.name)
            return &t;
    return nullptr;
}

void fail(const std::string &what)
{
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

void requireNamesOrigin(const Status &s, const std::string &origin, const char *reader)
{
    if (s.isOk())
        return;
    if (s.message().empty() || s.message().find(origin) == std::string::npos)
        fail(std::string(reader) + ": the error does not name the input '" + origin +
             "': " + s.toString());
}

const SmallModel &smallModel()
{
    static const SmallModel model = [] {
        SmallModel m;
        const char *env = std::getenv("REMAT_FUZZ_MODEL");
        const char *shared = std::getenv("REMAT_SHARED_DIR");
        m.path = env && *env ? env
                             : std::string(shared && *shared ? shared : REMAT_SHARED_DIR_DEFAULT) +
                                   "/corpus/with_weights/mlp.onnx";
        auto g = onnx::importModel(m.path);
        if (!g)
            fail("cannot load the fuzz model (set REMAT_FUZZ_MODEL or REMAT_SHARED_DIR): " +
                 g.status().toString());
        auto tg = training::buildTrainingGraph(*g);
        if (!tg)
            fail("cannot build the fuzz model's training graph: " + tg.status().toString());
        m.costs = std::make_shared<cost::Costs>(cost::rooflineCosts(*tg));
        m.graph = std::make_shared<ir::Graph>(std::move(*g));
        m.training = std::make_shared<training::TrainingGraph>(std::move(*tg));
        return m;
    }();
    return model;
}

Status runSchedules(const training::TrainingGraph &tg, const cost::Costs &costs)
{
    if (tg.opCount() > kMaxPipelineOps)
        return makeError(StatusCode::Unsupported,
                         "fuzz: graph too large to schedule in a fuzz run");
    auto storeAll =
        sim::simulate(schedule::storeAllSchedule(tg), tg, costs, {.recordPoints = false});
    if (!storeAll)
        return storeAll.status();
    solvers::SolveRequest request;
    request.graph = &tg;
    request.costs = &costs;
    request.objective = solvers::Objective::MinPeak;
    request.timeLimitSeconds = 2;
    auto plan = solvers::makeChenSqrtnSolver()->solve(request);
    if (!plan)
        return plan.status();
    auto t = sim::simulate(plan->schedule, tg, costs);
    if (!t)
        fail("chen-sqrtn's schedule does not simulate: " + t.status().toString());
    // What the CLI writes, it must read back (writePlan -> parsePlan is the `--out` / `--plan` pair).
    const std::string text = io::writePlan(*plan, tg, io::ModelIdentity::of(tg));
    auto back = io::parsePlan(text, tg, &costs, "round-trip.plan.json");
    if (!back)
        fail("a plan written by writePlan does not read back: " + back.status().toString());
    if (back->timeline.peakBytes != t->peakBytes)
        fail("a plan read back simulates to another peak");
    return Status::ok();
}

} // namespace remat::fuzz
