// remat bench remat-graphs: every applicable solver on the public rematerialization benchmark
// graphs (Checkmate's training graphs, Moccasin's random layered graphs) at the published budget
// ratios, as a table and optionally CSV.
#include "commands.h"

#include "core/io/node_link.h"
#include "core/solvers/checkmate/checkmate.h"
#include "core/solvers/registry.h"
#include "core/solvers/solver.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace remat::app {

namespace {

namespace fs = std::filesystem;
using namespace remat::core;

struct BenchOptions
{
    std::string dir;
    std::string csv;
    double timeLimit = 60;
    std::string ratios = "0.9,0.8";
    std::string solvers; // comma list; empty: all applicable
    std::string graphs;  // substring filter
    int threads = 1;
    std::vector<std::string> settings; // key=value, passed to every solver
    bool notes = false;
    bool target = false; // time limit = a tenth of the best published time, where there is one
};

/// The published figures to beat for a graph and budget ratio (../shared/SOLVERS.md; the n=250
/// at 0.8 row is from Moccasin's poster, research/solvers-milp-and-peers.md section 2.2): the
/// best TDI any published solver reached within its budget, and the shortest published solve
/// time (ResNet50 at 0.9: Gurobi's 0.1 in 434 s, Moccasin's 0.2 in 65 s). The target is
/// that TDI in a tenth of that time.
struct Published
{
    const char *graphPrefix;
    double ratio;
    double tdiPercent; ///< as published: one decimal
    double seconds;
};

constexpr Published kPublished[] = {
    {"fcn_8_vgg", 0.9, 0.0, 3.1},
    {"fcn_8_vgg", 0.8, 0.1, 3.1},
    {"ResNet50", 0.9, 0.1, 65.2},
    {"ResNet50", 0.8, 0.3, 69.3},
    {"random_layered_n250_", 0.9, 0.9, 55.0},
    {"random_layered_n250_", 0.8, 4.9, 639.5},
    {"random_layered_n1000_", 0.9, 0.7, 3612.9},
    {"random_layered_n1000_", 0.8, 3.4, 3611.8},
};

const Published *publishedFor(const std::string &graph, double ratio)
{
    for (const Published &row : kPublished)
        if (graph.rfind(row.graphPrefix, 0) == 0 && std::abs(row.ratio - ratio) < 1e-9)
            return &row;
    return nullptr;
}

std::vector<std::string> splitList(const std::string &text)
{
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

std::string defaultDir()
{
    if (const char *shared = std::getenv("REMAT_SHARED_DIR"))
        return std::string(shared) + "/benchmarks/remat-graphs";
    return "../shared/benchmarks/remat-graphs";
}

/// The solvers to run: ours (CBC) first, then everything the registry holds that takes any DAG
/// and the min-time objective.
std::vector<std::unique_ptr<solvers::Solver>> benchSolvers(const std::vector<std::string> &only)
{
    std::vector<std::unique_ptr<solvers::Solver>> all;
    auto add = [&](std::unique_ptr<solvers::Solver> s) {
        if (!s)
            return;
        for (const auto &have : all)
            if (have->id() == s->id())
                return;
        all.push_back(std::move(s));
    };
    add(solvers::makeCheckmateMilpSolver());
    add(solvers::makeCheckmateLpSolver());
    for (auto &s : solvers::makeSolvers())
        add(std::move(s));
    std::vector<std::unique_ptr<solvers::Solver>> chosen;
    for (auto &s : all) {
        const bool wanted = only.empty()
                                ? (s->capabilities().minTime && s->id() != "offload")
                                : std::find(only.begin(), only.end(), s->id()) != only.end();
        if (wanted)
            chosen.push_back(std::move(s));
    }
    return chosen;
}

int runRematGraphs(const BenchOptions &opt)
{
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(opt.dir, ec))
        if (entry.path().extension() == ".json" &&
            (opt.graphs.empty() ||
             entry.path().filename().string().find(opt.graphs) != std::string::npos))
            files.push_back(entry.path());
    if (ec || files.empty()) {
        fmt::print(stderr, "remat bench: no benchmark graphs in {}\n", opt.dir);
        return 2;
    }
    std::sort(files.begin(), files.end());
    std::vector<double> ratios;
    for (const std::string &r : splitList(opt.ratios)) {
        double v = 0;
        auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), v);
        if (ec != std::errc() || p != r.data() + r.size() || !(v > 0)) {
            fmt::print(stderr,
                       "error: --ratios: '{}' is not a budget ratio (a number > 0, e.g. 0.9,0.8)\n",
                       r);
            return 2;
        }
        ratios.push_back(v);
    }
    auto solverList = benchSolvers(splitList(opt.solvers));
    std::ofstream csv;
    if (!opt.csv.empty()) {
        csv.open(opt.csv);
        csv << "graph,ops,ratio,budget_bytes,solver,status,tdi_percent,peak_bytes,peak_over_budget,"
               "time_limit_seconds,solve_seconds,bound,gap_percent,published_tdi_percent,published_"
               "seconds,"
               "target_met,note\n";
    }
    fmt::print("{:<34} {:>5} {:>5} {:<15} {:<10} {:>8} {:>8} {:>9} {:>7}{}\n", "graph", "ops",
               "ratio", "solver", "status", "TDI %", "peak/B", "time s", "gap %",
               opt.target ? "  pub TDI %   pub s  target" : "");
    for (const fs::path &file : files) {
        Expected<io::NodeLinkGraph> g = io::readNodeLinkGraph(file.string());
        if (!g) {
            fmt::print(stderr, "{}: {}\n", file.filename().string(), g.status().toString());
            continue;
        }
        const std::string name = file.stem().string();
        for (double ratio : ratios) {
            const int64_t budget =
                static_cast<int64_t>(std::floor(ratio * double(g->referencePeakBytes)));
            const Published *published = publishedFor(name, ratio);
            const double timeLimit =
                opt.target && published ? published->seconds / 10 : opt.timeLimit;
            for (const auto &solver : solverList) {
                solvers::SolveRequest req;
                req.graph = &g->graph;
                req.costs = &g->costs;
                req.objective = solvers::Objective::MinTime;
                req.budgetBytes = budget;
                req.timeLimitSeconds = timeLimit;
                req.settings["threads"] = std::to_string(opt.threads);
                for (const std::string &kv : opt.settings) {
                    const size_t eq = kv.find('=');
                    if (eq != std::string::npos)
                        req.settings[kv.substr(0, eq)] = kv.substr(eq + 1);
                }
                const auto t0 = std::chrono::steady_clock::now();
                Expected<solvers::Plan> plan = solver->solve(req);
                const double seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::string status, note;
                double tdi = NAN, peakRatio = NAN, gap = NAN, bound = NAN;
                int64_t peak = -1;
                if (!plan) {
                    status = "error";
                    note = plan.status().toString();
                } else {
                    status = solvers::solveStatusName(plan->status);
                    note = plan->note;
                    peak = plan->timeline.peakBytes;
                    peakRatio = double(peak) / double(budget);
                    if (plan->status != solvers::SolveStatus::Infeasible)
                        tdi = plan->timeline.tdiPercent();
                    // A gap only means something for a plan within the budget.
                    if (plan->bound >= 0 && plan->status != solvers::SolveStatus::Infeasible) {
                        bound = plan->bound;
                        const double obj = plan->timeline.recomputeSeconds;
                        gap = obj > 0 ? 100.0 * std::max(0.0, obj - bound) / obj : 0.0;
                    }
                }
                // Met: the published TDI (to its one decimal) within the budget, in a tenth of
                // the published time.
                std::string target;
                if (published) {
                    const bool met = std::isfinite(tdi) && peak <= budget &&
                                     std::round(tdi * 10) / 10 <= published->tdiPercent + 1e-9 &&
                                     seconds <= published->seconds / 10;
                    target = met ? "met" : "missed";
                }
                fmt::print(
                    "{:<34} {:>5} {:>5.2f} {:<15} {:<10} {:>8.2f} {:>8.4f} {:>9.2f} {:>7.2f}{}\n",
                    name.substr(0, 34), g->graph.opCount(), ratio, solver->id(), status, tdi,
                    peakRatio, seconds, gap,
                    !opt.target ? std::string()
                    : published ? fmt::format(" {:>10.1f} {:>7.1f}  {}", published->tdiPercent,
                                              published->seconds, target)
                                : std::string("           -       -  -"));
                std::fflush(stdout);
                if (opt.notes && !note.empty())
                    fmt::print("    {}\n", note);
                std::fflush(stdout);
                if (csv) {
                    std::string quoted = note;
                    std::replace(quoted.begin(), quoted.end(), '"', '\'');
                    csv << fmt::format(
                        "{},{},{},{},{},{},{},{},{},{},{:.3f},{},{},{},{},{},\"{}\"\n", name,
                        g->graph.opCount(), ratio, budget, solver->id(), status, tdi, peak,
                        peakRatio, timeLimit, seconds, bound, gap,
                        published ? fmt::format("{}", published->tdiPercent) : "",
                        published ? fmt::format("{}", published->seconds) : "", target, quoted);
                    csv.flush();
                }
            }
        }
    }
    return 0;
}

} // namespace

