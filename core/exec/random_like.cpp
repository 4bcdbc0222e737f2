#include "core/exec/random_like.h"

#include <random>

namespace remat::core::exec {

std::vector<float> randomLike(uint64_t seed, int64_t n, bool normal, double a, double b)
{
    std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
    std::mt19937_64 rng(seed);
    if (normal) {
        std::normal_distribution<double> d(a, b);
        for (float &x : v)
            x = float(d(rng));
    } else {
        std::uniform_real_distribution<double> d(a, b);
        for (float &x : v)
            x = float(d(rng));
    }
    return v;
}

} // namespace remat::core::exec
