#include "core/exec/loss_terms.h"

#include <fmt/format.h>

namespace remat::core::exec {

Expected<LossTerms> lossTerms(const std::vector<int64_t> &scoresShape,
                              const std::vector<int64_t> &labels,
                              const std::vector<double> *classWeights,
                              std::optional<int64_t> ignoreIndex, const std::string &reduction)
{
    LossTerms t;
    if (reduction == "none")
        t.reduction = LossTerms::Reduction::None;
    else if (reduction == "sum")
        t.reduction = LossTerms::Reduction::Sum;
    else if (reduction != "mean")
        return makeError(StatusCode::InvalidArgument,
                         "reduction '" + reduction + "' is none of mean, sum, none");
    if (scoresShape.size() < 2)
        return makeError(StatusCode::InvalidArgument, "the scores need [N, C, ...]");
    t.outer = scoresShape[0];
    t.classes = scoresShape[1];
    t.inner = 1;
    for (size_t d = 2; d < scoresShape.size(); ++d)
        t.inner *= scoresShape[d];
    const int64_t samples = t.outer * t.inner;
    if (int64_t(labels.size()) != samples)
        return makeError(StatusCode::InvalidArgument,
                         fmt::format("{} labels for {} samples (the scores without the class axis)",
                                     labels.size(), samples));
    if (classWeights && int64_t(classWeights->size()) != t.classes)
        return makeError(StatusCode::InvalidArgument, fmt::format("{} class weights for {} classes",
                                                                  classWeights->size(), t.classes));
    t.offset.resize(size_t(samples));
    t.label.resize(size_t(samples));
    t.weight.resize(size_t(samples));
    for (int64_t o = 0; o < t.outer; ++o)
        for (int64_t i = 0; i < t.inner; ++i) {
            const size_t k = size_t(o * t.inner + i);
            const int64_t c = labels[k];
            if (ignoreIndex && c == *ignoreIndex) {
                t.offset[k] = o * t.classes * t.inner + i;
                t.label[k] = -1;
                t.weight[k] = 0;
                continue;
            }
            if (c < 0 || c >= t.classes)
                return makeError(
                    StatusCode::InvalidArgument,
                    fmt::format("label {} of sample {} is outside [0, {})", c, k, t.classes));
            t.offset[k] = (o * t.classes + c) * t.inner + i;
            t.label[k] = c;
            t.weight[k] = classWeights ? (*classWeights)[size_t(c)] : 1.0;
            t.weightSum += t.weight[k];
        }
    return t;
}

std::vector<double> perSampleGradient(const LossTerms &t, const std::vector<double> &dy)
{
    std::vector<double> g(t.weight.size(), 0.0);
    for (size_t k = 0; k < g.size(); ++k) {
        double gi = 0;
        switch (t.reduction) {
        case LossTerms::Reduction::None: gi = k < dy.size() ? dy[k] : 0.0; break;
        case LossTerms::Reduction::Sum: gi = dy.empty() ? 0.0 : dy[0]; break;
        case LossTerms::Reduction::Mean:
            gi = dy.empty() || t.weightSum == 0 ? 0.0 : dy[0] / t.weightSum;
            break;
        }
        g[k] = gi * t.weight[k];
    }
    return g;
}

} // namespace remat::core::exec
