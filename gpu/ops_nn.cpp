// Neural-network ops with their own kernels: BatchNormalization (training mode, saved mean and
// inverse std at output slots 3 and 4), LayerNormalization, GroupNormalization /
// InstanceNormalization, Softmax / LogSoftmax, MaxPool (int64
// indices), AveragePool, GlobalAveragePool, and their gradients.
#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/indexing.h"
#include "gpu/kernels/normalization.h"
#include "gpu/kernels/pooling.h"
#include "gpu/ops_internal.h"

#include "core/exec/axes.h"
#include "core/exec/reduce_geometry.h"
#include "core/ir/graph.h"
#include "core/ops/einsum.h"
#include "core/ops/group_norm.h"

#include <fmt/format.h>

#include <map>

namespace remat::gpu {
namespace {

using core::Status;
using namespace kernels;

// ---- BatchNormalization -------------------------------------------------------------------

BatchNormShape bnShape(const std::vector<int64_t> &x)
{
    BatchNormShape s;
    s.n = x.empty() ? 0 : x[0];
    s.c = x.size() > 1 ? x[1] : 1;
    s.spatial = 1;
    for (size_t d = 2; d < x.size(); ++d)
        s.spatial *= x[d];
    return s;
}

Status batchNormF(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *inMean = c.input(3),
          *inVar = c.input(4), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    const float eps = float(c.attrFloat("epsilon", 1e-5));
    const float momentum = float(c.attrFloat("momentum", 0.9));
    const BatchNormShape sh = bnShape(x->shape);
    const bool training = c.attrInt("training_mode", 0) != 0;
    cudaStream_t s = c.rt->stream();
    if (!training) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(inMean, "input_mean"));
        REMAT_RETURN_IF_ERROR(c.requireFloat(inVar, "input_var"));
        return c.check(batchNormInferForward(s, sh, x->f(), scale ? scale->f() : nullptr,
                                             bias ? bias->f() : nullptr, inMean->f(), inVar->f(),
                                             y->f(), eps),
                       "batch norm (inference)");
    }
    // Running statistics (outputs 1, 2) change once per step, as in the CPU reference: a
    // recompute leaves them as the first compute wrote them.
    float *runMean = nullptr, *runVar = nullptr;
    if (!c.recompute) {
        DView *outMean = c.output(1), *outVar = c.output(2);
        if (outMean) {
            if (inMean)
                REMAT_RETURN_IF_ERROR(copyDevice(c, outMean->data, inMean->data, sh.c * 4));
            else
                REMAT_RETURN_IF_ERROR(
                    c.check(fillFloat(s, outMean->f(), 0.f, sh.c), "running mean"));
            runMean = outMean->f();
        }
        if (outVar) {
            if (inVar)
                REMAT_RETURN_IF_ERROR(copyDevice(c, outVar->data, inVar->data, sh.c * 4));
            else
                REMAT_RETURN_IF_ERROR(c.check(fillFloat(s, outVar->f(), 1.f, sh.c), "running var"));
            runVar = outVar->f();
        }
    }
    DView *savedMean = c.output(3), *savedInv = c.output(4);
    return c.check(batchNormTrainForward(
                       s, sh, x->f(), scale ? scale->f() : nullptr, bias ? bias->f() : nullptr,
                       y->f(), savedMean ? savedMean->f() : nullptr,
                       savedInv ? savedInv->f() : nullptr, runMean, runVar, momentum, eps),
                   "batch norm");
}

Status batchNormB(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    if (c.attrInt("training_mode", 0) == 0)
        return c.unsupported("gradient of inference-mode BatchNormalization");
    DView *dx = c.inputGrad(0), *dScale = c.inputGrad(1), *dBias = c.inputGrad(2);
    if (dx)
        REMAT_RETURN_IF_ERROR(c.requireFloat(scale, "scale"));
    DView *savedMean = c.output(3), *savedInv = c.output(4);
    return c.check(batchNormTrainBackward(
                       c.rt->stream(), bnShape(x->shape), x->f(), scale ? scale->f() : nullptr,
                       dy->f(), savedMean ? savedMean->f() : nullptr,
                       savedInv ? savedInv->f() : nullptr, dx ? dx->f() : nullptr,
                       dScale ? dScale->f() : nullptr, dBias ? dBias->f() : nullptr,
                       float(c.attrFloat("epsilon", 1e-5))),
                   "batch norm backward");
}

// ---- LayerNormalization -------------------------------------------------------------------

Status lnGeometry(const OpContext &c, const std::vector<int64_t> &x, int64_t &rows, int64_t &cols)
{
    int64_t axis = c.attrInt("axis", -1);
    if (!normalizeAxis(axis, int64_t(x.size())))
        return c.error("axis out of range");
    rows = 1;
    cols = 1;
    for (size_t d = 0; d < x.size(); ++d)
        (int64_t(d) < axis ? rows : cols) *= x[d];
    return Status::ok();
}

