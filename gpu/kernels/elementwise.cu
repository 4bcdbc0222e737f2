#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/launch.cuh"

#include <cmath>

namespace remat::gpu::kernels {
using namespace detail;

namespace {

__device__ __forceinline__ float applyUnary(UnaryOp op, UnaryParams p, float x)
{
    switch (op) {
    case UnaryOp::Identity: return x;
    case UnaryOp::Relu: return x > 0.f ? x : 0.f;
    case UnaryOp::LeakyRelu: return x >= 0.f ? x : p.p0 * x;
    case UnaryOp::Sigmoid: return 1.f / (1.f + expf(-x));
    case UnaryOp::Tanh: return tanhf(x);
    case UnaryOp::Erf: return erff(x);
    case UnaryOp::Exp: return expf(x);
    case UnaryOp::Log: return logf(x);
    case UnaryOp::Sqrt: return sqrtf(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return fabsf(x);
    case UnaryOp::Reciprocal: return 1.f / x;
    case UnaryOp::Clip: return fminf(fmaxf(x, p.p0), p.p1);
    case UnaryOp::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case UnaryOp::Scale: return p.p0 * x;
    case UnaryOp::Gelu:
        if (p.p0 != 0.f) {
            const float k = 0.7978845608028654f;
            return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
        }
        return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
    case UnaryOp::HardSigmoid: return fminf(fmaxf(p.p0 * x + p.p1, 0.f), 1.f);
    case UnaryOp::HardSwish: return x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f);
    }
    return x;
}

// dy * f'(x); y = f(x) is used where it is cheaper and given, recomputed otherwise.
__device__ __forceinline__ float unaryDerivative(UnaryOp op, UnaryParams p, const float *x,
                                                 const float *y, int64_t i)
{
    auto yv = [&]() { return y ? y[i] : applyUnary(op, p, x[i]); };
    switch (op) {
    case UnaryOp::Identity: return 1.f;
    case UnaryOp::Relu: return (x ? x[i] : y[i]) > 0.f ? 1.f : 0.f;
    case UnaryOp::LeakyRelu: return x[i] >= 0.f ? 1.f : p.p0;
    case UnaryOp::Sigmoid: { const float v = yv(); return v * (1.f - v); }
    case UnaryOp::Tanh: { const float v = yv(); return 1.f - v * v; }
    case UnaryOp::Erf: return 1.1283791670955126f * expf(-x[i] * x[i]);
    case UnaryOp::Exp: return yv();
    case UnaryOp::Log: return 1.f / x[i];
    case UnaryOp::Sqrt: return 0.5f / yv();
    case UnaryOp::Neg: return -1.f;
    case UnaryOp::Abs: return x[i] > 0.f ? 1.f : (x[i] < 0.f ? -1.f : 0.f);
    case UnaryOp::Reciprocal: { const float v = yv(); return -v * v; }
    // The gradient flows where the input was not clipped (PyTorch's hardtanh rule).
    case UnaryOp::Clip: return (x[i] > p.p0 && x[i] < p.p1) ? 1.f : 0.f;
    case UnaryOp::Softplus: return 1.f / (1.f + expf(-x[i]));
    case UnaryOp::Scale: return p.p0;
    case UnaryOp::Gelu: {
        const float v = x[i];
        if (p.p0 != 0.f) {
            const float k = 0.7978845608028654f;
            const float t = tanhf(k * (v + 0.044715f * v * v * v));
            return 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * k * (1.f + 3.f * 0.044715f * v * v);
        }
        return 0.5f * (1.f + erff(v * 0.7071067811865476f)) +
               v * expf(-0.5f * v * v) * 0.3989422804014327f;
    }
    case UnaryOp::HardSigmoid: {
        const float u = p.p0 * x[i] + p.p1;
        return u > 0.f && u < 1.f ? p.p0 : 0.f;
    }
    // PyTorch's hardswish_backward: 0 below -3, x/3 + 1/2 up to 3, 1 above
    case UnaryOp::HardSwish: return x[i] < -3.f ? 0.f : (x[i] <= 3.f ? x[i] / 3.f + 0.5f : 1.f);
    }
    return 0.f;
}

__global__ void unaryForwardKernel(UnaryOp op, UnaryParams p, const float *x, float *y, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) y[i] = applyUnary(op, p, x[i]);
}

__global__ void unaryBackwardKernel(UnaryOp op, UnaryParams p, const float *x, const float *y,
                                    const float *dy, float *dx, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) dx[i] = dy[i] * unaryDerivative(op, p, x, y, i);
}

