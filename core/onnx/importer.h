#pragma once
// ONNX import on Debian's ONNX library and protobuf: parse, classify parameters, infer shapes at
// the user's batch (also through shape-computing subgraphs), check everything.
//   onnx::ImportOptions opt;  opt.batch = 16;
//   Expected<ir::Graph> g = onnx::importModel("resnet18.onnx", opt);
//   if (!g) show(g.status().message());   // names the file, node and problem

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace remat::core::onnx {

struct ImportOptions
{
    /// Batch to substitute for the data input's first (symbolic or static) dim and re-infer every
    /// shape at; 0 keeps the file's batch.
    int64_t batch = 0;
    /// Ignore the file's graph.value_info and infer every intermediate shape ourselves.
    bool ignoreFileValueInfo = false;
    /// User overrides of the parameter / buffer / input classification, by value name.
    std::map<std::string, ir::ValueKind> kindOverrides;
    /// Refuse files larger than this (bytes), before parsing.
    int64_t maxFileBytes = int64_t(4) << 30;
    StopToken stop;
    /// Progress 0..1 with a phase name ("parsing", "shape inference"); may be empty.
    std::function<void(double, const std::string &)> progress;
};

/// Imports a model file. Every failure is a Status naming the file, the node and the problem.
Expected<ir::Graph> importModel(const std::string &path, const ImportOptions &options = {});

/// Imports from bytes already in memory; `path` is used for messages and for resolving external
/// data (its folder), and may be empty (external data is then refused).
Expected<ir::Graph> importModelFromBytes(const std::string &bytes, const std::string &path,
                                         const ImportOptions &options = {});

} // namespace remat::core::onnx