void addBenchCommand(CLI::App &app, CommandContext &ctx)
{
    CLI::App *bench = app.add_subcommand("bench", "Run benchmarks");
    bench->require_subcommand(1);
    auto opt = std::make_shared<BenchOptions>();
    opt->dir = defaultDir();
    CLI::App *graphs = bench->add_subcommand(
        "remat-graphs",
        "Every applicable solver on the public rematerialization graphs (Checkmate, Moccasin) at "
        "budget ratios of the in-order peak; prints status, TDI %, peak/budget, time, MILP gap");
    graphs->add_option("--dir", opt->dir, "folder of node-link JSON graphs")->capture_default_str();
    graphs->add_option("--csv", opt->csv, "also write the rows to this CSV file");
    graphs->add_option("--time-limit", opt->timeLimit, "seconds per solve")->capture_default_str();
    graphs->add_option("--ratios", opt->ratios, "comma list of budget ratios")
        ->capture_default_str();
    graphs->add_option("--solvers", opt->solvers,
                       "comma list of solver ids (default: all applicable)");
    graphs->add_option("--graphs", opt->graphs, "only files whose name contains this");
    graphs->add_option("--threads", opt->threads, "CBC threads")->capture_default_str();
    graphs->add_option("--set", opt->settings, "solver setting KEY=VALUE (repeatable)");
    graphs->add_flag("--notes", opt->notes, "print each solver's note under its row");
    graphs->add_flag(
        "--target", opt->target,
        "time limit a tenth of the best published solve time (SOLVERS.md) where there is "
        "one; prints the published TDI and time and whether our row meets the target");
    graphs->callback([opt, &ctx] { ctx.exitCode = runRematGraphs(*opt); });
}

} // namespace remat::app
