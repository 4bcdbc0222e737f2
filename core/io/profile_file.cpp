#include "core/io/profile_file.h"

#include "core/util/reader_guard.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

namespace remat::core::io {

using nlohmann::json;

namespace {

const char *kFormat = "remat-profile";

/// A JSON value for an error message: dump() throws on invalid UTF-8 unless told to replace it.
std::string shown(const json &v)
{
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

class Reader
{
public:
    explicit Reader(std::string origin) : m_origin(std::move(origin)) {}

    Status error(const std::string &what) const
    {
        return makeError(StatusCode::ParseError, m_origin + ": " + what);
    }

    Expected<std::string> text(const json &obj, const char *key, const std::string &where,
                               bool required) const
    {
        if (!obj.contains(key) || obj.at(key).is_null()) {
            if (required)
                return error(where + ": missing \"" + key + "\"");
            return std::string();
        }
        if (!obj.at(key).is_string())
            return error(where + ": \"" + key + "\" must be a string, not " + shown(obj.at(key)));
        return obj.at(key).get<std::string>();
    }

    /// A finite number >= `min` (or the fallback when absent and not required).
    Expected<double> number(const json &obj, const char *key, const std::string &where,
                            bool required, double fallback = 0, double min = 0) const
    {
        if (!obj.contains(key) || obj.at(key).is_null()) {
            if (required)
                return error(where + ": missing \"" + key + "\"");
            return fallback;
        }
        const json &v = obj.at(key);
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min)
            return error(where + ": \"" + key + "\" must be a finite number of at least " +
                         shown(json(min)) + ", not " + shown(v));
        return v.get<double>();
    }

    /// An integer in [0, max]: nlohmann's get<int64_t>() on 1e300 is undefined behaviour.
    Expected<int64_t> integer(const json &obj, const char *key, const std::string &where,
                              int64_t max) const
    {
        if (!obj.contains(key) || obj.at(key).is_null())
            return int64_t(0);
        const json &v = obj.at(key);
        const double d = v.is_number() ? v.get<double>() : -1;
        if (!v.is_number() || !(d >= 0 && d <= double(max)) || d != std::floor(d))
            return error(where + ": \"" + key + "\" must be an integer from 0 to " +
                         std::to_string(max) + ", not " + shown(v));
        return v.is_number_unsigned()  ? int64_t(v.get<uint64_t>())
               : v.is_number_integer() ? v.get<int64_t>()
                                       : int64_t(d);
    }

private:
    std::string m_origin;
};

/// {"op": seconds} or {"ops": {"op": seconds}, "host_to_device_bandwidth": B/s, ...}.
Expected<cost::Profile> parseLegacy(const json &doc, const Reader &r)
{
    cost::Profile p;
    const json *ops = &doc;
    if (doc.contains("ops")) {
        ops = &doc.at("ops");
        if (!ops->is_object())
            return r.error("\"ops\" must be an object of op name -> seconds (or give \"format\": "
                           "\"remat-profile\")");
        REMAT_ASSIGN_OR_RETURN(p.hostToDeviceBandwidth, r.number(doc, "host_to_device_bandwidth",
                                                                 "profile", false, 0, 1e-300));
        REMAT_ASSIGN_OR_RETURN(p.deviceToHostBandwidth, r.number(doc, "device_to_host_bandwidth",
                                                                 "profile", false, 0, 1e-300));
    }
    for (auto it = ops->begin(); it != ops->end(); ++it) {
        if (ops == &doc &&
            (it.key() == "host_to_device_bandwidth" || it.key() == "device_to_host_bandwidth"))
            continue;
        cost::ProfiledOp op;
        op.name = it.key();
        REMAT_ASSIGN_OR_RETURN(op.seconds,
                               r.number(*ops, it.key().c_str(), "op '" + op.name + "'", true));
        op.samples = 1;
        p.ops.push_back(std::move(op));
    }
    return p;
}

Expected<cost::Profile> parseProfileUnguarded(const std::string &text, const std::string &origin)
{
    const Reader r(origin);
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception &e) {
        return r.error(std::string("not valid JSON (") + e.what() + ")");
    }
    if (!doc.is_object())
        return r.error("a profile is a JSON object, not " + shown(doc));
    if (!doc.contains("format"))
        return parseLegacy(doc, r);
    REMAT_ASSIGN_OR_RETURN(std::string format, r.text(doc, "format", "profile", true));
    if (format != kFormat)
        return r.error("\"format\" is \"" + format + "\", not \"" + kFormat +
                       "\" (is this a plan or a session?)");
    REMAT_ASSIGN_OR_RETURN(int64_t version, r.integer(doc, "version", "profile", 1 << 20));
    if (version != kProfileFormatVersion)
        return r.error("version " + std::to_string(version) +
                       " is not supported (this build reads version " +
                       std::to_string(kProfileFormatVersion) + "; a newer remat wrote it?)");