Status layerNormF(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(scale, "Scale"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    int64_t rows, cols;
    REMAT_RETURN_IF_ERROR(lnGeometry(c, x->shape, rows, cols));
    if (scale->numel() != cols || (bias && bias->numel() != cols))
        return c.unsupported("Scale / B broadcast over part of the normalised dims");
    DView *mean = c.output(1), *inv = c.output(2);
    return c.check(layerNormForward(c.rt->stream(), x->f(), scale->f(), bias ? bias->f() : nullptr,
                                    y->f(), mean ? mean->f() : nullptr, inv ? inv->f() : nullptr,
                                    rows, cols, float(c.attrFloat("epsilon", 1e-5))),
                   "layer norm");
}

Status layerNormB(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(scale, "Scale"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    int64_t rows, cols;
    REMAT_RETURN_IF_ERROR(lnGeometry(c, x->shape, rows, cols));
    const float eps = float(c.attrFloat("epsilon", 1e-5));
    DView *dx = c.inputGrad(0), *dScale = c.inputGrad(1), *dBias = c.inputGrad(2);
    const float *mean = c.output(1) ? c.output(1)->f() : nullptr;
    const float *inv = c.output(2) ? c.output(2)->f() : nullptr;
    if ((!mean || !inv) && (dScale || dBias)) {
        REMAT_ASSIGN_OR_RETURN(void *stats, c.rt->scratch(rows * 8));
        float *m = static_cast<float *>(stats);
        REMAT_RETURN_IF_ERROR(c.check(
            layerNormRowStats(c.rt->stream(), x->f(), m, m + rows, rows, cols, eps), "stats"));
        mean = m;
        inv = m + rows;
    }
    return c.check(layerNormBackward(c.rt->stream(), x->f(), scale->f(), dy->f(), mean, inv,
                                     dx ? dx->f() : nullptr, dScale ? dScale->f() : nullptr,
                                     dBias ? dBias->f() : nullptr, rows, cols, eps),
                   "layer norm backward");
}

// ---- GroupNormalization / InstanceNormalization -------------------------------------------

core::Expected<GroupNormShape> gnShape(const OpContext &c, const DView &x, const DView &scale)
{
    auto g = core::ops::groupNormGeometry(c.node ? c.node->opType : "GroupNormalization",
                                          c.attrInt("num_groups", 0), scale.numel(), x.shape);
    if (!g)
        return c.error(g.status().message());
    return GroupNormShape{g->n, g->channels, g->groups, g->spatial, g->scalePerChannel};
}

Status groupNormF(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *bias = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(scale, "scale"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(bias, "B"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    REMAT_ASSIGN_OR_RETURN(GroupNormShape g, gnShape(c, *x, *scale));
    if (bias->numel() != scale->numel())
        return c.error("B and scale differ in size");
    DView *mean = c.output(1), *inv = c.output(2);
    float *m = mean ? mean->f() : nullptr, *is = inv ? inv->f() : nullptr;
    if (!m || !is) { // statistics nobody keeps (no gradient wanted)
        REMAT_ASSIGN_OR_RETURN(void *stats, c.rt->scratch(g.n * g.groups * 8));
        m = static_cast<float *>(stats);
        is = m + g.n * g.groups;
    }
    return c.check(groupNormForward(c.rt->stream(), g, x->f(), scale->f(), bias->f(), y->f(), m, is,
                                    float(c.attrFloat("epsilon", 1e-5))),
                   "group norm");
}

Status groupNormB(OpContext &c)
{
    DView *x = c.input(0), *scale = c.input(1), *dy = c.outputGrad(0);
    DView *mean = c.output(1), *inv = c.output(2);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(scale, "scale"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(mean, "saved mean"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(inv, "saved inverse std"));
    REMAT_ASSIGN_OR_RETURN(GroupNormShape g, gnShape(c, *x, *scale));
    DView *dx = c.inputGrad(0), *dScale = c.inputGrad(1), *dBias = c.inputGrad(2);
    return c.check(groupNormBackward(c.rt->stream(), g, x->f(), scale->f(), dy->f(), mean->f(),
                                     inv->f(), dx ? dx->f() : nullptr,
                                     dScale ? dScale->f() : nullptr, dBias ? dBias->f() : nullptr),
                   "group norm backward");
}

// ---- Softmax ------------------------------------------------------------------------------

Status softmaxGeometry(const OpContext &c, const std::vector<int64_t> &x, int64_t &outer,
                       int64_t &len, int64_t &inner)
{
    int64_t axis = c.attrInt("axis", -1);
    if (!normalizeAxis(axis, int64_t(x.size())))
        return c.error("axis out of range");
    outer = inner = 1;
    len = x.empty() ? 1 : x[size_t(axis)];
    for (size_t d = 0; d < x.size(); ++d) {
        if (int64_t(d) < axis)
            outer *= x[d];
        else if (int64_t(d) > axis)
            inner *= x[d];
    }
    return Status::ok();
}

Status softmaxFwd(OpContext &c, bool log)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "input"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "output"));
    int64_t outer, len, inner;
    REMAT_RETURN_IF_ERROR(softmaxGeometry(c, x->shape, outer, len, inner));
    return c.check(softmaxForward(c.rt->stream(), x->f(), y->f(), outer, len, inner, log),
                   "softmax");
}

Status softmaxBwd(OpContext &c, bool log)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *y = c.output(0), *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dinput"));
    int64_t outer, len, inner;
    REMAT_RETURN_IF_ERROR(softmaxGeometry(c, dx->shape, outer, len, inner));
    const float *py = y ? y->f() : nullptr;
    if (!py) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "input or output"));
        REMAT_ASSIGN_OR_RETURN(void *tmp, c.rt->scratch(x->numel() * 4));
        REMAT_RETURN_IF_ERROR(
            c.check(softmaxForward(c.rt->stream(), x->f(), static_cast<float *>(tmp), outer, len,
                                   inner, log),
                    "softmax (recomputed for backward)"));
        py = static_cast<const float *>(tmp);
    }
    return c.check(softmaxBackward(c.rt->stream(), py, dy->f(), dx->f(), outer, len, inner, log),
                   "softmax backward");
}
Status softmaxF(OpContext &c) { return softmaxFwd(c, false); }
Status softmaxB(OpContext &c) { return softmaxBwd(c, false); }
Status logSoftmaxF(OpContext &c) { return softmaxFwd(c, true); }

