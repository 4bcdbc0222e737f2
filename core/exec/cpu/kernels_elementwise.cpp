// Element-wise kernels: the shared table of core/ops/elementwise_math.h (broadcasting binary
// arithmetic in float and int64, comparisons, unary activations and their derivatives) expanded
// for the host, plus Cast, Dropout, Where, Sum and the binary gradients (broadcast dims summed
// back in double).
#include "core/exec/cpu/kernel_util.h"
#include "core/exec/half.h"
#include "core/ops/elementwise_math.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>

namespace remat::core::exec::cpu {
namespace {

using ir::DataType;
namespace ew = ops::ew;

// ---- binary forward (the shared table: core/ops/elementwise_math.h) -------------------------

/// out = Fn(a, b) with numpy broadcasting; float32 computed in HostT (the table row's type).
template <typename Fn, typename HostT> Status binaryForward(KernelContext &c)
{
    KView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "C"));
    REMAT_ASSIGN_OR_RETURN(Broadcast bc, Broadcast::of({a->shape, b->shape}));
    if (bc.outNumel() != y->numel())
        return c.error("output size does not match the broadcast shape");
    const ew::Params p = Fn::params(c);
    if (y->dtype == DataType::Float) {
        const float *pa = a->f(), *pb = b->f();
        float *py = y->f();
        // Pow with a float exponent tensor and a float base; other mixes go through readDoubles
        if (a->dtype != DataType::Float || b->dtype != DataType::Float) {
            const std::vector<double> da = readDoubles(*a), db = readDoubles(*b);
            bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
                py[o] = static_cast<float>(Fn::f(da[size_t(i)], db[size_t(j)], p));
            });
            return Status::ok();
        }
        if (a->shape == b->shape) {
            const int64_t n = y->numel();
            for (int64_t i = 0; i < n; ++i)
                py[i] = static_cast<float>(Fn::f(HostT(pa[i]), HostT(pb[i]), p));
            return Status::ok();
        }
        bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
            py[o] = static_cast<float>(Fn::f(HostT(pa[i]), HostT(pb[j]), p));
        });
        return Status::ok();
    }
    if (y->dtype == DataType::Int64 || y->dtype == DataType::Int32) {
        const std::vector<int64_t> ia = readInts(*a), ib = readInts(*b);
        if (y->dtype == DataType::Int64) {
            int64_t *py = y->as<int64_t>();
            bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
                py[o] = Fn::f(ia[size_t(i)], ib[size_t(j)], p);
            });
        } else {
            int32_t *py = y->as<int32_t>();
            bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
                py[o] = static_cast<int32_t>(Fn::f(ia[size_t(i)], ib[size_t(j)], p));
            });
        }
        return Status::ok();
    }
    if (y->dtype == DataType::Double) {
        const std::vector<double> da = readDoubles(*a), db = readDoubles(*b);
        double *py = y->as<double>();
        bc.forEach2([&](int64_t o, int64_t i, int64_t j) {
            py[o] = Fn::f(da[size_t(i)], db[size_t(j)], p);
        });
        return Status::ok();
    }
    return c.error("unsupported dtype " + ir::dataTypeName(y->dtype));
}

/// Comparisons and logic over any numeric dtypes (compared as doubles), bool out.
template <typename Fn> Status compareForward(KernelContext &c)
{
    KView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "C"));
    REMAT_ASSIGN_OR_RETURN(Broadcast bc, Broadcast::of({a->shape, b->shape}));
    const std::vector<double> da = readDoubles(*a), db = readDoubles(*b);
    bool *py = y->as<bool>();
    bc.forEach2(
        [&](int64_t o, int64_t i, int64_t j) { py[o] = Fn::f(da[size_t(i)], db[size_t(j)]); });
    return Status::ok();
}

Status notForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    const int64_t n = y->numel();
    for (int64_t i = 0; i < n; ++i)
        y->as<bool>()[i] = !x->as<bool>()[i];
    return Status::ok();
}

