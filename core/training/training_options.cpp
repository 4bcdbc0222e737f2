#include "core/training/training_options.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace remat::core::training {

const char *optimizerName(Optimizer o)
{
    switch (o) {
    case Optimizer::None: return "none";
    case Optimizer::Sgd: return "sgd";
    case Optimizer::SgdMomentum: return "sgd-momentum";
    case Optimizer::Adam: return "adam";
    case Optimizer::AdamW: return "adamw";
    case Optimizer::Adafactor: return "adafactor";
    }
    return "?";
}

const char *precisionName(Precision p)
{
    switch (p) {
    case Precision::Fp32: return "32-true";
    case Precision::Bf16Mixed: return "bf16-mixed";
    case Precision::Fp16Mixed: return "16-mixed";
    case Precision::Bf16True: return "bf16-true";
    case Precision::Fp16True: return "16-true";
    case Precision::Bf16Master: return "bf16-master";
    case Precision::Fp16Master: return "16-master";
    }
    return "?";
}

const char *autocastDeviceName(AutocastDevice d)
{
    switch (d) {
    case AutocastDevice::Cuda: return "cuda";
    case AutocastDevice::Cpu: return "cpu";
    }
    return "?";
}

ir::DataType halfTypeOf(Precision p)
{
    switch (p) {
    case Precision::Fp32: return ir::DataType::Float;
    case Precision::Bf16Mixed:
    case Precision::Bf16True:
    case Precision::Bf16Master: return ir::DataType::BFloat16;
    case Precision::Fp16Mixed:
    case Precision::Fp16True:
    case Precision::Fp16Master: return ir::DataType::Float16;
    }
    return ir::DataType::Float;
}

const char *shardingName(Sharding s)
{
    switch (s) {
    case Sharding::None: return "none";
    case Sharding::Zero1: return "zero1";
    case Sharding::Zero2: return "zero2";
    case Sharding::Zero3: return "zero3";
    }
    return "?";
}

const char *attentionName(Attention a)
{
    switch (a) {
    case Attention::Eager: return "eager";
    case Attention::Sdpa: return "sdpa";
    }
    return "?";
}

namespace {

template <typename E, size_t N>
Expected<E> parseName(const std::string &text, const char *option, const E (&values)[N],
                      const char *(*name)(E))
{
    std::string accepted;
    for (E v : values) {
        if (text == name(v))
            return v;
        accepted += accepted.empty() ? name(v) : std::string(", ") + name(v);
    }
    return makeError(StatusCode::InvalidArgument,
                     fmt::format("{}: unknown value '{}' (accepted: {})", option, text, accepted));
}

} // namespace

Expected<Optimizer> parseOptimizer(const std::string &text)
{
    static constexpr Optimizer all[] = {Optimizer::None, Optimizer::Sgd,   Optimizer::SgdMomentum,
                                        Optimizer::Adam, Optimizer::AdamW, Optimizer::Adafactor};
    return parseName(text, "--optimizer", all, optimizerName);
}

Expected<Precision> parsePrecision(const std::string &text)
{
    if (text == "fp32" || text == "32")
        return Precision::Fp32;
    // Spellings whose meaning changed when the names followed Lightning's: refused, naming the new
    // ones, so that no script silently gets another precision.
    auto retired = [&](const std::string &why) {
        return makeError(StatusCode::InvalidArgument, fmt::format("--precision {}: {}", text, why));
    };
    if (text == "fp16-mixed")
        return retired("retired name: the half weights and activations with float32 master weights "
                       "it meant are now '16-master'; PyTorch autocast in float16 is '16-mixed'");
    if (text == "bf16" || text == "fp16" || text == "16" || text == "half")
        return retired(fmt::format(
            "ambiguous: say {0}-true (every floating tensor half, what 'bf16' meant here before), "
            "{0}-mixed (PyTorch autocast, Lightning's '{1}') or {0}-master (half weights, float32 "
            "master weights)",
            text == "bf16" ? "bf16" : "16", text));
    static constexpr Precision all[] = {
        Precision::Fp32,     Precision::Bf16Mixed,  Precision::Fp16Mixed, Precision::Bf16True,
        Precision::Fp16True, Precision::Bf16Master, Precision::Fp16Master};
    Expected<Precision> p = parseName(text, "--precision", all, precisionName);
    if (!p)
        return makeError(StatusCode::InvalidArgument, p.status().message() + " or fp32");
    return p;
}

