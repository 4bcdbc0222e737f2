#pragma once
// Helpers shared by the test suites: where the shared data lives, temporary files.
//   QString corpus = sharedPath("corpus/graph_only/resnet18.onnx");
//   if (!QFileInfo::exists(corpus)) QSKIP("shared data not found");

#include <QString>
#include <string>

namespace remat::tests {

/// The shared/ folder beside the checkout (REMAT_SHARED_DIR, else ../shared from the source).
QString sharedDir();
/// sharedDir() + "/" + relative.
QString sharedPath(const QString &relative);
/// The repository root (REMAT_SOURCE_DIR).
QString sourceDir();
/// The build folder (REMAT_BINARY_DIR): where the remat binary is.
QString binaryDir();
std::string toStd(const QString &s);

} // namespace remat::tests