template <typename T>
void whereTyped(const bool *cond, const KView &x, const KView &yv, KView &out, const Broadcast &bc)
{
    const T *px = x.as<T>(), *py = yv.as<T>();
    T *po = out.as<T>();
    bc.forEach3(
        [&](int64_t o, int64_t ci, int64_t xi, int64_t yi) { po[o] = cond[ci] ? px[xi] : py[yi]; });
}

Status whereForward(KernelContext &c)
{
    KView *cond = c.input(0), *x = c.input(1), *yv = c.input(2), *out = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(cond, "condition"));
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(yv, "Y"));
    REMAT_RETURN_IF_ERROR(c.require(out, "output"));
    REMAT_ASSIGN_OR_RETURN(Broadcast bc, Broadcast::of({cond->shape, x->shape, yv->shape}));
    const bool *pc = cond->as<bool>();
    switch (ir::elementSize(out->dtype)) {
    case 4: whereTyped<float>(pc, *x, *yv, *out, bc); break; // bit pattern copy: float or int32
    case 8: whereTyped<int64_t>(pc, *x, *yv, *out, bc); break;
    case 1: whereTyped<uint8_t>(pc, *x, *yv, *out, bc); break;
    default: return c.error("unsupported dtype " + ir::dataTypeName(out->dtype));
    }
    return Status::ok();
}

Status sumForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "sum"));
    std::vector<double> acc(static_cast<size_t>(y->numel()), 0.0);
    for (KView *x : c.in) {
        REMAT_RETURN_IF_ERROR(c.require(x, "data"));
        Broadcast bc;
        bc.outShape = y->shape;
        bc.strides = {rowMajorStrides(y->shape), broadcastStrides(x->shape, y->shape)};
        const float *px = x->f();
        bc.forEach2([&](int64_t o, int64_t, int64_t i) { acc[size_t(o)] += px[i]; });
    }
    for (size_t i = 0; i < acc.size(); ++i)
        y->f()[i] = static_cast<float>(acc[i]);
    return Status::ok();
}

// ---- binary backward ----------------------------------------------------------------------

/// dIn[k] = reduce(dY * factor) where factor is per broadcast element.
template <typename Fn>
void gradThrough(const KView &dy, KView *dIn, Fn &&factor, const Broadcast &bc)
{
    if (!dIn)
        return;
    std::vector<float> tmp(static_cast<size_t>(dy.numel()));
    const float *g = dy.f();
    bc.forEach2([&](int64_t o, int64_t i, int64_t j) { tmp[size_t(o)] = g[o] * factor(i, j); });
    reduceToShape(tmp.data(), dy.shape, dIn->f(), dIn->shape);
}

Status addSubGrad(KernelContext &c, float signB)
{
    KView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dC"));
    if (KView *da = c.inputGrad(0))
        reduceToShape(dy->f(), dy->shape, da->f(), da->shape);
    if (KView *db = c.inputGrad(1)) {
        reduceToShape(dy->f(), dy->shape, db->f(), db->shape);
        if (signB < 0)
            for (int64_t i = 0; i < db->numel(); ++i)
                db->f()[i] = -db->f()[i];
    }
    return Status::ok();
}

Status addGrad(KernelContext &c) { return addSubGrad(c, 1.0f); }
Status subGrad(KernelContext &c) { return addSubGrad(c, -1.0f); }

Status sumGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dSum"));
    for (KView *dx : c.dIn)
        if (dx)
            reduceToShape(dy->f(), dy->shape, dx->f(), dx->shape);
    return Status::ok();
}

/// Shapes of A and B for a backward op: the forward inputs when present, else the gradients'.
std::vector<int64_t> operandShape(const KernelContext &c, size_t k)
{
    if (const KView *v = c.input(k))
        return v->shape;
    if (const KView *g = c.inputGrad(k))
        return g->shape;
    return {};
}

/// A forward operand's values at the partials' compute type H: float32 data is read in place,
/// other types (an int64 exponent) converted once.
template <typename H> struct OperandValues
{
    const float *direct = nullptr;
    std::vector<H> owned;
    /// An operand the partials do not read is absent: its value is never used, 0 stands in.
    H operator[](int64_t i) const
    {
        return direct ? H(direct[i]) : owned.empty() ? H(0) : owned[size_t(i)];
    }
};

