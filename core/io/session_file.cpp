#include "core/io/session_file.h"

#include "core/io/import_settings_json.h"
#include "core/io/plan_file.h"
#include "core/io/training_options_json.h"
#include "core/sim/simulator.h"
#include "core/util/reader_guard.h"

#include <nlohmann/json.hpp>

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

const char *kFormat = "remat-studio-session";
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
    if (textOf(root, "format") != kFormat)
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
    // Version 2: the training options (absent in version 1: none, float32, unsharded).
    if (version >= 2 && root.contains("training")) {
        REMAT_ASSIGN_OR_RETURN(s.training, trainingOptionsFromJson(root.at("training"), path));
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
    root["format"] = kFormat;
    // Version 1 when nothing needs 2, so older builds still read the file.
    root["version"] =
        s.training.isDefault() && s.solver.empty() && s.pareto.empty() ? 1 : kSessionFormatVersion;
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
