#include "core/io/plan_file.h"

#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "core/util/reader_guard.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <unordered_map>

namespace remat::core::io {

using nlohmann::json;
using solvers::Plan;

namespace {

const char *kFormat = "remat-plan";

/// A JSON value for an error message: dump() throws on invalid UTF-8 unless told to replace it.
std::string shown(const json &v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string stepKindText(schedule::StepKind k)
{
    switch (k) {
    case schedule::StepKind::Compute: return "compute";
    case schedule::StepKind::Free: return "free";
    case schedule::StepKind::Offload: return "offload";
    case schedule::StepKind::Prefetch: return "prefetch";
    case schedule::StepKind::Phase: return "phase";
    }
    return "?";
}

json figures(const sim::Timeline &t)
{
    return json{{"peak_bytes", t.peakBytes},
                {"activation_peak_bytes", t.activationPeakBytes},
                {"weight_bytes", t.weightBytes},
                {"weight_grad_bytes", t.weightGradBytes},
                {"compute_seconds", t.computeSeconds},
                {"recompute_seconds", t.recomputeSeconds},
                {"copy_seconds", t.copySeconds},
                {"total_seconds", t.totalSeconds},
                {"one_compute_seconds", t.oneComputeSeconds},
                {"tdi_percent", t.tdiPercent()},
                {"host_peak_bytes", t.hostPeakBytes},
                {"compute_steps", t.computeSteps},
                {"recompute_steps", t.recomputeSteps}};
}

class Reader
{
public:
    Reader(const training::TrainingGraph &g, std::string origin)
        : m_g(g), m_origin(std::move(origin))
    {
        for (const training::Op &op : g.ops())
            m_opByName.emplace(op.name, op.id); // first wins; ids disambiguate duplicates
    }

    Status error(StatusCode code, const std::string &what) const
    {
        return makeError(code, m_origin + ": " + what);
    }

    template <typename T>
    Expected<T> get(const json &obj, const char *key, const std::string &where) const
    {
        if (!obj.is_object() || !obj.contains(key))
            return error(StatusCode::ParseError, where + ": missing \"" + key + "\"");
        return convert<T>(obj.at(key), key, where);
    }

    /// `obj[key]` when present (and not null), else `fallback`; the wrong type is an error.
    template <typename T>
    Expected<T> optional(const json &obj, const char *key, T fallback,
                         const std::string &where) const
    {
        if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null())
            return fallback;
        return convert<T>(obj.at(key), key, where);
    }

    /// nlohmann converts any number to any arithmetic type with a plain cast, which is undefined
    /// behaviour for 1e300 -> int64 and wraps -1 -> size_t: integers must be integers in range.
    template <typename T>
    Expected<T> convert(const json &v, const char *key, const std::string &where) const
    {
        const auto wrongType = [&](const char *expected) {
            return error(StatusCode::ParseError,
                         where + ": \"" + key + "\" must be " + expected + ", not " + shown(v));
        };
        if constexpr (std::is_same_v<T, std::string>) {
            if (!v.is_string())
                return wrongType("a string");
            return v.get<std::string>();
        } else if constexpr (std::is_same_v<T, double>) {
            if (!v.is_number())
                return wrongType("a number");
            return v.get<double>();
        } else {
            static_assert(std::is_integral_v<T>);
            if (v.is_number_unsigned()) {
                if (v.get<uint64_t>() > uint64_t(std::numeric_limits<T>::max()))
                    return wrongType("an integer in range");
                return T(v.get<uint64_t>());
            }
            if (v.is_number_integer()) {
                const int64_t i = v.get<int64_t>();
                if (std::is_unsigned_v<T> && i < 0)
                    return wrongType("a non-negative integer");
                return T(i);
            }
            if (v.is_number_float()) {
                const double d = v.get<double>();
                // 2^63 is exact in a double; anything at or past it does not fit an int64.
                const double lo = std::is_unsigned_v<T> ? 0.0 : -9223372036854775808.0;
                if (!(d >= lo && d < 9223372036854775808.0) || d != std::floor(d))
                    return wrongType("an integer in range");
                return T(int64_t(d));
            }
            return wrongType("an integer");
        }
    }

    Expected<TensorId> tensor(const json &name, const json *id, const std::string &where) const
    {
        if (!name.is_string())
            return error(StatusCode::ParseError, where + ": tensor name must be a string");
        const std::string n = name.get<std::string>();
        const TensorId *t = m_g.findTensor(n);
        if (!t)
            return error(StatusCode::NotFound,
                         where + ": tensor '" + n + "' does not exist in this model");
        if (id && !id->is_null()) {
            if (!id->is_number_integer() || id->get<int64_t>() != t->value)
                return error(StatusCode::InvalidArgument,
                             where + ": tensor '" + n + "' has id " + std::to_string(t->value) +
                                 " in this model, the plan says " + shown(*id));
        }
        return *t;
    }

    Expected<OpId> op(const json &name, const json *id, const std::string &where) const
    {
        if (!name.is_string())
            return error(StatusCode::ParseError, where + ": op name must be a string");
        const std::string n = name.get<std::string>();
        if (id && id->is_number_integer()) {
            const int64_t v = id->get<int64_t>();
            if (v < 0 || static_cast<size_t>(v) >= m_g.opCount() || m_g.ops()[v].name != n)
                return error(
                    StatusCode::InvalidArgument,
                    where + ": op '" + n + "' with id " + std::to_string(v) +
                        " does not match this model" +
                        (v >= 0 && static_cast<size_t>(v) < m_g.opCount()
                             ? " (its op " + std::to_string(v) + " is '" + m_g.ops()[v].name + "')"
                             : std::string()));
            return OpId(static_cast<int32_t>(v));
        }
        auto it = m_opByName.find(n);
        if (it == m_opByName.end())
            return error(StatusCode::NotFound,
                         where + ": op '" + n + "' does not exist in this model");
        return it->second;
    }

private:
    const training::TrainingGraph &m_g;
    std::string m_origin;
    std::unordered_map<std::string, OpId> m_opByName;
};

} // namespace

ModelIdentity ModelIdentity::of(const training::TrainingGraph &graph)
{
    ModelIdentity m;
    m.path = graph.info().modelPath;
    m.sha256 = graph.info().modelSha256;
    m.batch = graph.info().batch;
    return m;
}

std::string writePlan(const Plan &plan, const training::TrainingGraph &graph,
                      const ModelIdentity &model)
{
    json j;
    j["format"] = kFormat;
    j["version"] = kPlanFormatVersion;
    j["model"] = {{"path", model.path},
                  {"sha256", model.sha256},
                  {"batch", model.batch},
                  {"ops", graph.opCount()},
                  {"tensors", graph.tensorCount()}};
    json settings = json::object();
    for (const auto &[k, v] : plan.settings)
        settings[k] = v;
    j["solver"] = {{"id", plan.solver},
                   {"status", solvers::solveStatusName(plan.status)},
                   {"objective", solvers::objectiveName(plan.objective)},
                   {"budget_bytes", plan.budgetBytes},
                   {"settings", settings},
                   {"solver_objective", plan.solverObjective},
                   {"solver_objective_name", plan.solverObjectiveName},
                   {"bound", plan.bound},
                   {"solve_seconds", plan.solveSeconds},
                   {"note", plan.note}};
    json pins = json::array();
    for (const solvers::Pin &p : plan.pins)
        pins.push_back({{"kind", solvers::pinKindName(p.kind)},
                        {"tensor", graph.tensor(p.tensor).name},
                        {"id", p.tensor.value}});
    j["pins"] = pins;
    json ck = json::array();
    for (TensorId t : plan.checkpoints)
        ck.push_back(graph.tensor(t).name);
    j["checkpoints"] = ck;
    json steps = json::array();
    for (const schedule::Step &s : plan.schedule.steps) {
        switch (s.kind) {
        case schedule::StepKind::Compute:
            steps.push_back({"compute", graph.op(s.op()).name, s.target});
            break;
        case schedule::StepKind::Phase:
            steps.push_back({"phase", schedule::phaseMarkName(s.mark())});
            break;
        default:
            steps.push_back({stepKindText(s.kind), graph.tensor(s.tensor()).name, s.target});
            break;
        }
    }
    j["figures"] = figures(plan.timeline);
    // The one cost compared everywhere: the simulated step and its overhead over store-all's.
    j["figures"]["step_seconds"] = solvers::stepSeconds(plan.timeline);
    j["figures"]["store_all_step_seconds"] = plan.baselineStepSeconds;
    j["figures"]["time_overhead_percent"] = solvers::timeOverheadPercent(plan);
    if (plan.maxOverheadPercent >= 0)
        j["solver"]["max_overhead_percent"] = plan.maxOverheadPercent;
    // One step per line: plans are read and diffed by people.
    j["schedule"] = "@schedule@";
    // dump() throws on names that are not UTF-8; the importer refuses those, and a writer must
    // not throw whatever graph it is given (the plan then fails to read back, with a message).
    std::string text = j.dump(1, ' ', false, json::error_handler_t::replace);
    std::string list = "[\n";
    for (size_t i = 0; i < steps.size(); ++i)
        list += "  " + shown(steps[i]) + (i + 1 < steps.size() ? ",\n" : "\n");
    list += " ]";
    const std::string placeholder = "\"@schedule@\"";
    text.replace(text.find(placeholder), placeholder.size(), list);
    return text + "\n";
}

Status savePlan(const std::string &path, const Plan &plan, const training::TrainingGraph &graph,
                const ModelIdentity &model)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(StatusCode::NotFound, path + ": cannot open for writing");
    out << writePlan(plan, graph, model);
    out.close();
    if (!out)
        return makeError(StatusCode::Internal, path + ": write failed");
    return Status::ok();
}

