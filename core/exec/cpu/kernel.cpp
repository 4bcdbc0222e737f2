#include "core/exec/cpu/kernel.h"

#include "core/exec/cpu/kernel_util.h"
#include "core/exec/half.h"
#include "core/ir/graph.h"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace remat::core::exec::cpu {

Expected<std::vector<int64_t>> KernelContext::hostInts(const KView &v) const { return readInts(v); }
Expected<std::vector<double>> KernelContext::hostDoubles(const KView &v) const
{
    return readDoubles(v);
}

namespace {

const KernelTable &table()
{
    // The explicit list of kernel files; each adds its forward and backward op types.
    static const KernelTable t = [] {
        KernelTable k;
        addElementwiseKernels(k);
        addShapeKernels(k);
        addNnKernels(k);
        addConvKernels(k);
        addConvTransposeKernels(k);
        addRecurrentKernels(k);
        addLossKernels(k);
        addOptimizerKernels(k);
        addAttentionKernels(k);
        return k;
    }();
    return t;
}

} // namespace

bool takesHalfOperands(const std::string &opType)
{
    return opType == "Cast" || opType == "CastGrad";
}

const KernelFn *findCpuKernel(const std::string &opType)
{
    const auto it = table().find(opType);
    return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> cpuKernelTypes()
{
    std::vector<std::string> out;
    for (const auto &[name, fn] : table())
        out.push_back(name);
    return out;
}

// ---- helpers ------------------------------------------------------------------------------

int64_t numelOf(const std::vector<int64_t> &shape)
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;)
        s[i - 1] = s[i] * shape[i];
    return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &outShape)
{
    std::vector<int64_t> strides(outShape.size(), 0);
    const std::vector<int64_t> own = rowMajorStrides(shape);
    const size_t offset = outShape.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i)
        strides[offset + i] = shape[i] == 1 ? 0 : own[i];
    return strides;
}

Expected<Broadcast> Broadcast::of(const std::vector<std::vector<int64_t>> &shapes)
{
    Broadcast b;
    size_t rank = 0;
    for (const auto &s : shapes)
        rank = std::max(rank, s.size());
    b.outShape.assign(rank, 1);
    for (const auto &s : shapes) {
        const size_t off = rank - s.size();
        for (size_t i = 0; i < s.size(); ++i) {
            int64_t &o = b.outShape[off + i];
            if (s[i] == o || s[i] == 1)
                continue;
            if (o == 1) {
                o = s[i];
                continue;
            }
            std::string text;
            for (const auto &sh : shapes)
                text += fmt::format("[{}] ", fmt::join(sh, ","));
            return makeError(StatusCode::InvalidArgument, "shapes do not broadcast: " + text);
        }
    }
    for (const auto &s : shapes)
        b.strides.push_back(broadcastStrides(s, b.outShape));
    return b;
}

int64_t Broadcast::outNumel() const { return numelOf(outShape); }

void reduceToShape(const float *src, const std::vector<int64_t> &srcShape, float *dst,
                   const std::vector<int64_t> &dstShape)
{
    const int64_t dn = numelOf(dstShape);
    if (numelOf(srcShape) == dn) {
        std::copy(src, src + dn, dst);
        return;
    }
    std::vector<double> acc(static_cast<size_t>(dn), 0.0);
    Broadcast b;
    b.outShape = srcShape;
    b.strides = {rowMajorStrides(srcShape), broadcastStrides(dstShape, srcShape)};
    b.forEach2([&](int64_t, int64_t s, int64_t d) { acc[size_t(d)] += src[s]; });
    for (int64_t i = 0; i < dn; ++i)
        dst[i] = static_cast<float>(acc[size_t(i)]);
}

std::vector<int64_t> readInts(const KView &v)
{
    std::vector<int64_t> out(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < out.size(); ++i) {
        switch (v.dtype) {
        case ir::DataType::Int64: out[i] = v.as<int64_t>()[i]; break;
        case ir::DataType::Int32: out[i] = v.as<int32_t>()[i]; break;
        case ir::DataType::Float: out[i] = static_cast<int64_t>(v.as<float>()[i]); break;
        case ir::DataType::Double: out[i] = static_cast<int64_t>(v.as<double>()[i]); break;
        case ir::DataType::Bool: out[i] = v.as<bool>()[i] ? 1 : 0; break;
        case ir::DataType::UInt8: out[i] = v.as<uint8_t>()[i]; break;
        case ir::DataType::Int8: out[i] = v.as<int8_t>()[i]; break;
        case ir::DataType::Float16:
        case ir::DataType::BFloat16:
            out[i] = static_cast<int64_t>(halfOfToFloat(v.dtype, v.as<uint16_t>()[i]));
            break;
        default: out[i] = 0; break;
        }
    }
    return out;
}

std::vector<double> readDoubles(const KView &v)
{
    std::vector<double> out(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < out.size(); ++i) {
        switch (v.dtype) {
        case ir::DataType::Float: out[i] = v.as<float>()[i]; break;
        case ir::DataType::Double: out[i] = v.as<double>()[i]; break;
        case ir::DataType::Int64: out[i] = static_cast<double>(v.as<int64_t>()[i]); break;
        case ir::DataType::Int32: out[i] = v.as<int32_t>()[i]; break;
        case ir::DataType::Bool: out[i] = v.as<bool>()[i] ? 1 : 0; break;
        case ir::DataType::UInt8: out[i] = v.as<uint8_t>()[i]; break;
        case ir::DataType::Int8: out[i] = v.as<int8_t>()[i]; break;
        case ir::DataType::Float16:
        case ir::DataType::BFloat16: out[i] = halfOfToFloat(v.dtype, v.as<uint16_t>()[i]); break;
        default: out[i] = 0; break;
        }
    }
    return out;
}

void gemmIntoDouble(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, double beta,
                    double *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
                c[i * ldc + j] = beta == 0 ? 0.0 : beta * c[i * ldc + j];
        return;
    }
    thread_local std::vector<double> da, db;
    const int64_t aRows = transA ? k : m, bRows = transB ? n : k;
    const size_t aSize = size_t((aRows - 1) * lda + (transA ? m : k));
    const size_t bSize = size_t((bRows - 1) * ldb + (transB ? k : n));
    da.resize(aSize);
    db.resize(bSize);
    for (size_t i = 0; i < aSize; ++i)
        da[i] = a[i];
    for (size_t i = 0; i < bSize; ++i)
        db[i] = b[i];
    cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, da.data(),
                static_cast<blasint>(lda), db.data(), static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
}

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    // float32 operands, double accumulation: the reference must not add float32 summation noise
    // of its own (a BN net at batch 2 amplifies it past PyTorch's float64 tolerance).
    thread_local std::vector<double> dc;
    dc.resize(size_t(m * n));
    if (beta != 0)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
                dc[size_t(i * n + j)] = c[i * ldc + j];
    gemmIntoDouble(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, dc.data(), n);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
            c[i * ldc + j] = static_cast<float>(dc[size_t(i * n + j)]);
}

} // namespace remat::core::exec::cpu
