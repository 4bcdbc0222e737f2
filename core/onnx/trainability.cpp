#include "core/onnx/trainability.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace remat::core::onnx {

namespace {

struct Pattern
{
    const char *option; ///< "--freeze" or "--trainable"
    std::string text;
    std::regex re;
    size_t matches = 0;
};

Expected<std::vector<Pattern>> compile(const ImportOptions &options)
{
    std::vector<Pattern> out;
    const auto add = [&](const char *option, const std::string &text) -> Status {
        if (text.empty())
            return makeError(StatusCode::InvalidArgument,
                             std::string(option) +
                                 " needs a regular expression (an empty one would match every "
                                 "parameter)");
        // std::regex compiles and matches recursively: a bound keeps a hostile session file
        // from exhausting the stack (a parameter name is far shorter than this)
        if (text.size() > 1000)
            return makeError(StatusCode::InvalidArgument, std::string(option) + " pattern has " +
                                                              std::to_string(text.size()) +
                                                              " characters, more than 1000");
        try {
            out.push_back({option, text, std::regex(text, std::regex::ECMAScript), 0});
        } catch (const std::regex_error &e) {
            return makeError(StatusCode::InvalidArgument,
                             std::string(option) + " '" + text +
                                 "' is not a valid regular expression (ECMAScript): " + e.what() +
                                 "; escape a literal '.', '(' or '[' with a backslash");
        }
        return Status::ok();
    };
    for (const std::string &p : options.freezePatterns)
        REMAT_RETURN_IF_ERROR(add("--freeze", p));
    for (const std::string &p : options.trainablePatterns)
        REMAT_RETURN_IF_ERROR(add("--trainable", p));
    return out;
}

bool searches(const std::regex &re, const std::string &name)
{
    if (name.size() > 4096)
        return false; // not a parameter name anyone writes a pattern for; bounds the recursion
    try {
        return std::regex_search(name, re);
    } catch (const std::regex_error &) {
        return false; // complexity limits of a pathological pattern on a long name: no match
    }
}

int64_t bytesOf(const ir::Value &v)
{
    auto b = v.bytes();
    return b ? *b : 0;
}

} // namespace

Status checkTrainabilityPatterns(const ImportOptions &options)
{
    auto p = compile(options);
    return p ? Status::ok() : p.status();
}

Status applyTrainability(std::vector<ir::Value> &values, const ImportOptions &options,
                         std::vector<std::string> &notes)
{
    if (options.freezePatterns.empty() && options.trainablePatterns.empty())
        return Status::ok();
    REMAT_ASSIGN_OR_RETURN(std::vector<Pattern> patterns, compile(options));
    const auto isWeight = [](const ir::Value &v) {
        return v.kind == ir::ValueKind::Parameter || v.kind == ir::ValueKind::Frozen;
    };
    std::vector<ir::Value *> weights;
    std::vector<std::string> buffers;
    for (ir::Value &v : values) {
        if (isWeight(v))
            weights.push_back(&v);
        else if (v.kind == ir::ValueKind::Buffer)
            buffers.push_back(v.name);
    }
    const bool anyTrainable = std::any_of(patterns.begin(), patterns.end(), [](const Pattern &p) {
        return std::string_view(p.option) == "--trainable";
    });
    // Decide first, change nothing until every check has passed.
    std::vector<std::pair<ir::ValueKind, std::string>> decided(weights.size());
    for (size_t i = 0; i < weights.size(); ++i) {
        const ir::Value &w = *weights[i];
        decided[i] = {w.kind, w.kindReason};
        const std::string *freezeBy = nullptr;
        bool trainableMatch = false;
        for (Pattern &p : patterns) {
            if (!searches(p.re, w.name))
                continue;
            ++p.matches;
            if (std::string_view(p.option) == "--freeze" && !freezeBy)
                freezeBy = &p.text;
            else if (std::string_view(p.option) == "--trainable")
                trainableMatch = true;
        }
        if (options.kindOverrides.count(w.name))
            continue; // the user named this one: that wins over any pattern
        if (freezeBy)
            decided[i] = {ir::ValueKind::Frozen, "frozen by --freeze '" + *freezeBy + "'"};
        else if (anyTrainable && !trainableMatch)
            decided[i] = {ir::ValueKind::Frozen, "frozen: matches no --trainable pattern"};
        else if (anyTrainable && w.kind == ir::ValueKind::Parameter)
            decided[i] = {w.kind, "trainable: matches --trainable"};
    }
    for (const Pattern &p : patterns) {
        if (p.matches > 0)
            continue;
        std::string msg = std::string(p.option) + " '" + p.text + "' matches no parameter";
        if (weights.empty()) {
            msg += ": the model has no parameters";
        } else {
            msg += "; the parameters are named like ";
            const size_t shown = std::min<size_t>(weights.size(), 4);
            for (size_t i = 0; i < shown; ++i)
                msg += (i ? ", '" : "'") + weights[i]->name + "'";
            if (weights.size() > shown)
                msg += fmt::format(" ({} in all: `remat info MODEL --json` lists them)",
                                   weights.size());
        }
        const size_t bufferMatches =
            size_t(std::count_if(buffers.begin(), buffers.end(),
                                 [&](const std::string &b) { return searches(p.re, b); }));
        if (bufferMatches > 0)
            msg += fmt::format(" ({} buffers match it, and a buffer never trains)", bufferMatches);
        msg += ". The pattern is an ECMAScript regular expression searched in each name";
        return makeError(StatusCode::InvalidArgument, msg);
    }
    size_t trainable = 0, frozenNow = 0;
    int64_t frozenBytes = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (decided[i].first == ir::ValueKind::Parameter) {
            ++trainable;
        } else {
            ++frozenNow;
            frozenBytes += bytesOf(*weights[i]);
        }
    }
    if (trainable == 0)
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("--freeze / --trainable leave nothing to train: all {} "
                                     "parameters are frozen; narrow --freeze or widen --trainable "
                                     "(or drop both to train every parameter)",
                                     weights.size()));
    for (size_t i = 0; i < weights.size(); ++i) {
        weights[i]->kind = decided[i].first;
        weights[i]->kindReason = std::move(decided[i].second);
    }
    if (frozenNow > 0)
        notes.push_back(fmt::format("{} of {} parameters are frozen ({} bytes), by the --freeze / "
                                    "--trainable patterns and the export's metadata; {} train",
                                    frozenNow, weights.size(), frozenBytes, trainable));
    return Status::ok();
}

} // namespace remat::core::onnx
