#include "core/io/session_file.h"

#include "core/io/import_settings_json.h"
#include "core/io/plan_file.h"
#include "core/io/training_options_json.h"
#include "core/sim/simulator.h"
#include "core/util/reader_guard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace remat::core::io {

using nlohmann::json;
using solvers::Plan;
namespace fs = std::filesystem;

namespace {

const char *kSessionFormat = "remat-studio-session";
/// 2^53: the largest integer a JSON double holds exactly (the first sessions were written by
/// QtCore's JSON, which keeps every number as a double).
constexpr int64_t kMaxExact = int64_t(1) << 53;

Status bad(const std::string &path, const std::string &what)
{
    return makeError(StatusCode::ParseError, path + ": " + what);
}

/// `key` of `o` as an integer in [lo, hi]; `fallback` when absent or null. A plain cast of 1e300
/// or -1 to int64_t / size_t is undefined behaviour: the value is range-checked as a double first.
Expected<int64_t> integer(const std::string &path, const json &o, const char *key, int64_t fallback,
                          int64_t lo, int64_t hi)
{
    auto it = o.find(key);
    if (it == o.end() || it->is_null())
        return fallback;
    const double d = it->is_number() ? it->get<double>() : std::nan("");
    if (!(d >= double(lo) && d <= double(hi)) || d != std::floor(d))
        return bad(path, "\"" + std::string(key) + "\" must be an integer from " +
                             std::to_string(lo) + " to " + std::to_string(hi));
    return int64_t(d);
}

/// `key` of `o` as an int when it holds a whole number in int's range, else `fallback` (lenient
/// fields: the version, which is then refused with its own message, and the current plan).
int wholeOr(const json &o, const char *key, int fallback)
{
    auto it = o.find(key);
    if (it == o.end() || !it->is_number())
        return fallback;
    const double d = it->get<double>();
    if (!(d >= double(std::numeric_limits<int>::min()) &&
          d <= double(std::numeric_limits<int>::max())) ||
        d != std::floor(d))
        return fallback;
    return int(d);
}

/// At most kMaxSessionRunPoints of `pts`: the highest value of each bucket, so a curve's peak
/// survives (the charts decimate the same way).
template <typename V>
std::vector<std::pair<int, V>> capPoints(const std::vector<std::pair<int, V>> &pts)
{
    const size_t n = pts.size(), cap = kMaxSessionRunPoints;
    if (n <= cap)
        return pts;
    std::vector<std::pair<int, V>> out;
    out.reserve(cap);
    for (size_t b = 0; b < cap; ++b) {
        const size_t lo = b * n / cap, hi = std::max(lo + 1, (b + 1) * n / cap);
        size_t best = lo;
        for (size_t i = lo; i < hi && i < n; ++i)
            if (pts[i].second > pts[best].second)
                best = i;
        out.push_back(pts[best]);
    }
    return out;
}

/// `key` of `o` as a finite number; `fallback` when absent, of another type or not finite.
double finiteOr(const json &o, const char *key, double fallback)
{
    auto it = o.find(key);
    if (it == o.end() || !it->is_number())
        return fallback;
    const double d = it->get<double>();
    return std::isfinite(d) ? d : fallback;
}

/// `key` of `o` as a bool; false when absent or of another type.
bool flagOf(const json &o, const char *key)
{
    auto it = o.find(key);
    return it != o.end() && it->is_boolean() && it->get<bool>();
}

/// A string member's text; empty when absent or of another type.
std::string textOf(const json &o, const char *key)
{
    if (!o.is_object())
        return {};
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// `key` of `o` when it has `type`; an empty value of that type otherwise.
json memberOr(const json &o, const char *key, json::value_t type)
{
    auto it = o.find(key);
    if (it != o.end() && it->type() == type)
        return *it;
    return json(type);
}

bool exists(const std::string &p)
{
    std::error_code ec;
    return !p.empty() && fs::exists(fs::path(p), ec);
}

/// `p` absolute and without "." / ".." segments; empty stays empty.
fs::path absoluteClean(const std::string &p)
{
    if (p.empty())
        return {};
    std::error_code ec;
    fs::path a = fs::absolute(fs::path(p), ec);
    return (ec ? fs::path(p) : a).lexically_normal();
}

Expected<Session> parseSessionUnguarded(const std::string &text, const std::string &path)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::exception &e) {
        return bad(path, std::string("not JSON (") + e.what() + ")");
    }
    if (!root.is_object())
        return bad(path, "not a JSON object: not a Remat Studio session");
    if (textOf(root, "format") != kSessionFormat)
        return bad(path, "not a Remat Studio session");
    const int version = wholeOr(root, "version", -1);
    if (version < kOldestSessionFormatVersion || version > kSessionFormatVersion)
        return makeError(StatusCode::Unsupported,
                         path + ": session format version " + std::to_string(version) +
                             ", this build reads " + std::to_string(kOldestSessionFormatVersion) +
                             " to " + std::to_string(kSessionFormatVersion));
    Session s;
    const json model = memberOr(root, "model", json::value_t::object);
    s.modelPath = textOf(model, "path");
    // A session moved together with its model: prefer the path relative to the session file.
    const std::string rel = textOf(model, "relative_path");
    if (!exists(s.modelPath) && !rel.empty()) {
        const fs::path candidate =
            (absoluteClean(path).parent_path() / fs::path(rel)).lexically_normal();
        if (exists(candidate.string()))
            s.modelPath = candidate.string();
    }
    s.modelSha256 = textOf(model, "sha256");
    REMAT_ASSIGN_OR_RETURN(s.batch, integer(path, root, "batch", 1, 0, kMaxExact));
    if (root.contains("import")) {
        if (!root.at("import").is_object())
            return bad(path, "\"import\" is not an object");
        REMAT_ASSIGN_OR_RETURN(s.importSettings, importSettingsFromJson(root.at("import"), path));
    }
    // Version 2: the training options (absent in version 1: none, float32, unsharded); version 3
    // names precisions as Lightning does (a version-2 "bf16-mixed" is bf16-master).
    if (version >= 2 && root.contains("training")) {
        REMAT_ASSIGN_OR_RETURN(s.training,
                               trainingOptionsFromJson(root.at("training"), path, version < 3));
    }
    REMAT_ASSIGN_OR_RETURN(s.budgetBytes, integer(path, root, "budget_bytes", 0, 0, kMaxExact));
    // No objective written: a budget asks for the least recompute within it (as `remat solve` does).
    const std::string objectiveText = root.contains("objective") ? textOf(root, "objective")
                                      : s.budgetBytes > 0        ? "min-time"
                                                                 : "min-peak";
    auto objective = solvers::parseObjective(objectiveText);
    if (!objective)
        return bad(path, objective.status().message());
    s.objective = *objective;
    if (root.contains("max_overhead_percent")) {
        const json &m = root.at("max_overhead_percent");
        if (!m.is_number() || !std::isfinite(m.get<double>()))
            return bad(path, "\"max_overhead_percent\" is not a number");
        s.maxOverheadPercent = m.get<double>() < 0 ? -1 : m.get<double>();
    }
    for (const json &pin : memberOr(root, "pins", json::value_t::array)) {
        const std::string kindText = textOf(pin, "kind");
        const auto kind = solvers::parsePinKind(kindText);
        if (!kind)
            return bad(path, "pin of unknown kind '" + kindText + "'");
        s.pins.insert_or_assign(textOf(pin, "tensor"), *kind);
    }
    REMAT_ASSIGN_OR_RETURN(const int64_t opCount, integer(path, root, "op_count", 0, 0, kMaxExact));
    REMAT_ASSIGN_OR_RETURN(const int64_t tensorCount,
                           integer(path, root, "tensor_count", 0, 0, kMaxExact));
    s.opCount = size_t(opCount);
    s.tensorCount = size_t(tensorCount);
    for (const json &plan : memberOr(root, "plans", json::value_t::array)) {
        if (!plan.is_object())
            return bad(path, "a plan is not a JSON object");
        s.planTexts.push_back(plan.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    s.currentPlan = wholeOr(root, "current_plan", -1);
    if (s.currentPlan >= int(s.planTexts.size()))
        s.currentPlan = int(s.planTexts.size()) - 1;
    if (s.currentPlan < -1)
        s.currentPlan = -1;
    s.solver = textOf(root, "solver");
    for (const json &point : memberOr(root, "pareto", json::value_t::array)) {
        if (!point.is_object())
            return bad(path, "a Pareto point is not a JSON object");
        SessionParetoPoint p;
        p.solver = textOf(point, "solver");
        REMAT_ASSIGN_OR_RETURN(p.budgetBytes,
                               integer(path, point, "budget_bytes", 0, 0, kMaxExact));
        REMAT_ASSIGN_OR_RETURN(p.peakBytes, integer(path, point, "peak_bytes", 0, 0, kMaxExact));
        const auto overhead = point.find("overhead_percent");
        p.overheadPercent = overhead != point.end() && overhead->is_number() &&
                                    std::isfinite(overhead->get<double>())
                                ? overhead->get<double>()
                                : 0.0;
        const auto feasible = point.find("feasible");
        p.feasible = feasible != point.end() && feasible->is_boolean() && feasible->get<bool>();
        s.pareto.push_back(std::move(p));
    }
    // Version 2, optional: what the views showed, and the last run.
    if (root.contains("view")) {
        const json &view = root.at("view");
        if (!view.is_object())
            return bad(path, "\"view\" is not an object");
        s.view.colourMode = textOf(view, "colour_mode");
        s.view.selectedNode = textOf(view, "selected_node");
        for (const json &i : memberOr(view, "overlaid_plans", json::value_t::array)) {
            const double d = i.is_number() ? i.get<double>() : -1;
            // Indices of plans that are not there (a hand-edited file) select nothing.
            if (d >= 0 && d < double(s.planTexts.size()) && d == std::floor(d))
                s.view.overlaidPlans.push_back(int(d));
        }
    }
    if (root.contains("run")) {
        const json &run = root.at("run");
        if (!run.is_object())
            return bad(path, "\"run\" is not an object");
        SessionRun r;
        r.plan = wholeOr(run, "plan", -1);
        if (r.plan < -1 || r.plan >= int(s.planTexts.size()))
            r.plan = -1;
        r.backend = textOf(run, "backend");
        r.ok = flagOf(run, "ok");
        r.cancelled = flagOf(run, "cancelled");
        r.error = textOf(run, "error");
        r.failedStep = std::max(-1, wholeOr(run, "failed_step", -1));
        r.iterations = std::max(0, wholeOr(run, "iterations", 0));
        REMAT_ASSIGN_OR_RETURN(r.measuredPeakBytes,
                               integer(path, run, "measured_peak_bytes", 0, 0, kMaxExact));
        r.stepSeconds = std::max(0.0, finiteOr(run, "step_seconds", 0));
        r.gradientsChecked = flagOf(run, "gradients_checked");
        r.gradientsMatch = flagOf(run, "gradients_match");
        r.maxRelativeError = finiteOr(run, "max_relative_error", 0);
        r.worstEntry = textOf(run, "worst_entry");
        // Each curve: [[step, value], ...]; malformed points are refused, not guessed at.
        const json bytes = memberOr(run, "bytes_in_use", json::value_t::array);
        const json times = memberOr(run, "step_times", json::value_t::array);
        if (bytes.size() > kMaxSessionRunPoints || times.size() > kMaxSessionRunPoints)
            return bad(path, "a run curve has more than " + std::to_string(kMaxSessionRunPoints) +
                                 " points");
        for (const json &pt : bytes) {
            if (!pt.is_array() || pt.size() != 2)
                return bad(path, "a run's bytes_in_use point is not [step, bytes]");
            const json o = {{"run step", pt[0]}, {"run bytes", pt[1]}};
            REMAT_ASSIGN_OR_RETURN(int64_t step, integer(path, o, "run step", -1, 0, kMaxExact));
            REMAT_ASSIGN_OR_RETURN(int64_t v, integer(path, o, "run bytes", -1, 0, kMaxExact));
            if (step < 0 || v < 0 || step > std::numeric_limits<int>::max())
                return bad(path, "a run's bytes_in_use point is not [step, bytes]");
            r.bytesInUse.emplace_back(int(step), v);
        }
        for (const json &pt : times) {
            if (!pt.is_array() || pt.size() != 2 || !pt[1].is_number())
                return bad(path, "a run's step_times point is not [step, seconds]");
            const json o = {{"run step", pt[0]}};
            REMAT_ASSIGN_OR_RETURN(int64_t step, integer(path, o, "run step", -1, 0, kMaxExact));
            const double v = pt[1].get<double>();
            if (step < 0 || step > std::numeric_limits<int>::max() || !std::isfinite(v) || v < 0)
                return bad(path, "a run's step time is out of range");
            r.stepTimes.emplace_back(int(step), v);
        }
        s.run = std::move(r);
    }
    return s;
}

Expected<std::vector<Plan>> restoreSessionPlansUnguarded(const Session &session,
                                                         const training::TrainingGraph &graph,
                                                         const cost::Costs &costs,
                                                         const std::string &origin)
{
    std::vector<Plan> plans;
    for (size_t i = 0; i < session.planTexts.size(); ++i) {
        const std::string where = origin + ", plan " + std::to_string(i + 1);
        REMAT_ASSIGN_OR_RETURN(Plan p, parsePlan(session.planTexts[i], graph, &costs, where));
        // The charts and the teaching view need one point per step.
        if (p.timeline.points.size() != p.schedule.steps.size()) {
            REMAT_ASSIGN_OR_RETURN(p.timeline, sim::simulate(p.schedule, graph, costs));
        }
        plans.push_back(std::move(p));
    }
    return plans;
}

} // namespace

Expected<std::string> formatSession(const Session &s, const std::string &sessionPath,
                                    const training::TrainingGraph *graph)
{
    if (!s.plans.empty() && !graph)
        return makeError(StatusCode::InvalidArgument,
                         "plans need their training graph to be saved");
    json root;
    root["format"] = kSessionFormat;
    // The oldest version that holds what the session has, so older builds still read the file: 3
    // for training options (the precision names changed meaning), 2 for the other version-2
    // members, else 1.
    root["version"] = !s.training.isDefault() ? kSessionFormatVersion
                      : s.solver.empty() && s.pareto.empty() && s.view.empty() && !s.run ? 1
                                                                                         : 2;
    const fs::path absModel = absoluteClean(s.modelPath);
    const fs::path relModel =
        absModel.empty() ? fs::path()
                         : absModel.lexically_relative(absoluteClean(sessionPath).parent_path());
    root["model"] = {{"path", absModel.string()},
                     {"relative_path", relModel.string()},
                     {"sha256", s.modelSha256}};
    root["batch"] = s.batch;
    root["import"] = importSettingsJson(s.importSettings);
    if (!s.training.isDefault())
        root["training"] = trainingOptionsJson(s.training);
    root["budget_bytes"] = s.budgetBytes;
    root["objective"] = solvers::objectiveName(s.objective);
    if (s.objective == solvers::Objective::MinPeak && s.maxOverheadPercent >= 0)
        root["max_overhead_percent"] = s.maxOverheadPercent;
    json pins = json::array();
    for (const auto &[tensor, kind] : s.pins)
        pins.push_back({{"tensor", tensor}, {"kind", solvers::pinKindName(kind)}});
    root["pins"] = pins;
    root["op_count"] = graph ? graph->opCount() : s.opCount;
    root["tensor_count"] = graph ? graph->tensorCount() : s.tensorCount;
    json plans = json::array();
    for (const Plan &p : s.plans)
        plans.push_back(json::parse(writePlan(p, *graph, ModelIdentity::of(*graph))));
    root["plans"] = plans;
    root["current_plan"] = s.currentPlan;
    root["solver"] = s.solver;
    json pareto = json::array();
    for (const SessionParetoPoint &p : s.pareto)
        pareto.push_back({{"solver", p.solver},
                          {"budget_bytes", p.budgetBytes},
                          {"peak_bytes", p.peakBytes},
                          {"overhead_percent", p.overheadPercent},
                          {"feasible", p.feasible}});
    root["pareto"] = pareto;
    if (!s.view.empty())
        root["view"] = {{"colour_mode", s.view.colourMode},
                        {"selected_node", s.view.selectedNode},
                        {"overlaid_plans", s.view.overlaidPlans}};
    if (s.run) {
        const SessionRun &r = *s.run;
        json bytes = json::array(), times = json::array();
        for (const auto &[step, v] : capPoints(r.bytesInUse))
            bytes.push_back({step, v});
        for (const auto &[step, v] : capPoints(r.stepTimes))
            times.push_back({step, std::isfinite(v) ? v : 0.0});
        root["run"] = {
            {"plan", r.plan},
            {"backend", r.backend},
            {"ok", r.ok},
            {"cancelled", r.cancelled},
            {"error", r.error},
            {"failed_step", r.failedStep},
            {"iterations", r.iterations},
            {"measured_peak_bytes", r.measuredPeakBytes},
            {"step_seconds", std::isfinite(r.stepSeconds) ? r.stepSeconds : 0.0},
            {"gradients_checked", r.gradientsChecked},
            {"gradients_match", r.gradientsMatch},
            {"max_relative_error", std::isfinite(r.maxRelativeError) ? r.maxRelativeError : 0.0},
            {"worst_entry", r.worstEntry},
            {"bytes_in_use", bytes},
            {"step_times", times}};
    }
    // dump() throws on names that are not UTF-8 unless told to replace them (the importer refuses
    // such names; a writer must not throw whatever it is given).
    return root.dump(4, ' ', false, json::error_handler_t::replace) + "\n";
}

Status saveSession(const std::string &path, const Session &session,
                   const training::TrainingGraph *graph)
{
    REMAT_ASSIGN_OR_RETURN(const std::string text, formatSession(session, path, graph));
    const std::string temporary = path + ".saving";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            return makeError(StatusCode::NotFound, path + ": cannot open for writing");
        out << text;
        out.close();
        if (!out) {
            std::error_code ignored;
            fs::remove(temporary, ignored);
            return makeError(StatusCode::Internal, path + ": write failed");
        }
    }
    std::error_code ec;
    fs::rename(temporary, path, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temporary, ignored);
        return makeError(StatusCode::Internal, path + ": " + ec.message());
    }
    return Status::ok();
}

Expected<Session> parseSession(const std::string &text, const std::string &path)
{
    return guardReader(path, [&] { return parseSessionUnguarded(text, path); });
}

Expected<Session> readSession(const std::string &path)
{
    return guardReader(path, [&]() -> Expected<Session> {
        std::error_code ec;
        const auto size = fs::file_size(fs::path(path), ec);
        std::ifstream in(path, std::ios::binary);
        if (ec || !in)
            return makeError(StatusCode::NotFound, path + ": cannot open the session file");
        if (size > (uintmax_t(1) << 30))
            return bad(path, "larger than 1 GiB: not a session file");
        std::ostringstream ss;
        ss << in.rdbuf();
        return parseSession(ss.str(), path);
    });
}

Expected<std::vector<Plan>> restoreSessionPlans(const Session &session,
                                                const training::TrainingGraph &graph,
                                                const cost::Costs &costs, const std::string &origin)
{
    return guardReader(origin,
                       [&] { return restoreSessionPlansUnguarded(session, graph, costs, origin); });
}

} // namespace remat::core::io