// ---- WeightNorm (the CPU reference: core/exec/cpu/kernels_nn.cpp) ----------------------------

/// v, g and the layout of v around the kept axis: the preamble of both kernels.
core::Expected<core::exec::AxisSplit> weightNormSplit(OpContext &c)
{
    const DView *v = c.input(0), *g = c.input(1), *norm = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(v, "v"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(g, "g"));
    auto s = core::exec::keptAxisSplit(v->shape, c.attrInt("axis", 0));
    if (!s)
        return c.error(s.status().message());
    if (g->numel() != s->n || (norm && norm->numel() != s->n))
        return c.error("g and the norm need one value per kept index");
    return s;
}

Status weightNormF(OpContext &c)
{
    DView *v = c.input(0), *g = c.input(1), *w = c.output(0), *norm = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(w, "w"));
    REMAT_ASSIGN_OR_RETURN(const core::exec::AxisSplit split, weightNormSplit(c));
    const core::exec::AxisSplit *s = &split;
    float *pn = norm ? norm->f() : nullptr;
    if (!pn) {
        REMAT_ASSIGN_OR_RETURN(void *tmp, c.rt->scratch(s->n * 4));
        pn = static_cast<float *>(tmp);
    }
    return c.check(
        weightNormForward(c.rt->stream(), v->f(), g->f(), w->f(), pn, s->outer, s->n, s->inner),
        "weight norm");
}

Status weightNormB(OpContext &c)
{
    DView *v = c.input(0), *g = c.input(1), *dw = c.outputGrad(0), *norm = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dw, "dw"));
    REMAT_ASSIGN_OR_RETURN(const core::exec::AxisSplit split, weightNormSplit(c));
    const core::exec::AxisSplit *s = &split;
    REMAT_ASSIGN_OR_RETURN(void *tmp, c.rt->scratch(s->n * 8));
    float *scratch = static_cast<float *>(tmp);
    const float *pn = norm ? norm->f() : nullptr;
    if (!pn) { // recompute the norms into the scratch's second half
        float *n = scratch + s->n;
        REMAT_ASSIGN_OR_RETURN(void *wtmp, c.rt->scratch(v->numel() * 4));
        REMAT_RETURN_IF_ERROR(
            c.check(weightNormForward(c.rt->stream(), v->f(), g->f(), static_cast<float *>(wtmp), n,
                                      s->outer, s->n, s->inner),
                    "weight norm (recomputed norms)"));
        pn = n;
    }
    DView *dv = c.inputGrad(0), *dg = c.inputGrad(1);
    return c.check(weightNormBackward(c.rt->stream(), v->f(), g->f(), pn, dw->f(),
                                      dv ? dv->f() : nullptr, dg ? dg->f() : nullptr, scratch,
                                      s->outer, s->n, s->inner),
                   "weight norm backward");
}
Status logSoftmaxB(OpContext &c) { return softmaxBwd(c, true); }

// ---- pooling ------------------------------------------------------------------------------

Status poolShape(const OpContext &c, const std::vector<int64_t> &x, const std::vector<int64_t> &y,
                 PoolShape &p)
{
    const size_t sp = x.size() < 2 ? 0 : x.size() - 2;
    if (sp < 1 || sp > 3 || y.size() != x.size())
        return c.unsupported(fmt::format("pooling over {} spatial dims", sp));
    const std::vector<int64_t> k = c.attrInts("kernel_shape");
    REMAT_ASSIGN_OR_RETURN(const core::exec::WindowAttributes a, windowOf(c, x, k));
    p = PoolShape{};
    p.n = x[0];
    p.c = x[1];
    const size_t off = 3 - sp;
    for (size_t d = 0; d < sp; ++d) {
        const size_t q = off + d;
        p.in[q] = x[2 + d];
        p.out[q] = y[2 + d];
        p.kernel[q] = k[d];
        p.stride[q] = a.strides[d];
        p.dilation[q] = a.dilations[d];
        p.padBegin[q] = a.pads[d];
        p.padEnd[q] = a.pads[d + sp];
    }
    p.countIncludePad = c.attrInt("count_include_pad", 0) != 0;
    return Status::ok();
}