namespace {

Expected<Plan> parsePlanUnguarded(const std::string &text, const training::TrainingGraph &graph,
                                  const cost::Costs *costs, const std::string &origin)
{
    Reader r(graph, origin);
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &e) {
        // parse_error, and out_of_range 406 for a number that overflows a double ("9e859").
        return r.error(StatusCode::ParseError, std::string("not valid JSON (") + e.what() + ")");
    }
    if (!j.is_object())
        return r.error(StatusCode::ParseError, "not a plan (the top level is not an object)");
    REMAT_ASSIGN_OR_RETURN(std::string format, r.get<std::string>(j, "format", "top level"));
    if (format != kFormat)
        return r.error(StatusCode::ParseError,
                       "not a plan file (format \"" + format + "\", expected \"" + kFormat + "\")");
    REMAT_ASSIGN_OR_RETURN(int64_t version, r.get<int64_t>(j, "version", "top level"));
    if (version != kPlanFormatVersion)
        return r.error(StatusCode::Unsupported, "plan format version " + std::to_string(version) +
                                                    " is not supported (this build reads version " +
                                                    std::to_string(kPlanFormatVersion) + ")");
    // Model identity.
    if (!j.contains("model") || !j["model"].is_object())
        return r.error(StatusCode::ParseError, "missing \"model\"");
    const json &model = j["model"];
    REMAT_ASSIGN_OR_RETURN(std::string sha, r.get<std::string>(model, "sha256", "model"));
    REMAT_ASSIGN_OR_RETURN(int64_t batch, r.get<int64_t>(model, "batch", "model"));
    const ModelIdentity here = ModelIdentity::of(graph);
    if (!sha.empty() && !here.sha256.empty() && sha != here.sha256) {
        const std::string madeFor = model.contains("path") && model["path"].is_string()
                                        ? model["path"].get<std::string>()
                                        : "";
        return r.error(StatusCode::InvalidArgument,
                       "this plan was made for another model" +
                           (madeFor.empty() ? std::string() : " ('" + madeFor + "')") +
                           ": its sha256 is " + sha.substr(0, 12) + "..., the loaded model's is " +
                           here.sha256.substr(0, 12) + "...");
    }
    if (batch != here.batch)
        return r.error(StatusCode::InvalidArgument,
                       "this plan was made for batch " + std::to_string(batch) +
                           ", the model is loaded at batch " + std::to_string(here.batch) +
                           " (re-solve, or load the model at batch " + std::to_string(batch) + ")");
    if (model.contains("ops") && model["ops"].is_number_integer() &&
        model["ops"].get<int64_t>() != static_cast<int64_t>(graph.opCount()))
        return r.error(StatusCode::InvalidArgument,
                       "the plan's training graph has " + shown(model["ops"]) +
                           " ops, this one has " + std::to_string(graph.opCount()) +
                           " (built by another version or with other options)");