template <typename H> OperandValues<H> operandValues(const KView *v)
{
    OperandValues<H> out;
    if (!v)
        return out;
    if (v->dtype == DataType::Float) {
        out.direct = v->f();
        return out;
    }
    for (double d : readDoubles(*v))
        out.owned.push_back(H(d));
    return out;
}

/// The backward of a differentiable binary op of the shared table: dA = reduce(dy * da(a, b)),
/// dB = reduce(dy * db(a, b)), reading only the operands the partials name (elementwise_math.h;
/// gpu/ops_elementwise.cpp expands the same rows for CUDA).
template <typename Fn, typename H> Status binaryTableGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *a = c.input(0), *b = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dC"));
    const int reads =
        (c.inputGrad(0) ? Fn::daReads : ew::kNone) | (c.inputGrad(1) ? Fn::dbReads : ew::kNone);
    if (reads & ew::kA)
        REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    if (reads & ew::kB)
        REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_ASSIGN_OR_RETURN(Broadcast bc, Broadcast::of({operandShape(c, 0), operandShape(c, 1)}));
    const ew::Params p = Fn::params(c);
    const OperandValues<H> va = operandValues<H>((reads & ew::kA) ? a : nullptr);
    const OperandValues<H> vb = operandValues<H>((reads & ew::kB) ? b : nullptr);
    gradThrough(
        *dy, c.inputGrad(0), [&](int64_t i, int64_t j) { return float(Fn::da(va[i], vb[j], p)); },
        bc);
    gradThrough(
        *dy, c.inputGrad(1), [&](int64_t i, int64_t j) { return float(Fn::db(va[i], vb[j], p)); },
        bc);
    return Status::ok();
}

Status whereGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *cond = c.input(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(cond, "condition"));
    const bool *pc = cond->as<bool>();
    for (int k = 1; k <= 2; ++k) {
        KView *dx = c.inputGrad(size_t(k));
        if (!dx)
            continue;
        Broadcast bc;
        bc.outShape = dy->shape;
        bc.strides = {broadcastStrides(cond->shape, dy->shape), rowMajorStrides(dy->shape)};
        std::vector<float> tmp(static_cast<size_t>(dy->numel()));
        const float *g = dy->f();
        const bool want = k == 1;
        bc.forEach2(
            [&](int64_t o, int64_t ci, int64_t) { tmp[size_t(o)] = pc[ci] == want ? g[o] : 0.0f; });
        reduceToShape(tmp.data(), dy->shape, dx->f(), dx->shape);
    }
    return Status::ok();
}

// ---- unary --------------------------------------------------------------------------------

template <typename Fn> Status unaryForward(KernelContext &c, Fn &&fn)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    if (x->dtype != DataType::Float || y->dtype != DataType::Float)
        return c.error("float32 only, got " + ir::dataTypeName(x->dtype));
    const float *px = x->f();
    float *py = y->f();
    const int64_t n = y->numel();
    for (int64_t i = 0; i < n; ++i)
        py[i] = fn(px[i]);
    return Status::ok();
}

template <typename Fn> Status unaryParams(const KernelContext &c, ew::Params &p)
{
    p = Fn::params(c);
    if constexpr (Fn::boundsFromInputs) {
        // Clip from opset 11: the bounds are inputs 1 and 2 (scalars), read on the host
        if (const KView *m = c.input(1); m && m->numel() == 1)
            p.p0 = static_cast<float>(readDoubles(*m)[0]);
        if (const KView *m = c.input(2); m && m->numel() == 1)
            p.p1 = static_cast<float>(readDoubles(*m)[0]);
    }
    return Status::ok();
}

/// y = Fn(x) of the shared table, computed in HostT.
template <typename Fn, typename HostT> Status unaryTableForward(KernelContext &c)
{
    ew::Params p;
    REMAT_RETURN_IF_ERROR(unaryParams<Fn>(c, p));
    return unaryForward(c, [p](float v) { return static_cast<float>(Fn::f(HostT(v), p)); });
}

