// Element-wise ops: the shared table of core/ops/elementwise_math.h (broadcasting arithmetic,
// comparisons, activations), Cast, Dropout, Where, Sum, and their gradients (broadcast dims summed
// back with the reduction kernel).
#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/half.h"
#include "gpu/kernels/indexing.h"
#include "gpu/ops_internal.h"

#include "core/exec/half.h"
#include "core/ir/graph.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace remat::gpu {
namespace {

using core::Status;
using core::ir::DataType;
using namespace kernels;

HalfKind halfKindOf(DataType t)
{
    return t == DataType::BFloat16 ? HalfKind::BFloat16 : HalfKind::Float16;
}

Status elemTypeOf(const OpContext &c, const DView &v, ElemType &t)
{
    switch (v.dtype) {
    case DataType::Float: t = ElemType::Float; return Status::ok();
    case DataType::Int64: t = ElemType::Int64; return Status::ok();
    case DataType::Bool: t = ElemType::Bool; return Status::ok();
    default: return c.unsupported("dtype " + core::ir::dataTypeName(v.dtype));
    }
}

Status broadcastIter(const OpContext &c, const std::vector<std::vector<int64_t>> &shapes,
                     const std::vector<int64_t> &outShape, NdIter &it)
{
    std::vector<std::vector<int64_t>> strides{contiguousStrides(outShape)};
    for (const auto &s : shapes)
        strides.push_back(broadcastStrides(s, outShape));
    if (!buildIter(outShape, strides, it))
        return c.unsupported("tensor rank above 8");
    return Status::ok();
}

template <BinaryOp op, typename Fn> Status binaryOp(OpContext &c)
{
    DView *a = c.input(0), *b = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(a, "A"));
    REMAT_RETURN_IF_ERROR(c.require(b, "B"));
    REMAT_RETURN_IF_ERROR(c.require(y, "C"));
    std::vector<int64_t> out;
    if (!broadcastShapes(a->shape, b->shape, out) || numelOf(out) != y->numel())
        return c.error("shapes do not broadcast to the output");
    NdIter it;
    REMAT_RETURN_IF_ERROR(broadcastIter(c, {a->shape, b->shape}, out, it));
    const bool halfA = core::exec::isHalfType(a->dtype), halfB = core::exec::isHalfType(b->dtype);
    if ((halfA || halfB || core::exec::isHalfType(y->dtype)) && !binaryIsComparison(op)) {
        if (a->dtype == b->dtype && y->dtype == a->dtype) // one half type: in place
            return c.check(binaryForwardHalf(c.rt->stream(), op, halfKindOf(a->dtype), it, a->data,
                                             b->data, y->data, Fn::params(c)),
                           "binary");
        // a half operand beside a float32 one (a constant the backend passed as it is): both in
        // float32, the result rounded once
        for (const DView *v : {a, b, y})
            if (v->dtype != DataType::Float && !core::exec::isHalfType(v->dtype))
                return c.unsupported("mixed operand dtypes");
        REMAT_ASSIGN_OR_RETURN(const float *af, floatOperand(c, *a));
        REMAT_ASSIGN_OR_RETURN(const float *bf, floatOperand(c, *b));
        REMAT_ASSIGN_OR_RETURN(float *yf, floatResult(c, *y));
        REMAT_RETURN_IF_ERROR(c.check(
            binaryForward(c.rt->stream(), op, ElemType::Float, it, af, bf, yf, Fn::params(c)),
            "binary"));
        return roundResult(c, yf, *y);
    }
    if (a->dtype != b->dtype)
        return c.unsupported("mixed operand dtypes");
    ElemType t;
    REMAT_RETURN_IF_ERROR(elemTypeOf(c, *a, t));
    return c.check(
        binaryForward(c.rt->stream(), op, t, it, a->data, b->data, y->data, Fn::params(c)),
        "binary");
}

Status whereOp(OpContext &c)
{
    DView *cond = c.input(0), *x = c.input(1), *yv = c.input(2), *out = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(cond, "condition"));
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(yv, "Y"));
    REMAT_RETURN_IF_ERROR(c.require(out, "output"));
    std::vector<int64_t> s1, s2;
    if (!broadcastShapes(cond->shape, x->shape, s1) || !broadcastShapes(s1, yv->shape, s2))
        return c.error("shapes do not broadcast");
    NdIter it;
    REMAT_RETURN_IF_ERROR(broadcastIter(c, {x->shape, yv->shape, cond->shape}, s2, it));
    const int eb = static_cast<int>(core::ir::elementSize(out->dtype));
    return c.check(whereForward(c.rt->stream(), it, cond->as<unsigned char>(), x->data, yv->data,
                                out->data, eb),
                   "where");
}

