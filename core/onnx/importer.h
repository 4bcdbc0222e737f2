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
#include <vector>

namespace remat::core::onnx {

/// How ops exported for inference are read.
enum class Semantics : unsigned char {
    Training,   ///< the training step of the network: BatchNormalization on batch statistics
    AsExported, ///< the file's own semantics (inference BatchNormalization uses running statistics)
};

struct ImportOptions
{
    /// Batch to substitute for the data input's first (symbolic or static) dim and re-infer every
    /// shape at; 0 keeps the file's batch.
    int64_t batch = 0;
    /// Ignore the file's graph.value_info and infer every intermediate shape ourselves.
    bool ignoreFileValueInfo = false;
    /// Values for named free dims of the graph inputs ("height" -> 224), wherever they occur;
    /// they win over `batch` for a leading dim of that name.
    std::map<std::string, int64_t> dimValues;
    /// Whole shapes of graph inputs by name; they win over `batch` and `dimValues`. The rank must
    /// be the file's where the file declares one.
    std::map<std::string, std::vector<int64_t>> inputShapes;
    /// Values for scalar (single-element) graph inputs ("sr" -> 16000): the input becomes a
    /// constant, so an If that branches on it is decided at import and trained through the
    /// taken branch.
    std::map<std::string, double> inputValues;
    /// The branch to take of If nodes whose condition is computed from data, by node name
    /// (true: then_branch, false: else_branch): the If is written out as that branch and trained
    /// through it, as when its condition is known. A name that is no If of the model (after the
    /// branches taken are written out, so a nested If is named under its parent's
    /// "<if>/then/" prefix) is an error naming the If nodes there are.
    std::map<std::string, bool> branches;
    /// User overrides of the parameter / buffer / input / constant classification, by value name
    /// (graph inputs, initializers and the outputs of Constant nodes).
    std::map<std::string, ir::ValueKind> kindOverrides;
    /// `--freeze REGEX` (repeatable): a parameter whose name (as the file names it) contains a
    /// match of any of these ECMAScript regular expressions is frozen (ir::ValueKind::Frozen).
    std::vector<std::string> freezePatterns;
    /// `--trainable REGEX` (repeatable): when any is given, every parameter whose name matches
    /// none of them is frozen. A name given in kindOverrides keeps its kind either way. A pattern
    /// that matches no parameter, an invalid one, or a set that leaves nothing to train is an
    /// error (browsing: a training blocker). See core/onnx/trainability.h.
    std::vector<std::string> trainablePatterns;
    /// Read the export's `remat.*` metadata_props (resources/python/remat_export.py: which graph
    /// inputs are buffers, which parameters are frozen); off only to measure without it.
    bool readExportMetadata = true;
    /// Training (the default) models BatchNormalization nodes exported for inference in training
    /// mode, as the network trains; the change is listed in ModelInfo::importNotes.
    Semantics semantics = Semantics::Training;
    /// Browsing: a value whose shape or type cannot be inferred (a free dim not given, an
    /// undecided If, an op nothing can infer) is kept unknown instead of failing the import; the
    /// first such problem, worded as the error would be, goes to ModelInfo::trainingBlockers.
    bool allowUnknownShapes = false;
    /// Browsing in the explorer: each If / Loop / Scan left in the graph (an If not decided at
    /// import) gets the nodes of its subgraphs as display nodes, named under the node's own
    /// group (`IF/then_branch/...`, `IF/else_branch/...`, `LOOP/body/...`), with the If moved
    /// into that group and fed by its branches' outputs; a body's formal inputs read the node's
    /// inputs. Such a graph never trains: its training blockers are those of the graph without
    /// the display nodes (an undecided If or a Loop always leaves one).
    bool expandSubgraphs = false;
    /// Refuse files larger than this (bytes), before parsing.
    int64_t maxFileBytes = int64_t(4) << 30;
    StopToken stop;
    /// Progress 0..1 with a phase name ("parsing", "shape inference"); may be empty.
    std::function<void(double, const std::string &)> progress;
};

/// A graph input as the file declares it (initializers excluded), free dims kept symbolic.
struct DeclaredInput
{
    std::string name;
    ir::DataType dtype = ir::DataType::Undefined;
    ir::Shape shape; ///< dims with a name are symbolic, unnamed free dims have an empty symbol
};

/// What the user may have to give before a file can be imported: its graph inputs and their
/// free dims (names in order of first appearance; `unnamedFreeDims` counts the dims without a
/// name, which only `inputShapes` can set).
struct ModelSignature
{
    std::vector<DeclaredInput> inputs;
    std::vector<std::string> freeDimNames;
    int unnamedFreeDims = 0;
    /// The main graph's If nodes, by the name --branch takes ("If_<position>" when unnamed).
    std::vector<std::string> ifNodes;
    bool hasFreeDims() const { return !freeDimNames.empty() || unnamedFreeDims > 0; }
};

/// Reads only the graph inputs of a model file (the whole protobuf is parsed, no inference).
Expected<ModelSignature> readModelSignature(const std::string &path,
                                            int64_t maxFileBytes = int64_t(4) << 30);

/// Imports a model file. Every failure is a Status naming the file, the node and the problem.
Expected<ir::Graph> importModel(const std::string &path, const ImportOptions &options = {});

/// Imports from bytes already in memory; `path` is used for messages and for resolving external
/// data (its folder), and may be empty (external data is then refused).
Expected<ir::Graph> importModelFromBytes(const std::string &bytes, const std::string &path,
                                         const ImportOptions &options = {});

} // namespace remat::core::onnx