template <typename T>
__device__ __forceinline__ T applyBinary(BinaryOp op, T a, T b)
{
    switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return b == T(0) && !std::is_floating_point_v<T> ? T(0) : a / b;
    case BinaryOp::Pow:
        if constexpr (std::is_floating_point_v<T>)
            return powf(a, b);
        else {
            T r = 1;
            for (T k = 0; k < b; ++k)
                r *= a;
            return r;
        }
    case BinaryOp::Max: return a > b ? a : b;
    case BinaryOp::Min: return a < b ? a : b;
    default: return T(0);
    }
}

template <typename T>
__device__ __forceinline__ unsigned char applyCompare(BinaryOp op, T a, T b)
{
    switch (op) {
    case BinaryOp::Equal: return a == b;
    case BinaryOp::Less: return a < b;
    case BinaryOp::Greater: return a > b;
    case BinaryOp::And: return (a != T(0)) && (b != T(0));
    case BinaryOp::Or: return (a != T(0)) || (b != T(0));
    default: return 0;
    }
}

template <typename T>
__global__ void binaryKernel(BinaryOp op, NdIter it, const T *a, const T *b, T *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[3];
        offsetsOf<3>(it, i, off);
        out[off[0]] = applyBinary<T>(op, a[off[1]], b[off[2]]);
    }
}

template <typename T>
__global__ void compareKernel(BinaryOp op, NdIter it, const T *a, const T *b, unsigned char *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[3];
        offsetsOf<3>(it, i, off);
        out[off[0]] = applyCompare<T>(op, a[off[1]], b[off[2]]);
    }
}

template <typename T>
__global__ void whereKernel(NdIter it, const unsigned char *cond, const T *a, const T *b, T *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[4];
        offsetsOf<4>(it, i, off);
        out[off[0]] = cond[off[3]] ? a[off[1]] : b[off[2]];
    }
}

template <typename T>
__global__ void copyKernel(NdIter it, const T *src, T *dst)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[2];
        offsetsOf<2>(it, i, off);
        dst[off[0]] = src[off[1]];
    }
}

template <typename From, typename To>
__global__ void castKernel(const From *src, To *dst, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        if constexpr (std::is_same_v<To, unsigned char>)
            dst[i] = src[i] != From(0) ? 1 : 0;
        else
            dst[i] = static_cast<To>(src[i]);
    }
}

__global__ void fillKernel(float *dst, float v, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) dst[i] = v;
}

struct Ptrs8
{
    const float *p[8];
};

__global__ void sumKernel(Ptrs8 in, int k, float *out, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        float acc = 0.f;
        for (int j = 0; j < k; ++j)
            acc += in.p[j][i];
        out[i] = acc;
    }
}

__device__ __forceinline__ float gradTerm(GradTerm t, const float *dy, const void *av,
                                          const void *bv, const int64_t (&o)[3])
{
    const float *a = static_cast<const float *>(av);
    const float *b = static_cast<const float *>(bv);
    const float g = dy[o[0]];
    switch (t) {
    case GradTerm::Dy: return g;
    case GradTerm::NegDy: return -g;
    case GradTerm::DyTimesB: return g * b[o[2]];
    case GradTerm::DyTimesA: return g * a[o[1]];
    case GradTerm::DyDivB: return g / b[o[2]];
    case GradTerm::NegDyADivB2: { const float bb = b[o[2]]; return -g * a[o[1]] / (bb * bb); }
    case GradTerm::PowDa: { const float bb = b[o[2]]; return g * bb * powf(a[o[1]], bb - 1.f); }
    case GradTerm::PowDb: {
        const float aa = a[o[1]];
        return aa > 0.f ? g * powf(aa, b[o[2]]) * logf(aa) : 0.f;
    }
    case GradTerm::MaxDa: return a[o[1]] >= b[o[2]] ? g : 0.f;
    case GradTerm::MaxDb: return b[o[2]] > a[o[1]] ? g : 0.f;
    case GradTerm::MinDa: return a[o[1]] <= b[o[2]] ? g : 0.f;
    case GradTerm::MinDb: return b[o[2]] < a[o[1]] ? g : 0.f;
    case GradTerm::WhereA: return static_cast<const unsigned char *>(av)[o[1]] ? g : 0.f;
    case GradTerm::WhereB: return static_cast<const unsigned char *>(av)[o[1]] ? 0.f : g;
    }
    return 0.f;
}

// One thread per output element: for short reductions.
__global__ void reduceThreadKernel(GradTerm t, NdIter kept, NdIter red, const float *dy,
                                   const void *a, const void *b, float *out, float scale, bool acc)
{
    const int64_t nRed = red.count();
    REMAT_GRID_STRIDE(k, kept.count())
    {
        int64_t ko[3];
        offsetsOf<3>(kept, k, ko);
        float sum = 0.f;
        for (int64_t j = 0; j < nRed; ++j) {
            int64_t ro[3];
            offsetsOf<3>(red, j, ro);
            const int64_t o[3] = {ko[0] + ro[0], ko[1] + ro[1], ko[2] + ro[2]};
            sum += gradTerm(t, dy, a, b, o);
        }
        out[k] = acc ? out[k] + scale * sum : scale * sum;
    }
}

