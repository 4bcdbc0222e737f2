#pragma once
// Two sizes for people that must not read the same when they differ: a plan's peak a few bytes
// over its budget printed "444.20 MiB" beside a budget of "444.20 MiB" and "infeasible".
//   bytesApart(465777300, 465776000) == {"444.200 MiB", "444.199 MiB"}
//   bytesApart(x, x) == {formatBytes(x), formatBytes(x)}

#include <QPair>
#include <QString>

#include <cstdint>

namespace remat::ui {

/// core::formatBytes with two decimals, more (up to six) while the two still read the same,
/// then exact bytes ("465777300 B"); equal sizes print as formatBytes does.
QPair<QString, QString> bytesApart(int64_t a, int64_t b);

} // namespace remat::ui
