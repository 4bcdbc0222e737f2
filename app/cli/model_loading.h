#pragma once
// The model argument, `--batch` and the loading preamble that the model commands share; loading
// is core's one pipeline (core/pipeline), as in the GUI.
//   ModelInput in;  addModelArgument(*cmd, in);  addBatchOption(*cmd, in);
//   LoadStage failed;  Expected<LoadedModel> m = loadTrainingModel(in, {}, &failed);
//   if (!m) return reportLoadError(in, m.status(), failed);  use(m->training, *m->problem->costs);

#include "core/ir/graph.h"
#include "core/onnx/importer.h"
#include "core/pipeline/problem.h"
#include "core/training/builder.h"
#include "core/training/training_graph.h"
#include "core/training/training_options.h"
#include "core/util/status.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace remat::app {

/// Which ONNX file to read, at which batch (0: the file's own) and with which import settings,
/// as typed (parsed by core::onnx's input_spec when the model is imported).
struct ModelInput
{
    std::string model;
    int64_t batch = 0;
    std::vector<std::string> inputShapes; ///< `--input-shape NAME=D0xD1x...`
    std::vector<std::string> dims;        ///< `--dim NAME=VALUE`
    std::vector<std::string> inputValues; ///< `--input-value NAME=V` (scalar inputs)
    std::vector<std::string> branches;    ///< `--branch NODE=then|else` (data-dependent Ifs)
    std::vector<std::string> classify; ///< `--classify NAME=parameter|frozen|buffer|input|constant`
    std::vector<std::string> freeze;   ///< `--freeze REGEX` (repeatable)
    std::vector<std::string> trainable; ///< `--trainable REGEX` (repeatable)
    std::string semantics = "training"; ///< `--semantics training|as-exported`
    /// Training options (addTrainingOptions): `--optimizer`, `--precision`, `--shard`, `--ranks`,
    /// `--micro-batches`, `--lr`, `--weight-decay`, `--attention`, `--autocast-device` (empty:
    /// not given), `--tensor-parallel`, `--sequence-parallel`.
    std::string optimizer = "none", precision = "32-true", shard = "none", attention = "eager",
                autocastDevice;
    int64_t ranks = 1, microBatches = 1;
    int64_t tensorParallel = 1;    ///< `--tensor-parallel N`
    bool sequenceParallel = false; ///< `--sequence-parallel`
    double lr = 1e-3, weightDecay = -1;
};

/// The usual help texts; commands that word them otherwise pass their own.
inline constexpr const char *kModelHelp = "ONNX model file";
inline constexpr const char *kBatchHelp = "Batch to infer shapes at (default: the file's)";

enum class BatchCheck : unsigned char {
    NonNegative, ///< CLI11 rejects a negative batch before the command runs
    None,        ///< any integer reaches the importer
};

/// The required positional MODEL. Returns the option so a command can add checks.
CLI::Option *addModelArgument(CLI::App &cmd, ModelInput &input,
                              const std::string &help = kModelHelp);
/// `--batch N`, then the other import settings every model command takes: `--input-shape`,
/// `--dim`, `--input-value`, `--branch`, `--classify`, `--freeze` and `--trainable`
/// (repeatable), and `--semantics`. Separate from addModelArgument so each command keeps
/// its own order in --help.
CLI::Option *addBatchOption(CLI::App &cmd, ModelInput &input, const std::string &help = kBatchHelp,
                            BatchCheck check = BatchCheck::NonNegative);

/// `--optimizer`, `--precision`, `--shard`, `--ranks`, `--micro-batches`, `--lr`,
/// `--weight-decay` and `--attention` (commands that simulate or run a training step: train-graph, simulate,
/// solve, run, fit). Their defaults leave the training graph as built.
void addTrainingOptions(CLI::App &cmd, ModelInput &input);

/// The input's training options, parsed; errors name the option.
core::Expected<core::training::TrainingOptions> trainingOptions(const ModelInput &input);

/// The input's batch, shapes, dims and classification overrides added to `options`; a malformed
/// or repeated setting is an InvalidArgument naming the option.
core::Status applyModelInput(const ModelInput &input, core::onnx::ImportOptions &options);

/// Imports the model with the input's settings (see applyModelInput).
core::Expected<core::ir::Graph> importModel(const ModelInput &input,
                                            core::onnx::ImportOptions options = {});

/// The loaded problem, and views of its imported graph and training step (the executor needs
/// both); `problem` keeps them alive and holds the costs and the store-all baseline too.
struct LoadedModel
{
    std::shared_ptr<const core::pipeline::Problem> problem;
    const core::ir::Graph &graph;
    const core::training::TrainingGraph &training;
};

/// Where loading failed: the commands word an import error and a build error differently.
enum class LoadStage : unsigned char { Import, Build };

/// Loads the model through core::pipeline::loadProblem: import, training graph, costs, store-all.
/// The returned error is the stage's own Status, unchanged; `failedStage` (when given) says
/// which stage produced it.
core::Expected<LoadedModel> loadTrainingModel(const ModelInput &input,
                                              const core::training::BuildOptions &build = {},
                                              LoadStage *failedStage = nullptr);

/// Prints a load error the way most model commands do ("error: STATUS" for the importer,
/// "error: MODEL: STATUS" for the builder) and returns the exit code, 1.
int reportLoadError(const ModelInput &input, const core::Status &status, LoadStage stage);

} // namespace remat::app
