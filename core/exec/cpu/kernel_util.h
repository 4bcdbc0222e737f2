#pragma once
// Helpers shared by the CPU kernel files (internal to core/exec/cpu).
//   Broadcast b = Broadcast::of({a.shape, b.shape});  b.forEach(...)
//   reduceToShape(dY, dyShape, dA, aShape);   // sum over broadcast dims
//   addKernels(table) per kernel file, called from the explicit list in kernel.cpp.

#include "core/exec/axes.h"
#include "core/exec/cpu/kernel.h"
#include "core/ir/graph.h"

#include <cstring>
#include <map>
#include <span>

namespace remat::core::exec::cpu {

using KernelTable = std::map<std::string, KernelFn>;

// The kernel files, each adding its op types (forward and backward) to the table.
void addElementwiseKernels(KernelTable &table);
void addShapeKernels(KernelTable &table);
void addNnKernels(KernelTable &table);
void addConvKernels(KernelTable &table);
void addConvTransposeKernels(KernelTable &table);
void addRecurrentKernels(KernelTable &table);
void addLossKernels(KernelTable &table);
void addOptimizerKernels(KernelTable &table);
void addAttentionKernels(KernelTable &table);

/// Numpy broadcasting of up to a few inputs to one output shape; strides are 0 on broadcast dims.
struct Broadcast
{
    std::vector<int64_t> outShape;
    std::vector<std::vector<int64_t>> strides; ///< per input, per output dim (elements)

    /// Fails when the shapes do not broadcast.
    static Expected<Broadcast> of(const std::vector<std::vector<int64_t>> &shapes);
    int64_t outNumel() const;
    /// Calls fn(outIndex, inOffsets...) for every output element in row-major order.
    template <typename Fn> void forEach2(Fn &&fn) const;
    template <typename Fn> void forEach3(Fn &&fn) const;
};

/// Right-aligned strides of `shape` against `outShape` (0 on broadcast dims).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &outShape);
/// Sums `src` (shape srcShape) into `dst` (shape dstShape, broadcastable to srcShape), in double.
/// dst is overwritten.
void reduceToShape(const float *src, const std::vector<int64_t> &srcShape, float *dst,
                   const std::vector<int64_t> &dstShape);

int64_t numelOf(const std::vector<int64_t> &shape);
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

/// Reads an int64 / float tensor's values whatever its integer or float dtype.
std::vector<int64_t> readInts(const KView &v);
std::vector<double> readDoubles(const KView &v);

/// Element-wise float helpers.
inline void copyBytes(const KView &src, KView &dst)
{
    std::memcpy(dst.data, src.data, static_cast<size_t>(dst.numel() * ir::elementSize(dst.dtype)));
}

/// C = op(A)[M,K] * op(B)[K,N] (+ beta C): row-major sgemm through OpenBLAS.
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/// The same product of float32 operands into a double C (C = alpha op(A) op(B) + beta C), for
/// results that are summed further before their one rounding to float32.
void gemmIntoDouble(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, double beta,
                    double *c, int64_t ldc);

template <typename Fn> void Broadcast::forEach2(Fn &&fn) const
{
    const size_t rank = outShape.size();
    const int64_t total = outNumel();
    if (total == 0)
        return;
    if (rank == 0) {
        fn(int64_t(0), int64_t(0), int64_t(0));
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    const std::vector<int64_t> &s0 = strides[0], &s1 = strides[1];
    const int64_t inner = outShape[rank - 1];
    int64_t o0 = 0, o1 = 0;
    for (int64_t out = 0; out < total; out += inner) {
        for (int64_t i = 0; i < inner; ++i)
            fn(out + i, o0 + i * s0[rank - 1], o1 + i * s1[rank - 1]);
        // advance all but the innermost dim
        for (size_t d = rank - 1; d-- > 0;) {
            ++idx[d];
            o0 += s0[d];
            o1 += s1[d];
            if (idx[d] < outShape[d])
                break;
            o0 -= s0[d] * idx[d];
            o1 -= s1[d] * idx[d];
            idx[d] = 0;
        }
    }
}

template <typename Fn> void Broadcast::forEach3(Fn &&fn) const
{
    const size_t rank = outShape.size();
    const int64_t total = outNumel();
    if (total == 0)
        return;
    if (rank == 0) {
        fn(int64_t(0), int64_t(0), int64_t(0), int64_t(0));
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    const std::vector<int64_t> &s0 = strides[0], &s1 = strides[1], &s2 = strides[2];
    const int64_t inner = outShape[rank - 1];
    int64_t o0 = 0, o1 = 0, o2 = 0;
    for (int64_t out = 0; out < total; out += inner) {
        for (int64_t i = 0; i < inner; ++i)
            fn(out + i, o0 + i * s0[rank - 1], o1 + i * s1[rank - 1], o2 + i * s2[rank - 1]);
        for (size_t d = rank - 1; d-- > 0;) {
            ++idx[d];
            o0 += s0[d];
            o1 += s1[d];
            o2 += s2[d];
            if (idx[d] < outShape[d])
                break;
            o0 -= s0[d] * idx[d];
            o1 -= s1[d] * idx[d];
            o2 -= s2[d] * idx[d];
            idx[d] = 0;
        }
    }
}

} // namespace remat::core::exec::cpu
