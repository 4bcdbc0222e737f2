// Matrix products through cuBLAS: MatMul (numpy broadcasting of batch dims, 1-D operands) and
// Gemm (transA / transB, alpha, beta, broadcast C), with their gradients. Row-major operands are
// handed to column-major cuBLAS as their transposes (C^T = B^T A^T), so nothing is copied.
#include "gpu/kernels/elementwise.h"
#include "gpu/ops_internal.h"

#include "core/ir/graph.h"

#include <fmt/format.h>

#include <limits>

namespace remat::gpu {

using core::Status;
using namespace kernels;

namespace {

bool fitsInt(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

} // namespace

/// Z[M,N] = alpha * op(X)[M,K] * op(Y)[K,N] + beta * Z, all row-major and contiguous; X is stored
/// [M,K] (or [K,M] when transX), Y [K,N] (or [N,K]). Batched over `batch` matrices with element
/// strides sx, sy, sz (0: the same matrix for every batch).
Status rowGemm(const OpContext &c, bool transX, bool transY, int64_t m, int64_t n, int64_t k,
               float alpha, const float *x, int64_t sx, const float *y, int64_t sy, float beta,
               float *z, int64_t sz, int64_t batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return Status::ok();
    if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(batch))
        return c.unsupported("matrix dims above 2^31");
    if (k == 0) {
        if (beta == 0.f)
            return zeroDevice(c, z, m * n * batch * 4);
        return c.check(scaleFloats(c.rt->stream(), beta, z, z, m * n * batch), "scale");
    }
    const int ldx = static_cast<int>(transX ? m : k);
    const int ldy = static_cast<int>(transY ? k : n);
    const cublasOperation_t opY = transY ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opX = transX ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasHandle_t h = c.rt->cublas();
    if (batch == 1)
        return c.checkBlas(cublasSgemm(h, opY, opX, int(n), int(m), int(k), &alpha, y, ldy, x, ldx,
                                       &beta, z, int(n)),
                           "sgemm");
    return c.checkBlas(cublasSgemmStridedBatched(h, opY, opX, int(n), int(m), int(k), &alpha, y,
                                                 ldy, sy, x, ldx, sx, &beta, z, int(n), sz,
                                                 int(batch)),
                       "sgemm strided batched");
}

namespace {

// ---- MatMul -------------------------------------------------------------------------------

struct MatMulGeometry
{
    int64_t m = 1, n = 1, k = 1;
    std::vector<int64_t> batch;            ///< broadcast batch dims
    std::vector<int64_t> aStride, bStride; ///< per batch dim, in matrices (0: broadcast)
    std::vector<int64_t> cStride;          ///< contiguous strides of the batch dims
    int64_t batchCount = 1;
};

Status matMulGeometry(const OpContext &c, std::vector<int64_t> a, std::vector<int64_t> b,
                      MatMulGeometry &g)
{
    if (a.empty() || b.empty())
        return c.error("MatMul of a scalar");
    if (a.size() == 1)
        a.insert(a.begin(), 1);
    if (b.size() == 1)
        b.push_back(1);
    g.m = a[a.size() - 2];
    g.k = a.back();
    g.n = b.back();
    if (b[b.size() - 2] != g.k)
        return c.error(fmt::format("inner dims differ ({} vs {})", g.k, b[b.size() - 2]));
    const std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    if (!broadcastShapes(ab, bb, g.batch))
        return c.error("batch dims do not broadcast");
    g.aStride = broadcastStrides(ab, g.batch);
    g.bStride = broadcastStrides(bb, g.batch);
    g.cStride = contiguousStrides(g.batch);
    g.batchCount = numelOf(g.batch);
    return Status::ok();
}

/// Offsets (in matrices) of batch b for a stride vector.
int64_t batchOffset(const MatMulGeometry &g, const std::vector<int64_t> &stride, int64_t b)
{
    int64_t off = 0;
    for (size_t d = g.batch.size(); d-- > 0;) {
        off += (b % g.batch[d]) * stride[d];
        b /= g.batch[d];
    }
    return off;
}

/// Strided-batch stride (in matrices) when `stride` is "all batches contiguous" (returns 1) or
/// "one shared matrix" (returns 0); -1 otherwise.
int64_t uniformStride(const MatMulGeometry &g, const std::vector<int64_t> &stride)
{
    bool zero = true, contiguous = true;
    for (size_t d = 0; d < stride.size(); ++d) {
        zero = zero && (stride[d] == 0 || g.batch[d] == 1);
        contiguous = contiguous && (stride[d] == g.cStride[d] || g.batch[d] == 1);
    }
    return contiguous ? 1 : (zero ? 0 : -1);
}

/// out[batch via outStride] (+)= op(X)[M,K] op(Y)[K,N] over every batch. When out is shared by
/// several batches it is zeroed first and accumulated (beta 1).
Status batchedProduct(const OpContext &c, const MatMulGeometry &g, bool transX, bool transY,
                      int64_t m, int64_t n, int64_t k, const float *x,
                      const std::vector<int64_t> &xStride, int64_t xMat, const float *y,
                      const std::vector<int64_t> &yStride, int64_t yMat, float *out,
                      const std::vector<int64_t> &outStride, int64_t outMat)
{
    const int64_t ux = uniformStride(g, xStride), uy = uniformStride(g, yStride),
                  uo = uniformStride(g, outStride);
    if (uo == 1 && ux >= 0 && uy >= 0)
        return rowGemm(c, transX, transY, m, n, k, 1.f, x, ux * xMat, y, uy * yMat, 0.f, out,
                       outMat, g.batchCount);
    // A shared output of contiguous inputs: fold the batch into the summed dimension
    // (dW = X_flat^T dY_flat for a weight shared across the batch, the Linear-layer case).
    if (uo == 0 && ux == 1 && uy == 1 && transX && !transY)
        return rowGemm(c, true, false, m, n, k * g.batchCount, 1.f, x, 0, y, 0, 0.f, out, 0);
    // General broadcast: one product per batch, accumulated where batches share the output.
    const bool shared = uo != 1;
    if (shared)
        REMAT_RETURN_IF_ERROR(zeroDevice(
            c, out,
            outMat * std::max<int64_t>(1, numelOf([&] {
                                           std::vector<int64_t> d;
                                           for (size_t i = 0; i < g.batch.size(); ++i)
                                               d.push_back(outStride[i] == 0 ? 1 : g.batch[i]);
                                           return d;
                                       }())) *
                4));
    for (int64_t b = 0; b < g.batchCount; ++b) {
        REMAT_RETURN_IF_ERROR(rowGemm(c, transX, transY, m, n, k, 1.f,
                                      x + batchOffset(g, xStride, b) * xMat, 0,
                                      y + batchOffset(g, yStride, b) * yMat, 0, shared ? 1.f : 0.f,
                                      out + batchOffset(g, outStride, b) * outMat, 0));
    }
    return Status::ok();
}

Status matMulF(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(a, "A"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    MatMulGeometry g;
    REMAT_RETURN_IF_ERROR(matMulGeometry(c, a->shape, b->shape, g));
    if (g.batchCount * g.m * g.n != y->numel())
        return c.error("output size mismatch");
    return batchedProduct(c, g, false, false, g.m, g.n, g.k, a->f(), g.aStride, g.m * g.k, b->f(),
                          g.bStride, g.k * g.n, y->f(), g.cStride, g.m * g.n);
}

Status matMulB(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    DView *da = c.inputGrad(0), *db = c.inputGrad(1);
    const std::vector<int64_t> sa = a ? a->shape : (da ? da->shape : std::vector<int64_t>{});
    const std::vector<int64_t> sb = b ? b->shape : (db ? db->shape : std::vector<int64_t>{});
    MatMulGeometry g;
    REMAT_RETURN_IF_ERROR(matMulGeometry(c, sa, sb, g));
    if (da) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
        // dA[M,K] = dY[M,N] B^T
        REMAT_RETURN_IF_ERROR(batchedProduct(c, g, false, true, g.m, g.k, g.n, dy->f(), g.cStride,
                                             g.m * g.n, b->f(), g.bStride, g.k * g.n, da->f(),
                                             g.aStride, g.m * g.k));
    }
    if (db) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(a, "A"));
        // dB[K,N] = A^T dY
        REMAT_RETURN_IF_ERROR(batchedProduct(c, g, true, false, g.k, g.n, g.m, a->f(), g.aStride,
                                             g.m * g.k, dy->f(), g.cStride, g.m * g.n, db->f(),
                                             g.bStride, g.k * g.n));
    }
    return Status::ok();
}