Status maxPoolF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0), *idx = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    if (c.attrInt("storage_order", 0) != 0)
        return c.unsupported("storage_order 1");
    PoolShape p;
    REMAT_RETURN_IF_ERROR(poolShape(c, x->shape, y->shape, p));
    return c.check(
        maxPoolForward(c.rt->stream(), p, x->f(), y->f(), idx ? idx->as<long long>() : nullptr),
        "max pool");
}

Status maxPoolB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *idx = c.output(1), *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    PoolShape p;
    REMAT_RETURN_IF_ERROR(poolShape(c, dx->shape, dy->shape, p));
    if (idx && idx->data)
        return c.check(maxPoolBackward(c.rt->stream(), p, dy->f(), idx->as<long long>(), dx->f()),
                       "max pool backward");
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X or Indices"));
    return c.check(maxPoolBackwardFromInput(c.rt->stream(), p, x->f(), dy->f(), dx->f()),
                   "max pool backward");
}

Status avgPoolF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    PoolShape p;
    REMAT_RETURN_IF_ERROR(poolShape(c, x->shape, y->shape, p));
    return c.check(avgPoolForward(c.rt->stream(), p, x->f(), y->f()), "average pool");
}

Status avgPoolB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    PoolShape p;
    REMAT_RETURN_IF_ERROR(poolShape(c, dx->shape, dy->shape, p));
    return c.check(avgPoolBackward(c.rt->stream(), p, dy->f(), dx->f()), "average pool backward");
}

Status globalAvgF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    const int64_t planes = x->shape.size() >= 2 ? x->shape[0] * x->shape[1] : 1;
    const int64_t spatial = planes > 0 ? x->numel() / planes : 0;
    if (spatial == 0)
        return Status::ok();
    return reduceTermsTo(c, GradTerm::Dy, {planes, spatial}, x->f(), {}, nullptr, {}, nullptr,
                         {planes, 1}, y->f(), 1.f / float(spatial));
}

Status globalAvgB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    const int64_t planes = dx->shape.size() >= 2 ? dx->shape[0] * dx->shape[1] : 1;
    const int64_t spatial = planes > 0 ? dx->numel() / planes : 0;
    NdIter it;
    if (!buildIter({planes, spatial}, {{spatial, 1}, {1, 0}}, it))
        return c.unsupported("rank");
    REMAT_RETURN_IF_ERROR(
        c.check(stridedCopy(c.rt->stream(), it, dy->data, dx->data, 4), "broadcast"));
    return c.check(scaleFloats(c.rt->stream(), 1.f / float(spatial), dx->f(), dx->f(), dx->numel()),
                   "scale");
}

// ---- ReduceMean / ReduceSum -----------------------------------------------------------------

/// The reduced shape with kept dims (1 on reduced axes) and the element count per output; the
/// axis resolution is the CPU backend's (core/exec/reduce_geometry.h).
Status reduceShape(OpContext &c, const std::vector<int64_t> &inShape, std::vector<int64_t> &kept,
                   int64_t &count)
{
    std::vector<int64_t> axes = c.attrInts("axes");
    if (c.input(1) && c.input(1)->numel() > 0) {
        REMAT_ASSIGN_OR_RETURN(axes, c.rt->hostInts(*c.input(1)));
    }
    auto g = core::exec::reduceGeometry(inShape, axes, c.attrInt("keepdims", 1) != 0,
                                        c.attrInt("noop_with_empty_axes", 0) != 0);
    if (!g)
        return c.error(g.status().message());
    kept = std::move(g->keptShape);
    count = g->count;
    return Status::ok();
}

/// A reduction's forward operands checked (float data and output) and its kept shape: the
/// preamble of every Reduce* forward here.
Status reduceForwardShape(OpContext &c, const DView *x, const DView *y, std::vector<int64_t> &kept,
                          int64_t &count)
{
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "reduced"));
    REMAT_RETURN_IF_ERROR(reduceShape(c, x->shape, kept, count));
    if (numelOf(kept) != y->numel())
        return c.error("output size mismatch");
    return Status::ok();
}

Status reduceF(OpContext &c, bool mean)
{
    DView *x = c.input(0), *y = c.output(0);
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceForwardShape(c, x, y, kept, count));
    const float scale = mean && count > 0 ? float(1.0 / double(count)) : 1.f;
    return reduceTermsTo(c, GradTerm::Dy, x->shape, x->f(), {}, nullptr, {}, nullptr, kept, y->f(),
                         scale);
}

