#pragma once
// Byte counts for people: formatBytes(3221225472) == "3.00 GiB"; parseBytes("512MiB") == 536870912.

#include "status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace remat::core {

/// Binary units (KiB, MiB, GiB, TiB) with two decimals; plain "B" below 1 KiB.
std::string formatBytes(int64_t bytes);

/// Accepts "1234", "6GiB", "6 GiB", "1.5GB" (GB = 10^9), "512MiB", "64KiB", "2TiB", "100B" and
/// whatever formatBytes prints; anything else (text after the unit, "1.2.3") is an error Status.
Expected<int64_t> parseBytes(std::string_view text);

/// Checked arithmetic for sizes read from untrusted files.
bool mulOverflows(int64_t a, int64_t b, int64_t *out);
bool addOverflows(int64_t a, int64_t b, int64_t *out);

} // namespace remat::core
