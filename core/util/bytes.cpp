#include "bytes.h"

#include <cctype>
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

Expected<int64_t> parseBytes(std::string_view text)
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
    const double number = std::stod(std::string(text.substr(numberStart, i - numberStart)));
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    std::string unit;
    for (; i < text.size(); ++i) {
        if (std::isspace(static_cast<unsigned char>(text[i])))
            break;
        unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
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
    else if (unit == "kb")
        scale = 1e3;
    else if (unit == "mb")
        scale = 1e6;
    else if (unit == "gb")
        scale = 1e9;
    else if (unit == "tb")
        scale = 1e12;
    else
        return makeError(StatusCode::InvalidArgument,
                         "unknown byte unit '" + unit + "' in '" + std::string(text) +
                             "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
    const double bytes = number * scale;
    if (!(bytes >= 0.0) || bytes > 9.0e18)
        return makeError(StatusCode::OutOfRange, "byte count '" + std::string(text) + "' is out of range");
    return static_cast<int64_t>(std::llround(bytes));
}

bool mulOverflows(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

bool addOverflows(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

} // namespace remat::core
