// remat_fuzz_seeds OUT: writes the generated part of the seed corpora, one folder per target
// (OUT/<target>/), with the project's own writers so the seeds are always in the current format:
// plans and a session for the small model, its training graph as node-link JSON, .npz archives of
// every supported dtype, a three-node ONNX model, profiles and argument strings. scripts/fuzz.sh
// adds the shared corpus's small files and tests/data/fuzz/<target>/ (the regression inputs).
#include "fuzz_model.h"

#include "core/cost/calibrated.h"
#include "core/cost/roofline.h"
#include "core/exec/npz.h"
#include "core/io/node_link.h"
#include "core/io/plan_file.h"
#include "core/io/profile_file.h"
#include "core/io/session_file.h"
#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/solvers/checkpoint_solvers.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace remat;
using namespace remat::core;

namespace {

fs::path g_out;

void write(const std::string &target, const std::string &name, const std::string &bytes)
{
    const fs::path dir = g_out / target;
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << bytes;
}

solvers::Plan storeAllPlan(const training::TrainingGraph &tg, const cost::Costs &costs)
{
    solvers::Plan p;
    p.solver = "store-all";
    p.schedule = schedule::storeAllSchedule(tg);
    p.timeline = sim::simulate(p.schedule, tg, costs, {.recordPoints = false}).value();
    return p;
}

std::string tinyOnnx(bool symbolicBatch)
{
    // x[N,4] -> MatMul(W[4,3]) -> Add(b[3]) -> Relu -> y: every field the importer reads once.
    ::onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("remat_fuzz_seeds");
    auto *opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto *g = model.mutable_graph();
    g->set_name("tiny");
    auto addValue = [](::onnx::ValueInfoProto *v, const std::string &name,
                       std::vector<int64_t> dims, const std::string &symbol) {
        v->set_name(name);
        auto *t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(::onnx::TensorProto::FLOAT);
        for (size_t i = 0; i < dims.size(); ++i) {
            auto *d = t->mutable_shape()->add_dim();
            if (i == 0 && !symbol.empty())
                d->set_dim_param(symbol);
            else
                d->set_dim_value(dims[i]);
        }
    };
    addValue(g->add_input(), "x", {2, 4}, symbolicBatch ? "N" : "");
    addValue(g->add_output(), "y", {2, 3}, symbolicBatch ? "N" : "");
    auto addInit = [&](const std::string &name, std::vector<int64_t> dims) {
        auto *t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(::onnx::TensorProto::FLOAT);
        int64_t n = 1;
        for (int64_t d : dims) {
            t->add_dims(d);
            n *= d;
        }
        for (int64_t i = 0; i < n; ++i)
            t->add_float_data(0.25f * float(i % 7) - 0.5f);
    };
    addInit("W", {4, 3});
    addInit("b", {3});
    auto addNode = [&](const std::string &op, std::vector<std::string> in, const std::string &out) {
        auto *n = g->add_node();
        n->set_op_type(op);
        n->set_name(op + "_0");
        for (const auto &i : in)
            n->add_input(i);
        n->add_output(out);
    };
    addNode("MatMul", {"x", "W"}, "h");
    addNode("Add", {"h", "b"}, "z");
    addNode("Relu", {"z"}, "y");
    return model.SerializeAsString();
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: remat_fuzz_seeds OUT_DIR\n");
        return 2;
    }
    g_out = argv[1];
    const fuzz::SmallModel &m = fuzz::smallModel();
    const training::TrainingGraph &tg = *m.training;
    const cost::Costs &costs = *m.costs;

    // plan_file: store-all and chen-sqrtn for the small model, as `remat solve --out` writes them.
    solvers::SolveRequest request;
    request.graph = &tg;
    request.costs = &costs;
    auto chen = solvers::makeChenSqrtnSolver()->solve(request);
    if (!chen) {
        std::fprintf(stderr, "chen-sqrtn: %s\n", chen.status().toString().c_str());
        return 1;
    }
    chen->pins.push_back({chen->checkpoints.empty() ? TensorId(0) : chen->checkpoints.front(),
                          solvers::PinKind::Keep});
    const solvers::Plan storeAll = storeAllPlan(tg, costs);
    const io::ModelIdentity id = io::ModelIdentity::of(tg);
    write("plan_file", "store_all.plan.json", io::writePlan(storeAll, tg, id));
    write("plan_file", "chen_sqrtn.plan.json", io::writePlan(*chen, tg, id));
    write("plan_file", "overflow_exponent.plan.json", "9e859");

    // session_file: both plans, a pin, min-time with a budget.
    io::Session s;
    s.modelPath = m.path;
    s.modelSha256 = tg.info().modelSha256;
    s.batch = tg.info().batch;
    s.budgetBytes = storeAll.timeline.peakBytes / 2;
    s.objective = solvers::Objective::MinTime;
    s.pins.insert_or_assign(tg.tensors().front().name, solvers::PinKind::Recompute);
    s.plans = {storeAll, *chen};
    s.currentPlan = 1;
    // Version 2's view state and a run with short measured curves.
    s.solver = "chen-sqrtn";
    s.view.colourMode = "plan";
    s.view.selectedNode = tg.ops().front().name;
    s.view.overlaidPlans = {0};
    io::SessionRun run;
    run.plan = 1;
    run.backend = "cpu";
    run.ok = run.gradientsChecked = run.gradientsMatch = true;
    run.iterations = 2;
    run.measuredPeakBytes = chen->timeline.peakBytes;
    for (int i = 0; i < 4; ++i) {
        run.bytesInUse.emplace_back(i, int64_t(1000 * (i + 1)));
        run.stepTimes.emplace_back(i, 1e-4 * (i + 1));
    }
    s.run = run;
    fs::create_directories(g_out / "session_file");
    const std::string sessionPath = (g_out / "session_file" / "mlp.rematproj").string();
    if (Status w = io::saveSession(sessionPath, s, &tg); !w) {
        std::fprintf(stderr, "session: %s\n", w.toString().c_str());
        return 1;
    }

