// remat train-graph MODEL [--batch N] [training options] [--json]: the training step derived from an ONNX model:
// op counts, parameter and gradient bytes, what store-all keeps for backward (comparable with
// PyTorch's saved activations), its simulated peaks, and FLOPs.
#include "commands.h"
#include "model_loading.h"
#include "time_source.h"

#include "core/schedule/store_all.h"
#include "core/sim/simulator.h"
#include "core/training/apply_training_options.h"
#include "core/training/builder.h"
#include "core/training/storage_bases.h"
#include "core/util/bytes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace remat::app {

namespace {

using namespace remat::core;

struct TrainGraphOptions
{
    ModelInput input;
    bool json = false;
    bool inputGradients = false;
    std::string profile;
};

const char *phaseName(training::Phase phase)
{
    switch (phase) {
    case training::Phase::Forward: return "forward";
    case training::Phase::Loss: return "loss";
    case training::Phase::Backward: return "backward";
    case training::Phase::Optimizer: return "optimizer";
    }
    return "?";
}

int runTrainGraph(const TrainGraphOptions &o)
{
    training::BuildOptions build;
    build.inputGradients = o.inputGradients;
    LoadStage failed = LoadStage::Import;
    Expected<LoadedModel> loaded = loadTrainingModel(o.input, build, &failed);
    if (!loaded)
        return reportLoadError(o.input, loaded.status(), failed);
    const training::TrainingGraph &tg = loaded->training;
    const training::TrainingSummary s = training::summarize(tg, &loaded->graph);
    const training::TrainingOptions &opts = tg.info().training;
    const training::ModelStateBytes states = training::modelStateBytes(tg);
    cost::ProfileCostsReport report;
    auto problem = withProfile(loaded->problem, o.profile, &report);
    if (!problem) {
        std::fprintf(stderr, "error: %s\n", problem.status().toString().c_str());
        return 1;
    }
    const cost::Costs &costs = *(*problem)->costs;
    const cost::ProfileCostsReport *rep = o.profile.empty() ? nullptr : &report;
    const sim::Timeline *t = &(*problem)->storeAll.timeline;
    if (o.json) {
        nlohmann::json byDtype = nlohmann::json::object();
        for (const auto &[dtype, bytes] : s.savedForBackwardBytesByDtype)
            byDtype[dtype] = bytes;
        // Per forward op (ONNX node name) what store-all keeps of it for backward, for lining up
        // with PyTorch's autograd nodes (resources/python/remat_oracle.py).
        nlohmann::json byOp = nlohmann::json::array();
        for (const training::TrainingSummary::OpSaved &e : s.savedByForwardOp) {
            nlohmann::json tensors = nlohmann::json::array();
            for (TensorId id : e.tensors)
                tensors.push_back({{"name", tg.tensor(id).name},
                                   {"bytes", tg.tensor(id).bytes},
                                   {"dtype", ir::dataTypeName(tg.tensor(id).dtype)}});
            byOp.push_back({{"name", tg.op(e.op).name},
                            {"type", tg.op(e.op).type},
                            {"saved_bytes", e.bytes},
                            {"saved", std::move(tensors)}});
        }
        // The training graph itself: every op in order with the tensors it reads and writes, and
        // every tensor's bytes, for tools that follow its data flow (remat_apply.py models which
        // backward op reads which recomputed value, as torch.utils.checkpoint holds them).
        nlohmann::json ops = nlohmann::json::array();
        for (const training::Op &op : tg.ops()) {
            nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
            for (TensorId id : op.inputs)
                inputs.push_back(tg.tensor(id).name);
            for (TensorId id : op.outputs)
                outputs.push_back(tg.tensor(id).name);
            ops.push_back({{"name", op.name},
                           {"phase", phaseName(op.phase)},
                           {"inputs", std::move(inputs)},
                           {"outputs", std::move(outputs)}});
        }
        nlohmann::json tensorBytes = nlohmann::json::object();
        for (const training::Tensor &t : tg.tensors())
            tensorBytes[t.name] = t.bytes;
        // The values PyTorch makes as views, each with the tensor owning the storage it keeps.
        nlohmann::json storageBase = nlohmann::json::object();
        const std::vector<TensorId> bases = training::pytorchStorageBases(tg, &loaded->graph);
        for (const training::Tensor &t : tg.tensors())
            if (bases[t.id.index()] != t.id)
                storageBase[t.name] = tg.tensor(bases[t.id.index()]).name;
        // autocast's weight copies (autocast.h), each once: what a user pays for them
        int64_t weightCastBytes = 0;
        for (const training::Tensor &t : tg.tensors())
            if (t.role == training::TensorRole::WeightCast)
                weightCastBytes += t.bytes;
        nlohmann::json j = {
            {"model", o.input.model},
            {"batch", tg.info().batch},
            {"forward_ops", s.forwardOps},
            {"loss_ops", s.lossOps},
            {"backward_ops", s.backwardOps},
            {"accumulate_ops", s.accumulateOps},
            {"tensors", tg.tensorCount()},
            {"optimizer_ops", s.optimizerOps},
            {"optimizer", training::optimizerName(opts.optimizer)},
            {"precision", training::precisionName(opts.precision)},
            {"autocast_device", training::isAutocast(opts.precision)
                                    ? training::autocastDeviceName(opts.autocastDevice)
                                    : ""},
            {"weight_cast_bytes", weightCastBytes},
            {"shard", training::shardingName(opts.shard)},
            {"ranks", opts.ranks},
            {"micro_batches", opts.microBatches},
            {"tensor_parallel", opts.tensorParallel},
            {"sequence_parallel", opts.sequenceParallel},
            {"attention", training::attentionName(tg.info().training.attention)},
            {"attention_fused", tg.info().fusedPatterns},
            {"attention_not_fused", tg.info().notFused},
            {"effective_batch", tg.info().batch * opts.microBatches},
            {"param_count", states.parameterCount},
            {"param_bytes", s.paramBytes},
            {"trainable_param_bytes", s.paramBytes},
            {"frozen_param_bytes", s.frozenParamBytes},
            {"param_grad_bytes", s.paramGradBytes},
            {"optimizer_state_bytes", states.optimizerStateBytes},
            {"master_weight_bytes", states.masterWeightBytes},
            {"model_state_bytes", states.total()},
            {"buffer_bytes", s.bufferBytes},
            {"input_bytes", s.inputBytes},
            {"saved_for_backward_bytes", s.savedForBackwardBytes},
            {"saved_for_backward_tensors", s.savedForBackwardTensors},
            {"stored_activation_bytes", s.storedActivationBytes},
            {"saved_for_backward_bytes_by_dtype", byDtype},
            {"saved_weight_derived_bytes", s.savedWeightDerivedBytes},
            {"activation_peak_bytes", t->activationPeakBytes},
            {"peak_bytes", t->peakBytes},
            {"forward_flops", s.forwardFlops},
            {"forward_matmul_conv_flops", s.forwardMatmulConvFlops},
            {"backward_flops", s.backwardFlops},
            {"store_all_seconds", t->totalSeconds},
            {"cost_model", costs.source},
            {"saved_by_op", std::move(byOp)},
            {"ops", std::move(ops)},
            {"tensor_bytes", std::move(tensorBytes)},
            {"storage_base", std::move(storageBase)},
        };
        addTimeSourceJson(j, costs, rep);
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s at batch %lld\n", o.input.model.c_str(), (long long)tg.info().batch);
    std::printf(
        "  ops                       %zu forward, %zu loss, %zu backward (%zu accumulate)\n",
        s.forwardOps, s.lossOps, s.backwardOps, s.accumulateOps);
    std::printf("  tensors                   %zu\n", tg.tensorCount());
    std::printf("  training                  optimizer %s (%zu update ops), precision %s, shard %s "
                "over %lld ranks, %lld micro-batches, tensor parallel %lld%s\n",
                training::optimizerName(opts.optimizer), s.optimizerOps,
                training::precisionName(opts.precision), training::shardingName(opts.shard),
                (long long)opts.ranks, (long long)opts.microBatches, (long long)opts.tensorParallel,
                opts.sequenceParallel ? " + sequence parallel" : "");
    std::printf("  attention                 %s (%zu patterns fused)\n",
                training::attentionName(tg.info().training.attention),
                tg.info().fusedPatterns.size());
    for (const std::string &n : tg.info().notFused)
        std::printf("    %s\n", n.c_str());
    const auto line = [](const char *label, int64_t bytes) {
        std::printf("  %-25s %s (%lld B)\n", label, formatBytes(bytes).c_str(), (long long)bytes);
    };
    line("param_bytes", s.paramBytes);
    if (s.frozenParamBytes > 0)
        line("frozen_param_bytes", s.frozenParamBytes);
    line("param_grad_bytes", s.paramGradBytes);
    line("optimizer_state_bytes", states.optimizerStateBytes);
    line("master_weight_bytes", states.masterWeightBytes);
    line("buffer_bytes", s.bufferBytes);
    line("saved_for_backward_bytes", s.savedForBackwardBytes);
    line("stored_activation_bytes", s.storedActivationBytes);
    line("saved_weight_derived", s.savedWeightDerivedBytes);
    line("activation_peak_bytes", t->activationPeakBytes);
    line("peak_bytes", t->peakBytes);
    std::printf("  forward_flops             %.4g (conv + matmul %.4g)\n", s.forwardFlops,
                s.forwardMatmulConvFlops);
    std::printf("  backward_flops            %.4g\n", s.backwardFlops);
    std::printf("  store-all time            %.4g s (%s)\n", t->totalSeconds,
                timeSourceText(costs, rep).c_str());
    return 0;
}

} // namespace

void addTrainGraphCommand(CLI::App &app, CommandContext &ctx)
{
    auto opts = std::make_shared<TrainGraphOptions>();
    CLI::App *cmd = app.add_subcommand("train-graph", "Derive the training step of an ONNX model");
    addModelArgument(*cmd, opts->input);
    addBatchOption(*cmd, opts->input);
    addTrainingOptions(*cmd, opts->input);
    cmd->add_flag("--json", opts->json, "Print JSON with stable keys");
    cmd->add_flag("--input-grad", opts->inputGradients,
                  "Also compute the gradient of the data input");
    addProfileOption(*cmd, opts->profile);
    cmd->callback([opts, &ctx] { ctx.exitCode = runTrainGraph(*opts); });
}

} // namespace remat::app