// ---- Gemm ---------------------------------------------------------------------------------

Status gemmF(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *cc = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(a, "A"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    if (a->shape.size() != 2 || b->shape.size() != 2)
        return c.error("Gemm operands must be 2-D");
    const bool ta = c.attrInt("transA", 0) != 0, tb = c.attrInt("transB", 0) != 0;
    const float alpha = float(c.attrFloat("alpha", 1.0)), beta = float(c.attrFloat("beta", 1.0));
    const int64_t m = ta ? a->shape[1] : a->shape[0], k = ta ? a->shape[0] : a->shape[1];
    const int64_t n = tb ? b->shape[0] : b->shape[1];
    if ((tb ? b->shape[1] : b->shape[0]) != k)
        return c.error("inner dims differ");
    if (y->numel() != m * n)
        return c.error("output size mismatch");
    float gemmBeta = 0.f;
    if (cc && cc->data && beta != 0.f) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(cc, "C"));
        const std::vector<int64_t> out{m, n};
        NdIter it;
        if (!buildIter(out, {contiguousStrides(out), broadcastStrides(cc->shape, out)}, it))
            return c.unsupported("rank");
        REMAT_RETURN_IF_ERROR(c.check(stridedCopy(c.rt->stream(), it, cc->data, y->data, 4), "C"));
        if (beta != 1.f)
            REMAT_RETURN_IF_ERROR(
                c.check(scaleFloats(c.rt->stream(), beta, y->f(), y->f(), y->numel()), "beta"));
        gemmBeta = 1.f;
    }
    return rowGemm(c, ta, tb, m, n, k, alpha, a->f(), 0, b->f(), 0, gemmBeta, y->f(), 0);
}

