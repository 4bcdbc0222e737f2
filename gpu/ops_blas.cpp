// Matrix products through cuBLAS: MatMul (numpy broadcasting of batch dims, 1-D operands) and
// Gemm (transA / transB, alpha, beta, broadcast C), with their gradients. Row-major operands are
// handed to column-major cuBLAS as their transposes (C^T = B^T A^T), so nothing is copied.
// float16 / bfloat16 operands go to cublasGemmEx / cublasGemmStridedBatchedEx as CUDA_R_16F /
// CUDA_R_16BF with CUBLAS_COMPUTE_32F (float32 accumulation, float alpha and beta), the result
// stored in its tensor's dtype with one rounding, as PyTorch's half matmuls on CUDA do.
#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/half.h"
#include "gpu/ops_internal.h"

#include "core/exec/half.h"
#include "core/ir/graph.h"

#include <fmt/format.h>

#include <limits>

namespace remat::gpu {

using core::Status;
using core::ir::DataType;
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

bool isHalf(DataType t) { return core::exec::isHalfType(t); }

cudaDataType_t cudaTypeOf(DataType t)
{
    switch (t) {
    case DataType::Float16: return CUDA_R_16F;
    case DataType::BFloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

kernels::HalfKind halfKind(DataType t)
{
    return t == DataType::BFloat16 ? kernels::HalfKind::BFloat16 : kernels::HalfKind::Float16;
}

/// A float32 copy of n elements of a half matrix in scratch (or `m` itself when float32).
core::Expected<const float *> floatCopy(const OpContext &c, Mat m, int64_t n)
{
    if (!isHalf(m.t))
        return static_cast<const float *>(m.p);
    REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(n, 1) * 4));
    REMAT_RETURN_IF_ERROR(
        c.check(widenHalf(c.rt->stream(), halfKind(m.t), m.p, static_cast<float *>(p), n),
                "widen a half operand"));
    return static_cast<const float *>(p);
}

/// Elements a strided batch of matrices spans: (batch - 1) * stride + one matrix.
int64_t spanOf(int64_t batch, int64_t stride, int64_t matrix)
{
    return (batch > 1 ? (batch - 1) * stride : 0) + matrix;
}

} // namespace

