#pragma once
// IEEE binary16 (float16) and bfloat16 storage: conversion to and from float32 with
// round-to-nearest-even, as PyTorch's c10::Half and c10::BFloat16 do.
//   uint16_t h = floatToHalfBits(1.0f / 3);   float f = halfBitsToFloat(h);      // 0.333251953125
//   uint16_t b = floatToBf16Bits(1.0f / 3);   float g = bf16BitsToFloat(b);      // 0.333984375
//   widenToFloat(DataType::BFloat16, src, dst, n);  narrowFromFloat(DataType::Float16, src, dst, n);
//
// Rounding: to nearest, ties to even; values beyond the largest finite half round to infinity
// (float16: from 65520; bfloat16: from 3.40282357e38, the midpoint above its largest finite);
// float16 subnormals are produced and read exactly; NaN stays NaN (float16: sign kept, quiet
// 0x7E00 payload, as c10 writes; bfloat16: 0x7FC0, as c10's round_to_nearest_even writes).
// Widening is exact. From double, the value is first rounded to float32 with round-to-odd, so the
// result equals a single correct rounding of the double (24 >= 2 * 11 + 2 bits).

#include "core/ir/dtype.h"

#include <cstdint>
#include <cstring>

namespace remat::core::exec {

inline uint32_t floatBits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float bitsFloat(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t floatToBf16Bits(float f)
{
    const uint32_t u = floatBits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return 0x7FC0; // NaN
    // round to nearest even on the 16 bits dropped; carries into the exponent (and to infinity)
    const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
    return uint16_t((u + rounding) >> 16);
}

inline float bf16BitsToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

inline uint16_t floatToHalfBits(float f)
{
    const uint32_t u = floatBits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return uint16_t(sign | 0x7E00u); // NaN
    if (a >= 0x477FF000u)                // >= 65520 (the midpoint above 65504) and infinity
        return uint16_t(sign | 0x7C00u);
    if (a < 0x38800000u) {
        // below 2^-14: a float16 subnormal (or zero); the value in units of 2^-24, rounded
        if (a < 0x33000000u) // below 2^-25: rounds to zero (2^-25 itself ties to even zero)
            return sign;
        const uint32_t exp = a >> 23;                      // 102 .. 112
        const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u; // 24 significant bits
        const uint32_t shift = 126 - exp; // value = mant * 2^(exp-150); units 2^-24
        const uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1);
        const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
        return uint16_t(sign | r); // r == 0x400 is the smallest normal: the encoding carries
    }
    // normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits
    const uint32_t rebased = a - (uint32_t(127 - 15) << 23);
    const uint32_t rounding = 0xFFFu + ((rebased >> 13) & 1u);
    return uint16_t(sign | ((rebased + rounding) >> 13));
}

inline float halfBitsToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F)
        return bitsFloat(sign | 0x7F800000u | (mant << 13)); // infinity, NaN (payload kept)
    if (exp != 0)
        return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
    // zero or subnormal: mant * 2^-24, exact in float32
    const float v = float(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
}

/// float32 -> half bits for a half dtype (Float16 or BFloat16).
inline uint16_t floatToHalfOf(ir::DataType t, float f)
{
    return t == ir::DataType::BFloat16 ? floatToBf16Bits(f) : floatToHalfBits(f);
}
inline float halfOfToFloat(ir::DataType t, uint16_t h)
{
    return t == ir::DataType::BFloat16 ? bf16BitsToFloat(h) : halfBitsToFloat(h);
}

/// double -> float32 rounded to odd (truncated, lowest bit set when inexact): a later rounding to
/// a format of at most 11 significant bits then equals one rounding of the double.
float doubleToFloatRoundOdd(double d);

/// double -> half bits for a half dtype, correctly rounded.
inline uint16_t doubleToHalfOf(ir::DataType t, double d)
{
    return floatToHalfOf(t, doubleToFloatRoundOdd(d));
}

inline bool isHalfType(ir::DataType t)
{
    return t == ir::DataType::Float16 || t == ir::DataType::BFloat16;
}

/// n half values (dtype Float16 or BFloat16) -> float32, exact.
void widenToFloat(ir::DataType half, const void *src, float *dst, int64_t n);
/// n float32 values -> half values of dtype Float16 or BFloat16, rounded to nearest even.
void narrowFromFloat(ir::DataType half, const float *src, void *dst, int64_t n);
/// Like narrowFromFloat, but writes only the elements whose rounded bits differ from what `dst`
/// holds (NaN over NaN counts as equal); returns how many were written. For operands a kernel may
/// have updated in place.
int64_t narrowChangedFromFloat(ir::DataType half, const float *src, void *dst, int64_t n);

} // namespace remat::core::exec
