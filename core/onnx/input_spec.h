#pragma once
// The user's import settings as typed on a command line, in a dialog or read from a session:
// whole input shapes, values for named free dims, and classification overrides.
//   onnx::ImportOptions opt;
//   REMAT_RETURN_IF_ERROR(addInputShape(opt, "input=1x3x224x224"));   // like trtexec --shapes
//   REMAT_RETURN_IF_ERROR(addDimValue(opt, "height=224"));            // like ORT's free-dim override
//   REMAT_RETURN_IF_ERROR(addClassification(opt, "conv1.w=parameter"));

#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/util/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace remat::core::onnx {

/// "1x3x224x224" (also "1,3,224,224", "1×3×224×224", "1 x 3"); every dim a whole number >= 1.
/// An empty text is a scalar (no dims).
Expected<std::vector<int64_t>> parseDims(std::string_view text);
/// "1x3x224x224"; "scalar" for no dims.
std::string formatDims(const std::vector<int64_t> &dims);

/// `NAME=DIMS`: sets the whole shape of graph input NAME. The name is everything before the last
/// '=' (ONNX names may hold ':' and '/'). Refuses a name given twice.
Status addInputShape(ImportOptions &options, std::string_view spec);
/// `NAME=VALUE`: every graph-input dim whose symbolic name is NAME gets VALUE (>= 1).
/// Refuses a name given twice.
Status addDimValue(ImportOptions &options, std::string_view spec);
/// `NAME=VALUE`: fixes scalar graph input NAME to the number VALUE. Refuses a name given twice.
Status addInputValue(ImportOptions &options, std::string_view spec);
/// `NODE=then|else`: takes that branch of If node NODE (a condition computed from data). Refuses a
/// node given twice.
Status addBranch(ImportOptions &options, std::string_view spec);
/// `NAME=KIND` with KIND one of parameter, frozen, buffer, input, constant. Refuses a name given
/// twice.
Status addClassification(ImportOptions &options, std::string_view spec);
/// `--freeze REGEX` / `--trainable REGEX` (core/onnx/trainability.h): refuses an invalid
/// ECMAScript expression, naming it; whether it matches a parameter is checked at import.
Status addFreezePattern(ImportOptions &options, std::string_view pattern);
Status addTrainablePattern(ImportOptions &options, std::string_view pattern);

/// "training" or "as-exported".
Expected<Semantics> parseSemantics(std::string_view text);
const char *semanticsName(Semantics semantics);

/// "parameter", "frozen", "buffer", "input", "constant".
Expected<ir::ValueKind> parseValueKind(std::string_view text);

/// A value to suggest for a free dim, from its name as exporters spell it (batch, N -> 1;
/// height, width, H, W -> 224; sequence, seq_len, tokens -> 128; samples, audio -> 16000;
/// channels -> 3), 1 when the name says nothing.
int64_t suggestDimValue(std::string_view name);

/// Proposed sizes for a file's free dims, from the dims' names where they say something (above)
/// and else from where the dim sits, as exporters lay inputs out: the first free dim of an input
/// is its batch (1); a 4-D input is an image (NCHW, or NHWC when only the last dim is a static
/// 1/3/4 channel count) whose free height / width get 224 (or the other side's static size when
/// larger); 5-D is video (16 frames of 224x224); a 1-3-D input's free length is 16000 samples
/// when it is audio (named audio / wave / pcm / speech / samples / signal, or the model takes a
/// scalar `sr` / `sample_rate`; 512 when the model also takes a recurrent state, as a streaming
/// model is fed chunks) and 128 steps otherwise. Never 1 for a non-batch free dim.
///   suggestInputShape(sig, sig.inputs[0]);   // x[p2o.0, 3, p2o.1, p2o.2] -> 1x3x224x224
///   suggestNamedDim(sig, "p2o.DynamicDimension.1");   // 224 (x's height)
std::vector<int64_t> suggestInputShape(const ModelSignature &signature, const DeclaredInput &input);
int64_t suggestNamedDim(const ModelSignature &signature, std::string_view name);
/// Whether free dim `index` of `input` is the input's batch (its first free dim).
bool isBatchDim(const DeclaredInput &input, size_t index);

} // namespace remat::core::onnx
