#include "core/cost/calibrated.h"

#include "core/cost/roofline.h"
#include "core/ops/op_def.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>

namespace remat::core::cost {

const char *timeSourceName(TimeSource source)
{
    switch (source) {
    case TimeSource::Estimate: return "estimate";
    case TimeSource::Profile: return "profile";
    case TimeSource::Calibrated: return "calibrated";
    }
    return "estimate";
}

const char *phaseName(training::Phase phase)
{
    switch (phase) {
    case training::Phase::Forward: return "forward";
    case training::Phase::Loss: return "loss";
    case training::Phase::Backward: return "backward";
    case training::Phase::Optimizer: return "optimizer";
    }
    return "forward";
}

OpShape opShape(const training::TrainingGraph &graph, const training::Op &op)
{
    OpShape s;
    s.type = op.type;
    s.phase = phaseName(op.phase);
    // A backward op belongs to its forward op's family: ConvGrad is convolution work.
    std::string familyType = op.type;
    if (op.phase == training::Phase::Backward && op.forwardOf.valid() &&
        op.forwardOf.index() < graph.opCount())
        familyType = graph.op(op.forwardOf).type;
    if (const ops::OpDef *def = ops::findOp(familyType))
        s.family = ops::familyName(def->family);
    s.flops = op.flops;
    s.bytes = double(op.bytesAccessed);
    return s;
}

namespace {

struct Sample
{
    double flops, bytes, seconds;
};

/// The levels an op belongs to, most specific first.
std::array<std::string, 4> levelKeys(const OpShape &op)
{
    return {"type " + op.type,
            "family " + (op.family.empty() ? std::string("unknown") : op.family) + " " + op.phase,
            "phase " + op.phase, "all"};
}

/// Least squares of A x = y on the columns in `mask` (3 columns), by the normal equations with
/// partial pivoting; false when they are singular.
bool solveSubset(const std::vector<std::array<double, 3>> &a, const std::vector<double> &y,
                 unsigned mask, std::array<double, 3> &x, double &residual)
{
    std::vector<int> cols;
    for (int j = 0; j < 3; ++j)
        if (mask & (1u << j))
            cols.push_back(j);
    const size_t k = cols.size();
    double m[3][4] = {};
    for (size_t r = 0; r < a.size(); ++r)
        for (size_t i = 0; i < k; ++i) {
            for (size_t j = 0; j < k; ++j)
                m[i][j] += a[r][cols[i]] * a[r][cols[j]];
            m[i][k] += a[r][cols[i]] * y[r];
        }
    for (size_t c = 0; c < k; ++c) {
        size_t p = c;
        for (size_t r = c + 1; r < k; ++r)
            if (std::abs(m[r][c]) > std::abs(m[p][c]))
                p = r;
        if (!(std::abs(m[p][c]) > 1e-12))
            return false;
        for (size_t j = 0; j <= k; ++j)
            std::swap(m[c][j], m[p][j]);
        for (size_t r = 0; r < k; ++r) {
            if (r == c)
                continue;
            const double f = m[r][c] / m[c][c];
            for (size_t j = c; j <= k; ++j)
                m[r][j] -= f * m[c][j];
        }
    }
    x = {0, 0, 0};
    for (size_t i = 0; i < k; ++i)
        x[cols[i]] = m[i][k] / m[i][i];
    residual = 0;
    for (size_t r = 0; r < a.size(); ++r) {
        double e = -y[r];
        for (int j = 0; j < 3; ++j)
            e += a[r][j] * x[j];
        residual += e * e;
    }
    return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

/// Non-negative least squares of seconds ~ fixed + flops * a + bytes * b on relative error: every
/// subset of the three terms is solved and the best one with no negative coefficient wins (three
/// unknowns: exhaustive is exact and cheap).
bool fitLevel(const std::vector<Sample> &samples, Efficiency &e)
{
    std::array<double, 3> scale = {1, 0, 0};
    for (const Sample &s : samples) {
        scale[1] = std::max(scale[1], s.flops / s.seconds);
        scale[2] = std::max(scale[2], s.bytes / s.seconds);
    }
    std::vector<std::array<double, 3>> a;
    std::vector<double> y;
    for (const Sample &s : samples) {
        a.push_back({1.0 / s.seconds, scale[1] > 0 ? s.flops / s.seconds / scale[1] : 0.0,
                     scale[2] > 0 ? s.bytes / s.seconds / scale[2] : 0.0});
        y.push_back(1.0);
    }
    double best = INFINITY;
    std::array<double, 3> bestX{};
    for (unsigned mask = 1; mask < 8; ++mask) {
        std::array<double, 3> x;
        double r = 0;
        if (!solveSubset(a, y, mask, x, r))
            continue;
        if (x[0] < 0 || x[1] < 0 || x[2] < 0)
            continue;
        if (r < best) {
            best = r;
            bestX = x;
        }
    }
    if (!std::isfinite(best))
        return false;
    e.fixedSeconds = bestX[0];
    e.secondsPerFlop = scale[1] > 0 ? bestX[1] / scale[1] : 0.0;
    e.secondsPerByte = scale[2] > 0 ? bestX[2] / scale[2] : 0.0;
    e.ownFit = true;
    return true;
}

// A level fits its own three terms from ops of this many different sizes; with fewer it scales
// its parent's fit (ops all of one size say nothing about how time grows with size).
constexpr size_t kOwnFitSizes = 3;

size_t distinctSizes(const std::vector<Sample> &samples)
{
    std::vector<std::pair<double, double>> sizes;
    for (const Sample &s : samples) {
        const bool seen = std::any_of(sizes.begin(), sizes.end(), [&](const auto &z) {
            return std::abs(z.first - s.flops) <= 0.01 * std::max(z.first, s.flops) &&
                   std::abs(z.second - s.bytes) <= 0.01 * std::max(z.second, s.bytes);
        });
        if (!seen)
            sizes.emplace_back(s.flops, s.bytes);
    }
    return sizes.size();
}

} // namespace

std::optional<double> twoPointSeconds(const ProfiledOp &p, const OpShape &now,
                                      const CalibratedModel &model)
{
    if (!p.hasSecondPoint())
        return std::nullopt;
    // The op's work at a size: its fitted level's proportional part (flops and bytes weighed as
    // that level's efficiencies weigh them), or its bytes (else flops) without a level.
    const Efficiency *level = model.valid() ? model.levelFor(now) : nullptr;
    double perFlop = level ? level->secondsPerFlop : 0, perByte = level ? level->secondsPerByte : 0;
    if (!(perFlop > 0) && !(perByte > 0)) {
        perByte = now.bytes > 0 || p.bytes > 0 ? 1.0 : 0.0;
        perFlop = perByte > 0 ? 0.0 : 1.0;
    }
    const auto work = [&](double flops, double bytes) { return flops * perFlop + bytes * perByte; };
    const double w1 = work(p.flops, p.bytes), w2 = work(p.secondFlops, p.secondBytes);
    const double w = work(now.flops, now.bytes);
    const double t1 = p.seconds, t2 = p.secondSeconds;
    if (!(std::abs(w2 - w1) > 1e-9 * std::max(std::abs(w1), std::abs(w2))))
        return std::nullopt; // both points at one size: no line through them
    const double slope = (t2 - t1) / (w2 - w1);
    if (!(slope >= 0) || !std::isfinite(slope))
        return std::nullopt; // bigger was faster: noise, not a trend
    double t = t1 + slope * (w - w1);
    if (!(t > 0)) {
        // The line reaches zero above this size (its intercept is not above 0): proportional
        // to the smaller point instead.
        const double wMin = w1 < w2 ? w1 : w2, tMin = w1 < w2 ? t1 : t2;
        t = wMin > 0 && w > 0 ? tMin * w / wMin : tMin;
    }
    return std::isfinite(t) ? std::optional<double>(t) : std::nullopt;
}

CalibratedModel CalibratedModel::fit(const Profile &profile)
{
    CalibratedModel model;
    // Group the sized ops by level, keeping each op's keys for the parent chain.
    std::map<std::string, std::vector<Sample>> byLevel;
    std::map<std::string, std::string> parentOf;
    for (const ProfiledOp &op : profile.ops) {
        if (!(op.flops >= 0) || !(op.bytes >= 0) || !(op.seconds > 0) ||
            !std::isfinite(op.seconds) || !std::isfinite(op.flops) || !std::isfinite(op.bytes))
            continue;
        const OpShape shape{op.type, op.phase, op.family, op.flops, op.bytes};
        const auto keys = levelKeys(shape);
        for (size_t i = 0; i < keys.size(); ++i) {
            byLevel[keys[i]].push_back({op.flops, op.bytes, op.seconds});
            if (i + 1 < keys.size())
                parentOf[keys[i]] = keys[i + 1];
        }
    }
    if (byLevel.count("all") == 0)
        return model;
    // Fit from the top down, so every parent exists before its children scale it.
    auto depth = [&](const std::string &key) {
        int d = 0;
        for (std::string k = key; parentOf.count(k); k = parentOf[k])
            ++d;
        return d;
    };
    std::vector<std::string> order;
    for (const auto &[key, samples] : byLevel)
        order.push_back(key);
    std::stable_sort(order.begin(), order.end(), [&](const std::string &a, const std::string &b) {
        return depth(a) < depth(b);
    });
    for (const std::string &key : order) {
        const std::vector<Sample> &samples = byLevel[key];
        Efficiency e;
        e.group = key;
        e.samples = int(samples.size());
        const bool hasParent = parentOf.count(key) && model.m_levels.count(parentOf[key]);
        if ((!hasParent || distinctSizes(samples) >= kOwnFitSizes) && fitLevel(samples, e)) {
            model.m_levels[key] = e;
            continue;
        }
        if (!hasParent)
            continue;
        // Too few ops for three terms: the parent's shape, scaled by the geometric mean of
        // measured over the parent's prediction.
        const Efficiency &p = model.m_levels[parentOf[key]];
        double logSum = 0;
        int n = 0;
        for (const Sample &s : samples) {
            const double predicted = p.seconds(s.flops, s.bytes);
            if (predicted > 0) {
                logSum += std::log(s.seconds / predicted);
                ++n;
            }
        }
        const double k = n > 0 ? std::exp(logSum / n) : 1.0;
        e.fixedSeconds = p.fixedSeconds * k;
        e.secondsPerFlop = p.secondsPerFlop * k;
        e.secondsPerByte = p.secondsPerByte * k;
        e.ownFit = false;
        model.m_levels[key] = e;
    }
    return model;
}

const Efficiency *CalibratedModel::levelFor(const OpShape &op) const
{
    for (const std::string &key : levelKeys(op))
        if (auto it = m_levels.find(key); it != m_levels.end())
            return &it->second;
    return nullptr;
}

double CalibratedModel::predict(const OpShape &op) const
{
    const Efficiency *e = levelFor(op);
    return e ? e->seconds(op.flops, op.bytes) : 0.0;
}

Expected<Costs> profileCosts(const Profile &profile, const training::TrainingGraph &graph,
                             const Roofline &fallback, const std::string &origin,
                             ProfileCostsReport *report)
{
    if (profile.ops.empty())
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("{}: the profile times no op", origin));
    ProfileCostsReport local;
    ProfileCostsReport &rep = report ? *report : local;
    rep = {};
    const Costs roofline = rooflineCosts(graph, fallback);
    const CalibratedModel model = CalibratedModel::fit(profile);