Status reduceB(OpContext &c, bool mean)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceShape(c, dx->shape, kept, count));
    NdIter it;
    if (!buildIter(dx->shape, {contiguousStrides(dx->shape), broadcastStrides(kept, dx->shape)},
                   it))
        return c.unsupported("rank above 8");
    REMAT_RETURN_IF_ERROR(
        c.check(stridedCopy(c.rt->stream(), it, dy->data, dx->data, 4), "broadcast"));
    if (!mean || count <= 1)
        return Status::ok();
    return c.check(
        scaleFloats(c.rt->stream(), float(1.0 / double(count)), dx->f(), dx->f(), dx->numel()),
        "scale");
}
/// ReduceSumSquare, ReduceL2 and ReduceL1 (the CPU reference's kernels_nn.cpp definitions).
enum class Norm { SumSquare, L2, L1 };

Status reduceNormF(OpContext &c, Norm kind)
{
    DView *x = c.input(0), *y = c.output(0);
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceForwardShape(c, x, y, kept, count));
    if (kind == Norm::L1) {
        REMAT_ASSIGN_OR_RETURN(void *raw, c.rt->scratch(x->numel() * 4));
        float *absX = static_cast<float *>(raw);
        REMAT_RETURN_IF_ERROR(c.check(
            unaryForward(c.rt->stream(), UnaryOp::Abs, {}, x->f(), absX, x->numel()), "abs"));
        return reduceTermsTo(c, GradTerm::Dy, x->shape, absX, {}, nullptr, {}, nullptr, kept,
                             y->f());
    }
    REMAT_RETURN_IF_ERROR(reduceTermsTo(c, GradTerm::DyTimesA, x->shape, x->f(), x->shape, x->f(),
                                        {}, nullptr, kept, y->f()));
    if (kind == Norm::L2)
        REMAT_RETURN_IF_ERROR(c.check(
            unaryForward(c.rt->stream(), UnaryOp::Sqrt, {}, y->f(), y->f(), y->numel()), "sqrt"));
    return Status::ok();
}

Status reduceNormB(OpContext &c, Norm kind)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    if (kind == Norm::L2)
        REMAT_RETURN_IF_ERROR(c.requireFloat(y, "reduced"));
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceShape(c, dx->shape, kept, count));
    const std::vector<int64_t> own = contiguousStrides(dx->shape),
                               spread = broadcastStrides(kept, dx->shape);
    NdIter it;
    cudaStream_t s = c.rt->stream();
    if (kind == Norm::L2) { // dx = (dy / y) x, both broadcast from the kept shape
        if (!buildIter(dx->shape, {own, spread, spread}, it))
            return c.unsupported("rank above 8");
        REMAT_RETURN_IF_ERROR(c.check(
            binaryForward(s, BinaryOp::Div, ElemType::Float, it, dy->data, y->data, dx->data),
            "divide"));
    } else {
        if (!buildIter(dx->shape, {own, spread}, it))
            return c.unsupported("rank above 8");
        REMAT_RETURN_IF_ERROR(c.check(stridedCopy(s, it, dy->data, dx->data, 4), "broadcast"));
    }
    if (kind == Norm::L1) // dy sign(x): Abs's derivative
        return c.check(
            unaryBackward(s, UnaryOp::Abs, {}, x->f(), nullptr, dx->f(), dx->f(), dx->numel()),
            "sign");
    NdIter flat;
    if (!buildIter(dx->shape, {own, own, own}, flat))
        return c.unsupported("rank above 8");
    REMAT_RETURN_IF_ERROR(
        c.check(binaryForward(s, BinaryOp::Mul, ElemType::Float, flat, dx->data, x->data, dx->data),
                "times x"));
    if (kind == Norm::SumSquare)
        return c.check(scaleFloats(s, 2.f, dx->f(), dx->f(), dx->numel()), "scale");
    return Status::ok();
}

/// The index spaces of a reduction of `x` to `kept` (1 on every reduced axis): operand 0 walks x.
Status extremumIters(OpContext &c, const std::vector<int64_t> &x, const std::vector<int64_t> &kept,
                     NdIter &keptIt, NdIter &redIt)
{
    std::vector<int64_t> keptDims(x.size(), 1), redDims(x.size(), 1);
    for (size_t d = 0; d < x.size(); ++d)
        (kept[d] == x[d] ? keptDims : redDims)[d] = x[d];
    const std::vector<int64_t> strides = contiguousStrides(x);
    if (!buildIter(keptDims, {strides}, keptIt) || !buildIter(redDims, {strides}, redIt))
        return c.unsupported("tensor rank above 8");
    return Status::ok();
}

/// Variance (the CPU reference: core/exec/cpu/kernels_nn.cpp): one thread per result.
Status varianceF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceForwardShape(c, x, y, kept, count));
    NdIter keptIt, redIt;
    REMAT_RETURN_IF_ERROR(extremumIters(c, x->shape, kept, keptIt, redIt));
    return c.check(variance(c.rt->stream(), keptIt, redIt, x->f(), y->f(),
                            double(count - c.attrInt("correction", 1))),
                   "variance");
}

