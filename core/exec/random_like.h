#pragma once
// RandomNormalLike / RandomUniformLike (torch.randn_like, rand_like: a VAE's reparameterisation,
// StyleGAN's noise inputs): the values every backend writes, drawn on the host from the per-op
// seed, so a recompute replays them exactly and the CUDA backend agrees with the CPU reference.
//   std::vector<float> v = randomLike(seed, n, normal, mean_or_low, scale_or_high);

#include <cstdint>
#include <vector>

namespace remat::core::exec {

/// n values: normal (mean a, standard deviation b) or uniform in [a, b).
std::vector<float> randomLike(uint64_t seed, int64_t n, bool normal, double a, double b);

} // namespace remat::core::exec
