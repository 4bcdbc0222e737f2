#include "input_spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace remat::core::onnx {

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

/// Splits `NAME=REST` at the last '='; `what` names the option in messages.
Expected<std::pair<std::string, std::string_view>> splitSpec(std::string_view spec,
                                                             const char *what, const char *form)
{
    const size_t eq = spec.rfind('=');
    if (eq == std::string_view::npos)
        return makeError(StatusCode::InvalidArgument, std::string(what) + " expects " + form +
                                                          ", got '" + std::string(spec) + "'");
    const std::string_view name = trim(spec.substr(0, eq));
    if (name.empty())
        return makeError(StatusCode::InvalidArgument,
                         std::string(what) + " '" + std::string(spec) + "' has no name before '='");
    return std::make_pair(std::string(name), trim(spec.substr(eq + 1)));
}

Expected<int64_t> parsePositive(std::string_view text, const std::string &context)
{
    text = trim(text);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec == std::errc::result_out_of_range || p != text.data() + text.size() ||
        ec != std::errc())
        return makeError(StatusCode::InvalidArgument,
                         context + ": '" + std::string(text) + "' is not a whole number");
    if (v < 1)
        return makeError(StatusCode::InvalidArgument,
                         context + ": " + std::to_string(v) +
                             " is not a dimension (a dim is at least 1)");
    return v;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

} // namespace

Expected<std::vector<int64_t>> parseDims(std::string_view text)
{
    std::vector<int64_t> dims;
    text = trim(text);
    if (text.empty() || text == "scalar")
        return dims;
    // Separators: 'x', 'X', ',', '*' and the multiplication sign U+00D7 (UTF-8 C3 97).
    size_t start = 0;
    auto flush = [&](size_t end) -> Status {
        REMAT_ASSIGN_OR_RETURN(int64_t d, parsePositive(text.substr(start, end - start),
                                                        "dim " + std::to_string(dims.size()) +
                                                            " of '" + std::string(text) + "'"));
        dims.push_back(d);
        return Status::ok();
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == 'x' || c == 'X' || c == ',' || c == '*') {
            REMAT_RETURN_IF_ERROR(flush(i));
            start = i + 1;
        } else if (c == '\xC3' && i + 1 < text.size() && text[i + 1] == '\x97') {
            REMAT_RETURN_IF_ERROR(flush(i));
            start = i + 2;
            ++i;
        }
    }
    REMAT_RETURN_IF_ERROR(flush(text.size()));
    if (dims.size() > 64)
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text.substr(0, 40)) + "...' has more than 64 dims");
    return dims;
}

std::string formatDims(const std::vector<int64_t> &dims)
{
    if (dims.empty())
        return "scalar";
    std::string out;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i)
            out += 'x';
        out += std::to_string(dims[i]);
    }
    return out;
}

Status addInputShape(ImportOptions &options, std::string_view spec)
{
    REMAT_ASSIGN_OR_RETURN(
        auto parts, splitSpec(spec, "--input-shape", "NAME=D0xD1x... (e.g. input=1x3x224x224)"));
    auto &[name, rest] = parts;
    if (options.inputShapes.count(name))
        return makeError(StatusCode::InvalidArgument,
                         "--input-shape gives input '" + name + "' twice");
    auto dims = parseDims(rest);
    if (!dims)
        return dims.status().withContext("--input-shape " + name);
    options.inputShapes.emplace(name, std::move(*dims));
    return Status::ok();
}

Status addDimValue(ImportOptions &options, std::string_view spec)
{
    REMAT_ASSIGN_OR_RETURN(auto parts, splitSpec(spec, "--dim", "NAME=VALUE (e.g. height=224)"));
    auto &[name, rest] = parts;
    if (options.dimValues.count(name))
        return makeError(StatusCode::InvalidArgument, "--dim gives dim '" + name + "' twice");
    REMAT_ASSIGN_OR_RETURN(int64_t v, parsePositive(rest, "--dim " + name));
    options.dimValues.emplace(name, v);
    return Status::ok();
}

