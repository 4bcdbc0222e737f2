#include "core/io/training_options_json.h"

#include "core/util/reader_guard.h"

#include <cmath>

namespace remat::core::io {

using nlohmann::json;

json trainingOptionsJson(const training::TrainingOptions &o)
{
    json j = {{"optimizer", training::optimizerName(o.optimizer)},
              {"precision", training::precisionName(o.precision)},
              {"shard", training::shardingName(o.shard)},
              {"ranks", o.ranks},
              {"micro_batches", o.microBatches},
              {"lr", o.hyper.lr},
              {"weight_decay", o.hyper.weightDecay}};
    // written when not the default, so sessions saved before --attention read and write the same
    if (o.attention != training::Attention::Eager)
        j["attention"] = training::attentionName(o.attention);
    if (training::isAutocast(o.precision))
        j["autocast_device"] = training::autocastDeviceName(o.autocastDevice);
    if (o.tensorParallel != 1)
        j["tensor_parallel"] = o.tensorParallel;
    if (o.sequenceParallel)
        j["sequence_parallel"] = true;
    return j;
}

namespace {

Expected<training::TrainingOptions> parse(const json &j, const std::string &what,
                                          bool legacyPrecisionNames)
{
    auto bad = [&](const std::string &m) {
        return makeError(StatusCode::InvalidArgument, what + ": \"training\": " + m);
    };
    if (!j.is_object())
        return bad("not an object");
    training::TrainingOptions o;
    auto text = [&](const char *key, std::string *out) -> Status {
        auto it = j.find(key);
        if (it == j.end())
            return Status::ok();
        if (!it->is_string())
            return bad(std::string("\"") + key + "\" is not a string");
        *out = it->get<std::string>();
        return Status::ok();
    };
    auto whole = [&](const char *key, int64_t *out) -> Status {
        auto it = j.find(key);
        if (it == j.end())
            return Status::ok();
        const double d = it->is_number() ? it->get<double>() : -1;
        if (!(d >= 1 && d <= 1048576) || std::floor(d) != d)
            return bad(std::string("\"") + key + "\" is not a whole number from 1 to 1048576");
        *out = int64_t(d);
        return Status::ok();
    };
    auto number = [&](const char *key, double *out) -> Status {
        auto it = j.find(key);
        if (it == j.end())
            return Status::ok();
        if (!it->is_number() || !std::isfinite(it->get<double>()))
            return bad(std::string("\"") + key + "\" is not a finite number");
        *out = it->get<double>();
        return Status::ok();
    };
    std::string optimizer = "none", precision = "fp32", shard = "none", attention = "eager",
                autocastDevice;
    REMAT_RETURN_IF_ERROR(text("optimizer", &optimizer));
    REMAT_RETURN_IF_ERROR(text("precision", &precision));
    REMAT_RETURN_IF_ERROR(text("autocast_device", &autocastDevice));
    REMAT_RETURN_IF_ERROR(text("shard", &shard));
    REMAT_RETURN_IF_ERROR(text("attention", &attention));
    REMAT_RETURN_IF_ERROR(whole("ranks", &o.ranks));
    REMAT_RETURN_IF_ERROR(whole("micro_batches", &o.microBatches));
    REMAT_RETURN_IF_ERROR(whole("tensor_parallel", &o.tensorParallel));
    if (auto it = j.find("sequence_parallel"); it != j.end()) {
        if (!it->is_boolean())
            return bad("\"sequence_parallel\" is not true or false");
        o.sequenceParallel = it->get<bool>();
    }
    REMAT_RETURN_IF_ERROR(number("lr", &o.hyper.lr));
    REMAT_RETURN_IF_ERROR(number("weight_decay", &o.hyper.weightDecay));
    auto opt = training::parseOptimizer(optimizer);
    if (!opt)
        return bad(opt.status().message());
    // Files written before the names followed Lightning's keep the meaning they were saved with.
    auto prec = legacyPrecisionNames ? training::parseLegacyPrecision(precision)
                                     : training::parsePrecision(precision);
    if (!prec)
        return bad(prec.status().message());
    if (!autocastDevice.empty()) {
        auto device = training::parseAutocastDevice(autocastDevice);
        if (!device)
            return bad(device.status().message());
        o.autocastDevice = *device;
    }
    auto sh = training::parseSharding(shard);
    if (!sh)
        return bad(sh.status().message());
    auto att = training::parseAttention(attention);
    if (!att)
        return bad(att.status().message());
    o.attention = *att;
    o.optimizer = *opt;
    o.precision = *prec;
    o.shard = *sh;
    if (Status s = training::validateTrainingOptions(o); !s.isOk())
        return bad(s.message());
    return o;
}

} // namespace

Expected<training::TrainingOptions> trainingOptionsFromJson(const json &j, const std::string &what,
                                                            bool legacyPrecisionNames)
{
    return guardReader(what, [&] { return parse(j, what, legacyPrecisionNames); });
}

} // namespace remat::core::io