Status sumOp(OpContext &c)
{
    DView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "sum"));
    bool first = true;
    for (DView *x : c.in) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
        NdIter it;
        if (first) {
            REMAT_RETURN_IF_ERROR(broadcastIter(c, {x->shape}, y->shape, it));
            REMAT_RETURN_IF_ERROR(
                c.check(stridedCopy(c.rt->stream(), it, x->data, y->data, 4), "copy"));
            first = false;
            continue;
        }
        REMAT_RETURN_IF_ERROR(broadcastIter(c, {y->shape, x->shape}, y->shape, it));
        REMAT_RETURN_IF_ERROR(c.check(binaryForward(c.rt->stream(), BinaryOp::Add, ElemType::Float,
                                                    it, y->data, x->data, y->data),
                                      "add"));
    }
    return Status::ok();
}

std::vector<int64_t> operandShape(const OpContext &c, size_t k)
{
    if (const DView *v = c.input(k))
        return v->shape;
    if (const DView *g = c.inputGrad(k))
        return g->shape;
    return k < c.inShapes.size() ? c.inShapes[k] : std::vector<int64_t>{};
}

Status addSubGrad(OpContext &c, bool sub)
{
    DView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dC"));
    if (DView *da = c.inputGrad(0))
        REMAT_RETURN_IF_ERROR(reduceToShape(c, dy->f(), dy->shape, da->f(), da->shape));
    if (DView *db = c.inputGrad(1))
        REMAT_RETURN_IF_ERROR(reduceTermsTo(c, sub ? GradTerm::NegDy : GradTerm::Dy, dy->shape,
                                            dy->f(), {}, nullptr, {}, nullptr, db->shape, db->f()));
    return Status::ok();
}
Status addGrad(OpContext &c) { return addSubGrad(c, false); }
Status subGrad(OpContext &c) { return addSubGrad(c, true); }

Status sumGrad(OpContext &c)
{
    DView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dSum"));
    for (DView *dx : c.dIn)
        if (dx)
            REMAT_RETURN_IF_ERROR(reduceToShape(c, dy->f(), dy->shape, dx->f(), dx->shape));
    return Status::ok();
}

/// The backward of a differentiable binary op of the shared table (core/ops/elementwise_math.h;
/// core/exec/cpu expands the same rows): dA and dB reduced from dy times the partials, reading
/// only the operands each partial names.
template <GradTerm TermA, GradTerm TermB, typename Fn> Status binaryTableGrad(OpContext &c)
{
    DView *dy = c.outputGrad(0), *a = c.input(0), *b = c.input(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dC"));
    const std::vector<int64_t> sa = operandShape(c, 0), sb = operandShape(c, 1);
    const int reads = (c.inputGrad(0) ? Fn::daReads : core::ops::ew::kNone) |
                      (c.inputGrad(1) ? Fn::dbReads : core::ops::ew::kNone);
    if (reads & core::ops::ew::kA)
        REMAT_RETURN_IF_ERROR(c.requireFloat(a, "A"));
    if (reads & core::ops::ew::kB)
        REMAT_RETURN_IF_ERROR(c.requireFloat(b, "B"));
    const void *pa = (reads & core::ops::ew::kA) ? a->data : nullptr;
    const void *pb = (reads & core::ops::ew::kB) ? b->data : nullptr;
    if (DView *da = c.inputGrad(0))
        REMAT_RETURN_IF_ERROR(
            reduceTermsTo(c, TermA, dy->shape, dy->f(), sa, pa, sb, pb, da->shape, da->f()));
    if (DView *db = c.inputGrad(1))
        REMAT_RETURN_IF_ERROR(
            reduceTermsTo(c, TermB, dy->shape, dy->f(), sa, pa, sb, pb, db->shape, db->f()));
    return Status::ok();
}

Status whereGrad(OpContext &c)
{
    DView *dy = c.outputGrad(0), *cond = c.input(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(cond, "condition"));
    for (int k = 1; k <= 2; ++k)
        if (DView *dx = c.inputGrad(size_t(k)))
            REMAT_RETURN_IF_ERROR(reduceTermsTo(c, k == 1 ? GradTerm::WhereA : GradTerm::WhereB,
                                                dy->shape, dy->f(), cond->shape, cond->data, {},
                                                nullptr, dx->shape, dx->f()));
    return Status::ok();
}

// ---- unary --------------------------------------------------------------------------------

template <typename Fn> Status unaryParams(OpContext &c, UnaryParams &p)
{
    p = Fn::params(c);
    if constexpr (Fn::boundsFromInputs) {
        // Clip from opset 11: the bounds are inputs 1 and 2 (scalars), read on the host
        for (size_t k : {size_t(1), size_t(2)}) {
            if (DView *m = c.input(k); m && m->data && m->numel() == 1) {
                REMAT_ASSIGN_OR_RETURN(std::vector<double> v, c.rt->hostDoubles(*m));
                (k == 1 ? p.p0 : p.p1) = static_cast<float>(v[0]);
            }
        }
    }
    return Status::ok();
}

template <UnaryOp op, typename Fn> Status unaryFwd(OpContext &c)
{
    UnaryParams p;
    REMAT_RETURN_IF_ERROR(unaryParams<Fn>(c, p));
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    if (core::exec::isHalfType(x->dtype) && y->dtype == x->dtype) // half storage, float32 math
        return c.check(unaryForwardHalf(c.rt->stream(), op, p, halfKindOf(x->dtype), x->data,
                                        y->data, y->numel()),
                       "unary");
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    return c.check(unaryForward(c.rt->stream(), op, p, x->f(), y->f(), y->numel()), "unary");
}

template <UnaryOp op, typename Fn> Status unaryBwd(OpContext &c)
{
    using core::ops::ew::Reads;
    UnaryParams p;
    REMAT_RETURN_IF_ERROR(unaryParams<Fn>(c, p));
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    if (Fn::reads == Reads::Input && !x)
        return c.error("backward needs X");
    if (Fn::reads == Reads::Output && !x && !y)
        return c.error("backward needs X or Y");
    const core::ir::DataType t = dy->dtype;
    if (core::exec::isHalfType(t) && dx->dtype == t && (!x || x->dtype == t) &&
        (!y || y->dtype == t)) // half storage, float32 math
        return c.check(unaryBackwardHalf(c.rt->stream(), op, p, halfKindOf(t),
                                         x ? x->data : nullptr, y ? y->data : nullptr, dy->data,
                                         dx->data, dx->numel()),
                       "unary backward");
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    return c.check(unaryBackward(c.rt->stream(), op, p, x ? x->f() : nullptr, y ? y->f() : nullptr,
                                 dy->f(), dx->f(), dx->numel()),
                   "unary backward");
}

Status identityF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    return copyDevice(c, y->data, x->data, y->numel() * core::ir::elementSize(y->dtype));
}
Status identityB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    return copyDevice(c, dx->data, dy->data, dx->numel() * core::ir::elementSize(dx->dtype));
}

