#pragma once
// Element-wise math written once for both backends: each unary op's forward f(x) and derivative,
// each broadcasting binary op's f(a, b), as functors the CPU reference (core/exec/cpu) and the
// CUDA kernels (gpu/kernels/elementwise.cu) instantiate from the same lists.
//   #define X(Name, HostForward, HostDerivative, Family, Since) t[#Name] = unaryKernel<ew::Name, HostForward>;
//   REMAT_EW_UNARY_OPS(X)
//   #undef X
// Adding a unary op is one functor and one list row here (core/ops makes its OpDef from them).
//
// core stays CUDA-free: REMAT_HD is `__host__ __device__` under nvcc and empty under g++, and the
// math goes through the float / double overloads below (expf on a float, exp on a double), so a
// float instantiation is the CUDA kernel's float math on either side. The CPU reference
// instantiates each op at the host types its list row names (double where the reference keeps
// float32 rounding out of a transcendental), the CUDA kernels at float.

#if defined(__CUDACC__)
#define REMAT_HD __host__ __device__
#else
#define REMAT_HD
#endif

#include <cmath>
#include <type_traits>

namespace remat::core::ops::ew {

/// Up to two float attributes of the op (LeakyRelu alpha, HardSigmoid alpha / beta, Clip bounds,
/// Gelu's tanh approximation, Mod's fmod), read once per call on the host.
struct Params
{
    float p0 = 0, p1 = 0;
};

/// Which forward tensor the derivative is a function of, so what the backward op is given (the
/// gradient rule saves it): X, Y, or nothing (a constant derivative).
enum class Reads { Nothing, Input, Output };

// ---- math overloads usable on the host and the device ------------------------------------------
REMAT_HD inline float mExp(float x) { return expf(x); }
REMAT_HD inline double mExp(double x) { return exp(x); }
REMAT_HD inline float mLog(float x) { return logf(x); }
REMAT_HD inline double mLog(double x) { return log(x); }
REMAT_HD inline float mTanh(float x) { return tanhf(x); }
REMAT_HD inline double mTanh(double x) { return tanh(x); }
REMAT_HD inline float mErf(float x) { return erff(x); }
REMAT_HD inline double mErf(double x) { return erf(x); }
REMAT_HD inline float mSqrt(float x) { return sqrtf(x); }
REMAT_HD inline double mSqrt(double x) { return sqrt(x); }
REMAT_HD inline float mPow(float a, float b) { return powf(a, b); }
REMAT_HD inline double mPow(double a, double b) { return pow(a, b); }
REMAT_HD inline float mSin(float x) { return sinf(x); }
REMAT_HD inline double mSin(double x) { return sin(x); }
REMAT_HD inline float mCos(float x) { return cosf(x); }
REMAT_HD inline double mCos(double x) { return cos(x); }
REMAT_HD inline float mLog1p(float x) { return log1pf(x); }
REMAT_HD inline double mLog1p(double x) { return log1p(x); }
REMAT_HD inline float mFmod(float a, float b) { return fmodf(a, b); }
REMAT_HD inline double mFmod(double a, double b) { return fmod(a, b); }

/// std::clamp's order of comparisons (a NaN stays NaN), on both sides.
template <typename T> REMAT_HD inline T clampTo(T v, T lo, T hi)
{
    return v < lo ? lo : (hi < v ? hi : v);
}

/// What an op without attributes inherits: no params; no bounds read from inputs.
struct NoParams
{
    template <typename A> static Params params(const A &) { return {}; }
    static constexpr bool boundsFromInputs = false;
};

// ---- unary ops: f(x, p), and derivative(v, p) of the tensor `reads` names ----------------------

struct Relu : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element
    static constexpr Reads reads = Reads::Output;                // y > 0 exactly where x > 0
    template <typename T> REMAT_HD static T f(T x, Params) { return x > T(0) ? x : T(0); }
    template <typename T> REMAT_HD static T derivative(T y, Params)
    {
        return y > T(0) ? T(1) : T(0);
    }
};

struct Sigmoid : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element
    static constexpr Reads reads = Reads::Output;
    template <typename T> REMAT_HD static T f(T x, Params) { return T(1) / (T(1) + mExp(-x)); }
    template <typename T> REMAT_HD static T derivative(T y, Params) { return y * (T(1) - y); }
};

struct Tanh : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element
    static constexpr Reads reads = Reads::Output;
    template <typename T> REMAT_HD static T f(T x, Params) { return mTanh(x); }
    template <typename T> REMAT_HD static T derivative(T y, Params) { return T(1) - y * y; }
};

