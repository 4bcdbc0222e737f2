// remat validate-plan MODEL plan.json --torch-model SPEC [--python PY] [--helper remat_apply.py]
// [--tolerance R] [--json]: applies the plan to the PyTorch module MODEL was exported from
// (resources/python/remat_apply.py, run with a Python that has torch) and prints what PyTorch
// keeps beside what the simulator predicts: saved bytes at the end of forward, the saved peak
// through backward, and whether the gradients equal the plain run's. Exit 0 when both saved
// figures are within the tolerance and the gradients equal, 3 when they are not, 1 on errors.
#include "commands.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace remat::app {

namespace {

namespace fs = std::filesystem;

struct ValidatePlanOptions
{
    std::string model;
    std::string plan;
    std::string torchModel;
    std::string python;
    std::string helper;
    double tolerance = 0.05;
    bool json = false;
};

/// A pipe's two ends, closed on destruction.
struct Pipe
{
    std::array<int, 2> fd{-1, -1};
    Pipe() = default;
    Pipe(const Pipe &) = delete;
    Pipe &operator=(const Pipe &) = delete;
    ~Pipe()
    {
        for (int f : fd)
            if (f >= 0)
                ::close(f);
    }
    void closeEnd(int i)
    {
        if (fd[i] >= 0)
            ::close(fd[i]);
        fd[i] = -1;
    }
};

struct ProcessResult
{
    int exitCode = -1; ///< -1: could not start or killed by a signal
    std::string out, err;
    std::string startError; ///< why it did not start, when it did not
};

/// Runs argv[0] (searched on the PATH) and collects its stdout and stderr.
ProcessResult runProcess(const std::vector<std::string> &args)
{
    ProcessResult r;
    Pipe out, err;
    if (::pipe(out.fd.data()) != 0 || ::pipe(err.fd.data()) != 0) {
        r.startError = std::strerror(errno);
        return r;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, out.fd[0]);
    posix_spawn_file_actions_addclose(&actions, err.fd[0]);
    std::vector<char *> argv;
    for (const std::string &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    out.closeEnd(1);
    err.closeEnd(1);
    if (rc != 0) {
        r.startError = std::strerror(rc);
        return r;
    }
    std::array<pollfd, 2> fds{pollfd{out.fd[0], POLLIN, 0}, pollfd{err.fd[0], POLLIN, 0}};
    std::array<std::string *, 2> sinks{&r.out, &r.err};
    int open = 2;
    char buf[65536];
    while (open > 0) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                --open;
            }
        }
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

std::string lastLine(const std::string &text)
{
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
        t.pop_back();
    const size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

/// This executable's path, so the helper runs the same `remat simulate`.
std::string selfPath()
{
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("remat") : p.string();
}

/// remat_apply.py: --helper, $REMAT_APPLY_PY, beside the executable's share folder, the source tree.
std::optional<std::string> findHelper(const std::string &given)
{
    std::vector<fs::path> candidates;
    if (!given.empty())
        return fs::is_regular_file(given) ? std::optional<std::string>(given) : std::nullopt;
    if (const char *env = std::getenv("REMAT_APPLY_PY"))
        candidates.emplace_back(env);
    const fs::path exeDir = fs::path(selfPath()).parent_path();
    candidates.push_back(exeDir / "../share/remat/python/remat_apply.py");
#ifdef REMAT_PYTHON_HELPER_DIR
    candidates.push_back(fs::path(REMAT_PYTHON_HELPER_DIR) / "remat_apply.py");
#endif
    for (const fs::path &c : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(c, ec))
            return fs::weakly_canonical(c, ec).string();
    }
    return std::nullopt;
}

/// The first interpreter that imports torch with torch.fx: --python, $REMAT_PYTHON, python3 on
/// the PATH, /usr/bin/python3 (Debian's python3-torch). `tried` says what was tried and why not.
std::optional<std::string> findPython(const std::string &given, std::string &tried)
{
    std::vector<std::string> candidates;
    if (!given.empty()) {
        candidates.push_back(given);
    } else {
        if (const char *env = std::getenv("REMAT_PYTHON"))
            candidates.emplace_back(env);
        candidates.emplace_back("python3");
        candidates.emplace_back("/usr/bin/python3");
    }
    for (const std::string &py : candidates) {
        ProcessResult r = runProcess(
            {py, "-c", "import torch, torch.fx, torch.utils.checkpoint; print(torch.__version__)"});
        if (r.exitCode == 0)
            return py;
        const std::string why = !r.startError.empty() ? r.startError : lastLine(r.err);
        tried +=
            fmt::format("{}{} ({})", tried.empty() ? "" : "; ", py, why.empty() ? "no torch" : why);
    }
    return std::nullopt;
}

int64_t asBytes(const nlohmann::json &j, const char *key)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

double deviation(int64_t measured, int64_t predicted)
{
    return predicted != 0
               ? static_cast<double>(measured - predicted) / static_cast<double>(predicted)
               : 0.0;
}

/// 10466304 -> "10,466,304": byte counts compared digit by digit.
std::string grouped(int64_t v)
{
    std::string digits = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}

void printRow(const char *label, int64_t measured, int64_t predicted)
{
    std::printf("  %-44s %14s %14s %+8.2f%%\n", label, grouped(measured).c_str(),
                grouped(predicted).c_str(), deviation(measured, predicted) * 100.0);
}

int runValidatePlan(const ValidatePlanOptions &o)
{
    for (const auto &[what, path] : {std::pair{"model", o.model}, std::pair{"plan", o.plan}}) {
        std::error_code ec;
        if (!fs::is_regular_file(path, ec)) {
            std::fprintf(stderr, "error: %s file '%s' not found\n", what, path.c_str());
            return 1;
        }
    }
    if (!(o.tolerance > 0.0) || !std::isfinite(o.tolerance)) {
        std::fprintf(stderr, "error: --tolerance %g: give a positive fraction (0.05 is 5%%)\n",
                     o.tolerance);
        return 1;
    }
    const std::optional<std::string> helper = findHelper(o.helper);
    if (!helper) {
        std::fprintf(
            stderr,
            "error: the PyTorch helper remat_apply.py was not found%s; pass --helper PATH or set "
            "REMAT_APPLY_PY (it is resources/python/remat_apply.py in the source tree)\n",
            o.helper.empty() ? "" : (" at '" + o.helper + "'").c_str());
        return 1;
    }
    std::string tried;
    const std::optional<std::string> python = findPython(o.python, tried);
    if (!python) {
        std::fprintf(
            stderr,
            "error: validate-plan runs the plan in PyTorch and needs Python 3 with torch >= 1.13 "
            "(torch.fx); none was found: %s. Install it (Debian: apt install python3-torch "
            "python3-torchvision; or pip install torch torchvision) or name an interpreter with "
            "--python PATH or REMAT_PYTHON\n",
            tried.c_str());
        return 1;
    }
    std::vector<std::string> args{*python,
                                  *helper,
                                  "validate",
                                  o.torchModel,
                                  o.model,
                                  o.plan,
                                  "--json",
                                  "--remat",
                                  selfPath(),
                                  "--tolerance",
                                  fmt::format("{}", o.tolerance)};
    ProcessResult r = runProcess(args);
    nlohmann::json j;
    if (r.exitCode == 0 || r.exitCode == 1)
        j = nlohmann::json::parse(lastLine(r.out), nullptr, false);
    if (r.exitCode < 0 || r.exitCode > 1 || j.is_discarded() || !j.is_object()) {
        const std::string why = !r.startError.empty() ? r.startError : lastLine(r.err);
        std::fprintf(stderr, "error: %s %s validate failed (exit %d): %s\n", python->c_str(),
                     helper->c_str(), r.exitCode, why.empty() ? "no output" : why.c_str());
        return 1;
    }
    if (!r.err.empty() && !o.json)
        std::fputs(r.err.c_str(), stderr); // the helper's own warnings
    const nlohmann::json &s = j["store_all"];
    const nlohmann::json &p = j["plan_applied"];
    const double gradErr = j.value("gradients_max_relative_error", 1.0);
    const bool gradientsEqual = gradErr <= 1e-6;
    // The verdict reads the simulator's figures as PyTorch counts them: without copies of weights
    // (views in PyTorch), recomputation transients and, on the CPU, with Dropout's float mask.
    const double devEnd = deviation(asBytes(p, "measured_end_of_forward"),
                                    asBytes(p, "predicted_end_of_forward_as_pytorch"));
    const double devPeak = deviation(asBytes(p, "measured_peak_backward"),
                                     asBytes(p, "predicted_peak_backward_as_pytorch"));
    const bool within = std::abs(devEnd) <= o.tolerance && std::abs(devPeak) <= o.tolerance;
    const nlohmann::json &report = j["report"];
    const bool faithful = report.is_object() && report.value("faithful", false);
    if (o.json) {
        j["tolerance"] = o.tolerance;
        j["gradients_equal"] = gradientsEqual;
        j["within_tolerance"] = within;
        j["faithful"] = faithful;
        j["python"] = *python;
        j["helper"] = *helper;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s with %s (%s, torch %s)\n", o.model.c_str(), o.plan.c_str(),
                    o.torchModel.c_str(),
                    report.is_object() ? report.value("torch", std::string("?")).c_str() : "?");
        std::printf("  %-44s %14s %14s %9s\n", "saved tensors (bytes)", "PyTorch", "simulator",
                    "diff");
        for (const auto &[label, f] : {std::pair{"store-all", &s}, std::pair{"plan", &p}}) {
            const nlohmann::json &x = *f;
            printRow(fmt::format("{}: at the end of forward", label).c_str(),
                     asBytes(x, "measured_end_of_forward"),
                     asBytes(x, "predicted_end_of_forward_as_pytorch"));
            printRow(fmt::format("{}: peak through backward", label).c_str(),
                     asBytes(x, "measured_peak_backward"),
                     asBytes(x, "predicted_peak_backward_as_pytorch"));
            if (asBytes(x, "predicted_end_of_forward") !=
                    asBytes(x, "predicted_end_of_forward_as_pytorch") ||
                asBytes(x, "predicted_peak_backward") !=
                    asBytes(x, "predicted_peak_backward_as_pytorch")) {
                printRow("  (simulator's own: end of forward)",
                         asBytes(x, "measured_end_of_forward"),
                         asBytes(x, "predicted_end_of_forward"));
                printRow("  (simulator's own: peak through backward)",
                         asBytes(x, "measured_peak_backward"),
                         asBytes(x, "predicted_peak_backward"));
            }
        }
        if (asBytes(p, "measured_host_peak") || asBytes(p, "predicted_host_peak"))
            printRow("plan: host (offloaded) peak", asBytes(p, "measured_host_peak"),
                     asBytes(p, "predicted_host_peak"));
        const std::string worst = j.value("gradients_worst", std::string());
        std::printf("  gradients: %s the plain run's (max relative error %.3g%s)\n",
                    gradientsEqual ? "equal to" : "DIFFER from", gradErr,
                    worst.empty() ? "" : (", " + worst).c_str());
        std::printf("  applied: %s%s\n", j.value("summary", std::string()).c_str(),
                    faithful ? "" : "  [NOT FAITHFUL to the plan]");
        std::printf("  verdict: %s (tolerance %.3g%%)\n",
                    within && gradientsEqual ? "as planned" : "differs from the plan",
                    o.tolerance * 100.0);
    }
    return within && gradientsEqual ? 0 : 3;
}

} // namespace

void addValidatePlanCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<ValidatePlanOptions>();
    CLI::App *cmd = app.add_subcommand(
        "validate-plan",
        "Run a plan in PyTorch (remat_apply.py) and print measured beside predicted saved bytes");
    cmd->add_option("model", opts->model, "the ONNX file the plan was made for")->required();
    cmd->add_option("plan", opts->plan, "plan JSON from `remat solve --out`")->required();
    cmd->add_option("--torch-model", opts->torchModel,
                    "the PyTorch module the ONNX file was exported from: torchvision:NAME (random "
                    "init, seed 0) "
                    "or FILE.py:FACTORY")
        ->required();
    cmd->add_option("--python", opts->python,
                    "Python 3 with torch (default: $REMAT_PYTHON, python3, /usr/bin/python3)");
    cmd->add_option("--helper", opts->helper,
                    "remat_apply.py (default: $REMAT_APPLY_PY, then the installed or source copy)");
    cmd->add_option("--tolerance", opts->tolerance,
                    "largest relative difference called as planned (default 0.05)");
    cmd->add_flag("--json", opts->json, "JSON output (the helper's figures plus the verdict)");
    cmd->callback([opts, &ctx] { ctx.exitCode = runValidatePlan(*opts); });
}

} // namespace remat::app
