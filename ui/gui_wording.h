#pragma once
// Core's messages name the command line's flags (--dim, --input-shape, --input-value,
// --semantics, --precision): the way out for a CLI user. In the window the same settings are
// fields of a dialog: guiWording rewrites each flag as the place to set it.
//   guiWording("give its size with --dim height=N")
//     == "give its size with dim height in Inputs... (toolbar)"

#include <QString>

namespace remat::ui {

/// `message` with every CLI flag replaced by the window's control for the same setting; other
/// text is kept as it is.
QString guiWording(const QString &message);

} // namespace remat::ui