Expected<Precision> parseLegacyPrecision(const std::string &text)
{
    if (text == "fp32")
        return Precision::Fp32;
    if (text == "bf16-mixed")
        return Precision::Bf16Master;
    if (text == "fp16-mixed")
        return Precision::Fp16Master;
    if (text == "bf16")
        return Precision::Bf16True;
    return makeError(StatusCode::InvalidArgument,
                     fmt::format("precision '{}' is not one of this format version's (fp32, "
                                 "bf16-mixed, fp16-mixed, bf16)",
                                 text));
}

Expected<AutocastDevice> parseAutocastDevice(const std::string &text)
{
    static constexpr AutocastDevice all[] = {AutocastDevice::Cuda, AutocastDevice::Cpu};
    return parseName(text, "--autocast-device", all, autocastDeviceName);
}

Expected<Sharding> parseSharding(const std::string &text)
{
    if (text == "fsdp")
        return Sharding::Zero3;
    static constexpr Sharding all[] = {Sharding::None, Sharding::Zero1, Sharding::Zero2,
                                       Sharding::Zero3};
    Expected<Sharding> s = parseName(text, "--shard", all, shardingName);
    if (!s)
        return makeError(StatusCode::InvalidArgument, s.status().message() + " or fsdp");
    return s;
}

Expected<Attention> parseAttention(const std::string &text)
{
    static constexpr Attention all[] = {Attention::Eager, Attention::Sdpa};
    return parseName(text, "--attention", all, attentionName);
}

// Every precision executes: the CPU reference stores float16 / bfloat16 tensors in 2 bytes and
// computes in float32 (core/exec/half.h); a backend without half kernels (CUDA) refuses such a
// graph in its prepare(), by tensor dtype.
bool TrainingOptions::executable() const { return notExecutableReason().empty(); }

std::string TrainingOptions::notExecutableReason() const
{
    if (shard != Sharding::None && ranks > 1)
        return fmt::format("{} sharding over {} ranks is simulated only (run with --shard none)",
                           shardingName(shard), ranks);
    if (tensorParallel > 1)
        return fmt::format("tensor parallelism over {} ranks{} is simulated only (run with "
                           "--tensor-parallel 1)",
                           tensorParallel, sequenceParallel ? " with sequence parallelism" : "");
    if (microBatches > 1)
        return fmt::format("gradient accumulation over {} micro-batches is simulated only (run "
                           "with --micro-batches 1)",
                           microBatches);
    if (optimizer == Optimizer::Adafactor)
        return "the adafactor update is simulated only: the backends execute sgd, sgd-momentum, "
               "adam and adamw";
    return {};
}

Status validateTrainingOptions(const TrainingOptions &o)
{
    auto bad = [](std::string m) { return makeError(StatusCode::InvalidArgument, std::move(m)); };
    if (o.ranks < 1 || o.ranks > (int64_t(1) << 20))
        return bad(fmt::format("--ranks {}: give a number of ranks from 1 to 1048576", o.ranks));
    if (o.tensorParallel < 1 || o.tensorParallel > (int64_t(1) << 20))
        return bad(fmt::format("--tensor-parallel {}: give a number of tensor-parallel ranks from "
                               "1 to 1048576 (1: no tensor parallelism)",
                               o.tensorParallel));
    if (o.sequenceParallel && o.tensorParallel < 2)
        return bad("--sequence-parallel splits along the sequence what tensor parallelism "
                   "replicates: it needs --tensor-parallel N with N > 1");
    if (o.microBatches < 1 || o.microBatches > (int64_t(1) << 20))
        return bad(
            fmt::format("--micro-batches {}: give a number from 1 to 1048576", o.microBatches));
    const OptimizerHyper &h = o.hyper;
    if (!(h.lr >= 0) || !std::isfinite(h.lr))
        return bad("--lr: the learning rate must be a finite number >= 0");
    if (!(h.momentum >= 0 && h.momentum < 1) || !(h.beta1 >= 0 && h.beta1 < 1) ||
        !(h.beta2 >= 0 && h.beta2 < 1))
        return bad("momentum, beta1 and beta2 must lie in [0, 1)");
    if (!(h.eps > 0) || !std::isfinite(h.eps))
        return bad("eps must be a finite number > 0");
    if (!std::isfinite(h.weightDecay))
        return bad("--weight-decay must be a finite number (>= 0; < 0: the optimizer's default)");
    return Status::ok();
}

} // namespace remat::core::training
