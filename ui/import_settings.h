#pragma once
// The user's import settings for one file (free dims, whole input shapes, scalar input values,
// classification overrides, semantics) as the GUI keeps them: compared, remembered per file in
// QSettings, written into sessions, and summarised on the toolbar.
//   core::onnx::ImportOptions s = rememberedImportSettings(path);   // empty when never set
//   s.batch = 8;  loader.load(path, s);
//   rememberImportSettings(path, s);

#include "core/onnx/importer.h"

#include <QJsonObject>
#include <QString>

namespace remat::ui {

/// True when the user-facing settings (not batch, stop, progress) are the same.
bool sameImportSettings(const core::onnx::ImportOptions &a, const core::onnx::ImportOptions &b);

/// {"dims": {...}, "input_shapes": {"x": "1x3x224x224"}, "input_values": {...}, "classify": {...},
///  "semantics": "training"}; empty members are left out.
QJsonObject importSettingsToJson(const core::onnx::ImportOptions &settings);
/// The inverse; a malformed entry is an InvalidArgument naming it (`what` prefixes messages).
core::Expected<core::onnx::ImportOptions> importSettingsFromJson(const QJsonObject &json,
                                                                 const QString &what);

/// "H=224 W=224 x=1x3x224x224 sr=16000" for the toolbar; empty when nothing is set.
QString importSettingsSummary(const core::onnx::ImportOptions &settings);

/// Settings remembered for `path` (absolute) from an earlier open; defaults when none or broken.
core::onnx::ImportOptions rememberedImportSettings(const QString &path);
void rememberImportSettings(const QString &path, const core::onnx::ImportOptions &settings);

} // namespace remat::ui
