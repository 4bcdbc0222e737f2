#pragma once
// float16 / bfloat16 <-> float32 conversions as __host__ __device__ functions: the CUDA kernels'
// half storage (gpu/kernels/half.cu) and the CPU reference (core/exec/half.h) round alike, bit for
// bit, and tests/gpu/tst_cuda_half.cpp checks that on the host (plain C++: no nvcc needed).
//   float f = kernels::halfToFloat(HalfKind::BFloat16, bits);  // exact
//   uint16_t b = kernels::floatToHalf(HalfKind::Float16, f);   // to nearest, ties to even
//
// The rules are core/exec/half.h's (c10's): NaN stays NaN (float16: sign kept, 0x7E00; bfloat16:
// 0x7FC0), beyond the largest finite value to infinity, float16 subnormals exact. From double
// (an int64 cast to half), the value is first rounded to float32 with round-to-odd, so one
// correct rounding results.

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define REMAT_HALF_HD __host__ __device__ __forceinline__
#else
#define REMAT_HALF_HD inline
#endif

namespace remat::gpu::kernels {

/// The two half storage types (their bit patterns travel as uint16_t).
enum class HalfKind : int { Float16, BFloat16 };

REMAT_HALF_HD uint32_t bitsOfFloat(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

REMAT_HALF_HD float floatOfBits(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

REMAT_HALF_HD uint16_t floatToBf16(float f)
{
    const uint32_t u = bitsOfFloat(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return 0x7FC0; // NaN
    const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
    return uint16_t((u + rounding) >> 16);
}

REMAT_HALF_HD float bf16ToFloat(uint16_t b) { return floatOfBits(uint32_t(b) << 16); }

REMAT_HALF_HD uint16_t floatToFp16(float f)
{
    const uint32_t u = bitsOfFloat(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return uint16_t(sign | 0x7E00u); // NaN
    if (a >= 0x477FF000u)                // >= 65520 and infinity
        return uint16_t(sign | 0x7C00u);
    if (a < 0x38800000u) {
        // a float16 subnormal or zero: the value in units of 2^-24, rounded to nearest even
        if (a < 0x33000000u)
            return sign;
        const uint32_t exp = a >> 23;
        const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - exp;
        const uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1);
        const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
        return uint16_t(sign | r);
    }
    const uint32_t rebased = a - (uint32_t(127 - 15) << 23);
    const uint32_t rounding = 0xFFFu + ((rebased >> 13) & 1u);
    return uint16_t(sign | ((rebased + rounding) >> 13));
}

REMAT_HALF_HD float fp16ToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F)
        return floatOfBits(sign | 0x7F800000u | (mant << 13));
    if (exp != 0)
        return floatOfBits(sign | ((exp + 112) << 23) | (mant << 13));
    const float v = float(mant) * 5.9604644775390625e-8f; // exact
    return sign ? -v : v;
}

REMAT_HALF_HD float halfToFloat(HalfKind k, uint16_t bits)
{
    return k == HalfKind::BFloat16 ? bf16ToFloat(bits) : fp16ToFloat(bits);
}

REMAT_HALF_HD uint16_t floatToHalf(HalfKind k, float f)
{
    return k == HalfKind::BFloat16 ? floatToBf16(f) : floatToFp16(f);
}

/// double -> float32 rounded to odd (toward zero, lowest bit set when inexact): a later rounding
/// to at most 11 significant bits then equals one rounding of the double.
REMAT_HALF_HD float doubleToFloatOdd(double d)
{
    float f = float(d); // to nearest (host and device alike)
    const double back = double(f);
    if (d - d != 0.0 || back == d) // NaN or infinite d, or exact
        return f;
    // toward zero (f is nonzero here; an f beyond the float range, infinity, steps to the
    // largest finite float, whose lowest bit is already set)
    if ((back > 0 ? back : -back) > (d > 0 ? d : -d))
        f = floatOfBits(bitsOfFloat(f) - 1u);
    return floatOfBits(bitsOfFloat(f) | 1u);
}

REMAT_HALF_HD uint16_t doubleToHalf(HalfKind k, double d)
{
    return floatToHalf(k, doubleToFloatOdd(d));
}

/// Whether writing `bits` over `old` changes the stored value (NaN over NaN does not), as
/// core/exec/half.h's narrowChangedFromFloat decides.
REMAT_HALF_HD bool halfChanges(HalfKind k, uint16_t bits, uint16_t old, float value)
{
    if (bits == old)
        return false;
    const float o = halfToFloat(k, old);
    return !(value != value && o != o);
}

} // namespace remat::gpu::kernels
