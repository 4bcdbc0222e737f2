#include "model_loading.h"

#include "core/onnx/input_spec.h"

#include <fmt/format.h>

#include <cstdio>

namespace remat::app {

using namespace remat::core;

namespace {

/// A NAME=VALUE style option given once per value (`--dim a=1 --dim b=2`).
void addRepeatable(CLI::App &cmd, const std::string &name, std::vector<std::string> &values,
                   const std::string &help)
{
    cmd.add_option(name, values, help)
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

} // namespace

CLI::Option *addModelArgument(CLI::App &cmd, ModelInput &input, const std::string &help)
{
    return cmd.add_option("model", input.model, help)->required();
}

CLI::Option *addBatchOption(CLI::App &cmd, ModelInput &input, const std::string &help,
                            BatchCheck check)
{
    CLI::Option *o = cmd.add_option("--batch", input.batch, help);
    if (check == BatchCheck::NonNegative)
        o->check(CLI::NonNegativeNumber);
    addRepeatable(
        cmd, "--input-shape", input.inputShapes,
        "Whole shape of a graph input: NAME=D0xD1x... (e.g. input=1x3x224x224; repeatable)");
    addRepeatable(
        cmd, "--dim", input.dims,
        "Value of a named free dim of the inputs: NAME=VALUE (e.g. height=224; repeatable)");
    addRepeatable(
        cmd, "--input-value", input.inputValues,
        "Fix a scalar graph input to a number: NAME=V (e.g. sr=16000; an If on it is decided at "
        "import; repeatable)");
    addRepeatable(cmd, "--branch", input.branches,
                  "Take one branch of an If whose condition is computed from data: "
                  "NODE=then|else (e.g. /If=then; trained through that branch; repeatable)");
    addRepeatable(cmd, "--classify", input.classify,
                  "Override a value's kind: NAME=parameter|frozen|buffer|input|constant "
                  "(repeatable)");
    addRepeatable(cmd, "--freeze", input.freeze,
                  "Freeze the parameters whose name contains a match of REGEX (ECMAScript; no "
                  "gradient, no optimizer state; repeatable)");
    addRepeatable(cmd, "--trainable", input.trainable,
                  "Train only the parameters whose name contains a match of REGEX (ECMAScript; "
                  "every other parameter is frozen; repeatable), e.g. '^fc\\.' or 'lora_'");
    cmd.add_option(
           "--semantics", input.semantics,
           "training (default: BatchNormalization exported for inference is modelled in training "
           "mode) or as-exported (the file's own semantics)")
        ->check(CLI::IsMember({"training", "as-exported"}));
    return o;
}

void addTrainingOptions(CLI::App &cmd, ModelInput &input)
{
    cmd.add_option("--optimizer", input.optimizer,
                   "Optimizer step after the backward: none (default), sgd, sgd-momentum, adam, "
                   "adamw, adafactor (its state and update are in the timeline)");
    cmd.add_option("--precision", input.precision,
                   "As Lightning names them: 32-true (default; fp32), bf16-mixed / 16-mixed "
                   "(PyTorch autocast: float32 weights, each op in its autocast dtype), "
                   "bf16-true / 16-true (every floating tensor half), bf16-master / 16-master "
                   "(half weights and activations, float32 master weights, gradients and state)");
    cmd.add_option("--autocast-device", input.autocastDevice,
                   "Whose autocast lists bf16-mixed / 16-mixed follow: cuda (default) or cpu");
    cmd.add_option("--shard", input.shard,
                   "Model-state sharding over --ranks: none (default), zero1 (optimizer state), "
                   "zero2 (+ gradients), zero3 or fsdp (+ parameters, gathered per op)");
    cmd.add_option("--ranks", input.ranks, "Data-parallel ranks the model states are sharded over")
        ->check(CLI::PositiveNumber);
    cmd.add_option("--micro-batches", input.microBatches,
                   "Gradient accumulation steps per optimizer step (the batch is per micro-batch)")
        ->check(CLI::PositiveNumber);
    cmd.add_option("--lr", input.lr, "Learning rate of the executed update (default 1e-3)");
    cmd.add_option("--weight-decay", input.weightDecay,
                   "Weight decay of the update (default: torch's, adamw 1e-2, the others 0)");
    cmd.add_option("--attention", input.attention,
                   "eager (default: attention as the file writes it, the S x S scores kept) or "
                   "sdpa (each attention pattern fused as F.scaled_dot_product_attention's "
                   "flash / memory-efficient kernels run it: Q, K, V, output and log-sum-exp "
                   "kept)");
    cmd.add_option("--tensor-parallel", input.tensorParallel,
                   "Megatron-LM tensor parallelism over N ranks (default 1): column / row "
                   "parallel linears and attention heads split, per-rank bytes");
    cmd.add_flag("--sequence-parallel", input.sequenceParallel,
                 "Megatron-LM sequence parallelism (with --tensor-parallel N > 1): layer norm, "
                 "dropout and residual activations split along the sequence");
}

Expected<training::TrainingOptions> trainingOptions(const ModelInput &input)
{
    training::TrainingOptions o;
    REMAT_ASSIGN_OR_RETURN(o.optimizer, training::parseOptimizer(input.optimizer));
    REMAT_ASSIGN_OR_RETURN(o.precision, training::parsePrecision(input.precision));
    if (!input.autocastDevice.empty()) {
        if (!training::isAutocast(o.precision))
            return makeError(StatusCode::InvalidArgument,
                             fmt::format("--autocast-device {}: autocast runs only with a mixed "
                                         "precision (--precision bf16-mixed or 16-mixed); "
                                         "--precision {} has no autocast",
                                         input.autocastDevice,
                                         training::precisionName(o.precision)));
        REMAT_ASSIGN_OR_RETURN(o.autocastDevice,
                               training::parseAutocastDevice(input.autocastDevice));
    }
    REMAT_ASSIGN_OR_RETURN(o.shard, training::parseSharding(input.shard));
    REMAT_ASSIGN_OR_RETURN(o.attention, training::parseAttention(input.attention));
    o.ranks = input.ranks;
    o.microBatches = input.microBatches;
    o.tensorParallel = input.tensorParallel;
    o.sequenceParallel = input.sequenceParallel;
    o.hyper.lr = input.lr;
    o.hyper.weightDecay = input.weightDecay;
    if (o.shard != training::Sharding::None && o.ranks == 1)
        o.shard = training::Sharding::None; // one rank holds everything: nothing is sharded
    REMAT_RETURN_IF_ERROR(training::validateTrainingOptions(o));
    return o;
}

Status applyModelInput(const ModelInput &input, onnx::ImportOptions &options)
{
    options.batch = input.batch;
    for (const std::string &spec : input.inputShapes)
        REMAT_RETURN_IF_ERROR(onnx::addInputShape(options, spec));
    for (const std::string &spec : input.dims)
        REMAT_RETURN_IF_ERROR(onnx::addDimValue(options, spec));
    REMAT_ASSIGN_OR_RETURN(options.semantics, onnx::parseSemantics(input.semantics));
    for (const std::string &spec : input.inputValues)
        REMAT_RETURN_IF_ERROR(onnx::addInputValue(options, spec));
    for (const std::string &spec : input.branches)
        REMAT_RETURN_IF_ERROR(onnx::addBranch(options, spec));
    for (const std::string &spec : input.classify)
        REMAT_RETURN_IF_ERROR(onnx::addClassification(options, spec));
    for (const std::string &pattern : input.freeze)
        REMAT_RETURN_IF_ERROR(onnx::addFreezePattern(options, pattern));
    for (const std::string &pattern : input.trainable)
        REMAT_RETURN_IF_ERROR(onnx::addTrainablePattern(options, pattern));
    return Status::ok();
}

Expected<ir::Graph> importModel(const ModelInput &input, onnx::ImportOptions options)
{
    REMAT_RETURN_IF_ERROR(applyModelInput(input, options));
    return onnx::importModel(input.model, options);
}

Expected<LoadedModel> loadTrainingModel(const ModelInput &input,
                                        const training::BuildOptions &build, LoadStage *failedStage)
{
    auto failAt = [failedStage](LoadStage stage, const Status &s) {
        if (failedStage)
            *failedStage = stage;
        return s;
    };
    pipeline::LoadOptions options;
    options.build = build;
    if (Status s = applyModelInput(input, options.import); !s.isOk())
        return failAt(LoadStage::Import, s);
    Expected<training::TrainingOptions> trainingOpts = trainingOptions(input);
    if (!trainingOpts)
        return failAt(LoadStage::Import, trainingOpts.status());
    options.training = *trainingOpts;
    Expected<std::shared_ptr<const pipeline::Problem>> problem =
        pipeline::loadProblem(input.model, options);
    if (!problem)
        return failAt(LoadStage::Import, problem.status());
    if (!(*problem)->training)
        return failAt(LoadStage::Build, (*problem)->trainingStatus);
    const pipeline::Problem &p = **problem;
    return LoadedModel{*problem, *p.forward, *p.training};
}

int reportLoadError(const ModelInput &input, const Status &status, LoadStage stage)
{
    if (stage == LoadStage::Build)
        std::fprintf(stderr, "error: %s: %s\n", input.model.c_str(), status.toString().c_str());
    else
        std::fprintf(stderr, "error: %s\n", status.toString().c_str());
    return 1;
}

} // namespace remat::app
