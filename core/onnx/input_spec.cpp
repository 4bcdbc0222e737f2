#include "input_spec.h"

#include "trainability.h"

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

Expected<int64_t> parsePositive(std::string_view text)
{
    text = trim(text);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec == std::errc::result_out_of_range || p != text.data() + text.size() ||
        ec != std::errc())
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) + "' is not a whole number");
    if (v < 1)
        return makeError(StatusCode::InvalidArgument,
                         std::to_string(v) + " is not a dimension (a dim is at least 1)");
    return v;
}

Expected<double> parseFinite(std::string_view text)
{
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v))
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) + "' is not a finite number");
    return v;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

Expected<bool> parseBranch(std::string_view text)
{
    const std::string b = lower(trim(text));
    if (b != "then" && b != "else")
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) + "' is not a branch (then or else)");
    return b == "then";
}

/// The NAME=VALUE options (--input-shape, --dim, --classify ...): splits `spec`, refuses a name
/// given twice (`noun` names what it is in that message), parses the value with `parse` (its
/// message gets "FLAG NAME: " before it) and adds it to `map`.
template <typename Map, typename Parse>
Status addNamed(Map &map, std::string_view spec, const char *flag, const char *form,
                const char *noun, Parse parse)
{
    REMAT_ASSIGN_OR_RETURN(auto parts, splitSpec(spec, flag, form));
    auto &[name, rest] = parts;
    if (map.count(name))
        return makeError(StatusCode::InvalidArgument,
                         std::string(flag) + " gives " + noun + "'" + name + "' twice");
    auto value = parse(rest);
    if (!value)
        return value.status().withContext(std::string(flag) + " " + name);
    map.emplace(name, std::move(*value));
    return Status::ok();
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
        auto d = parsePositive(text.substr(start, end - start));
        if (!d)
            return d.status().withContext("dim " + std::to_string(dims.size()) + " of '" +
                                          std::string(text) + "'");
        dims.push_back(*d);
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
    return addNamed(options.inputShapes, spec, "--input-shape",
                    "NAME=D0xD1x... (e.g. input=1x3x224x224)", "input ", parseDims);
}

Status addDimValue(ImportOptions &options, std::string_view spec)
{
    return addNamed(options.dimValues, spec, "--dim", "NAME=VALUE (e.g. height=224)", "dim ",
                    parsePositive);
}

Status addInputValue(ImportOptions &options, std::string_view spec)
{
    return addNamed(options.inputValues, spec, "--input-value", "NAME=VALUE (e.g. sr=16000)",
                    "input ", parseFinite);
}

Status addBranch(ImportOptions &options, std::string_view spec)
{
    return addNamed(options.branches, spec, "--branch", "NODE=then|else (e.g. /If=then)",
                    "If node ", parseBranch);
}

Expected<ir::ValueKind> parseValueKind(std::string_view text)
{
    const std::string t = lower(trim(text));
    if (t == "parameter")
        return ir::ValueKind::Parameter;
    if (t == "buffer")
        return ir::ValueKind::Buffer;
    if (t == "frozen")
        return ir::ValueKind::Frozen;
    if (t == "input")
        return ir::ValueKind::Input;
    if (t == "constant")
        return ir::ValueKind::Constant;
    return makeError(StatusCode::InvalidArgument,
                     "'" + std::string(text) +
                         "' is not one of parameter, frozen, buffer, input, constant");
}

Status addClassification(ImportOptions &options, std::string_view spec)
{
    return addNamed(options.kindOverrides, spec, "--classify",
                    "NAME=parameter|frozen|buffer|input|constant", "", parseValueKind);
}

namespace {

/// Adds `pattern` to `patterns` (one of `options`' lists) if the lists stay valid together.
Status addPattern(ImportOptions &options, std::vector<std::string> &patterns,
                  std::string_view pattern)
{
    patterns.emplace_back(pattern);
    Status s = checkTrainabilityPatterns(options);
    if (!s.isOk())
        patterns.pop_back();
    return s;
}

} // namespace

Status addFreezePattern(ImportOptions &options, std::string_view pattern)
{
    return addPattern(options, options.freezePatterns, pattern);
}