Status addInputValue(ImportOptions &options, std::string_view spec)
{
    REMAT_ASSIGN_OR_RETURN(auto parts,
                           splitSpec(spec, "--input-value", "NAME=VALUE (e.g. sr=16000)"));
    auto &[name, rest] = parts;
    if (options.inputValues.count(name))
        return makeError(StatusCode::InvalidArgument,
                         "--input-value gives input '" + name + "' twice");
    double v = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (rest.empty() || ec != std::errc() || p != rest.data() + rest.size() || !std::isfinite(v))
        return makeError(StatusCode::InvalidArgument, "--input-value " + name + ": '" +
                                                          std::string(rest) +
                                                          "' is not a finite number");
    options.inputValues.emplace(name, v);
    return Status::ok();
}

Status addBranch(ImportOptions &options, std::string_view spec)
{
    REMAT_ASSIGN_OR_RETURN(auto parts,
                           splitSpec(spec, "--branch", "NODE=then|else (e.g. /If=then)"));
    auto &[name, rest] = parts;
    if (options.branches.count(name))
        return makeError(StatusCode::InvalidArgument,
                         "--branch gives If node '" + name + "' twice");
    const std::string b = lower(trim(rest));
    if (b != "then" && b != "else")
        return makeError(StatusCode::InvalidArgument, "--branch " + name + ": '" +
                                                          std::string(rest) +
                                                          "' is not a branch (then or else)");
    options.branches.emplace(name, b == "then");
    return Status::ok();
}

Expected<ir::ValueKind> parseValueKind(std::string_view text)
{
    const std::string t = lower(trim(text));
    if (t == "parameter")
        return ir::ValueKind::Parameter;
    if (t == "buffer")
        return ir::ValueKind::Buffer;
    if (t == "input")
        return ir::ValueKind::Input;
    if (t == "constant")
        return ir::ValueKind::Constant;
    return makeError(StatusCode::InvalidArgument,
                     "'" + std::string(text) +
                         "' is not one of parameter, buffer, input, constant");
}

Status addClassification(ImportOptions &options, std::string_view spec)
{
    REMAT_ASSIGN_OR_RETURN(auto parts,
                           splitSpec(spec, "--classify", "NAME=parameter|buffer|input|constant"));
    auto &[name, rest] = parts;
    if (options.kindOverrides.count(name))
        return makeError(StatusCode::InvalidArgument, "--classify gives '" + name + "' twice");
    auto kind = parseValueKind(rest);
    if (!kind)
        return kind.status().withContext("--classify " + name);
    options.kindOverrides.emplace(name, *kind);
    return Status::ok();
}

Expected<Semantics> parseSemantics(std::string_view text)
{
    const std::string t = lower(trim(text));
    if (t == "training")
        return Semantics::Training;
    if (t == "as-exported" || t == "as_exported" || t == "exported")
        return Semantics::AsExported;
    return makeError(StatusCode::InvalidArgument,
                     "--semantics '" + std::string(text) + "' is not one of training, as-exported");
}

const char *semanticsName(Semantics semantics)
{
    return semantics == Semantics::Training ? "training" : "as-exported";
}

int64_t suggestDimValue(std::string_view name)
{
    const std::string n = lower(name);
    auto has = [&](const char *part) { return n.find(part) != std::string::npos; };
    if (has("batch") || n == "n" || n == "b" || n == "bs")
        return 1;
    if (has("height") || has("width") || n == "h" || n == "w" || has("img") || has("image") ||
        has("size"))
        return 224;
    if (has("seq") || has("token") || has("len") || n == "t" || n == "s" || has("time"))
        return 128;
    if (has("sample") || has("audio") || has("wave"))
        return 16000;
    if (has("channel") || n == "c")
        return 3;
    return 1;
}

} // namespace remat::core::onnx
