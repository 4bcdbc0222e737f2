#pragma once
// What SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss weigh, shared by every backend (the
// kernels differ, the label checks and weights not).
//   Expected<LossTerms> t = lossTerms(scoresShape, labels, weights, ignoreIndex, reduction);
//   loss_i = -t->weight[i] * logp[t->offset[i]];  mean: sum(loss_i) / t->weightSum
//   d logp (NLL): -t->weight[i] * g_i at t->offset[i];  d scores (SCE): weight_i * g_i *
//   (softmax - one-hot), with g_i the loss gradient of sample i (divided by weightSum for mean)

#include "core/util/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace remat::core::exec {

struct LossTerms
{
    int64_t outer = 0, classes = 0, inner = 0; ///< scores as [N, C, d1 * ... * dk]
    std::vector<int64_t> offset; ///< per sample (n, d): its label's element in the scores
    std::vector<int64_t> label;  ///< per sample: the class, or -1 where ignored
    std::vector<double> weight;  ///< per sample: the class weight (1 without), 0 where ignored
    double weightSum = 0;        ///< the mean's denominator
    enum class Reduction { None, Sum, Mean } reduction = Reduction::Mean;
};

/// Errors name a label outside [0, C) that is not the ignore index, a weight vector that is not
/// [C], labels that are not [N, d...], and an unknown reduction.
[[nodiscard]] Expected<LossTerms> lossTerms(const std::vector<int64_t> &scoresShape,
                                            const std::vector<int64_t> &labels,
                                            const std::vector<double> *classWeights,
                                            std::optional<int64_t> ignoreIndex,
                                            const std::string &reduction);

/// g_i for every sample from the loss gradient dy ([N, d...] for none, a scalar otherwise).
[[nodiscard]] std::vector<double> perSampleGradient(const LossTerms &t,
                                                    const std::vector<double> &dy);

} // namespace remat::core::exec