    cost::Profile p;
    if (doc.contains("model")) {
        const json &m = doc.at("model");
        if (!m.is_object())
            return r.error("\"model\" must be an object with \"path\", \"sha256\" and \"batch\"");
        REMAT_ASSIGN_OR_RETURN(p.modelPath, r.text(m, "path", "model", false));
        REMAT_ASSIGN_OR_RETURN(p.modelSha256, r.text(m, "sha256", "model", false));
        REMAT_ASSIGN_OR_RETURN(p.batch, r.integer(m, "batch", "model", int64_t(1) << 53));
        REMAT_ASSIGN_OR_RETURN(p.secondBatch,
                               r.integer(m, "second_batch", "model", int64_t(1) << 53));
    }
    REMAT_ASSIGN_OR_RETURN(p.backend, r.text(doc, "backend", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.device, r.text(doc, "device", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.schedule, r.text(doc, "schedule", "profile", false));
    REMAT_ASSIGN_OR_RETURN(int64_t iterations, r.integer(doc, "iterations", "profile", 1 << 30));
    REMAT_ASSIGN_OR_RETURN(int64_t warmup, r.integer(doc, "warmup_iterations", "profile", 1 << 30));
    p.iterations = int(iterations);
    p.warmupIterations = int(warmup);
    REMAT_ASSIGN_OR_RETURN(p.stepSeconds, r.number(doc, "step_seconds", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.overheadSeconds, r.number(doc, "overhead_seconds", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.computeSeconds, r.number(doc, "compute_seconds", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.hostToDeviceBandwidth,
                           r.number(doc, "host_to_device_bandwidth", "profile", false));
    REMAT_ASSIGN_OR_RETURN(p.deviceToHostBandwidth,
                           r.number(doc, "device_to_host_bandwidth", "profile", false));

    if (!doc.contains("ops") || !doc.at("ops").is_array())
        return r.error(
            "\"ops\" must be an array of {\"name\", \"type\", \"phase\", \"seconds\", ...}");
    std::unordered_set<std::string> names;
    const json &ops = doc.at("ops");
    for (size_t i = 0; i < ops.size(); ++i) {
        const json &o = ops[i];
        const std::string where = "ops[" + std::to_string(i) + "]";
        if (!o.is_object())
            return r.error(where + " must be an object, not " + shown(o));
        cost::ProfiledOp op;
        REMAT_ASSIGN_OR_RETURN(op.name, r.text(o, "name", where, true));
        if (!names.insert(op.name).second)
            return r.error(where + ": op '" + op.name + "' is timed twice");
        REMAT_ASSIGN_OR_RETURN(op.type, r.text(o, "type", where, false));
        REMAT_ASSIGN_OR_RETURN(op.phase, r.text(o, "phase", where, false));
        if (!op.phase.empty() && op.phase != "forward" && op.phase != "loss" &&
            op.phase != "backward")
            return r.error(where +
                           ": \"phase\" must be \"forward\", \"loss\" or \"backward\", not \"" +
                           op.phase + "\"");
        REMAT_ASSIGN_OR_RETURN(op.family, r.text(o, "family", where, false));
        REMAT_ASSIGN_OR_RETURN(op.flops, r.number(o, "flops", where, false, -1));
        REMAT_ASSIGN_OR_RETURN(op.bytes, r.number(o, "bytes", where, false, -1));
        REMAT_ASSIGN_OR_RETURN(op.seconds, r.number(o, "seconds", where, true));
        REMAT_ASSIGN_OR_RETURN(int64_t samples, r.integer(o, "samples", where, 1 << 30));
        REMAT_ASSIGN_OR_RETURN(op.recomputeSeconds, r.number(o, "recompute_seconds", where, false));
        REMAT_ASSIGN_OR_RETURN(int64_t recomputeSamples,
                               r.integer(o, "recompute_samples", where, 1 << 30));
        op.samples = int(samples);
        op.recomputeSamples = int(recomputeSamples);
        if (o.contains("second")) {
            const json &s2 = o.at("second");
            const std::string at = where + ".second";
            if (!s2.is_object())
                return r.error(at + " must be an object {\"flops\", \"bytes\", \"seconds\"}, not " +
                               shown(s2));
            REMAT_ASSIGN_OR_RETURN(op.secondFlops, r.number(s2, "flops", at, true));
            REMAT_ASSIGN_OR_RETURN(op.secondBytes, r.number(s2, "bytes", at, true));
            REMAT_ASSIGN_OR_RETURN(op.secondSeconds, r.number(s2, "seconds", at, true));
            if (!(op.secondSeconds > 0))
                return r.error(at + ": \"seconds\" must be above 0");
        }
        p.ops.push_back(std::move(op));
    }
    return p;
}

} // namespace

std::string writeProfile(const cost::Profile &p)
{
    json ops = json::array();
    for (const cost::ProfiledOp &op : p.ops) {
        json o = {{"name", op.name},     {"type", op.type},       {"phase", op.phase},
                  {"family", op.family}, {"seconds", op.seconds}, {"samples", op.samples}};
        if (op.flops >= 0)
            o["flops"] = op.flops;
        if (op.bytes >= 0)
            o["bytes"] = op.bytes;
        if (op.recomputeSamples > 0) {
            o["recompute_seconds"] = op.recomputeSeconds;
            o["recompute_samples"] = op.recomputeSamples;
        }
        if (op.hasSecondPoint())
            o["second"] = {{"flops", op.secondFlops},
                           {"bytes", op.secondBytes},
                           {"seconds", op.secondSeconds}};
        ops.push_back(std::move(o));
    }
    json doc = {{"format", kFormat},
                {"version", kProfileFormatVersion},
                {"model", {{"path", p.modelPath}, {"sha256", p.modelSha256}, {"batch", p.batch}}},
                {"backend", p.backend},
                {"device", p.device},
                {"schedule", p.schedule},
                {"iterations", p.iterations},
                {"warmup_iterations", p.warmupIterations},
                {"step_seconds", p.stepSeconds},
                {"overhead_seconds", p.overheadSeconds},
                {"compute_seconds", p.computeSeconds},
                {"ops", std::move(ops)}};
    if (p.secondBatch > 0)
        doc["model"]["second_batch"] = p.secondBatch;
    if (p.hostToDeviceBandwidth > 0)
        doc["host_to_device_bandwidth"] = p.hostToDeviceBandwidth;
    if (p.deviceToHostBandwidth > 0)
        doc["device_to_host_bandwidth"] = p.deviceToHostBandwidth;
    // Names come from ONNX files: replace bytes that are not UTF-8 rather than throw.
    return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Status saveProfile(const std::string &path, const cost::Profile &profile)
{
    std::ofstream out(path, std::ios::binary);
    if (!out)
        return makeError(StatusCode::NotFound,
                         path + ": cannot write the profile (is the folder there?)");
    out << writeProfile(profile);
    out.close();
    return out ? Status::ok()
               : makeError(StatusCode::Internal, path + ": writing the profile failed");
}

Expected<cost::Profile> parseProfile(const std::string &text, const std::string &origin)
{
    return guardReader(origin, [&] { return parseProfileUnguarded(text, origin); });
}

Expected<cost::Profile> readProfile(const std::string &path)
{
    return guardReader(path, [&]() -> Expected<cost::Profile> {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return makeError(
                StatusCode::NotFound,
                path + ": cannot open the profile (write one with `remat run MODEL --profile-out " +
                    path + "`)");
        std::ostringstream ss;
        ss << in.rdbuf();
        return parseProfile(ss.str(), path);
    });
}

} // namespace remat::core::io