    Plan plan;
    if (!j.contains("solver") || !j["solver"].is_object())
        return r.error(StatusCode::ParseError, "missing \"solver\"");
    const json &sv = j["solver"];
    REMAT_ASSIGN_OR_RETURN(plan.solver, r.get<std::string>(sv, "id", "solver"));
    REMAT_ASSIGN_OR_RETURN(std::string status, r.get<std::string>(sv, "status", "solver"));
    bool statusKnown = false;
    for (auto s : {solvers::SolveStatus::Optimal, solvers::SolveStatus::Feasible,
                   solvers::SolveStatus::Infeasible, solvers::SolveStatus::TimedOut,
                   solvers::SolveStatus::Cancelled})
        if (status == solvers::solveStatusName(s)) {
            plan.status = s;
            statusKnown = true;
        }
    if (!statusKnown)
        return r.error(StatusCode::ParseError, "solver: unknown status \"" + status + "\"");
    REMAT_ASSIGN_OR_RETURN(std::string objective, r.get<std::string>(sv, "objective", "solver"));
    auto obj = solvers::parseObjective(objective);
    if (!obj)
        return r.error(StatusCode::ParseError, "solver: " + obj.status().message());
    plan.objective = *obj;
    REMAT_ASSIGN_OR_RETURN(plan.budgetBytes, r.get<int64_t>(sv, "budget_bytes", "solver"));
    if (sv.contains("settings")) {
        if (!sv["settings"].is_object())
            return r.error(StatusCode::ParseError, "solver: \"settings\" must be an object");
        for (const auto &[k, v] : sv["settings"].items()) {
            if (!v.is_string())
                return r.error(StatusCode::ParseError,
                               "solver: setting \"" + k + "\" must be a string");
            plan.settings[k] = v.get<std::string>();
        }
    }
    REMAT_ASSIGN_OR_RETURN(plan.solverObjective, r.optional(sv, "solver_objective", 0.0, "solver"));
    REMAT_ASSIGN_OR_RETURN(plan.solverObjectiveName,
                           r.optional(sv, "solver_objective_name", std::string(), "solver"));
    REMAT_ASSIGN_OR_RETURN(plan.bound, r.optional(sv, "bound", -1.0, "solver"));
    REMAT_ASSIGN_OR_RETURN(plan.solveSeconds, r.optional(sv, "solve_seconds", 0.0, "solver"));
    REMAT_ASSIGN_OR_RETURN(plan.note, r.optional(sv, "note", std::string(), "solver"));
    REMAT_ASSIGN_OR_RETURN(plan.maxOverheadPercent,
                           r.optional(sv, "max_overhead_percent", -1.0, "solver"));

