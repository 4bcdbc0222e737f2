#pragma once
// Byte counts for people: formatBytes(3221225472) == "3.00 GiB"; parseBytes("512MiB") == 536870912.

#include "status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace remat::core {

/// Binary units (KiB, MiB, GiB, TiB) with two decimals; plain "B" below 1 KiB.
std::string formatBytes(int64_t bytes);

/// The binary unit a range of sizes reads best in: the largest of B, KiB, MiB, GiB, TiB that
/// keeps `largestBytes` at 1 or more of it. Chart axes divide by `bytes` and print `name`, so
/// they agree with formatBytes in the tables beside them.
///   ByteUnit u = byteUnitFor(peak);  axis->setTitleText(u.name);  y = double(b) / u.bytes;
struct ByteUnit
{
    double bytes = 1;
    const char *name = "B";
};
ByteUnit byteUnitFor(int64_t largestBytes);

/// Accepts "1234", "6GiB", "6 GiB", "1.5GB" (GB = 10^9), "512MiB", "64KiB", "2TiB", "100B" and
/// whatever formatBytes prints; anything else (text after the unit, "1.2.3") is an error Status.
Expected<int64_t> parseBytes(std::string_view text);

/// Checked arithmetic for sizes read from untrusted files.
bool mulOverflows(int64_t a, int64_t b, int64_t *out);
bool addOverflows(int64_t a, int64_t b, int64_t *out);

} // namespace remat::core