Status rowGemmEx(const OpContext &c, bool transX, bool transY, int64_t m, int64_t n, int64_t k,
                 float alpha, Mat x, int64_t sx, Mat y, int64_t sy, float beta, MutMat z,
                 int64_t sz, int64_t batch)
{
    if (!isHalf(x.t) && !isHalf(y.t) && !isHalf(z.t))
        return rowGemm(c, transX, transY, m, n, k, alpha, static_cast<const float *>(x.p), sx,
                       static_cast<const float *>(y.p), sy, beta, static_cast<float *>(z.p), sz,
                       batch);
    if (m == 0 || n == 0 || batch == 0)
        return Status::ok();
    if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(batch))
        return c.unsupported("matrix dims above 2^31");
    // cuBLAS's half GEMMs: both factors of one half type, the result of that type or float32
    if (k > 0 && isHalf(x.t) && x.t == y.t && (z.t == x.t || z.t == DataType::Float)) {
        const int ldx = static_cast<int>(transX ? m : k);
        const int ldy = static_cast<int>(transY ? k : n);
        const cublasOperation_t opY = transY ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t opX = transX ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cudaDataType_t ab = cudaTypeOf(x.t), ct = cudaTypeOf(z.t);
        cublasHandle_t h = c.rt->cublas();
        if (batch == 1)
            return c.checkBlas(cublasGemmEx(h, opY, opX, int(n), int(m), int(k), &alpha, y.p, ab,
                                            ldy, x.p, ab, ldx, &beta, z.p, ct, int(n),
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                               "half gemm");
        return c.checkBlas(cublasGemmStridedBatchedEx(h, opY, opX, int(n), int(m), int(k), &alpha,
                                                      y.p, ab, ldy, sy, x.p, ab, ldx, sx, &beta,
                                                      z.p, ct, int(n), sz, int(batch),
                                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                           "half gemm strided batched");
    }
    // Mixed dtypes (a float32 factor with a half one, or factors of two half types): float32
    // copies of the half operands, the float32 product, the result rounded once.
    const int64_t xn = spanOf(batch, sx, m * k), yn = spanOf(batch, sy, k * n),
                  zn = spanOf(batch, sz, m * n);
    REMAT_ASSIGN_OR_RETURN(const float *xf, floatCopy(c, x, xn));
    REMAT_ASSIGN_OR_RETURN(const float *yf, floatCopy(c, y, yn));
    float *zf = static_cast<float *>(z.p);
    if (isHalf(z.t)) {
        REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(zn, 1) * 4));
        zf = static_cast<float *>(p);
        if (beta != 0.f)
            REMAT_RETURN_IF_ERROR(
                c.check(widenHalf(c.rt->stream(), halfKind(z.t), z.p, zf, zn), "widen C"));
    }
    REMAT_RETURN_IF_ERROR(
        rowGemm(c, transX, transY, m, n, k, alpha, xf, sx, yf, sy, beta, zf, sz, batch));
    if (isHalf(z.t))
        REMAT_RETURN_IF_ERROR(
            c.check(narrowHalf(c.rt->stream(), halfKind(z.t), zf, z.p, zn), "round the product"));
    return Status::ok();
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
                      int64_t m, int64_t n, int64_t k, Mat x, const std::vector<int64_t> &xStride,
                      int64_t xMat, Mat y, const std::vector<int64_t> &yStride, int64_t yMat,
                      MutMat out, const std::vector<int64_t> &outStride, int64_t outMat)
{
    const int64_t ux = uniformStride(g, xStride), uy = uniformStride(g, yStride),
                  uo = uniformStride(g, outStride);
    if (uo == 1 && ux >= 0 && uy >= 0)
        return rowGemmEx(c, transX, transY, m, n, k, 1.f, x, ux * xMat, y, uy * yMat, 0.f, out,
                         outMat, g.batchCount);
    // A shared output of contiguous inputs: fold the batch into the summed dimension
    // (dW = X_flat^T dY_flat for a weight shared across the batch, the Linear-layer case).
    if (uo == 0 && ux == 1 && uy == 1 && transX && !transY)
        return rowGemmEx(c, true, false, m, n, k * g.batchCount, 1.f, x, 0, y, 0, 0.f, out, 0);
    // A half output shared by several batches is accumulated in a float32 copy and rounded once
    // at the end (as the float32 sum of the per-batch products, not a rounding per batch).
    if (uo != 1 && isHalf(out.t)) {
        int64_t outCount = 1;
        for (size_t i = 0; i < g.batch.size(); ++i)
            outCount *= outStride[i] == 0 ? 1 : g.batch[i];
        const int64_t total = std::max<int64_t>(outCount, 1) * outMat;
        REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(total, 1) * 4));
        REMAT_RETURN_IF_ERROR(batchedProduct(c, g, transX, transY, m, n, k, x, xStride, xMat, y,
                                             yStride, yMat, MutMat{p, DataType::Float}, outStride,
                                             outMat));
        return c.check(
            narrowHalf(c.rt->stream(), halfKind(out.t), static_cast<float *>(p), out.p, total),
            "round the product");
    }
    // General broadcast: one product per batch, accumulated where batches share the output.
    const bool shared = uo != 1;
    if (shared)
        REMAT_RETURN_IF_ERROR(zeroDevice(
            c, out.p,
            outMat * std::max<int64_t>(1, numelOf([&] {
                                           std::vector<int64_t> d;
                                           for (size_t i = 0; i < g.batch.size(); ++i)
                                               d.push_back(outStride[i] == 0 ? 1 : g.batch[i]);
                                           return d;
                                       }())) *
                core::ir::elementSize(out.t)));
    for (int64_t b = 0; b < g.batchCount; ++b) {
        REMAT_RETURN_IF_ERROR(
            rowGemmEx(c, transX, transY, m, n, k, 1.f, x.at(batchOffset(g, xStride, b) * xMat), 0,
                      y.at(batchOffset(g, yStride, b) * yMat), 0, shared ? 1.f : 0.f,
                      out.at(batchOffset(g, outStride, b) * outMat), 0));
    }
    return Status::ok();
}

Status matMulF(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, a, "A"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, b, "B"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, y, "Y"));
    MatMulGeometry g;
    REMAT_RETURN_IF_ERROR(matMulGeometry(c, a->shape, b->shape, g));
    if (g.batchCount * g.m * g.n != y->numel())
        return c.error("output size mismatch");
    return batchedProduct(c, g, false, false, g.m, g.n, g.k, matOf(a), g.aStride, g.m * g.k,
                          matOf(b), g.bStride, g.k * g.n, mutOf(y), g.cStride, g.m * g.n);
}

Status matMulB(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, dy, "dY"));
    DView *da = c.inputGrad(0), *db = c.inputGrad(1);
    const std::vector<int64_t> sa = a ? a->shape : (da ? da->shape : std::vector<int64_t>{});
    const std::vector<int64_t> sb = b ? b->shape : (db ? db->shape : std::vector<int64_t>{});
    MatMulGeometry g;
    REMAT_RETURN_IF_ERROR(matMulGeometry(c, sa, sb, g));
    if (da) {
        REMAT_RETURN_IF_ERROR(requireFloating(c, b, "B"));
        REMAT_RETURN_IF_ERROR(requireFloating(c, da, "dA"));
        // dA[M,K] = dY[M,N] B^T
        REMAT_RETURN_IF_ERROR(batchedProduct(c, g, false, true, g.m, g.k, g.n, matOf(dy), g.cStride,
                                             g.m * g.n, matOf(b), g.bStride, g.k * g.n, mutOf(da),
                                             g.aStride, g.m * g.k));
    }
    if (db) {
        REMAT_RETURN_IF_ERROR(requireFloating(c, a, "A"));
        REMAT_RETURN_IF_ERROR(requireFloating(c, db, "dB"));
        // dB[K,N] = A^T dY
        REMAT_RETURN_IF_ERROR(batchedProduct(c, g, true, false, g.k, g.n, g.m, matOf(a), g.aStride,
                                             g.m * g.k, matOf(dy), g.cStride, g.m * g.n, mutOf(db),
                                             g.bStride, g.k * g.n));
    }
    return Status::ok();
}