    // node_link: our own export (phase, type, sticky_ram, cost_ram_fixed) and a random layered graph.
    write("node_link", "mlp_train.json", io::formatNodeLinkGraph(tg, costs, "mlp"));
    write(
        "node_link", "random_layered.json",
        R"({"directed": true, "multigraph": false, "graph": {"name": "rl", "order": [0, 1, 2, 3]},)"
        R"( "nodes": [{"name": 0, "out_cost": 10, "duration": 1.5, "param_cost": 4},)"
        R"( {"name": 1, "out_cost": 20, "duration": 2}, {"name": 2, "out_cost": 5, "duration": 1},)"
        R"( {"name": 3, "out_cost": 7, "duration": 3}],)"
        R"( "links": [{"0": 0, "1": 1}, {"0": 1, "1": 2}, {"0": 0, "1": 3}, {"0": 2, "1": 3}]})");

    // npz: one archive per dtype family, plus a bare .npy (parseNpy reads the same bytes).
    exec::NpzArchive a;
    const float f[6] = {1, 2, 3, 4, 5, 6};
    const double d[2] = {0.5, -1};
    const int64_t i64[3] = {7, 8, 9};
    a.set("input", exec::HostTensor::fromFloats({2, 3}, f));
    a.set("loss", exec::HostTensor::fromDoubles({}, {d, 1}));
    a.set("grad:fc.bias", exec::HostTensor::fromDoubles({2}, d));
    a.set("index", exec::HostTensor::fromInt64s({3}, i64));
    a.set("mask", exec::HostTensor::zeros(ir::DataType::Bool, {2, 2}));
    a.set("bytes", exec::HostTensor::zeros(ir::DataType::UInt8, {4}));
    a.set("i32", exec::HostTensor::zeros(ir::DataType::Int32, {1, 1, 2}));
    fs::create_directories(g_out / "npz");
    if (Status w = exec::writeNpz((g_out / "npz" / "dtypes.npz").string(), a); !w) {
        std::fprintf(stderr, "npz: %s\n", w.toString().c_str());
        return 1;
    }
    write("npz", "input.npy", exec::serializeNpy(*a.find("input")));

    // onnx: a three-node model with a static and with a symbolic batch.
    write("onnx", "tiny_static.onnx", tinyOnnx(false));
    write("onnx", "tiny_symbolic.onnx", tinyOnnx(true));

    // profile: both forms, {"op": seconds} and {"ops": {...}, bandwidths}.
    std::string flat = "{", ops = "{";
    for (const training::Op &op : tg.ops()) {
        const std::string entry =
            "\"" + op.name + "\": " + std::to_string(1e-6 * double(op.id.index() + 1));
        flat += (flat.size() > 1 ? ", " : "") + entry;
        ops += (ops.size() > 1 ? ", " : "") + entry;
    }
    write("profile", "flat.json", flat + "}");
    write("profile", "ops.json",
          R"({"host_to_device_bandwidth": 2.5e10, "device_to_host_bandwidth": 2.4e10, "ops": )" +
              ops + "}}");

    // profile: the versioned form as `remat run --profile-out` writes it, at the model's batch,
    // at another batch (scaled by the calibrated model) and of another model (fitted only).
    cost::Profile measured;
    measured.modelPath = tg.info().modelPath;
    measured.modelSha256 = tg.info().modelSha256;
    measured.batch = tg.info().batch;
    measured.backend = "cpu";
    measured.device = "seed";
    measured.schedule = "store-all";
    measured.iterations = 3;
    measured.warmupIterations = 1;
    for (const training::Op &op : tg.ops()) {
        const cost::OpShape shape = cost::opShape(tg, op);
        cost::ProfiledOp o;
        o.name = op.name;
        o.type = shape.type;
        o.phase = shape.phase;
        o.family = shape.family;
        o.flops = shape.flops;
        o.bytes = shape.bytes;
        o.seconds = 2e-6 + shape.flops / 1e10 + shape.bytes / 5e9;
        o.samples = 3;
        measured.stepSeconds += o.seconds;
        measured.ops.push_back(std::move(o));
    }
    write("profile", "versioned.json", io::writeProfile(measured));
    cost::Profile otherBatch = measured;
    otherBatch.batch = measured.batch + 2;
    for (cost::ProfiledOp &o : otherBatch.ops) {
        o.flops *= 2;
        o.bytes *= 2;
    }
    write("profile", "other_batch.json", io::writeProfile(otherBatch));
    cost::Profile otherModel = measured;
    otherModel.modelSha256 = std::string(64, '0');
    write("profile", "other_model.json", io::writeProfile(otherModel));

    // cli_args: the first byte picks the parser (0: byte count, 1: objective, 2: pin kind).
    const std::pair<char, const char *> args[] = {{0, "6GiB"}, {0, "512 MiB"},   {0, "1.5GB"},
                                                  {0, "100B"}, {0, "2TiB"},      {0, "0.5 KiB"},
                                                  {0, "1234"}, {1, "min-peak"},  {1, "min-time"},
                                                  {2, "keep"}, {2, "recompute"}, {2, "offload"}};
    int n = 0;
    for (const auto &[selector, text] : args)
        write("cli_args", "arg" + std::to_string(n++), std::string(1, selector) + text);
    std::printf("seeds written to %s\n", g_out.string().c_str());
    return 0;
}