/// dX = dY * Fn'(v), v the forward tensor the table says the derivative reads (Y recomputed from X
/// when only X was given), the derivative computed in HostG.
template <typename Fn, typename HostF, typename HostG> Status unaryTableGrad(KernelContext &c)
{
    using ew::Reads;
    ew::Params p;
    REMAT_RETURN_IF_ERROR(unaryParams<Fn>(c, p));
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    if (Fn::reads == Reads::Input && !x)
        return c.error("backward needs X");
    if (Fn::reads == Reads::Output && !x && !y)
        return c.error("backward needs X or Y");
    const float *px = x ? x->f() : nullptr, *py = y ? y->f() : nullptr;
    const float *g = dy->f();
    float *pd = dx->f();
    const int64_t n = dx->numel();
    for (int64_t i = 0; i < n; ++i) {
        float v = 0;
        if (Fn::reads == Reads::Input)
            v = px[i];
        else if (Fn::reads == Reads::Output)
            v = py ? py[i] : static_cast<float>(Fn::f(HostF(px[i]), p));
        pd[i] = g[i] * static_cast<float>(Fn::derivative(HostG(v), p));
    }
    return Status::ok();
}

Status identityForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    copyBytes(*x, *y);
    return Status::ok();
}
Status identityGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    copyBytes(*dy, *dx);
    return Status::ok();
}

template <typename Src> void castFrom(const Src *src, KView &y)
{
    const int64_t n = y.numel();
    switch (y.dtype) {
    case DataType::Float:
        for (int64_t i = 0; i < n; ++i)
            y.as<float>()[i] = static_cast<float>(src[i]);
        break;
    case DataType::Double:
        for (int64_t i = 0; i < n; ++i)
            y.as<double>()[i] = static_cast<double>(src[i]);
        break;
    case DataType::Int64:
        for (int64_t i = 0; i < n; ++i)
            y.as<int64_t>()[i] = static_cast<int64_t>(src[i]);
        break;
    case DataType::Int32:
        for (int64_t i = 0; i < n; ++i)
            y.as<int32_t>()[i] = static_cast<int32_t>(src[i]);
        break;
    case DataType::Bool:
        for (int64_t i = 0; i < n; ++i)
            y.as<bool>()[i] = src[i] != Src(0);
        break;
    case DataType::UInt8:
        for (int64_t i = 0; i < n; ++i)
            y.as<uint8_t>()[i] = static_cast<uint8_t>(src[i]);
        break;
    case DataType::Float16:
    case DataType::BFloat16:
        // one correct rounding to nearest even (core/exec/half.h), from float32 or wider
        for (int64_t i = 0; i < n; ++i) {
            if constexpr (std::is_same_v<Src, float>)
                y.as<uint16_t>()[i] = floatToHalfOf(y.dtype, src[i]);
            else
                y.as<uint16_t>()[i] = doubleToHalfOf(y.dtype, static_cast<double>(src[i]));
        }
        break;
    default: break;
    }
}

bool castable(DataType t)
{
    return t == DataType::Float || t == DataType::Double || t == DataType::Int64 ||
           t == DataType::Int32 || t == DataType::Bool || t == DataType::UInt8 ||
           t == DataType::Float16 || t == DataType::BFloat16;
}

Status castView(const KernelContext &c, const KView &x, KView &y)
{
    if (!castable(x.dtype) || !castable(y.dtype))
        return c.error("unsupported cast " + ir::dataTypeName(x.dtype) + " -> " +
                       ir::dataTypeName(y.dtype));
    switch (x.dtype) {
    case DataType::Float: castFrom(x.as<float>(), y); break;
    case DataType::Double: castFrom(x.as<double>(), y); break;
    case DataType::Int64: castFrom(x.as<int64_t>(), y); break;
    case DataType::Int32: castFrom(x.as<int32_t>(), y); break;
    case DataType::Bool: castFrom(x.as<bool>(), y); break;
    case DataType::UInt8: castFrom(x.as<uint8_t>(), y); break;
    case DataType::Float16:
    case DataType::BFloat16: {
        // widening is exact: through float32
        std::vector<float> wide(size_t(x.numel()));
        widenToFloat(x.dtype, x.data, wide.data(), x.numel());
        castFrom(wide.data(), y);
        break;
    }
    default: break;
    }
    return Status::ok();
}