    const training::TrainingGraphInfo &info = graph.info();
    const bool sameModel = profile.modelSha256.empty() || info.modelSha256.empty() ||
                           profile.modelSha256 == info.modelSha256;
    if (!sameModel)
        rep.warnings.push_back(fmt::format(
            "{} was measured on another model ({}, sha256 {}...), not this one (sha256 {}...): its "
            "op times are "
            "not used, only the {} efficiencies fitted from them (take a profile of this model "
            "with "
            "`remat run MODEL --profile-out P.json`)",
            origin, profile.modelPath.empty() ? std::string("unnamed") : profile.modelPath,
            profile.modelSha256.substr(0, 12), info.modelSha256.substr(0, 12),
            profile.backend.empty() ? std::string("device") : profile.backend));
    else if (profile.batch > 0 && info.batch > 0 && profile.batch != info.batch &&
             profile.secondBatch != info.batch)
        rep.warnings.push_back(
            profile.secondBatch > 0
                ? fmt::format("{} was measured at batches {} and {}, the model is at batch {}: "
                              "each op's time follows the line through its two measured sizes",
                              origin, profile.batch, profile.secondBatch, info.batch)
                : fmt::format("{} was measured at batch {}, the model is at batch {}: op times "
                              "are scaled by the calibrated model (a profile written by `remat "
                              "run --profile-out` also times a second batch, which scales "
                              "better)",
                              origin, profile.batch, info.batch));

