#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/half_convert.h"
#include "gpu/kernels/launch.cuh"

#include <cmath>

namespace remat::gpu::kernels {
using namespace detail;

namespace {

namespace ew = core::ops::ew;

template <typename Fn>
__global__ void unaryForwardKernel(UnaryParams p, const float *x, float *y, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) y[i] = Fn::f(x[i], p);
}

// dy * f'(v); v is what the table's row reads (y recomputed from x when y is not given).
template <typename Fn>
__global__ void unaryBackwardKernel(UnaryParams p, const float *x, const float *y, const float *dy,
                                    float *dx, int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        float v = 0.f;
        if (Fn::reads == ew::Reads::Input)
            v = x[i];
        else if (Fn::reads == ew::Reads::Output)
            v = y ? y[i] : Fn::f(x[i], p);
        dx[i] = dy[i] * Fn::derivative(v, p);
    }
}

// The same on float16 / bfloat16 storage: each value widened exactly, f in float32, the result
// rounded once (as the CPU reference computes a half unary op on widened copies).
template <typename Fn>
__global__ void unaryForwardHalfKernel(UnaryParams p, HalfKind k, const uint16_t *x, uint16_t *y,
                                       int64_t n)
{
    REMAT_GRID_STRIDE(i, n) y[i] = floatToHalf(k, Fn::f(halfToFloat(k, x[i]), p));
}

template <typename Fn>
__global__ void unaryBackwardHalfKernel(UnaryParams p, HalfKind k, const uint16_t *x,
                                        const uint16_t *y, const uint16_t *dy, uint16_t *dx,
                                        int64_t n)
{
    REMAT_GRID_STRIDE(i, n)
    {
        float v = 0.f;
        if (Fn::reads == ew::Reads::Input)
            v = halfToFloat(k, x[i]);
        else if (Fn::reads == ew::Reads::Output)
            v = y ? halfToFloat(k, y[i]) : Fn::f(halfToFloat(k, x[i]), p);
        dx[i] = floatToHalf(k, halfToFloat(k, dy[i]) * Fn::derivative(v, p));
    }
}

__global__ void scaleKernel(float alpha, const float *x, float *y, int64_t n)
{
    REMAT_GRID_STRIDE(i, n) y[i] = alpha * x[i];
}

template <typename Fn, typename T>
__global__ void binaryKernel(UnaryParams p, NdIter it, const T *a, const T *b, T *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[3];
        offsetsOf<3>(it, i, off);
        out[off[0]] = Fn::f(a[off[1]], b[off[2]], p);
    }
}

template <typename Fn, typename T>
__global__ void compareKernel(NdIter it, const T *a, const T *b, unsigned char *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[3];
        offsetsOf<3>(it, i, off);
        out[off[0]] = Fn::f(a[off[1]], b[off[2]]) ? 1 : 0;
    }
}

template <typename T>
void launchArithmetic(cudaStream_t s, BinaryOp op, UnaryParams p, const NdIter &it, const void *a,
                      const void *b, void *out)
{
    const T *pa = static_cast<const T *>(a), *pb = static_cast<const T *>(b);
    T *po = static_cast<T *>(out);
    const unsigned int g = gridFor(it.count());
    switch (op) {
#define REMAT_LAUNCH(Name, HostT)                                                                  \
    case BinaryOp::Name: binaryKernel<ew::Name, T><<<g, kThreads, 0, s>>>(p, it, pa, pb, po); break;
        REMAT_EW_BINARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    default: break;
    }
}

template <typename Fn>
__global__ void binaryHalfKernel(UnaryParams p, HalfKind k, NdIter it, const uint16_t *a,
                                 const uint16_t *b, uint16_t *out)
{
    REMAT_GRID_STRIDE(i, it.count())
    {
        int64_t off[3];
        offsetsOf<3>(it, i, off);
        out[off[0]] =
            floatToHalf(k, Fn::f(halfToFloat(k, a[off[1]]), halfToFloat(k, b[off[2]]), p));
    }
}