Status varianceB(OpContext &c)
{
    DView *x = c.input(0), *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dvariance"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceShape(c, x->shape, kept, count));
    NdIter keptIt, redIt;
    REMAT_RETURN_IF_ERROR(extremumIters(c, x->shape, kept, keptIt, redIt));
    return c.check(varianceBackward(c.rt->stream(), keptIt, redIt, x->f(), dy->f(), dx->f(),
                                    double(count - c.attrInt("correction", 1))),
                   "variance backward");
}

/// ReduceMax / ReduceMin (the CPU reference: core/exec/cpu/kernels_nn.cpp).
Status reduceExtremumF(OpContext &c, bool isMax)
{
    DView *x = c.input(0), *y = c.output(0);
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceForwardShape(c, x, y, kept, count));
    if (count == 0)
        return c.error("reducing an empty tensor has no extremum");
    NdIter keptIt, redIt;
    REMAT_RETURN_IF_ERROR(extremumIters(c, x->shape, kept, keptIt, redIt));
    REMAT_RETURN_IF_ERROR(c.check(
        reduceExtremum(c.rt->stream(), isMax, keptIt, redIt, x->f(), y->f()), "reduce extremum"));
    DView *idx = c.output(1);
    if (!idx)
        return Status::ok();
    // torch.max(x, dim): the index of the first extremum along the axis, as the CPU reference
    if (idx->dtype != core::ir::DataType::Int64)
        return c.error("the indices must be int64");
    auto split = core::exec::singleAxisSplit(x->shape, kept);
    if (!split)
        return c.error(split.status().message());
    return c.check(argExtremum(c.rt->stream(), isMax, false, x->f(),
                               static_cast<long long *>(idx->data), split->outer, split->n,
                               split->inner),
                   "reduce extremum indices");
}

Status reduceExtremumB(OpContext &c)
{
    if (DView *idx = c.output(1)) {
        // torch.max(x, dim)'s backward: each gradient to its index (TopK's scatter with k = 1)
        DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
        REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dreduced"));
        REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
        std::vector<int64_t> kept;
        int64_t count;
        REMAT_RETURN_IF_ERROR(reduceShape(c, dx->shape, kept, count));
        auto split = core::exec::singleAxisSplit(dx->shape, kept);
        if (!split)
            return c.error(split.status().message());
        if (dy->numel() != split->outer * split->inner || idx->numel() != dy->numel())
            return c.error("output gradient size mismatch");
        REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
        return c.check(topKBackward(c.rt->stream(), dy->f(),
                                    static_cast<const long long *>(idx->data), dx->f(),
                                    split->outer, split->n, split->inner, 1, nullptr),
                       "reduce extremum backward (indices)");
    }
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0), *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dreduced"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "reduced"));
    std::vector<int64_t> kept;
    int64_t count;
    REMAT_RETURN_IF_ERROR(reduceShape(c, x->shape, kept, count));
    if (numelOf(kept) != dy->numel() || y->numel() != dy->numel())
        return c.error("output gradient size mismatch");
    NdIter keptIt, redIt;
    REMAT_RETURN_IF_ERROR(extremumIters(c, x->shape, kept, keptIt, redIt));
    return c.check(
        reduceExtremumBackward(c.rt->stream(), keptIt, redIt, x->f(), y->f(), dy->f(), dx->f()),
        "reduce extremum backward");
}

/// ArgMax / ArgMin (the CPU reference: core/exec/cpu/kernels_nn.cpp).
Status argExtremumF(OpContext &c, bool isMax)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reduced"));
    if (y->dtype != core::ir::DataType::Int64)
        return c.error("the output must be int64");
    auto geo = core::exec::gatherGeometry(c.attrInt("axis", 0), x->shape);
    if (!geo)
        return c.error(geo.status().message());
    const int64_t outer = geo->outer, n = geo->dim, inner = geo->inner;
    if (n == 0)
        return c.error("ArgMax / ArgMin of an empty axis has no index");
    if (y->numel() != outer * inner)
        return c.error("output size mismatch");
    return c.check(argExtremum(c.rt->stream(), isMax, c.attrInt("select_last_index", 0) != 0,
                               x->f(), static_cast<long long *>(y->data), outer, n, inner),
                   "arg extremum");
}

/// TopK (the CPU reference: core/exec/cpu/kernels_nn.cpp): K read on the host.
Status topKF(OpContext &c)
{
    DView *x = c.input(0), *vals = c.output(0), *idx = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(vals, "Values"));
    auto geo = core::exec::gatherGeometry(c.attrInt("axis", -1), x->shape);
    if (!geo)
        return c.error(geo.status().message());
    const int64_t outer = geo->outer, n = geo->dim, inner = geo->inner;
    int64_t k = c.attrInt("k", -1);
    if (DView *kv = c.input(1)) {
        REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> ks, c.rt->hostInts(*kv));
        if (ks.size() != 1)
            return c.error("K must hold one value");
        k = ks[0];
    }
    if (k < 0 || k > n)
        return c.error("K (" + std::to_string(k) + ") is outside 0.." + std::to_string(n));
    if (vals->numel() != outer * k * inner || (idx && idx->numel() != vals->numel()))
        return c.error("output size mismatch");
    if (idx && idx->dtype != core::ir::DataType::Int64)
        return c.error("Indices must be int64");
    return c.check(topK(c.rt->stream(), c.attrInt("largest", 1) != 0, x->f(), vals->f(),
                        idx ? static_cast<long long *>(idx->data) : nullptr, outer, n, inner, k),
                   "topk");
}

