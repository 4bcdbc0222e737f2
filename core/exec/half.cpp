#include "core/exec/half.h"

#include <cmath>
#include <cstring>

namespace remat::core::exec {

float doubleToFloatRoundOdd(double d)
{
    float f = float(d);
    if (!std::isfinite(d) || double(f) == d)
        return f;
    // toward zero, then the lowest bit marks the value inexact (a finite f beyond the float range
    // truncates to the largest finite float, whose lowest bit is already set)
    if (std::abs(double(f)) > std::abs(d))
        f = std::nextafter(f, 0.0f);
    return bitsFloat(floatBits(f) | 1u);
}

void widenToFloat(ir::DataType half, const void *src, float *dst, int64_t n)
{
    const auto *s = static_cast<const uint16_t *>(src);
    if (half == ir::DataType::BFloat16) {
        for (int64_t i = 0; i < n; ++i)
            dst[i] = bf16BitsToFloat(s[i]);
    } else {
        for (int64_t i = 0; i < n; ++i)
            dst[i] = halfBitsToFloat(s[i]);
    }
}

void narrowFromFloat(ir::DataType half, const float *src, void *dst, int64_t n)
{
    auto *d = static_cast<uint16_t *>(dst);
    if (half == ir::DataType::BFloat16) {
        for (int64_t i = 0; i < n; ++i)
            d[i] = floatToBf16Bits(src[i]);
    } else {
        for (int64_t i = 0; i < n; ++i)
            d[i] = floatToHalfBits(src[i]);
    }
}

int64_t narrowChangedFromFloat(ir::DataType half, const float *src, void *dst, int64_t n)
{
    auto *d = static_cast<uint16_t *>(dst);
    int64_t written = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t b = floatToHalfOf(half, src[i]);
        if (b == d[i] || (std::isnan(src[i]) && std::isnan(halfOfToFloat(half, d[i]))))
            continue;
        d[i] = b;
        ++written;
    }
    return written;
}

} // namespace remat::core::exec
