#pragma once
// Plain-data descriptions of strided N-d index spaces, passed by value to the kernels.
//   NdIter it = NdIter::contiguous({2, 3, 4});            // dims, row-major strides in s[0]
//   it.s[1] = stridesOf(inputShape, broadcastTo = it);   // a second operand, 0 on broadcast dims
// Host code builds these; kernels decompose a linear index into up to four operand offsets.

#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define REMAT_HOST_DEVICE __host__ __device__
#else
#define REMAT_HOST_DEVICE
#endif

namespace remat::gpu::kernels {

inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 4;

/// An index space of `rank` dims and, per operand, the element stride of each dim.
struct NdIter
{
    int rank = 0;
    int64_t dims[kMaxRank] = {};
    int64_t s[kMaxOperands][kMaxRank] = {};
    int64_t base[kMaxOperands] = {}; ///< element offset added to each operand

    REMAT_HOST_DEVICE int64_t count() const
    {
        int64_t n = 1;
        for (int i = 0; i < rank; ++i)
            n *= dims[i];
        return n;
    }
};

/// Row-major strides of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Strides of `shape` read as if broadcast (numpy rules, aligned right) to `target`: 0 on dims
/// where `shape` has size 1 (or is missing) and `target` does not. `shape` must broadcast.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &target);

/// The numpy broadcast of two shapes; false when they do not broadcast.
bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> &out);

/// Merges adjacent dims that are contiguous for every operand and drops size-1 dims, so the
/// kernels divide less; the iteration order (row-major) is unchanged. Returns false when the
/// result still has more than kMaxRank dims.
bool buildIter(const std::vector<int64_t> &dims, const std::vector<std::vector<int64_t>> &strides,
               NdIter &out);

} // namespace remat::gpu::kernels