Status addTrainablePattern(ImportOptions &options, std::string_view pattern)
{
    return addPattern(options, options.trainablePatterns, pattern);
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

namespace {

/// The value a dim's name stands for, or 0 when the name says nothing (p2o.DynamicDimension.1,
/// unk__314, s0, dim_2...).
int64_t valueFromName(std::string_view name)
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
    return 0;
}

bool isAudio(const ModelSignature &signature, const DeclaredInput &input)
{
    const std::string n = lower(input.name);
    for (const char *part : {"audio", "wave", "wav", "pcm", "speech", "sample", "signal"})
        if (n.find(part) != std::string::npos)
            return true;
    // A model that takes its sample rate as a scalar input (Silero VAD's `sr`) reads audio.
    for (const DeclaredInput &other : signature.inputs) {
        const std::string o = lower(other.name);
        bool scalar = true;
        for (const ir::Dim &d : other.shape.dims)
            scalar = scalar && d.isStatic() && d.value == 1;
        if (scalar && (o == "sr" || o.find("sample_rate") != std::string::npos ||
                       o.find("sampling_rate") != std::string::npos))
            return true;
    }
    return false;
}

/// A model fed chunk by chunk carries its recurrent state in and out (Silero VAD's `state`, an
/// RNN's `h` / `c`): its audio input is a chunk, not a clip.
bool isStreaming(const ModelSignature &signature)
{
    for (const DeclaredInput &other : signature.inputs) {
        const std::string o = lower(other.name);
        if (o.find("state") != std::string::npos || o.find("hidden") != std::string::npos ||
            o.find("cache") != std::string::npos || o == "h" || o == "c" || o == "h0" || o == "c0")
            return true;
    }
    return false;
}

bool staticChannels(const ir::Dim &d)
{
    return d.isStatic() && (d.value == 1 || d.value == 3 || d.value == 4);
}

/// The size the position of free dim `i` of `input` suggests (its name aside).
int64_t positional(const ModelSignature &signature, const DeclaredInput &input, size_t i)
{
    const std::vector<ir::Dim> &dims = input.shape.dims;
    if (isBatchDim(input, i))
        return 1;
    const size_t rank = dims.size();
    const bool integer = input.dtype == ir::DataType::Int64 || input.dtype == ir::DataType::Int32;
    if (rank == 4 && !integer) {
        // NHWC when only the last dim looks like channels; NCHW otherwise.
        const bool nhwc = staticChannels(dims[3]) && !staticChannels(dims[1]);
        const size_t h = nhwc ? 1 : 2, w = nhwc ? 2 : 3;
        if (i == h || i == w) {
            const ir::Dim &other = dims[i == h ? w : h];
            return other.isStatic() ? std::max<int64_t>(224, other.value) : 224;
        }
        return 3; // a free channel count: RGB
    }
    if (rank == 5 && !integer)
        return i == 2 ? 16 : 224; // N C T H W
    if (!integer && isAudio(signature, input) && i + 1 == rank)
        // One second at 16 kHz; a streaming model's chunk (32 ms: what Silero VAD takes).
        return isStreaming(signature) ? 512 : 16000;
    return 128; // a sequence: tokens, frames, steps
}

} // namespace

int64_t suggestDimValue(std::string_view name)
{
    const int64_t v = valueFromName(name);
    return v > 0 ? v : 1;
}

bool isBatchDim(const DeclaredInput &input, size_t index)
{
    for (size_t j = 0; j < input.shape.dims.size(); ++j)
        if (!input.shape.dims[j].isStatic())
            return j == index;
    return false;
}

std::vector<int64_t> suggestInputShape(const ModelSignature &signature, const DeclaredInput &input)
{
    std::vector<int64_t> out;
    for (size_t i = 0; i < input.shape.dims.size(); ++i) {
        const ir::Dim &d = input.shape.dims[i];
        if (d.isStatic()) {
            out.push_back(d.value);
            continue;
        }
        const int64_t byName = d.symbol.empty() ? 0 : valueFromName(d.symbol);
        // A name saying "batch" where the batch is not (or vice versa) still wins: it is the
        // exporter's word. A name saying nothing leaves it to the position.
        out.push_back(byName > 0 ? byName : positional(signature, input, i));
    }
    return out;
}

int64_t suggestNamedDim(const ModelSignature &signature, std::string_view name)
{
    if (const int64_t v = valueFromName(name); v > 0)
        return v;
    // Where the name first appears decides (inputs in file order).
    for (const DeclaredInput &in : signature.inputs)
        for (size_t i = 0; i < in.shape.dims.size(); ++i)
            if (!in.shape.dims[i].isStatic() && in.shape.dims[i].symbol == name)
                return positional(signature, in, i);
    return 1;
}

} // namespace remat::core::onnx