// One block per output element: for long reductions (bias gradients, pooling, statistics).
__global__ void reduceBlockKernel(GradTerm t, NdIter kept, NdIter red, const float *dy,
                                  const void *a, const void *b, float *out, float scale, bool acc)
{
    __shared__ float shared[32];
    const int64_t nRed = red.count();
    for (int64_t k = blockIdx.x; k < kept.count(); k += gridDim.x) {
        int64_t ko[3];
        offsetsOf<3>(kept, k, ko);
        float sum = 0.f;
        for (int64_t j = threadIdx.x; j < nRed; j += blockDim.x) {
            int64_t ro[3];
            offsetsOf<3>(red, j, ro);
            const int64_t o[3] = {ko[0] + ro[0], ko[1] + ro[1], ko[2] + ro[2]};
            sum += gradTerm(t, dy, a, b, o);
        }
        sum = blockSum(sum, shared);
        if (threadIdx.x == 0)
            out[k] = acc ? out[k] + scale * sum : scale * sum;
    }
}

} // namespace

cudaError_t unaryForward(cudaStream_t s, UnaryOp op, UnaryParams p, const float *x, float *y,
                         int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    unaryForwardKernel<<<gridFor(n), kThreads, 0, s>>>(op, p, x, y, n);
    return cudaGetLastError();
}

cudaError_t unaryBackward(cudaStream_t s, UnaryOp op, UnaryParams p, const float *x, const float *y,
                          const float *dy, float *dx, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    if (!x && (!y || unaryBackwardNeedsInput(op)))
        return cudaErrorInvalidValue;
    unaryBackwardKernel<<<gridFor(n), kThreads, 0, s>>>(op, p, x, y, dy, dx, n);
    return cudaGetLastError();
}

bool unaryBackwardNeedsInput(UnaryOp op)
{
    switch (op) {
    case UnaryOp::LeakyRelu:
    case UnaryOp::Erf:
    case UnaryOp::Log:
    case UnaryOp::Abs:
    case UnaryOp::Clip:
    case UnaryOp::Softplus:
    case UnaryOp::Gelu:
    case UnaryOp::HardSigmoid:
    case UnaryOp::HardSwish:
        return true;
    default:
        return false;
    }
}

bool binaryIsComparison(BinaryOp op)
{
    return op == BinaryOp::Equal || op == BinaryOp::Less || op == BinaryOp::Greater ||
           op == BinaryOp::And || op == BinaryOp::Or;
}

cudaError_t binaryForward(cudaStream_t s, BinaryOp op, ElemType type, const NdIter &it,
                          const void *a, const void *b, void *out)
{
    const int64_t n = it.count();
    if (n <= 0)
        return cudaSuccess;
    const bool cmp = binaryIsComparison(op);
    switch (type) {
    case ElemType::Float:
        if (cmp)
            compareKernel<float><<<gridFor(n), kThreads, 0, s>>>(
                op, it, static_cast<const float *>(a), static_cast<const float *>(b),
                static_cast<unsigned char *>(out));
        else
            binaryKernel<float><<<gridFor(n), kThreads, 0, s>>>(
                op, it, static_cast<const float *>(a), static_cast<const float *>(b),
                static_cast<float *>(out));
        break;
    case ElemType::Int64:
        if (cmp)
            compareKernel<long long><<<gridFor(n), kThreads, 0, s>>>(
                op, it, static_cast<const long long *>(a), static_cast<const long long *>(b),
                static_cast<unsigned char *>(out));
        else
            binaryKernel<long long><<<gridFor(n), kThreads, 0, s>>>(
                op, it, static_cast<const long long *>(a), static_cast<const long long *>(b),
                static_cast<long long *>(out));
        break;
    case ElemType::Bool:
        if (!cmp)
            return cudaErrorInvalidValue;
        compareKernel<unsigned char><<<gridFor(n), kThreads, 0, s>>>(
            op, it, static_cast<const unsigned char *>(a), static_cast<const unsigned char *>(b),
            static_cast<unsigned char *>(out));
        break;
    }
    return cudaGetLastError();
}