Status castForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    return castView(c, *x, *y);
}
Status castGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    return castView(c, *dy, *dx);
}

// ---- Dropout ------------------------------------------------------------------------------

double dropoutRatio(const KernelContext &c)
{
    if (const KView *r = c.input(1); r && r->numel() == 1)
        return readDoubles(*r)[0];
    return c.attrFloat("ratio", 0.5);
}

bool dropoutTraining(const KernelContext &c)
{
    if (const KView *t = c.input(2); t && t->numel() == 1)
        return readInts(*t)[0] != 0;
    return false; // ONNX default: inference mode unless training_mode is given and true
}

Status dropoutForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0), *mask = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    const double ratio = dropoutRatio(c);
    const bool active = dropoutTraining(c) && ratio > 0;
    const int64_t n = x->numel();
    if (ratio >= 1 && active)
        return c.error("ratio must be below 1");
    // The mask comes from the per-op seed alone, so a recompute replays it exactly.
    std::mt19937_64 rng(c.seed);
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    const float scale = active ? static_cast<float>(1.0 / (1.0 - ratio)) : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
        const bool keep = !active || uni(rng) >= ratio;
        if (mask)
            mask->as<bool>()[i] = keep;
        if (y)
            y->f()[i] = keep ? x->f()[i] * scale : 0.0f;
    }
    return Status::ok();
}

Status dropoutGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *mask = c.output(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    const double ratio = dropoutRatio(c);
    const bool active = dropoutTraining(c) && ratio > 0;
    if (active && !mask)
        return c.error("backward needs the mask");
    const float scale = active ? static_cast<float>(1.0 / (1.0 - ratio)) : 1.0f;
    const int64_t n = dx->numel();
    for (int64_t i = 0; i < n; ++i)
        dx->f()[i] = (!mask || mask->as<bool>()[i]) ? dy->f()[i] * scale : 0.0f;
    return Status::ok();
}

} // namespace

void addElementwiseKernels(KernelTable &t)
{
    // The shared element-wise table, expanded once for the CPU (gpu/kernels/elementwise.cu: once
    // for CUDA).
#define REMAT_CPU_BINARY(Name, HostT) t[#Name] = binaryForward<ew::Name, HostT>;
    REMAT_EW_BINARY_OPS(REMAT_CPU_BINARY)
#undef REMAT_CPU_BINARY
#define REMAT_CPU_BINARY_GRAD(Name, HostT) t[#Name "Grad"] = binaryTableGrad<ew::Name, HostT>;
    REMAT_EW_BINARY_GRAD_OPS(REMAT_CPU_BINARY_GRAD)
#undef REMAT_CPU_BINARY_GRAD
#define REMAT_CPU_COMPARE(Name, Since) t[#Name] = compareForward<ew::Name>;
    REMAT_EW_COMPARE_OPS(REMAT_CPU_COMPARE)
#undef REMAT_CPU_COMPARE
#define REMAT_CPU_UNARY(Name, HostF, HostG, Family, Since)                                         \
    t[#Name] = unaryTableForward<ew::Name, HostF>;                                                 \
    t[#Name "Grad"] = unaryTableGrad<ew::Name, HostF, HostG>;
    REMAT_EW_UNARY_OPS(REMAT_CPU_UNARY)
#undef REMAT_CPU_UNARY
    t["Not"] = notForward;
    t["Where"] = whereForward;
    t["Sum"] = sumForward;
    t["AddGrad"] = addGrad;
    t["SubGrad"] = subGrad;
    t["ModGrad"] = addGrad; // d(a mod b)/da = 1 almost everywhere; b gets none (its rule)
    t["WhereGrad"] = whereGrad;
    t["SumGrad"] = sumGrad;
    t["Identity"] = identityForward;
    t["IdentityGrad"] = identityGrad;
    t["Cast"] = castForward;
    t["CastGrad"] = castGrad;
    t["Dropout"] = dropoutForward;
    t["DropoutGrad"] = dropoutGrad;
}

} // namespace remat::core::exec::cpu