struct Sqrt : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element
    static constexpr Reads reads = Reads::Output;
    template <typename T> REMAT_HD static T f(T x, Params) { return mSqrt(x); }
    template <typename T> REMAT_HD static T derivative(T y, Params) { return T(0.5) / y; }
};

struct Exp : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Output;
    template <typename T> REMAT_HD static T f(T x, Params) { return mExp(x); }
    template <typename T> REMAT_HD static T derivative(T y, Params) { return y; }
};

struct Log : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return mLog(x); }
    template <typename T> REMAT_HD static T derivative(T x, Params) { return T(1) / x; }
};

struct Neg : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Nothing;
    template <typename T> REMAT_HD static T f(T x, Params) { return -x; }
    template <typename T> REMAT_HD static T derivative(T, Params) { return T(-1); }
};

struct Erf : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 6; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return mErf(x); }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        return T(1.12837916709551257390) * mExp(-x * x); // 2 / sqrt(pi) * exp(-x^2)
    }
};

/// p0 != 0: the tanh approximation (approximate="tanh"), else x * Phi(x) with erf.
struct Gelu : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 6; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {a.attrString("approximate", "none") == "tanh" ? 1.f : 0.f, 0.f};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        if (p.p0 != 0.f) {
            const T k = mSqrt(T(2.0 / 3.14159265358979323846));
            return T(0.5) * x * (T(1) + mTanh(k * (x + T(0.044715) * x * x * x)));
        }
        return T(0.5) * x * (T(1) + mErf(x * T(0.70710678118654752440)));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        if (p.p0 != 0.f) {
            const T k = mSqrt(T(2.0 / 3.14159265358979323846));
            const T t = mTanh(k * (x + T(0.044715) * x * x * x));
            return T(0.5) * (T(1) + t) +
                   T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * T(0.044715) * x * x);
        }
        const T cdf = T(0.5) * (T(1) + mErf(x * T(0.70710678118654752440)));
        const T pdf = mExp(T(-0.5) * x * x) * T(0.3989422804014327);
        return cdf + x * pdf;
    }
};

/// clamp(alpha x + beta, 0, 1); p0 = alpha, p1 = beta.
struct HardSigmoid : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 6; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 0.2)), float(a.attrFloat("beta", 0.5))};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        return clampTo(T(p.p0) * x + T(p.p1), T(0), T(1));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        const T u = T(p.p0) * x + T(p.p1);
        return u > T(0) && u < T(1) ? T(p.p0) : T(0);
    }
};

struct HardSwish : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 6; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params)
    {
        return x * clampTo(x / T(6) + T(0.5), T(0), T(1));
    }
    /// PyTorch's hardswish_backward: 0 below -3, x/3 + 1/2 up to 3, 1 above.
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        return x < T(-3) ? T(0) : (x <= T(3) ? x / T(3) + T(0.5) : T(1));
    }
};

/// min(max(x, lo), hi); p0 = lo, p1 = hi (attributes before opset 11, inputs 1 and 2 after: the
/// backends read those, see boundsFromInputs).
struct Clip : NoParams
{
    static constexpr double forwardFlops = 2, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Input;
    static constexpr bool boundsFromInputs = true;
    template <typename A> static Params params(const A &a)
    {
        return {a.hasAttr("min") ? float(a.attrFloat("min", 0)) : -INFINITY,
                a.hasAttr("max") ? float(a.attrFloat("max", 0)) : INFINITY};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        const T lo = T(p.p0), hi = T(p.p1);
        const T m = x < lo ? lo : x;
        return hi < m ? hi : m;
    }
    /// PyTorch's hardtanh_backward: the gradient flows strictly inside (min, max).
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return x > T(p.p0) && x < T(p.p1) ? T(1) : T(0);
    }
};

/// x for x > 0, alpha x below; p0 = alpha (PyTorch's leaky_relu_backward: alpha at 0).
struct LeakyRelu : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 0.01)), 0.f};
    }
    template <typename T> REMAT_HD static T f(T x, Params p) { return x > T(0) ? x : T(p.p0) * x; }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return x > T(0) ? T(1) : T(p.p0);
    }
};

/// |x|; the derivative is sign(x), 0 at 0 (PyTorch's sgn).
struct Abs : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return x < T(0) ? -x : x; }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    }
};

/// 1 / x; d/dx = -y^2 (PyTorch's reciprocal saves its result).
struct Reciprocal : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element
    static constexpr Reads reads = Reads::Output;
    template <typename T> REMAT_HD static T f(T x, Params) { return T(1) / x; }
    template <typename T> REMAT_HD static T derivative(T y, Params) { return -y * y; }
};