Status topKB(OpContext &c)
{
    DView *dv = c.outputGrad(0), *dx = c.inputGrad(0), *idx = c.output(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dv, "dValues"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "Indices"));
    auto geo = core::exec::gatherGeometry(c.attrInt("axis", -1), dx->shape);
    if (!geo)
        return c.error(geo.status().message());
    const int64_t outer = geo->outer, n = geo->dim, inner = geo->inner;
    if (dv->numel() != idx->numel() || outer * inner == 0 || dv->numel() % (outer * inner) != 0)
        return c.error("gradient size mismatch");
    const int64_t k = dv->numel() / (outer * inner);
    REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
    return c.check(topKBackward(c.rt->stream(), dv->f(), static_cast<const long long *>(idx->data),
                                dx->f(), outer, n, inner, k, nullptr),
                   "topk backward");
}

// ---- Einsum (the CPU reference: core/exec/cpu/kernels_nn.cpp; geometry: core/ops/einsum.h) --

Status runEinsum(OpContext &c, const core::ops::EinsumLoop &l,
                 const std::vector<const float *> &data, float *out)
{
    EinsumGeometry g;
    if (l.outerSize.size() > size_t(kEinsumLetters) || l.innerSize.size() > size_t(kEinsumLetters))
        return c.unsupported("Einsum with more than 12 indices on one side");
    if (data.size() > size_t(kEinsumFactors))
        return c.unsupported("Einsum with more than 3 operands");
    g.outerRank = int(l.outerSize.size());
    g.innerRank = int(l.innerSize.size());
    g.factors = int(data.size());
    g.outerCount = l.outerCount;
    g.innerCount = l.innerCount;
    EinsumFactors f;
    for (int d = 0; d < g.outerRank; ++d) {
        g.outerSize[d] = l.outerSize[size_t(d)];
        g.outStride[d] = l.outStride[size_t(d)];
    }
    for (int d = 0; d < g.innerRank; ++d)
        g.innerSize[d] = l.innerSize[size_t(d)];
    for (int k = 0; k < g.factors; ++k) {
        f.data[k] = data[size_t(k)];
        for (int d = 0; d < g.outerRank; ++d)
            g.factorOuter[k][d] = l.factorOuter[size_t(k)][size_t(d)];
        for (int d = 0; d < g.innerRank; ++d)
            g.factorInner[k][d] = l.factorInner[size_t(k)][size_t(d)];
    }
    return c.check(einsumLoop(c.rt->stream(), g, f, out), "einsum");
}

Status einsumF(OpContext &c)
{
    DView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Output"));
    const size_t n = c.in.size();
    std::vector<std::vector<int64_t>> shapes;
    std::vector<const float *> data;
    for (size_t i = 0; i < n; ++i) {
        DView *x = c.input(i);
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "Inputs"));
        shapes.push_back(x->shape);
        data.push_back(x->f());
    }
    auto r =
        core::ops::resolveEinsum(c.node ? c.node->attrString("equation") : std::string(), shapes);
    if (!r)
        return c.error(r.status().message());
    const core::ops::EinsumLoop l = core::ops::einsumForwardLoop(*r, y->shape);
    if (l.outerCount != y->numel())
        return c.error("output size mismatch");
    return runEinsum(c, l, data, y->f());
}

Status einsumB(OpContext &c)
{
    DView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dOutput"));
    // Every operand's shape: the saved ones', else the forward node's slots', else the gradient's.
    const size_t n = std::max({c.in.size(), c.inShapes.size(), c.dIn.size()});
    std::vector<std::vector<int64_t>> shapes(n);
    for (size_t i = 0; i < n; ++i) {
        if (DView *x = c.input(i))
            shapes[i] = x->shape;
        else if (i < c.inShapes.size() && !c.inShapes[i].empty())
            shapes[i] = c.inShapes[i];
        else if (DView *dx = c.inputGrad(i))
            shapes[i] = dx->shape;
        else
            return c.error("Einsum's backward needs every operand's shape");
    }
    auto r =
        core::ops::resolveEinsum(c.node ? c.node->attrString("equation") : std::string(), shapes);
    if (!r)
        return c.error(r.status().message());
    for (size_t k = 0; k < n; ++k) {
        DView *dx = c.inputGrad(k);
        if (!dx)
            continue;
        REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dInputs"));
        std::vector<const float *> data = {dy->f()};
        for (size_t m = 0; m < n; ++m) {
            if (m == k)
                continue;
            DView *x = c.input(m);
            REMAT_RETURN_IF_ERROR(c.requireFloat(x, "Inputs"));
            data.push_back(x->f());
        }
        const core::ops::EinsumLoop l = core::ops::einsumGradLoop(*r, k, dy->shape);
        if (l.outerCount != dx->numel())
            return c.error("gradient size mismatch");
        REMAT_RETURN_IF_ERROR(runEinsum(c, l, data, dx->f()));
    }
    return Status::ok();
}