Status gemmB(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    const bool ta = c.attrInt("transA", 0) != 0, tb = c.attrInt("transB", 0) != 0;
    const float alpha = float(c.attrFloat("alpha", 1.0)), beta = float(c.attrFloat("beta", 1.0));
    if (dy->shape.size() != 2)
        return c.error("Gemm output must be 2-D");
    const int64_t m = dy->shape[0], n = dy->shape[1];
    DView *da = c.inputGrad(0), *db = c.inputGrad(1), *dc = c.inputGrad(2);
    int64_t k = 0;
    if (a)
        k = ta ? a->shape[0] : a->shape[1];
    else if (b)
        k = tb ? b->shape[1] : b->shape[0];
    if (da) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
        if (!ta) // dA[M,K] = alpha dY op(B)^T
            REMAT_RETURN_IF_ERROR(
                rowGemm(c, false, !tb, m, k, n, alpha, dy->f(), 0, b->f(), 0, 0.f, da->f(), 0));
        else // dA stored [K,M] = alpha op(B) dY^T
            REMAT_RETURN_IF_ERROR(
                rowGemm(c, tb, true, k, m, n, alpha, b->f(), 0, dy->f(), 0, 0.f, da->f(), 0));
    }
    if (db) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(a, "A"));
        if (!tb) // dB[K,N] = alpha op(A)^T dY
            REMAT_RETURN_IF_ERROR(
                rowGemm(c, !ta, false, k, n, m, alpha, a->f(), 0, dy->f(), 0, 0.f, db->f(), 0));
        else // dB stored [N,K] = alpha dY^T op(A)
            REMAT_RETURN_IF_ERROR(
                rowGemm(c, true, ta, n, k, m, alpha, dy->f(), 0, a->f(), 0, 0.f, db->f(), 0));
    }
    if (dc)
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::Dy, dy->shape, dy->f(), {}, nullptr, {},
                                            nullptr, dc->shape, dc->f(), beta));
    return Status::ok();
}

} // namespace

void addBlasOps(OpTable &t)
{
    t["MatMul"] = matMulF;
    t["MatMulGrad"] = matMulB;
    t["Gemm"] = gemmF;
    t["GemmGrad"] = gemmB;
}

} // namespace remat::gpu