struct Sin : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return mSin(x); }
    template <typename T> REMAT_HD static T derivative(T x, Params) { return mCos(x); }
};

struct Cos : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return mCos(x); }
    template <typename T> REMAT_HD static T derivative(T x, Params) { return -mSin(x); }
};

/// x for x > 0, alpha (e^x - 1) below; p0 = alpha (default 1). PyTorch's elu saves its input.
struct Elu : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 1.0)), 0.f};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        return x > T(0) ? x : T(p.p0) * (mExp(x) - T(1));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return x > T(0) ? T(1) : T(p.p0) * mExp(x);
    }
};

/// gamma (x for x > 0, alpha (e^x - 1) below); p0 = alpha, p1 = gamma (ONNX's defaults).
struct Selu : NoParams
{
    static constexpr double forwardFlops = 5, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 1.67326319217681884765625)),
                float(a.attrFloat("gamma", 1.05070102214813232421875))};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        return T(p.p1) * (x > T(0) ? x : T(p.p0) * (mExp(x) - T(1)));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return T(p.p1) * (x > T(0) ? T(1) : T(p.p0) * mExp(x));
    }
};

/// max(0, x) + min(0, alpha (e^(x / alpha) - 1)); p0 = alpha (default 1).
struct Celu : NoParams
{
    static constexpr double forwardFlops = 5, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 1.0)), 0.f};
    }
    template <typename T> REMAT_HD static T f(T x, Params p)
    {
        return x > T(0) ? x : T(p.p0) * (mExp(x / T(p.p0)) - T(1));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return x > T(0) ? T(1) : mExp(x / T(p.p0));
    }
};

/// log(1 + e^x), linear above 20 as PyTorch's softplus (beta 1, threshold 20).
struct Softplus : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 4; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params)
    {
        return x > T(20) ? x : mLog1p(mExp(x));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        return x > T(20) ? T(1) : T(1) / (T(1) + mExp(-x));
    }
};

/// x / (1 + |x|).
struct Softsign : NoParams
{
    static constexpr double forwardFlops = 3, backwardFlops = 3; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params)
    {
        return x / (T(1) + (x < T(0) ? -x : x));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        const T d = T(1) + (x < T(0) ? -x : x);
        return T(1) / (d * d);
    }
};

/// x above alpha, 0 elsewhere; p0 = alpha (default 1).
struct ThresholdedRelu : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename A> static Params params(const A &a)
    {
        return {float(a.attrFloat("alpha", 1.0)), 0.f};
    }
    template <typename T> REMAT_HD static T f(T x, Params p) { return x > T(p.p0) ? x : T(0); }
    template <typename T> REMAT_HD static T derivative(T x, Params p)
    {
        return x > T(p.p0) ? T(1) : T(0);
    }
};

/// x tanh(softplus(x)); PyTorch's mish saves its input.
struct Mish : NoParams
{
    static constexpr double forwardFlops = 8, backwardFlops = 10; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params)
    {
        return x * mTanh(Softplus::f(x, Params{}));
    }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        const T t = mTanh(Softplus::f(x, Params{}));
        const T s = T(1) / (T(1) + mExp(-x));
        return t + x * s * (T(1) - t * t);
    }
};

/// x sigmoid(x) (SiLU, Swish): not an ONNX op before opset 24; the training builder fuses torch's
/// export of F.silu (Sigmoid, then Mul with the same input) into it, as PyTorch's silu saves only
/// its input.
struct Silu : NoParams
{
    static constexpr double forwardFlops = 5, backwardFlops = 6; ///< per element
    static constexpr Reads reads = Reads::Input;
    template <typename T> REMAT_HD static T f(T x, Params) { return x / (T(1) + mExp(-x)); }
    template <typename T> REMAT_HD static T derivative(T x, Params)
    {
        const T s = T(1) / (T(1) + mExp(-x));
        return s * (T(1) + x * (T(1) - s));
    }
};