// ---- Gemm ---------------------------------------------------------------------------------

Status gemmF(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *cc = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, a, "A"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, b, "B"));
    REMAT_RETURN_IF_ERROR(requireFloating(c, y, "Y"));
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
    if (!(cc && cc->data && beta != 0.f))
        return rowGemmEx(c, ta, tb, m, n, k, alpha, matOf(a), 0, matOf(b), 0, 0.f, mutOf(y), 0);
    // Y = alpha op(A) op(B) + beta C: C broadcast into a float32 result (Y itself when float32),
    // the product accumulated onto it, a half Y rounded once at the end (addmm's one rounding).
    REMAT_RETURN_IF_ERROR(requireFloating(c, cc, "C"));
    REMAT_ASSIGN_OR_RETURN(const float *cf, floatCopy(c, matOf(cc), cc->numel()));
    float *yf = y->f();
    if (isHalf(y->dtype)) {
        REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(m * n, 1) * 4));
        yf = static_cast<float *>(p);
    }
    const std::vector<int64_t> out{m, n};
    NdIter it;
    if (!buildIter(out, {contiguousStrides(out), broadcastStrides(cc->shape, out)}, it))
        return c.unsupported("rank");
    REMAT_RETURN_IF_ERROR(c.check(stridedCopy(c.rt->stream(), it, cf, yf, 4), "C"));
    if (beta != 1.f)
        REMAT_RETURN_IF_ERROR(c.check(scaleFloats(c.rt->stream(), beta, yf, yf, m * n), "beta"));
    REMAT_RETURN_IF_ERROR(rowGemmEx(c, ta, tb, m, n, k, alpha, matOf(a), 0, matOf(b), 0, 1.f,
                                    MutMat{yf, DataType::Float}, 0));
    if (isHalf(y->dtype))
        REMAT_RETURN_IF_ERROR(
            c.check(narrowHalf(c.rt->stream(), halfKind(y->dtype), yf, y->data, m * n), "round Y"));
    return Status::ok();
}

Status gemmB(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(requireFloating(c, dy, "dY"));
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
        REMAT_RETURN_IF_ERROR(requireFloating(c, b, "B"));
        REMAT_RETURN_IF_ERROR(requireFloating(c, da, "dA"));
        if (!ta) // dA[M,K] = alpha dY op(B)^T
            REMAT_RETURN_IF_ERROR(rowGemmEx(c, false, !tb, m, k, n, alpha, matOf(dy), 0, matOf(b),
                                            0, 0.f, mutOf(da), 0));
        else // dA stored [K,M] = alpha op(B) dY^T
            REMAT_RETURN_IF_ERROR(rowGemmEx(c, tb, true, k, m, n, alpha, matOf(b), 0, matOf(dy), 0,
                                            0.f, mutOf(da), 0));
    }
    if (db) {
        REMAT_RETURN_IF_ERROR(requireFloating(c, a, "A"));
        REMAT_RETURN_IF_ERROR(requireFloating(c, db, "dB"));
        if (!tb) // dB[K,N] = alpha op(A)^T dY
            REMAT_RETURN_IF_ERROR(rowGemmEx(c, !ta, false, k, n, m, alpha, matOf(a), 0, matOf(dy),
                                            0, 0.f, mutOf(db), 0));
        else // dB stored [N,K] = alpha dY^T op(A)
            REMAT_RETURN_IF_ERROR(rowGemmEx(c, true, ta, n, k, m, alpha, matOf(dy), 0, matOf(a), 0,
                                            0.f, mutOf(db), 0));
    }
    if (dc) {
        // the bias gradient: the float32 sum over the rows, rounded once where dC is half
        REMAT_RETURN_IF_ERROR(requireFloating(c, dc, "dC"));
        REMAT_ASSIGN_OR_RETURN(const float *dyf, floatCopy(c, matOf(dy), dy->numel()));
        float *dcf = dc->f();
        if (isHalf(dc->dtype)) {
            REMAT_ASSIGN_OR_RETURN(void *p, c.rt->scratch(std::max<int64_t>(dc->numel(), 1) * 4));
            dcf = static_cast<float *>(p);
        }
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::Dy, dy->shape, dyf, {}, nullptr, {},
                                            nullptr, dc->shape, dcf, beta));
        if (isHalf(dc->dtype))
            REMAT_RETURN_IF_ERROR(
                c.check(narrowHalf(c.rt->stream(), halfKind(dc->dtype), dcf, dc->data, dc->numel()),
                        "round dC"));
    }
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
