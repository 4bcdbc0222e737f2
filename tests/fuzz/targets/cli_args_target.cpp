// The CLI's and the GUI's text arguments: byte counts (`--budget 6GiB`, the budget field),
// objectives (`--objective`) and pin kinds (`--pin keep:NAME`). The first byte picks the parser.
#include "fuzz_targets.h"

#include "core/solvers/solver.h"
#include "core/util/bytes.h"

#include <cmath>
#include <string_view>

namespace remat::fuzz {

using namespace remat::core;

Status runCliArgs(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return makeError(StatusCode::Unsupported, "fuzz: argument outside the size cap");
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    switch (data[0] % 3) {
    case 0: {
        auto b = parseBytes(text);
        if (!b)
            return b.status();
        if (*b < 0)
            fail("parseBytes('" + text + "') is negative");
        // What formatBytes prints, parseBytes reads back (the GUI shows one and takes the other);
        // near the 9e18 limit, the two-decimal rounding may step over it.
        if (*b > int64_t(8.9e18))
            return Status::ok();
        const std::string shown = formatBytes(*b);
        auto again = parseBytes(shown);
        if (!again)
            fail("parseBytes cannot read formatBytes(" + std::to_string(*b) + ") = '" + shown +
                 "': " + again.status().toString());
        if (std::fabs(double(*again) - double(*b)) > 0.005 * double(*b) + 1)
            fail("formatBytes -> parseBytes moved " + std::to_string(*b) + " to " +
                 std::to_string(*again));
        return Status::ok();
    }
    case 1: {
        auto o = solvers::parseObjective(text);
        // Aliases are fine ("peak"); what must hold is that the canonical name reads back.
        if (o && solvers::parseObjective(solvers::objectiveName(*o)).value() != *o)
            fail("parseObjective does not read objectiveName back");
        return o.status();
    }
    default: {
        const auto kind = solvers::parsePinKind(text);
        if (kind && text != solvers::pinKindName(*kind))
            fail("parsePinKind('" + text + "') accepted another name");
        return kind ? Status::ok() : makeError(StatusCode::InvalidArgument, "not a pin kind");
    }
    }
}

} // namespace remat::fuzz