/// Cast's element type for a half-aware cast (false: a dtype Cast has no CUDA kernel for).
bool castTypeOf(DataType t, CastType &out)
{
    switch (t) {
    case DataType::Float: out = CastType::Float; return true;
    case DataType::Int64: out = CastType::Int64; return true;
    case DataType::Bool: out = CastType::Bool; return true;
    case DataType::Float16: out = CastType::Float16; return true;
    case DataType::BFloat16: out = CastType::BFloat16; return true;
    default: return false;
    }
}

Status castView(OpContext &c, const DView &x, DView &y)
{
    if (core::exec::isHalfType(x.dtype) || core::exec::isHalfType(y.dtype)) {
        // float16 / bfloat16 on either side: one rounding, as the CPU reference casts
        CastType hf, ht;
        if (!castTypeOf(x.dtype, hf) || !castTypeOf(y.dtype, ht))
            return c.unsupported(fmt::format("cast {} -> {} (run it with --backend cpu)",
                                             core::ir::dataTypeName(x.dtype),
                                             core::ir::dataTypeName(y.dtype)));
        return c.check(castHalfElements(c.rt->stream(), hf, ht, x.data, y.data, y.numel()), "cast");
    }
    ElemType from, to;
    REMAT_RETURN_IF_ERROR(elemTypeOf(c, x, from));
    REMAT_RETURN_IF_ERROR(elemTypeOf(c, y, to));
    return c.check(castElements(c.rt->stream(), from, to, x.data, y.data, y.numel()), "cast");
}
Status castF(OpContext &c)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(0), "input"));
    REMAT_RETURN_IF_ERROR(c.require(c.output(0), "output"));
    return castView(c, *c.input(0), *c.output(0));
}
Status castB(OpContext &c)
{
    REMAT_RETURN_IF_ERROR(c.require(c.outputGrad(0), "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(c.inputGrad(0), "dinput"));
    return castView(c, *c.outputGrad(0), *c.inputGrad(0));
}

// ---- Dropout ------------------------------------------------------------------------------

Status dropoutSettings(OpContext &c, double &ratio, bool &active)
{
    ratio = c.attrFloat("ratio", 0.5);
    if (DView *r = c.input(1); r && r->data && r->numel() == 1) {
        REMAT_ASSIGN_OR_RETURN(std::vector<double> v, c.rt->hostDoubles(*r));
        ratio = v[0];
    }
    bool training = false; // ONNX: inference unless training_mode is given and true
    if (DView *t = c.input(2); t && t->data && t->numel() == 1) {
        REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.rt->hostInts(*t));
        training = v[0] != 0;
    }
    active = training && ratio > 0;
    if (active && ratio >= 1)
        return c.error("ratio must be below 1");
    return Status::ok();
}

Status dropoutF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0), *mask = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    double ratio = 0;
    bool active = false;
    REMAT_RETURN_IF_ERROR(dropoutSettings(c, ratio, active));
    const int64_t n = x->numel();
    if (!active) {
        if (y)
            REMAT_RETURN_IF_ERROR(copyDevice(c, y->data, x->data, n * 4));
        if (mask)
            REMAT_RETURN_IF_ERROR(
                c.check(cudaMemsetAsync(mask->data, 1, size_t(n), c.rt->stream()), "mask fill"));
        return Status::ok();
    }
    // The mask is drawn on the host from the per-op seed with the CPU reference's generator, so
    // both backends (and every recompute) use the identical mask.
    REMAT_ASSIGN_OR_RETURN(void *scratch, c.rt->scratch(n));
    std::vector<unsigned char> host(static_cast<size_t>(n));
    std::mt19937_64 rng(c.seed);
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i)
        host[size_t(i)] = uni(rng) >= ratio ? 1 : 0;
    unsigned char *dmask = mask ? mask->as<unsigned char>() : static_cast<unsigned char *>(scratch);
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(dmask, host.data(), n));
    // uploadAsync is ordered on the stream; the host vector must outlive it: wait here.
    REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(c.rt->stream()), "mask upload"));
    if (y)
        REMAT_RETURN_IF_ERROR(
            c.check(dropoutBackward(c.rt->stream(), x->f(), dmask, y->f(), n, float(ratio), c.seed),
                    "dropout"));
    return Status::ok();
}