    std::unordered_map<std::string, const ProfiledOp *> byName;
    if (sameModel)
        for (const ProfiledOp &op : profile.ops)
            byName.emplace(op.name, &op);

    // Load factor: the ops' medians summed as one step runs them (recomputes included) against the
    // median time a step spent in ops.
    double medians = 0;
    for (const ProfiledOp &op : profile.ops) {
        const double per = profile.iterations > 0 ? 1.0 / profile.iterations : 0.0;
        medians += op.seconds * (op.samples > 0 ? op.samples * per : 1.0) +
                   op.recomputeSeconds * op.recomputeSamples * per;
    }
    if (profile.computeSeconds > 0 && medians > 0 &&
        std::isfinite(profile.computeSeconds / medians))
        rep.loadFactor = profile.computeSeconds / medians;
    if (rep.loadFactor > 1.05)
        rep.warnings.push_back(fmt::format("{}: steps spent {:.0f}% more time in ops than the ops' "
                                           "medians add up to (a busy machine while "
                                           "profiling); every time from it is scaled by {:.3f}",
                                           origin, 100 * (rep.loadFactor - 1), rep.loadFactor));

    Costs c = roofline;
    c.source = "profile:" + origin;
    if (profile.hostToDeviceBandwidth > 0)
        c.hostToDeviceBandwidth = profile.hostToDeviceBandwidth;
    if (profile.deviceToHostBandwidth > 0)
        c.deviceToHostBandwidth = profile.deviceToHostBandwidth;
    std::vector<char> fromProfile(graph.opCount(), 1); // 0: the roofline's estimate stays
    for (const training::Op &op : graph.ops()) {
        const OpShape shape = opShape(graph, op);
        double &seconds = c.opSeconds[op.id.index()];
        auto it = byName.find(op.name);
        if (it != byName.end()) {
            const ProfiledOp &p = *it->second;
            const bool sized = p.flops >= 0 && p.bytes >= 0;
            const bool sameSize = !sized || (p.flops == shape.flops && p.bytes == shape.bytes);
            if (sameSize) {
                seconds = p.seconds;
                ++rep.measured;
                continue;
            }
            if (p.hasSecondPoint() && p.secondFlops == shape.flops &&
                p.secondBytes == shape.bytes) {
                seconds = p.secondSeconds; // measured at this size too
                ++rep.measured;
                continue;
            }
            if (const std::optional<double> t = twoPointSeconds(p, shape, model)) {
                seconds = *t;
                ++rep.scaled;
                ++rep.twoPoint;
                continue;
            }
            if (model.valid()) {
                OpShape then = shape;
                then.flops = p.flops;
                then.bytes = p.bytes;
                const double before = model.predict(then), now = model.predict(shape);
                seconds = before > 0 ? p.seconds * now / before : now;
                ++rep.scaled;
                continue;
            }
        }
        if (model.valid()) {
            seconds = model.predict(shape);
            ++rep.fitted;
        } else {
            ++rep.estimated; // the roofline's time stays
            fromProfile[op.id.index()] = 0;
        }
    }
    for (size_t i = 0; i < c.opSeconds.size(); ++i)
        if (fromProfile[i])
            c.opSeconds[i] *= rep.loadFactor;
    // A fit on extreme figures (1e300 FLOPs in a hand-edited file) may overflow: such an op takes
    // the roofline's time rather than an infinite one.
    for (size_t i = 0; i < c.opSeconds.size(); ++i)
        if (!std::isfinite(c.opSeconds[i]) || c.opSeconds[i] < 0) {
            c.opSeconds[i] = roofline.opSeconds[i];
            ++rep.estimated;
        }
    if (rep.estimated > 0)
        c.timeSource = TimeSource::Estimate;
    else if (rep.scaled + rep.fitted > 0)
        c.timeSource = TimeSource::Calibrated;
    else
        c.timeSource = TimeSource::Profile;
    if (sameModel && rep.fitted + rep.estimated > 0)
        rep.warnings.push_back(fmt::format("{} does not time {} of the {} ops: {}", origin,
                                           rep.fitted + rep.estimated, graph.opCount(),
                                           rep.estimated > 0 ? "they take the roofline estimate"
                                                             : "the calibrated model times them"));
    return c;
}

} // namespace remat::core::cost