/// The unary ops, one row each: X(Name, CPU forward type, CPU derivative type, family, first
/// opset). A row is the whole op: core/ops makes its OpDef from it (shape: as the input; gradient
/// rule: saves what `reads` names, FLOPs from the functor), the CPU reference and the CUDA kernels
/// their forward and backward kernels. The CUDA kernels compute in float; the CPU reference in the
/// types named (what it computed before the table, so its numbers did not move).
#define REMAT_EW_UNARY_OPS(X)                                                                      \
    X(Relu, float, float, Activation, 1)                                                           \
    X(Sigmoid, double, double, Activation, 1)                                                      \
    X(Tanh, float, double, Activation, 1)                                                          \
    X(Sqrt, float, double, Arithmetic, 1)                                                          \
    X(Exp, float, float, Arithmetic, 1)                                                            \
    X(Log, float, float, Arithmetic, 1)                                                            \
    X(Neg, float, float, Arithmetic, 1)                                                            \
    X(Erf, double, double, Activation, 9)                                                          \
    X(Gelu, double, double, Activation, 1)                                                         \
    X(HardSigmoid, float, float, Activation, 1)                                                    \
    X(HardSwish, float, float, Activation, 14)                                                     \
    X(Clip, float, float, Activation, 1)                                                           \
    X(LeakyRelu, float, float, Activation, 1)                                                      \
    X(Abs, float, float, Arithmetic, 1)                                                            \
    X(Reciprocal, float, float, Arithmetic, 1)                                                     \
    X(Sin, double, double, Arithmetic, 7)                                                          \
    X(Cos, double, double, Arithmetic, 7)                                                          \
    X(Elu, double, double, Activation, 1)                                                          \
    X(Selu, double, double, Activation, 1)                                                         \
    X(Celu, double, double, Activation, 12)                                                        \
    X(Softplus, double, double, Activation, 1)                                                     \
    X(Softsign, float, float, Activation, 1)                                                       \
    X(ThresholdedRelu, float, float, Activation, 10)                                               \
    X(Mish, double, double, Activation, 18)                                                        \
    X(Silu, double, double, Activation, 1)

// ---- broadcasting binary ops: f(a, b, p) for float, double and integer T --------------------------
//
// A differentiable binary op also gives its partial derivatives da(a, b, p) = d f / d a and
// db(a, b, p) = d f / d b (the incoming gradient multiplies them; each is reduced over the
// dimensions its operand was broadcast along), and which operands each partial reads: the gradient
// rule saves exactly those (derivatives.yaml's rule: what is saved follows from the formula).

/// Which forward operands a binary op's partial derivative reads.
enum Operands : int { kNone = 0, kA = 1, kB = 2, kAB = 3 };

struct Add : NoParams
{
    template <typename T> REMAT_HD static T f(T a, T b, Params) { return a + b; }
};
struct Sub : NoParams
{
    template <typename T> REMAT_HD static T f(T a, T b, Params) { return a - b; }
};

struct Mul : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element and partial
    static constexpr int daReads = kB, dbReads = kA;
    template <typename T> REMAT_HD static T f(T a, T b, Params) { return a * b; }
    template <typename T> REMAT_HD static T da(T, T b, Params) { return b; }
    template <typename T> REMAT_HD static T db(T a, T, Params) { return a; }
};

/// Integer division by zero gives 0 (no trap); floats follow IEEE.
struct Div : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 2; ///< per element and partial
    static constexpr int daReads = kB, dbReads = kAB;
    template <typename T> REMAT_HD static T f(T a, T b, Params)
    {
        if constexpr (std::is_integral_v<T>)
            return b == T(0) ? T(0) : a / b;
        else
            return a / b;
    }
    template <typename T> REMAT_HD static T da(T, T b, Params) { return T(1) / b; }
    template <typename T> REMAT_HD static T db(T a, T b, Params) { return -a / (b * b); }
};

/// a^b. d/da = b a^(b-1), 0 where b = 0 (PyTorch's pow_backward: no 0 * inf at a = 0);
/// d/db = a^b ln a for a > 0, else 0.
struct Pow : NoParams
{
    static constexpr double forwardFlops = 4, backwardFlops = 4; ///< per element and partial
    static constexpr int daReads = kAB, dbReads = kAB;
    template <typename T> REMAT_HD static T f(T a, T b, Params)
    {
        if constexpr (std::is_integral_v<T>)
            return static_cast<T>(mPow(double(a), double(b)));
        else
            return mPow(a, b);
    }
    template <typename T> REMAT_HD static T da(T a, T b, Params)
    {
        return b == T(0) ? T(0) : b * mPow(a, b - T(1));
    }
    template <typename T> REMAT_HD static T db(T a, T b, Params)
    {
        return a > T(0) ? mPow(a, b) * mLog(a) : T(0);
    }
};

/// The gradient goes to the operand chosen, A on ties.
struct Max : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element and partial
    static constexpr int daReads = kAB, dbReads = kAB;
    template <typename T> REMAT_HD static T f(T a, T b, Params) { return a > b ? a : b; }
    template <typename T> REMAT_HD static T da(T a, T b, Params) { return a >= b ? T(1) : T(0); }
    template <typename T> REMAT_HD static T db(T a, T b, Params) { return a >= b ? T(0) : T(1); }
};

