#pragma once
// Control flow the importer writes out as plain ops before it builds the graph, so the training
// builder can differentiate through it:
// - a Loop whose trip count is known at import (a constant, a static shape, or a scalar input
//   the user gave) and whose condition stays true becomes its body repeated, each iteration's
//   names prefixed "<loop>/iter<i>/", its iteration number a constant, its scan outputs stacked;
//   so does a Scan over inputs of a static length (each step a Gather of every scanned input);
// - tensor sequences whose every position is known (SequenceEmpty / Construct / Insert / Erase /
//   At / Length, ConcatFromSequence, SplitToSequence) become lists of tensors: SequenceAt an
//   Identity of the element, ConcatFromSequence a Concat, SplitToSequence a Split.
// PyTorch exports torch.split / torch.chunk by tensor-valued sizes this way (torchvision's MViT).
// Both work on the ModelProto with what the importer inferred for the main graph's values.
#include "core/ops/shape_context.h"
#include "core/util/status.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace remat::core::onnx {

/// What the importer inferred for a main-graph value, by name; null when the name is unknown.
using InferredLookup = std::function<const ops::InferredValue *(const std::string &name)>;

/// Renames the inputs of `node` (and what its subgraphs read from the enclosing scope) that
/// `rename` maps.
void renameInputs(::onnx::NodeProto &node,
                  const std::unordered_map<std::string, std::string> &rename);
/// Renames what a subgraph reads from the enclosing scope: its nodes' inputs and its outputs.
void renameScopeReads(::onnx::GraphProto &g,
                      const std::unordered_map<std::string, std::string> &rename);
/// The graph attribute `name` of `node`, or null.
const ::onnx::GraphProto *subgraphOf(const ::onnx::NodeProto &node, const char *name);

/// Copies the nodes of `sub` (an If branch, one iteration of a Loop body) into `nodes`: inputs
/// and outputs renamed by `rename` (which maps every output), each node named `prefix` + its name
/// (or its op type), and the value_info of what they produce added to `g` under the new names.
void copySubgraphNodes(const ::onnx::GraphProto &sub,
                       const std::unordered_map<std::string, std::string> &rename,
                       const std::string &prefix, ::onnx::GraphProto &g,
                       google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes);

struct ControlFlowLimits
{
    /// The unrolled graph may hold at most this many nodes (a Loop that would exceed it stays).
    int64_t maxNodes = 400000;
};

/// Replaces every top-level Loop that runs a number of times known at import, and every Scan
/// (opset 9 on) over inputs of a static length, by its iterations.
/// Returns how many were unrolled; `notes` gets one line per Loop left as it is, saying why.
Expected<int> unrollCountedLoops(::onnx::ModelProto &model, int opset, const InferredLookup &known,
                                 const ControlFlowLimits &limits, std::vector<std::string> &notes);

/// Writes out tensor sequences as lists (see above). All or nothing: when one sequence cannot be
/// resolved (a position not known, a sequence a Loop carries or the graph returns), the model is
/// left as it is and `notes` says which. Returns how many sequence ops were replaced.
Expected<int> resolveTensorSequences(::onnx::ModelProto &model, int opset,
                                     const InferredLookup &known, std::vector<std::string> &notes);

} // namespace remat::core::onnx