cudaError_t whereForward(cudaStream_t s, const NdIter &it, const unsigned char *cond, const void *a,
                         const void *b, void *out, int elementBytes)
{
    const int64_t n = it.count();
    if (n <= 0)
        return cudaSuccess;
    switch (elementBytes) {
    case 1:
        whereKernel<unsigned char><<<gridFor(n), kThreads, 0, s>>>(
            it, cond, static_cast<const unsigned char *>(a), static_cast<const unsigned char *>(b),
            static_cast<unsigned char *>(out));
        break;
    case 4:
        whereKernel<unsigned int><<<gridFor(n), kThreads, 0, s>>>(
            it, cond, static_cast<const unsigned int *>(a), static_cast<const unsigned int *>(b),
            static_cast<unsigned int *>(out));
        break;
    case 8:
        whereKernel<unsigned long long><<<gridFor(n), kThreads, 0, s>>>(
            it, cond, static_cast<const unsigned long long *>(a),
            static_cast<const unsigned long long *>(b), static_cast<unsigned long long *>(out));
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t stridedCopy(cudaStream_t s, const NdIter &it, const void *src, void *dst,
                        int elementBytes)
{
    const int64_t n = it.count();
    if (n <= 0)
        return cudaSuccess;
    switch (elementBytes) {
    case 1:
        copyKernel<unsigned char><<<gridFor(n), kThreads, 0, s>>>(
            it, static_cast<const unsigned char *>(src), static_cast<unsigned char *>(dst));
        break;
    case 2:
        copyKernel<unsigned short><<<gridFor(n), kThreads, 0, s>>>(
            it, static_cast<const unsigned short *>(src), static_cast<unsigned short *>(dst));
        break;
    case 4:
        copyKernel<unsigned int><<<gridFor(n), kThreads, 0, s>>>(
            it, static_cast<const unsigned int *>(src), static_cast<unsigned int *>(dst));
        break;
    case 8:
        copyKernel<unsigned long long><<<gridFor(n), kThreads, 0, s>>>(
            it, static_cast<const unsigned long long *>(src), static_cast<unsigned long long *>(dst));
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t castElements(cudaStream_t s, ElemType from, ElemType to, const void *src, void *dst,
                         int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    const unsigned int g = gridFor(n);
    using U8 = unsigned char;
    using I64 = long long;
#define REMAT_CAST(F, T)                                                                           \
    castKernel<F, T><<<g, kThreads, 0, s>>>(static_cast<const F *>(src), static_cast<T *>(dst), n)
    if (from == ElemType::Float && to == ElemType::Int64) REMAT_CAST(float, I64);
    else if (from == ElemType::Float && to == ElemType::Bool) REMAT_CAST(float, U8);
    else if (from == ElemType::Float && to == ElemType::Float) REMAT_CAST(float, float);
    else if (from == ElemType::Int64 && to == ElemType::Float) REMAT_CAST(I64, float);
    else if (from == ElemType::Int64 && to == ElemType::Bool) REMAT_CAST(I64, U8);
    else if (from == ElemType::Int64 && to == ElemType::Int64) REMAT_CAST(I64, I64);
    else if (from == ElemType::Bool && to == ElemType::Float) REMAT_CAST(U8, float);
    else if (from == ElemType::Bool && to == ElemType::Int64) REMAT_CAST(U8, I64);
    else REMAT_CAST(U8, U8);
#undef REMAT_CAST
    return cudaGetLastError();
}

cudaError_t fillFloat(cudaStream_t s, float *dst, float value, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    fillKernel<<<gridFor(n), kThreads, 0, s>>>(dst, value, n);
    return cudaGetLastError();
}

cudaError_t sumArrays(cudaStream_t s, const float *const *inputs, int k, float *out, int64_t n)
{
    if (k < 1 || k > 8)
        return cudaErrorInvalidValue;
    if (n <= 0)
        return cudaSuccess;
    Ptrs8 p{};
    for (int j = 0; j < k; ++j)
        p.p[j] = inputs[j];
    sumKernel<<<gridFor(n), kThreads, 0, s>>>(p, k, out, n);
    return cudaGetLastError();
}

cudaError_t reduceTerms(cudaStream_t s, GradTerm term, const NdIter &kept, const NdIter &reduced,
                        const float *dy, const void *a, const void *b, float *out, float scale,
                        bool accumulate)
{
    const int64_t nOut = kept.count();
    const int64_t nRed = reduced.count();
    if (nOut <= 0)
        return cudaSuccess;
    if (nRed >= 128) {
        const int64_t blocks = nOut < (int64_t(1) << 20) ? nOut : (int64_t(1) << 20);
        reduceBlockKernel<<<static_cast<unsigned int>(blocks), kThreads, 0, s>>>(
            term, kept, reduced, dy, a, b, out, scale, accumulate);
    } else {
        reduceThreadKernel<<<gridFor(nOut), kThreads, 0, s>>>(term, kept, reduced, dy, a, b, out,
                                                              scale, accumulate);
    }
    return cudaGetLastError();
}

} // namespace remat::gpu::kernels