Status dropoutB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *mask = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    double ratio = 0;
    bool active = false;
    REMAT_RETURN_IF_ERROR(dropoutSettings(c, ratio, active));
    if (!active)
        return copyDevice(c, dx->data, dy->data, dx->numel() * 4);
    if (!mask)
        return c.error("backward needs the mask");
    return c.check(dropoutBackward(c.rt->stream(), dy->f(), mask->as<unsigned char>(), dx->f(),
                                   dx->numel(), float(ratio), c.seed),
                   "dropout backward");
}

} // namespace

void addElementwiseOps(OpTable &t)
{
    // The shared element-wise table (core/ops/elementwise_math.h), expanded once for CUDA.
    namespace ew = core::ops::ew;
#define REMAT_CUDA_BINARY(Name, HostT) t[#Name] = binaryOp<BinaryOp::Name, ew::Name>;
    REMAT_EW_BINARY_OPS(REMAT_CUDA_BINARY)
#undef REMAT_CUDA_BINARY
#define REMAT_CUDA_BINARY_GRAD(Name, HostT)                                                        \
    t[#Name "Grad"] = binaryTableGrad<GradTerm::Name##Da, GradTerm::Name##Db, ew::Name>;
    REMAT_EW_BINARY_GRAD_OPS(REMAT_CUDA_BINARY_GRAD)
#undef REMAT_CUDA_BINARY_GRAD
#define REMAT_CUDA_COMPARE(Name, Since) t[#Name] = binaryOp<BinaryOp::Name, ew::NoParams>;
    REMAT_EW_COMPARE_OPS(REMAT_CUDA_COMPARE)
#undef REMAT_CUDA_COMPARE
#define REMAT_CUDA_UNARY(Name, HostF, HostG, Family, Since)                                        \
    t[#Name] = unaryFwd<UnaryOp::Name, ew::Name>;                                                  \
    t[#Name "Grad"] = unaryBwd<UnaryOp::Name, ew::Name>;
    REMAT_EW_UNARY_OPS(REMAT_CUDA_UNARY)
#undef REMAT_CUDA_UNARY
    t["Where"] = whereOp;
    t["Sum"] = sumOp;
    t["AddGrad"] = addGrad;
    t["SubGrad"] = subGrad;
    t["ModGrad"] = addGrad; // d(a mod b)/da = 1 almost everywhere; b gets none (its rule)
    t["WhereGrad"] = whereGrad;
    t["SumGrad"] = sumGrad;
    t["Identity"] = identityF;
    t["IdentityGrad"] = identityB;
    t["Cast"] = castF;
    t["CastGrad"] = castB;
    t["Dropout"] = dropoutF;
    t["DropoutGrad"] = dropoutB;
}

} // namespace remat::gpu