Status reduceMeanF(OpContext &c) { return reduceF(c, true); }
Status reduceSumF(OpContext &c) { return reduceF(c, false); }
Status reduceMeanB(OpContext &c) { return reduceB(c, true); }
Status reduceSumB(OpContext &c) { return reduceB(c, false); }

// ---- LRN (across channels) ----------------------------------------------------------------

Status lrnParams(const OpContext &c, const std::vector<int64_t> &x, LrnShape &p)
{
    p.size = c.attrInt("size", 0);
    if (p.size <= 0)
        return c.error("LRN needs a positive size");
    p.alpha = float(c.attrFloat("alpha", 1e-4));
    p.beta = float(c.attrFloat("beta", 0.75));
    p.bias = float(c.attrFloat("bias", 1.0));
    p.lo = (p.size - 1) / 2;
    p.hi = p.size - 1 - p.lo;
    const BatchNormShape sh = bnShape(x);
    p.n = sh.n;
    p.c = sh.c;
    p.spatial = sh.spatial;
    return Status::ok();
}

Status lrnF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "Y"));
    LrnShape p;
    REMAT_RETURN_IF_ERROR(lrnParams(c, x->shape, p));
    return c.check(lrnForward(c.rt->stream(), p, x->f(), y->f()), "LRN");
}

Status lrnB(OpContext &c)
{
    DView *x = c.input(0), *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    LrnShape p;
    REMAT_RETURN_IF_ERROR(lrnParams(c, x->shape, p));
    return c.check(lrnBackward(c.rt->stream(), p, x->f(), dy->f(), dx->f()), "LRN backward");
}

} // namespace

void addNnOps(OpTable &t)
{
    t["BatchNormalization"] = batchNormF;
    t["BatchNormalizationGrad"] = batchNormB;
    t["LayerNormalization"] = layerNormF;
    t["LayerNormalizationGrad"] = layerNormB;
    t["GroupNormalization"] = groupNormF;
    t["GroupNormalizationGrad"] = groupNormB;
    t["InstanceNormalization"] = groupNormF;
    t["InstanceNormalizationGrad"] = groupNormB;
    t["Softmax"] = softmaxF;
    t["SoftmaxGrad"] = softmaxB;
    t["LogSoftmax"] = logSoftmaxF;
    t["WeightNorm"] = weightNormF;
    t["Variance"] = varianceF;
    t["VarianceGrad"] = varianceB;
    t["WeightNormGrad"] = weightNormB;
    t["LogSoftmaxGrad"] = logSoftmaxB;
    t["MaxPool"] = maxPoolF;
    t["MaxPoolGrad"] = maxPoolB;
    t["AveragePool"] = avgPoolF;
    t["AveragePoolGrad"] = avgPoolB;
    t["LRN"] = lrnF;
    t["LRNGrad"] = lrnB;
    t["ReduceMean"] = reduceMeanF;
    t["ReduceMeanGrad"] = reduceMeanB;
    t["ReduceSum"] = reduceSumF;
    t["ReduceSumSquare"] = [](OpContext &c) { return reduceNormF(c, Norm::SumSquare); };
    t["ReduceSumSquareGrad"] = [](OpContext &c) { return reduceNormB(c, Norm::SumSquare); };
    t["ReduceL2"] = [](OpContext &c) { return reduceNormF(c, Norm::L2); };
    t["ReduceL2Grad"] = [](OpContext &c) { return reduceNormB(c, Norm::L2); };
    t["ReduceL1"] = [](OpContext &c) { return reduceNormF(c, Norm::L1); };
    t["ReduceL1Grad"] = [](OpContext &c) { return reduceNormB(c, Norm::L1); };
    t["ReduceSumGrad"] = reduceSumB;
    t["ReduceMax"] = [](OpContext &c) { return reduceExtremumF(c, true); };
    t["ReduceMaxGrad"] = reduceExtremumB;
    t["ArgMax"] = [](OpContext &c) { return argExtremumF(c, true); };
    t["ArgMin"] = [](OpContext &c) { return argExtremumF(c, false); };
    t["TopK"] = topKF;
    t["Einsum"] = einsumF;
    t["EinsumGrad"] = einsumB;
    t["TopKGrad"] = topKB;
    t["ReduceMin"] = [](OpContext &c) { return reduceExtremumF(c, false); };
    t["ReduceMinGrad"] = reduceExtremumB;
    t["GlobalAveragePool"] = globalAvgF;
    t["GlobalAveragePoolGrad"] = globalAvgB;
}

} // namespace remat::gpu