    // Pins.
    if (j.contains("pins")) {
        if (!j["pins"].is_array())
            return r.error(StatusCode::ParseError, "\"pins\" must be an array");
        size_t i = 0;
        for (const json &p : j["pins"]) {
            const std::string where = "pin " + std::to_string(i++);
            REMAT_ASSIGN_OR_RETURN(std::string kind, r.get<std::string>(p, "kind", where));
            const std::optional<solvers::PinKind> pinKind = solvers::parsePinKind(kind);
            if (!pinKind)
                return r.error(StatusCode::ParseError, where + ": unknown kind \"" + kind + "\"");
            solvers::Pin pin;
            pin.kind = *pinKind;
            if (!p.contains("tensor"))
                return r.error(StatusCode::ParseError, where + ": missing \"tensor\"");
            const json *id = p.contains("id") ? &p["id"] : nullptr;
            REMAT_ASSIGN_OR_RETURN(pin.tensor, r.tensor(p["tensor"], id, where));
            plan.pins.push_back(pin);
        }
    }
    // Checkpoints.
    if (j.contains("checkpoints")) {
        if (!j["checkpoints"].is_array())
            return r.error(StatusCode::ParseError, "\"checkpoints\" must be an array");
        size_t i = 0;
        for (const json &c : j["checkpoints"]) {
            REMAT_ASSIGN_OR_RETURN(TensorId t,
                                   r.tensor(c, nullptr, "checkpoint " + std::to_string(i++)));
            plan.checkpoints.push_back(t);
        }
    }
    // Schedule.
    if (!j.contains("schedule") || !j["schedule"].is_array())
        return r.error(StatusCode::ParseError, "missing \"schedule\" (an array of steps)");
    size_t i = 0;
    for (const json &s : j["schedule"]) {
        const std::string where = "schedule step " + std::to_string(i++);
        if (!s.is_array() || s.size() < 2 || !s[0].is_string())
            return r.error(StatusCode::ParseError,
                           where + ": expected [kind, name] or [kind, name, id], got " + shown(s));
        const std::string kind = s[0].get<std::string>();
        const json *id = s.size() > 2 ? &s[2] : nullptr;
        if (kind == "compute") {
            REMAT_ASSIGN_OR_RETURN(OpId o, r.op(s[1], id, where));
            plan.schedule.compute(o);
        } else if (kind == "free" || kind == "offload" || kind == "prefetch") {
            REMAT_ASSIGN_OR_RETURN(TensorId t, r.tensor(s[1], id, where));
            if (kind == "free")
                plan.schedule.free(t);
            else if (kind == "offload")
                plan.schedule.offload(t);
            else
                plan.schedule.prefetch(t);
        } else if (kind == "phase") {
            const std::string mark = s[1].is_string() ? s[1].get<std::string>() : std::string();
            bool ok = false;
            for (auto m : {schedule::PhaseMark::ForwardBegin, schedule::PhaseMark::BackwardBegin,
                           schedule::PhaseMark::End})
                if (mark == schedule::phaseMarkName(m)) {
                    plan.schedule.phase(m);
                    ok = true;
                }
            if (!ok)
                return r.error(StatusCode::ParseError,
                               where + ": unknown phase mark " + shown(s[1]));
        } else {
            return r.error(StatusCode::ParseError, where + ": unknown step kind \"" + kind + "\"");
        }
    }
    if (Status v = schedule::validate(plan.schedule, graph); !v)
        return r.error(StatusCode::InvalidArgument,
                       "the schedule does not validate: " + v.message());
    // The recorded figures are checked whether or not they are used: a file is refused or
    // accepted the same with and without costs (found by fuzz_plan_file: a fractional
    // "peak_bytes" was refused only without costs).
    if (j.contains("figures") && j["figures"].is_object()) {
        const json &f = j["figures"];
        sim::Timeline &t = plan.timeline;
        const std::string w = "figures";
        REMAT_ASSIGN_OR_RETURN(t.peakBytes, r.optional(f, "peak_bytes", int64_t(0), w));
        REMAT_ASSIGN_OR_RETURN(t.activationPeakBytes,
                               r.optional(f, "activation_peak_bytes", int64_t(0), w));
        REMAT_ASSIGN_OR_RETURN(t.weightBytes, r.optional(f, "weight_bytes", int64_t(0), w));
        REMAT_ASSIGN_OR_RETURN(t.weightGradBytes,
                               r.optional(f, "weight_grad_bytes", int64_t(0), w));
        REMAT_ASSIGN_OR_RETURN(t.computeSeconds, r.optional(f, "compute_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.recomputeSeconds, r.optional(f, "recompute_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.copySeconds, r.optional(f, "copy_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.totalSeconds, r.optional(f, "total_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.oneComputeSeconds, r.optional(f, "one_compute_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.hostPeakBytes, r.optional(f, "host_peak_bytes", int64_t(0), w));
        REMAT_ASSIGN_OR_RETURN(plan.baselineStepSeconds,
                               r.optional(f, "store_all_step_seconds", 0.0, w));
        REMAT_ASSIGN_OR_RETURN(t.computeSteps, r.optional(f, "compute_steps", size_t(0), w));
        REMAT_ASSIGN_OR_RETURN(t.recomputeSteps, r.optional(f, "recompute_steps", size_t(0), w));
    }
    if (costs) {
        sim::SimOptions o;
        o.recordPoints = false;
        auto t = sim::simulate(plan.schedule, graph, *costs, o);
        if (!t)
            return r.error(StatusCode::InvalidArgument,
                           "simulation failed: " + t.status().message());
        plan.timeline = *t;
    }
    return plan;
}

} // namespace

Expected<Plan> parsePlan(const std::string &text, const training::TrainingGraph &graph,
                         const cost::Costs *costs, const std::string &origin)
{
    return guardReader(origin, [&] { return parsePlanUnguarded(text, graph, costs, origin); });
}

Expected<Plan> readPlan(const std::string &path, const training::TrainingGraph &graph,
                        const cost::Costs *costs)
{
    return guardReader(path, [&]() -> Expected<Plan> {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return makeError(StatusCode::NotFound, path + ": cannot open the plan file");
        std::ostringstream ss;
        ss << in.rdbuf();
        return parsePlan(ss.str(), graph, costs, path);
    });
}

} // namespace remat::core::io