template <typename T>
void launchCompare(cudaStream_t s, BinaryOp op, const NdIter &it, const void *a, const void *b,
                   void *out)
{
    const T *pa = static_cast<const T *>(a), *pb = static_cast<const T *>(b);
    unsigned char *po = static_cast<unsigned char *>(out);
    const unsigned int g = gridFor(it.count());
    switch (op) {
#define REMAT_LAUNCH(Name, Since)                                                                  \
    case BinaryOp::Name: compareKernel<ew::Name, T><<<g, kThreads, 0, s>>>(it, pa, pb, po); break;
        REMAT_EW_COMPARE_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    default: break;
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

template <typename T> __global__ void copyKernel(NdIter it, const T *src, T *dst)
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

__global__ void fillKernel(float *dst, float v, int64_t n) { REMAT_GRID_STRIDE(i, n) dst[i] = v; }

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

/// dy times the partial derivative Partial (Fn::da or Fn::db) at (a, b), reading only the operands
/// the partial names (the others may be null).
template <typename Fn, int Reads, typename Partial>
__device__ __forceinline__ float partialTerm(float g, const float *a, const float *b,
                                             const int64_t (&o)[3], Partial partial)
{
    const float av = (Reads & ew::kA) ? a[o[1]] : 0.f;
    const float bv = (Reads & ew::kB) ? b[o[2]] : 0.f;
    return g * partial(av, bv);
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
    case GradTerm::DyTimesA: return g * a[o[1]];
    case GradTerm::WhereA: return static_cast<const unsigned char *>(av)[o[1]] ? g : 0.f;
    case GradTerm::WhereB: return static_cast<const unsigned char *>(av)[o[1]] ? 0.f : g;
#define REMAT_GRADTERM_CASE(Name, HostT)                                                           \
    case GradTerm::Name##Da:                                                                       \
        return partialTerm<ew::Name, ew::Name::daReads>(                                           \
            g, a, b, o, [](float x, float y) { return ew::Name::da(x, y, ew::Params{}); });        \
    case GradTerm::Name##Db:                                                                       \
        return partialTerm<ew::Name, ew::Name::dbReads>(                                           \
            g, a, b, o, [](float x, float y) { return ew::Name::db(x, y, ew::Params{}); });
        REMAT_EW_BINARY_GRAD_OPS(REMAT_GRADTERM_CASE)
#undef REMAT_GRADTERM_CASE
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
    switch (op) {
#define REMAT_LAUNCH(Name, HostF, HostG, Family, Since)                                            \
    case UnaryOp::Name:                                                                            \
        unaryForwardKernel<ew::Name><<<gridFor(n), kThreads, 0, s>>>(p, x, y, n);                  \
        break;
        REMAT_EW_UNARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    }
    return cudaGetLastError();
}

cudaError_t unaryBackward(cudaStream_t s, UnaryOp op, UnaryParams p, const float *x, const float *y,
                          const float *dy, float *dx, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    switch (op) {
#define REMAT_LAUNCH(Name, HostF, HostG, Family, Since)                                            \
    case UnaryOp::Name:                                                                            \
        if ((ew::Name::reads == ew::Reads::Input && !x) ||                                         \
            (ew::Name::reads == ew::Reads::Output && !x && !y))                                    \
            return cudaErrorInvalidValue;                                                          \
        unaryBackwardKernel<ew::Name><<<gridFor(n), kThreads, 0, s>>>(p, x, y, dy, dx, n);         \
        break;
        REMAT_EW_UNARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    }
    return cudaGetLastError();
}

cudaError_t unaryForwardHalf(cudaStream_t s, UnaryOp op, UnaryParams p, HalfKind k, const void *x,
                             void *y, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    const auto *xs = static_cast<const uint16_t *>(x);
    auto *ys = static_cast<uint16_t *>(y);
    switch (op) {
#define REMAT_LAUNCH(Name, HostF, HostG, Family, Since)                                            \
    case UnaryOp::Name:                                                                            \
        unaryForwardHalfKernel<ew::Name><<<gridFor(n), kThreads, 0, s>>>(p, k, xs, ys, n);         \
        break;
        REMAT_EW_UNARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    }
    return cudaGetLastError();
}

cudaError_t unaryBackwardHalf(cudaStream_t s, UnaryOp op, UnaryParams p, HalfKind k, const void *x,
                              const void *y, const void *dy, void *dx, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    const auto *xs = static_cast<const uint16_t *>(x);
    const auto *ys = static_cast<const uint16_t *>(y);
    const auto *dys = static_cast<const uint16_t *>(dy);
    auto *dxs = static_cast<uint16_t *>(dx);
    switch (op) {
#define REMAT_LAUNCH(Name, HostF, HostG, Family, Since)                                            \
    case UnaryOp::Name:                                                                            \
        if ((ew::Name::reads == ew::Reads::Input && !x) ||                                         \
            (ew::Name::reads == ew::Reads::Output && !x && !y))                                    \
            return cudaErrorInvalidValue;                                                          \
        unaryBackwardHalfKernel<ew::Name>                                                          \
            <<<gridFor(n), kThreads, 0, s>>>(p, k, xs, ys, dys, dxs, n);                           \
        break;
        REMAT_EW_UNARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    }
    return cudaGetLastError();
}

cudaError_t binaryForwardHalf(cudaStream_t s, BinaryOp op, HalfKind k, const NdIter &it,
                              const void *a, const void *b, void *out, UnaryParams p)
{
    if (it.count() <= 0)
        return cudaSuccess;
    if (binaryIsComparison(op))
        return cudaErrorInvalidValue;
    const auto *pa = static_cast<const uint16_t *>(a), *pb = static_cast<const uint16_t *>(b);
    auto *po = static_cast<uint16_t *>(out);
    const unsigned int g = gridFor(it.count());
    switch (op) {
#define REMAT_LAUNCH(Name, HostT)                                                                  \
    case BinaryOp::Name:                                                                           \
        binaryHalfKernel<ew::Name><<<g, kThreads, 0, s>>>(p, k, it, pa, pb, po);                   \
        break;
        REMAT_EW_BINARY_OPS(REMAT_LAUNCH)
#undef REMAT_LAUNCH
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t scaleFloats(cudaStream_t s, float alpha, const float *x, float *y, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    scaleKernel<<<gridFor(n), kThreads, 0, s>>>(alpha, x, y, n);
    return cudaGetLastError();
}

bool binaryIsComparison(BinaryOp op)
{
    switch (op) {
#define REMAT_COMPARE_CASE(Name, Since) case BinaryOp::Name:
        REMAT_EW_COMPARE_OPS(REMAT_COMPARE_CASE)
#undef REMAT_COMPARE_CASE
        return true;
    default: return false;
    }
}

cudaError_t binaryForward(cudaStream_t s, BinaryOp op, ElemType type, const NdIter &it,
                          const void *a, const void *b, void *out, UnaryParams p)
{
    if (it.count() <= 0)
        return cudaSuccess;
    const bool cmp = binaryIsComparison(op);
    switch (type) {
    case ElemType::Float:
        if (cmp)
            launchCompare<float>(s, op, it, a, b, out);
        else
            launchArithmetic<float>(s, op, p, it, a, b, out);
        break;
    case ElemType::Int64:
        if (cmp)
            launchCompare<long long>(s, op, it, a, b, out);
        else
            launchArithmetic<long long>(s, op, p, it, a, b, out);
        break;
    case ElemType::Bool:
        if (!cmp)
            return cudaErrorInvalidValue;
        launchCompare<unsigned char>(s, op, it, a, b, out);
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
    default: return cudaErrorInvalidValue;
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
        copyKernel<unsigned long long>
            <<<gridFor(n), kThreads, 0, s>>>(it, static_cast<const unsigned long long *>(src),
                                             static_cast<unsigned long long *>(dst));
        break;
    default: return cudaErrorInvalidValue;
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
    if (from == ElemType::Float && to == ElemType::Int64)
        REMAT_CAST(float, I64);
    else if (from == ElemType::Float && to == ElemType::Bool)
        REMAT_CAST(float, U8);
    else if (from == ElemType::Float && to == ElemType::Float)
        REMAT_CAST(float, float);
    else if (from == ElemType::Int64 && to == ElemType::Float)
        REMAT_CAST(I64, float);
    else if (from == ElemType::Int64 && to == ElemType::Bool)
        REMAT_CAST(I64, U8);
    else if (from == ElemType::Int64 && to == ElemType::Int64)
        REMAT_CAST(I64, I64);
    else if (from == ElemType::Bool && to == ElemType::Float)
        REMAT_CAST(U8, float);
    else if (from == ElemType::Bool && to == ElemType::Int64)
        REMAT_CAST(U8, I64);
    else
        REMAT_CAST(U8, U8);
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
