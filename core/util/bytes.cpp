#include "bytes.h"

#include "reader_guard.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace remat::core {

std::string formatBytes(int64_t bytes)
{
    const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    const double magnitude = std::fabs(static_cast<double>(bytes));
    if (magnitude < 1024.0)
        return std::to_string(bytes) + " B";
    double v = static_cast<double>(bytes) / 1024.0;
    int unit = 0;
    while (std::fabs(v) >= 1024.0 && unit < 4) {
        v /= 1024.0;
        ++unit;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[unit]);
    return buf;
}

ByteUnit byteUnitFor(int64_t largestBytes)
{
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    const double magnitude = std::fabs(static_cast<double>(largestBytes));
    ByteUnit unit;
    for (int i = 1; i < 5 && magnitude >= unit.bytes * 1024.0; ++i) {
        unit.bytes *= 1024.0;
        unit.name = names[i];
    }
    return unit;
}

namespace {

Expected<int64_t> parseBytesUnguarded(std::string_view text)
{
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    const size_t numberStart = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    if (i == numberStart)
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) + "' is not a byte count (try 6GiB or 512MiB)");
    // from_chars, not std::stod: "1.2.3", "." and a 400-digit count are errors, not exceptions,
    // and the locale cannot turn '.' into something else.
    const std::string_view digits = text.substr(numberStart, i - numberStart);
    double number = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number,
                                           std::chars_format::fixed);
    if (ec == std::errc::result_out_of_range)
        return makeError(StatusCode::OutOfRange,
                         "byte count '" + std::string(text) + "' is out of range");
    if (ec != std::errc() || end != digits.data() + digits.size())
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) + "' is not a byte count (try 6GiB or 512MiB)");
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    std::string unit;
    for (; i < text.size(); ++i) {
        if (std::isspace(static_cast<unsigned char>(text[i])))
            break;
        unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    if (i < text.size())
        return makeError(StatusCode::InvalidArgument,
                         "'" + std::string(text) +
                             "' is not a byte count: text after the unit (try 6GiB)");
    double scale = 1.0;
    if (unit.empty() || unit == "b")
        scale = 1.0;
    else if (unit == "kib" || unit == "k")
        scale = 1024.0;
    else if (unit == "mib" || unit == "m")
        scale = 1024.0 * 1024.0;
    else if (unit == "gib" || unit == "g")
        scale = 1024.0 * 1024.0 * 1024.0;
    else if (unit == "tib" || unit == "t")
        scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
    else if (unit == "pib" || unit == "p") // formatBytes prints PiB from 1 PiB on
        scale = 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0;
    else if (unit == "kb")
        scale = 1e3;
    else if (unit == "mb")
        scale = 1e6;
    else if (unit == "gb")
        scale = 1e9;
    else if (unit == "tb")
        scale = 1e12;
    else if (unit == "pb")
        scale = 1e15;
    else
        return makeError(StatusCode::InvalidArgument,
                         "unknown byte unit '" + unit + "' in '" + std::string(text) +
                             "' (use B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB or PB)");
    const double bytes = number * scale;
    if (!(bytes >= 0.0) || bytes > 9.0e18)
        return makeError(StatusCode::OutOfRange,
                         "byte count '" + std::string(text) + "' is out of range");
    return static_cast<int64_t>(std::llround(bytes));
}

} // namespace

Expected<int64_t> parseBytes(std::string_view text)
{
    return guardReader("byte count '" + std::string(text) + "'",
                       [&] { return parseBytesUnguarded(text); });
}

bool mulOverflows(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }

bool addOverflows(int64_t a, int64_t b, int64_t *out) { return __builtin_add_overflow(a, b, out); }

} // namespace remat::core
