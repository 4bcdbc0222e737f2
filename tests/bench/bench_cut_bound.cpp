// The cut relaxation's proven lower bound on recompute (core/solvers/checkmate/frontier.h) at
// one budget, alone: the cut-set search for a given time, or the LP (and CBC) at a cut set given.
// The table in tests/bench/recompute_bound.md comes from `remat solve`; this isolates the bound
// from the plan search that shares its time limit there.
//   bench_cut_bound MODEL BATCH BUDGET_MIB SECONDS [CUT,CUT,...]
#include "core/cost/roofline.h"
#include "core/onnx/importer.h"
#include "core/solvers/checkmate/frontier.h"
#include "core/solvers/checkmate/problem.h"
#include "core/training/builder.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace remat::core;

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s MODEL BATCH BUDGET_MIB SECONDS [CUT,CUT,...]\n", argv[0]);
        return 2;
    }
    onnx::ImportOptions o;
    o.batch = std::atoll(argv[2]);
    Expected<ir::Graph> g = onnx::importModel(argv[1], o);
    if (!g) {
        std::fprintf(stderr, "%s\n", g.status().message().c_str());
        return 1;
    }
    Expected<training::TrainingGraph> tg = training::buildTrainingGraph(*g, {});
    if (!tg) {
        std::fprintf(stderr, "%s\n", tg.status().message().c_str());
        return 1;
    }
    const cost::Costs costs = cost::rooflineCosts(*tg, cost::Roofline{});
    Expected<solvers::checkmate::Problem> p = solvers::checkmate::buildProblem(*tg, costs, {});
    if (!p) {
        std::fprintf(stderr, "%s\n", p.status().message().c_str());
        return 1;
    }
    fmt::print("{} ops, forward {} (the loss first runs at {})\n", p->n, p->firstNonForward,
               p->firstNonForward);
    double step = 0;
    for (double c : p->cost)
        step += c;
    const auto budget = int64_t(std::atof(argv[3]) * 1024 * 1024);
    const double seconds = std::atof(argv[4]);
    const auto t0 = std::chrono::steady_clock::now();
    auto spent = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    fmt::print("| model | budget | seconds | bound s | bound % | cuts | LPs | wall s |\n"
               "|---|---|---|---|---|---|---|---|\n");
    if (argc > 5) {
        std::vector<int> cuts;
        std::stringstream ss(argv[5]);
        for (std::string t; std::getline(ss, t, ',');)
            cuts.push_back(std::atoi(t.c_str()));
        const auto lp = solvers::checkmate::cutBound(*p, budget, cuts, -1, seconds, {}, false);
        fmt::print("| {} | {} MiB | {} | {:.6g} | {:.2f}% | {} (LP) | 1 | {:.2f} |\n", argv[1],
                   argv[3], seconds, lp.bound, 100 * lp.bound / step, argv[5], spent());
        const auto mip = solvers::checkmate::cutBound(*p, budget, cuts, -1, seconds, {}, true);
        fmt::print("| {} | {} MiB | {} | {:.6g} | {:.2f}% | {} (CBC{}) | 1 | {:.2f} |\n", argv[1],
                   argv[3], seconds, mip.bound, 100 * mip.bound / step, argv[5],
                   mip.solved ? ", solved" : "", spent());
        return 0;
    }
    const auto r = solvers::checkmate::searchCutBound(*p, budget, -1, seconds, {});
    std::string at;
    for (size_t k = 0; k < r.cuts.size(); ++k)
        at += (k ? "," : "") + std::to_string(r.cuts[k]);
    fmt::print("| {} | {} MiB | {} | {:.6g} | {:.2f}% | {} | {} | {:.2f} |\n", argv[1], argv[3],
               seconds, r.bound, 100 * r.bound / step, at, r.lps, spent());
    return 0;
}