struct Min : NoParams
{
    static constexpr double forwardFlops = 1, backwardFlops = 1; ///< per element and partial
    static constexpr int daReads = kAB, dbReads = kAB;
    template <typename T> REMAT_HD static T f(T a, T b, Params) { return a < b ? a : b; }
    template <typename T> REMAT_HD static T da(T a, T b, Params) { return a <= b ? T(1) : T(0); }
    template <typename T> REMAT_HD static T db(T a, T b, Params) { return a <= b ? T(0) : T(1); }
};

/// x for x > 0, slope * x elsewhere; the slope broadcasts to x (one per channel, usually).
/// PyTorch's prelu saves the input and the weight: d/dx = 1 or slope, d/dslope = 0 or x.
struct PRelu : NoParams
{
    static constexpr double forwardFlops = 2, backwardFlops = 2; ///< per element and partial
    static constexpr int daReads = kAB, dbReads = kA;
    template <typename T> REMAT_HD static T f(T x, T s, Params) { return x > T(0) ? x : s * x; }
    template <typename T> REMAT_HD static T da(T x, T s, Params) { return x > T(0) ? T(1) : s; }
    template <typename T> REMAT_HD static T db(T x, T, Params) { return x > T(0) ? T(0) : x; }
};

/// p0 != 0: fmod=1 (the sign of the dividend, C's fmod); else the sign of the divisor (Python's %).
struct Mod : NoParams
{
    template <typename A> static Params params(const A &a)
    {
        return {a.attrInt("fmod", 0) != 0 ? 1.f : 0.f, 0.f};
    }
    template <typename T> REMAT_HD static T f(T a, T b, Params p)
    {
        const bool fmodMode = p.p0 != 0.f;
        if constexpr (std::is_integral_v<T>) {
            if (b == 0)
                return 0;
            T r = a % b;
            if (!fmodMode && r != 0 && ((r < 0) != (b < 0)))
                r += b;
            return r;
        } else {
            T r = mFmod(a, b);
            if (!fmodMode && r != 0 && ((r < 0) != (b < 0)))
                r += b;
            return r;
        }
    }
};

/// The arithmetic binary ops: X(Name, CPU float32 compute type). The CUDA kernels compute float32
/// in float and int64 as integers; the CPU reference float32 in the type named, int64 as integers.
#define REMAT_EW_BINARY_OPS(X)                                                                     \
    X(Add, float)                                                                                  \
    X(Sub, float)                                                                                  \
    X(Mul, float)                                                                                  \
    X(Div, float)                                                                                  \
    X(Pow, double)                                                                                 \
    X(Mod, float)                                                                                  \
    X(Max, float)                                                                                  \
    X(Min, float)                                                                                  \
    X(PRelu, float)

/// The binary ops whose gradients the table gives (da, db, daReads, dbReads, FLOPs):
/// X(Name, CPU compute type of the partials). Each row is the op's gradient rule (core/ops), its
/// CPU backward kernel and its CUDA backward terms. Add, Sub (no operand read) and Mod (b gets no
/// gradient) have their own rules.
#define REMAT_EW_BINARY_GRAD_OPS(X)                                                                \
    X(Mul, float)                                                                                  \
    X(Div, float)                                                                                  \
    X(Pow, double)                                                                                 \
    X(Max, float)                                                                                  \
    X(Min, float)                                                                                  \
    X(PRelu, float)

// ---- comparisons and logic: bool results -------------------------------------------------------

struct Equal
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a == b; }
};
struct Less
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a < b; }
};
struct Greater
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a > b; }
};
struct LessOrEqual
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a <= b; }
};
struct GreaterOrEqual
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a >= b; }
};
struct And
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a != T(0) && b != T(0); }
};
struct Or
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return a != T(0) || b != T(0); }
};
struct Xor
{
    template <typename T> REMAT_HD static bool f(T a, T b) { return (a != T(0)) != (b != T(0)); }
};

/// X(Name, first opset).
#define REMAT_EW_COMPARE_OPS(X)                                                                    \
    X(Equal, 1)                                                                                    \
    X(Less, 1)                                                                                     \
    X(Greater, 1)                                                                                  \
    X(LessOrEqual, 12)                                                                             \
    X(GreaterOrEqual, 12)                                                                          \
    X(And, 1)                                                                                      \
    X(Or, 1)                                                                                       \
    X(Xor, 1)

} // namespace remat::core::ops::ew
