// Data-movement ops: Reshape family (copies), Transpose, Concat, Split, Slice, Gather, Expand, Tile,
// Pad (constant, edge, reflect and wrap) and their gradients. All go through the strided-copy kernel.
#include "gpu/kernels/elementwise.h"
#include "gpu/kernels/indexing.h"
#include "gpu/kernels/normalization.h"
#include "gpu/ops_internal.h"

#include "core/exec/index_maps.h"
#include "core/exec/loss_terms.h"
#include "core/exec/random_like.h"
#include "core/exec/slice_geometry.h"
#include "core/ops/space_depth.h"

#include "core/ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace remat::gpu {
namespace {

using core::Expected;
using core::Status;
using core::exec::SliceGeometry;
using namespace kernels;

int esize(const DView &v) { return static_cast<int>(core::ir::elementSize(v.dtype)); }

/// dst[dstBase + sum idx*dstStrides] = src[srcBase + sum idx*srcStrides] over `dims`.
Status strided(const OpContext &c, const std::vector<int64_t> &dims, const void *src,
               int64_t srcBase, const std::vector<int64_t> &srcStrides, void *dst, int64_t dstBase,
               const std::vector<int64_t> &dstStrides, int elementBytes)
{
    NdIter it;
    if (!buildIter(dims, {dstStrides, srcStrides}, it))
        return c.unsupported("tensor rank above 8");
    it.base[0] = dstBase;
    it.base[1] = srcBase;
    return c.check(stridedCopy(c.rt->stream(), it, src, dst, elementBytes), "strided copy");
}

Status copyF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reshaped"));
    if (x->numel() != y->numel())
        return c.error("element counts differ");
    return copyDevice(c, y->data, x->data, y->numel() * esize(*y));
}

Status copyB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    if (dx->numel() != dy->numel())
        return c.error("element counts differ");
    return copyDevice(c, dx->data, dy->data, dx->numel() * esize(*dx));
}

std::vector<int64_t> transposePerm(const OpContext &c, size_t rank)
{
    std::vector<int64_t> perm = c.attrInts("perm");
    if (perm.empty()) {
        perm.resize(rank);
        for (size_t i = 0; i < rank; ++i)
            perm[i] = int64_t(rank - 1 - i);
    }
    return perm;
}

Status permute(const OpContext &c, const DView &x, DView &y, const std::vector<int64_t> &perm)
{
    if (perm.size() != x.shape.size())
        return c.error("perm length differs from the rank");
    const std::vector<int64_t> xs = contiguousStrides(x.shape);
    std::vector<int64_t> dims(perm.size()), src(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] < 0 || size_t(perm[i]) >= perm.size())
            return c.error("perm out of range");
        dims[i] = x.shape[size_t(perm[i])];
        src[i] = xs[size_t(perm[i])];
    }
    if (numelOf(dims) != y.numel())
        return c.error("output shape mismatch");
    return strided(c, dims, x.data, 0, src, y.data, 0, contiguousStrides(dims), esize(x));
}

Status transposeF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "transposed"));
    return permute(c, *x, *y, transposePerm(c, x->shape.size()));
}

Status transposeB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dtransposed"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    const std::vector<int64_t> perm = transposePerm(c, dx->shape.size());
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] < 0 || size_t(perm[i]) >= perm.size())
            return c.error("perm out of range");
        inv[size_t(perm[i])] = int64_t(i);
    }
    return permute(c, *dy, *dx, inv);
}

/// DepthToSpace / SpaceToDepth: one permutation of a 6-D view (core/ops/space_depth.h), the
/// backward its inverse.
Status spaceDepth(OpContext &c, bool backward)
{
    DView *x = backward ? c.outputGrad(0) : c.input(0),
          *y = backward ? c.inputGrad(0) : c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, backward ? "doutput" : "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, backward ? "dinput" : "output"));
    const std::string type = c.node ? c.node->opType : std::string();
    auto v = core::ops::spaceDepthView(type, c.attrString("mode", "DCR"), c.attrInt("blocksize", 0),
                                       backward ? y->shape : x->shape);
    if (!v)
        return c.error(v.status().message());
    DView from = *x;
    std::vector<int64_t> permuted(6), inverse(6);
    for (size_t i = 0; i < 6; ++i) {
        permuted[i] = v->in[size_t(v->perm[i])];
        inverse[size_t(v->perm[i])] = int64_t(i);
    }
    from.shape = backward ? permuted : v->in;
    return permute(c, from, *y, backward ? inverse : v->perm);
}

// Copies `part` (shape with `len` at `axis`) into / out of `whole` at offset `at` along `axis`.
Status copyAlongAxis(const OpContext &c, const DView &whole, int64_t axis, int64_t at,
                     const void *partSrc, void *partDst, const std::vector<int64_t> &partShape,
                     bool intoWhole)
{
    const std::vector<int64_t> ws = contiguousStrides(whole.shape);
    const std::vector<int64_t> ps = contiguousStrides(partShape);
    const int64_t base = at * ws[size_t(axis)];
    if (intoWhole)
        return strided(c, partShape, partSrc, 0, ps, whole.data, base, ws, esize(whole));
    return strided(c, partShape, whole.data, base, ws, partDst, 0, ps, esize(whole));
}

Status concatF(OpContext &c)
{
    DView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "concat_result"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(y->shape.size())))
        return c.error("axis out of range");
    int64_t at = 0;
    for (DView *x : c.in) {
        REMAT_RETURN_IF_ERROR(c.require(x, "inputs"));
        REMAT_RETURN_IF_ERROR(copyAlongAxis(c, *y, axis, at, x->data, nullptr, x->shape, true));
        at += x->shape[size_t(axis)];
    }
    if (at != y->shape[size_t(axis)])
        return c.error("input sizes do not add up to the output");
    return Status::ok();
}

Status concatB(OpContext &c)
{
    DView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dconcat_result"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(dy->shape.size())))
        return c.error("axis out of range");
    int64_t at = 0;
    const size_t slots = std::max(c.inShapes.size(), c.dIn.size());
    for (size_t k = 0; k < slots; ++k) {
        int64_t part = 0;
        if (DView *dx = c.inputGrad(k))
            part = dx->shape[size_t(axis)];
        else if (k < c.inShapes.size() && c.inShapes[k].size() > size_t(axis))
            part = c.inShapes[k][size_t(axis)];
        else
            return c.error("backward needs the forward input shapes");
        if (DView *dx = c.inputGrad(k))
            REMAT_RETURN_IF_ERROR(
                copyAlongAxis(c, *dy, axis, at, nullptr, dx->data, dx->shape, false));
        at += part;
    }
    return Status::ok();
}

Status splitF(OpContext &c)
{
    DView *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(x->shape.size())))
        return c.error("axis out of range");
    int64_t at = 0;
    for (size_t k = 0; k < std::max(c.out.size(), c.outShapes.size()); ++k) {
        int64_t part = 0;
        if (DView *y = c.output(k))
            part = y->shape[size_t(axis)];
        else if (k < c.outShapes.size())
            part = c.outShapes[k][size_t(axis)];
        if (DView *y = c.output(k))
            REMAT_RETURN_IF_ERROR(
                copyAlongAxis(c, *x, axis, at, nullptr, y->data, y->shape, false));
        at += part;
    }
    return Status::ok();
}

Status splitB(OpContext &c)
{
    DView *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(dx->shape.size())))
        return c.error("axis out of range");
    int64_t at = 0;
    for (size_t k = 0; k < std::max(c.dOut.size(), c.outShapes.size()); ++k) {
        DView *dy = c.outputGrad(k);
        int64_t part = 0;
        if (dy)
            part = dy->shape[size_t(axis)];
        else if (k < c.outShapes.size())
            part = c.outShapes[k][size_t(axis)];
        if (dy) {
            REMAT_RETURN_IF_ERROR(
                copyAlongAxis(c, *dx, axis, at, dy->data, nullptr, dy->shape, true));
        } else {
            // an unused output has a zero gradient
            std::vector<int64_t> shape = dx->shape;
            shape[size_t(axis)] = part;
            const std::vector<int64_t> ws = contiguousStrides(dx->shape);
            const int64_t outer = numelOf({shape.begin(), shape.begin() + axis});
            const int64_t row = part * ws[size_t(axis)];
            for (int64_t o = 0; o < outer && row > 0; ++o)
                REMAT_RETURN_IF_ERROR(
                    zeroDevice(c,
                               dx->f() + o * dx->shape[size_t(axis)] * ws[size_t(axis)] +
                                   at * ws[size_t(axis)],
                               row * 4));
        }
        at += part;
    }
    return Status::ok();
}

Status sliceF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(SliceGeometry g, c.sliceGeometryFor(x->shape));
    if (numelOf(g.outShape) != y->numel())
        return c.error("output shape mismatch");
    return strided(c, g.outShape, x->data, g.offset, g.strides, y->data, 0,
                   contiguousStrides(g.outShape), esize(*x));
}

Status sliceB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(SliceGeometry g, c.sliceGeometryFor(dx->shape));
    REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
    // distinct output positions map to distinct input positions: a plain scatter
    return strided(c, g.outShape, dy->data, 0, contiguousStrides(g.outShape), dx->data, g.offset,
                   g.strides, 4);
}

Status gatherGeometry(const OpContext &c, const std::vector<int64_t> &dataShape, int64_t &outer,
                      int64_t &dim, int64_t &inner)
{
    const auto g = core::exec::gatherGeometry(c.attrInt("axis", 0), dataShape);
    if (!g)
        return c.error(g.status().message());
    outer = g->outer;
    dim = g->dim;
    inner = g->inner;
    return Status::ok();
}

Expected<const long long *> int64Indices(OpContext &c, const DView &idx)
{
    if (idx.dtype == core::ir::DataType::Int64)
        return static_cast<const long long *>(idx.data);
    if (idx.dtype != core::ir::DataType::Int32)
        return c.unsupported("indices dtype " + core::ir::dataTypeName(idx.dtype));
    REMAT_ASSIGN_OR_RETURN(void *tmp, c.rt->scratch(idx.numel() * 8));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> host, c.rt->hostInts(idx));
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(tmp, host.data(), idx.numel() * 8));
    REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(c.rt->stream()), "indices upload"));
    return static_cast<const long long *>(tmp);
}

Status gatherF(OpContext &c)
{
    DView *x = c.input(0), *idx = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    int64_t outer, dim, inner;
    REMAT_RETURN_IF_ERROR(gatherGeometry(c, x->shape, outer, dim, inner));
    REMAT_ASSIGN_OR_RETURN(const long long *ids, int64Indices(c, *idx));
    // Range check on the host (indices are small constant tensors in practice): the CPU
    // reference refuses out-of-range indices, so does this kernel.
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> hostIds, c.rt->hostInts(*idx));
    for (int64_t i : hostIds)
        if (i < -dim || i >= dim)
            return c.error("index out of range");
    return c.check(gatherForward(c.rt->stream(), x->data, ids, y->data, outer, dim, inner,
                                 idx->numel(), esize(*x), nullptr),
                   "gather");
}

Status gatherB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *idx = c.input(1), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    int64_t outer, dim, inner;
    REMAT_RETURN_IF_ERROR(gatherGeometry(c, dx->shape, outer, dim, inner));
    REMAT_ASSIGN_OR_RETURN(const long long *ids, int64Indices(c, *idx));
    return c.check(
        gatherBackward(c.rt->stream(), dy->f(), ids, dx->f(), outer, dim, inner, idx->numel()),
        "gather backward");
}

Status expandF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (x->shape.size() > y->shape.size())
        return c.error("output rank below input rank");
    return strided(c, y->shape, x->data, 0, broadcastStrides(x->shape, y->shape), y->data, 0,
                   contiguousStrides(y->shape), esize(*x));
}

Status expandB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dinput"));
    return reduceToShape(c, dy->f(), dy->shape, dx->f(), dx->shape);
}

/// Tile through its broadcast view (core/exec/index_maps.h tileView), as the CPU reference.
Expected<core::exec::TileView> tileViewOf(OpContext &c, const std::vector<int64_t> &inShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "repeats"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, c.rt->hostInts(*c.input(1)));
    auto v = core::exec::tileView(inShape, repeats);
    if (!v)
        return c.error(v.status().message());
    return v;
}

Status tileF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(core::exec::TileView v, tileViewOf(c, x->shape));
    if (numelOf(v.expanded) != y->numel())
        return c.error("output size differs from input size x repeats");
    return strided(c, v.expanded, x->data, 0, broadcastStrides(v.source, v.expanded), y->data, 0,
                   contiguousStrides(v.expanded), esize(*x));
}

Status tileB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dinput"));
    REMAT_ASSIGN_OR_RETURN(core::exec::TileView v, tileViewOf(c, dx->shape));
    if (numelOf(v.expanded) != dy->numel())
        return c.error("output gradient size differs from input size x repeats");
    return reduceToShape(c, dy->f(), v.expanded, dx->f(), v.source);
}

/// CumSum (core/exec/index_maps.h ScanGeometry); the backward scans dy the other way.
Status cumSumRun(OpContext &c, DView *x, DView *y, bool backward)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "axis"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> axis, c.rt->hostInts(*c.input(1)));
    if (axis.size() != 1)
        return c.error("axis must hold one value");
    const bool reverse = c.attrInt("reverse", 0) != 0;
    auto g = core::exec::cumSumGeometry(x->shape, axis[0], c.attrInt("exclusive", 0) != 0,
                                        backward ? !reverse : reverse);
    if (!g)
        return c.error(g.status().message());
    int kind;
    switch (x->dtype) {
    case core::ir::DataType::Float: kind = 0; break;
    case core::ir::DataType::Int32: kind = 1; break;
    case core::ir::DataType::Int64: kind = 2; break;
    default: return c.unsupported("CumSum of float32, int32 and int64 only");
    }
    return c.check(cumSum(c.rt->stream(), x->data, y->data, g->outer, g->len, g->inner,
                          g->exclusive, g->reverse, kind),
                   "cumsum");
}

Status cumSumF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "x"));
    REMAT_RETURN_IF_ERROR(c.require(y, "y"));
    return cumSumRun(c, x, y, false);
}

Status cumSumB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dy"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dx"));
    return cumSumRun(c, dy, dx, true);
}

Expected<std::vector<int64_t>> padAmounts(OpContext &c, size_t rank)
{
    std::vector<int64_t> pads;
    if (c.input(1)) {
        REMAT_ASSIGN_OR_RETURN(pads, c.rt->hostInts(*c.input(1)));
    } else {
        pads = c.attrInts("pads");
    }
    std::vector<int64_t> axes;
    if (c.input(3)) {
        REMAT_ASSIGN_OR_RETURN(axes, c.rt->hostInts(*c.input(3)));
    }
    if (axes.empty()) {
        if (pads.size() != 2 * rank)
            return c.error("pads length differs from 2 x rank");
        return pads;
    }
    if (pads.size() != 2 * axes.size())
        return c.error("pads length differs from 2 x axes");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i];
        if (!normalizeAxis(a, int64_t(rank)))
            return c.error("axis out of range");
        full[size_t(a)] = pads[i];
        full[size_t(a) + rank] = pads[i + axes.size()];
    }
    return full;
}

// The part of x that lands inside y (negative pads crop): dims, x offset, y offset.
void padInterior(const std::vector<int64_t> &xShape, const std::vector<int64_t> &pads,
                 std::vector<int64_t> &dims, int64_t &xBase, int64_t &yBase,
                 const std::vector<int64_t> &yShape)
{
    const size_t rank = xShape.size();
    const std::vector<int64_t> xs = contiguousStrides(xShape), ys = contiguousStrides(yShape);
    dims.assign(rank, 0);
    xBase = yBase = 0;
    for (size_t d = 0; d < rank; ++d) {
        const int64_t b = pads[d], e = pads[d + rank];
        dims[d] =
            std::max<int64_t>(0, xShape[d] + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0));
        xBase += std::max<int64_t>(-b, 0) * xs[d];
        yBase += std::max<int64_t>(b, 0) * ys[d];
    }
}

/// Trilu and its gradient: the same triangle mask (the CPU reference: core/exec/cpu/kernels_shape.cpp).
Status triluApply(OpContext &c, const DView &x, DView &y)
{
    if (x.shape.size() < 2)
        return c.error("rank below 2");
    int64_t k = 0;
    if (const DView *kv = c.input(1); kv && kv->numel() > 0) {
        REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> hk, c.rt->hostInts(*kv));
        k = hk.empty() ? 0 : hk[0];
    }
    const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape[x.shape.size() - 1];
    const int64_t mats = rows * cols > 0 ? x.numel() / (rows * cols) : 0;
    return c.check(triluMask(c.rt->stream(), x.data, y.data, mats, rows, cols, k,
                             c.attrInt("upper", 1) != 0, int(core::ir::elementSize(x.dtype))),
                   "trilu");
}

Status triluF(OpContext &c)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(0), "input"));
    REMAT_RETURN_IF_ERROR(c.require(c.output(0), "output"));
    return triluApply(c, *c.input(0), *c.output(0));
}

Status triluB(OpContext &c)
{
    REMAT_RETURN_IF_ERROR(c.requireFloat(c.outputGrad(0), "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(c.inputGrad(0), "dinput"));
    return triluApply(c, *c.outputGrad(0), *c.inputGrad(0));
}

/// Copies a host offset table to device scratch (valid until the op returns).
Expected<const long long *> uploadOffsets(OpContext &c, const std::vector<int64_t> &host)
{
    if (host.empty())
        return static_cast<const long long *>(nullptr);
    const int64_t bytes = int64_t(host.size()) * 8;
    REMAT_ASSIGN_OR_RETURN(void *dev, c.rt->scratch(bytes));
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(dev, host.data(), bytes));
    REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(c.rt->stream()), "offsets upload"));
    return static_cast<const long long *>(dev);
}

/// RandomNormalLike / RandomUniformLike: drawn on the host with the CPU reference's generator
/// from the per-op seed (as Dropout's mask), so both backends and every recompute agree.
Status randomLikeF(OpContext &c, bool normal)
{
    DView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "output"));
    const std::vector<float> v =
        normal ? core::exec::randomLike(c.seed, y->numel(), true, c.attrFloat("mean", 0.0),
                                        c.attrFloat("scale", 1.0))
               : core::exec::randomLike(c.seed, y->numel(), false, c.attrFloat("low", 0.0),
                                        c.attrFloat("high", 1.0));
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(y->data, v.data(), y->numel() * 4));
    return c.check(cudaStreamSynchronize(c.rt->stream()), "random values upload");
}

/// Copies host floats to device scratch (valid until the op returns).
Expected<const float *> uploadFloats(OpContext &c, const std::vector<double> &host)
{
    if (host.empty())
        return static_cast<const float *>(nullptr);
    const std::vector<float> f(host.begin(), host.end());
    const int64_t bytes = int64_t(f.size()) * 4;
    REMAT_ASSIGN_OR_RETURN(void *dev, c.rt->scratch(bytes));
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(dev, f.data(), bytes));
    REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(c.rt->stream()), "upload"));
    return static_cast<const float *>(dev);
}

// ---- SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss (core/exec/loss_terms.h) ---------------

Expected<core::exec::LossTerms> lossTermsOf(OpContext &c, const std::vector<int64_t> &scoresShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "labels"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> labels, c.rt->hostInts(*c.input(1)));
    std::optional<std::vector<double>> weights;
    if (const DView *w = c.input(2)) {
        REMAT_ASSIGN_OR_RETURN(weights, c.rt->hostDoubles(*w));
    }
    std::optional<int64_t> ignore;
    if (c.hasAttr("ignore_index"))
        ignore = c.attrInt("ignore_index", 0);
    auto t = core::exec::lossTerms(scoresShape, labels, weights ? &*weights : nullptr, ignore,
                                   c.attrString("reduction", "mean"));
    if (!t)
        return c.error(t.status().message());
    return t;
}

/// The log-probabilities (SCE: log_softmax into output 1 or scratch), then each sample's
/// weighted pick summed (mean / sum: one weighted gather of every pick) or kept (none).
Status lossF(OpContext &c, bool softmax)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "scores"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "loss"));
    REMAT_ASSIGN_OR_RETURN(core::exec::LossTerms t, lossTermsOf(c, x->shape));
    const float *logp = x->f();
    if (softmax) {
        float *dst = nullptr;
        if (DView *lp = c.output(1)) {
            REMAT_RETURN_IF_ERROR(c.requireFloat(lp, "log_prob"));
            dst = lp->f();
        } else {
            REMAT_ASSIGN_OR_RETURN(void *tmp, c.rt->scratch(x->numel() * 4));
            dst = static_cast<float *>(tmp);
        }
        REMAT_RETURN_IF_ERROR(
            c.check(softmaxForward(c.rt->stream(), x->f(), dst, t.outer, t.classes, t.inner, true),
                    "log_softmax"));
        logp = dst;
    }
    const bool none = t.reduction == core::exec::LossTerms::Reduction::None;
    const int64_t count = int64_t(t.offset.size());
    if (y->numel() != (none ? count : 1))
        return c.error("loss size mismatch");
    std::vector<double> coef(t.weight.size());
    for (size_t k = 0; k < coef.size(); ++k)
        coef[k] = -t.weight[k] /
                  (t.reduction == core::exec::LossTerms::Reduction::Mean ? t.weightSum : 1.0);
    REMAT_ASSIGN_OR_RETURN(const long long *off, uploadOffsets(c, t.offset));
    REMAT_ASSIGN_OR_RETURN(const float *w, uploadFloats(c, coef));
    if (count == 0)
        return zeroDevice(c, y->data, y->numel() * 4);
    return c.check(none ? gatherWeighted(c.rt->stream(), logp, off, w, y->f(), count, 1)
                        : gatherWeighted(c.rt->stream(), logp, off, w, y->f(), 1, count),
                   "loss");
}

Status lossB(OpContext &c, bool softmax)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dloss"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dscores"));
    REMAT_ASSIGN_OR_RETURN(core::exec::LossTerms t, lossTermsOf(c, dx->shape));
    REMAT_ASSIGN_OR_RETURN(std::vector<double> dyHost, c.rt->hostDoubles(*dy));
    const float *logp = nullptr;
    if (softmax) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(c.output(1), "log_prob"));
        logp = c.output(1)->f();
    }
    REMAT_ASSIGN_OR_RETURN(const long long *labels, uploadOffsets(c, t.label));
    REMAT_ASSIGN_OR_RETURN(const float *scale,
                           uploadFloats(c, core::exec::perSampleGradient(t, dyHost)));
    if (t.label.empty())
        return zeroDevice(c, dx->data, dx->numel() * 4);
    return c.check(
        lossBackward(c.rt->stream(), logp, labels, scale, dx->f(), t.outer, t.classes, t.inner),
        "loss backward");
}

/// Resize / Upsample: the maps are the CPU reference's (core/exec/index_maps.h), as are the
/// opset forms (scales at input 1 of Resize-10 and Upsample, at 2 from Resize-11).
Expected<std::vector<double>> resizeScales(OpContext &c, size_t rank)
{
    const size_t inputs = c.node ? c.node->inputs.size() : 0;
    const bool early = (c.node && c.node->opType == "Upsample") || inputs <= 2;
    std::vector<double> scales;
    if (const DView *sv = c.input(early ? 1 : 2); sv && sv->numel() == int64_t(rank)) {
        REMAT_ASSIGN_OR_RETURN(scales, c.rt->hostDoubles(*sv));
    }
    return scales;
}

std::string resizeCoordinates(const OpContext &c)
{
    return core::exec::resizeCoordinateMode(c.node ? c.node->opType : "Resize",
                                            c.node ? c.node->inputs.size() : 0,
                                            c.attrString("coordinate_transformation_mode", ""));
}

/// Linear and cubic are gathers with weights; nearest (which ignores antialias) a plain gather.
bool resizeLinear(const OpContext &c)
{
    const std::string mode = c.attrString("mode", "nearest");
    return mode == "linear" || mode == "bilinear" || mode == "cubic";
}

Expected<std::vector<int64_t>> resizeMap(OpContext &c, const std::vector<int64_t> &inShape,
                                         const std::vector<int64_t> &outShape)
{
    const core::exec::NearestResizeAttrs attrs{c.attrString("mode", "nearest"),
                                               resizeCoordinates(c),
                                               c.attrString("nearest_mode", "round_prefer_floor")};
    REMAT_ASSIGN_OR_RETURN(std::vector<double> scales, resizeScales(c, inShape.size()));
    auto map = core::exec::nearestResizeMap(attrs, scales, inShape, outShape);
    if (!map)
        return c.error(map.status().message());
    return map;
}

/// The linear / cubic map on the device: offsets then weights in one scratch upload.
struct DeviceTaps
{
    const long long *offsets = nullptr;
    const float *weights = nullptr;
    int64_t taps = 1;
};

Expected<DeviceTaps> linearTaps(OpContext &c, const std::vector<int64_t> &inShape,
                                const std::vector<int64_t> &outShape)
{
    REMAT_ASSIGN_OR_RETURN(std::vector<double> scales, resizeScales(c, inShape.size()));
    core::exec::ResizeFilter filter;
    filter.mode = c.attrString("mode", "linear");
    filter.coordinateMode = resizeCoordinates(c);
    filter.cubicCoeffA = c.attrFloat("cubic_coeff_a", -0.75);
    filter.excludeOutside = c.attrInt("exclude_outside", 0) != 0;
    filter.antialias = c.attrInt("antialias", 0) != 0;
    auto m = core::exec::weightedResizeMap(filter, scales, inShape, outShape);
    if (!m)
        return c.error(m.status().message());
    const int64_t count = int64_t(m->offsets.size());
    DeviceTaps d;
    d.taps = m->taps;
    if (count == 0)
        return d;
    REMAT_ASSIGN_OR_RETURN(void *dev, c.rt->scratch(count * 12));
    auto *offsets = static_cast<long long *>(dev);
    auto *weights = reinterpret_cast<float *>(offsets + count);
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(offsets, m->offsets.data(), count * 8));
    REMAT_RETURN_IF_ERROR(c.rt->uploadAsync(weights, m->weights.data(), count * 4));
    REMAT_RETURN_IF_ERROR(c.check(cudaStreamSynchronize(c.rt->stream()), "taps upload"));
    d.offsets = offsets;
    d.weights = weights;
    return d;
}

Status resizeF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    if (resizeLinear(c)) {
        REMAT_RETURN_IF_ERROR(c.requireFloat(x, "X"));
        REMAT_ASSIGN_OR_RETURN(DeviceTaps t, linearTaps(c, x->shape, y->shape));
        return c.check(gatherWeighted(c.rt->stream(), x->f(), t.offsets, t.weights, y->f(),
                                      y->numel(), t.taps),
                       "linear resize");
    }
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, resizeMap(c, x->shape, y->shape));
    REMAT_ASSIGN_OR_RETURN(const long long *dmap, uploadOffsets(c, map));
    return c.check(
        gatherByMap(c.rt->stream(), x->data, dmap, y->data, int64_t(map.size()), int(esize(*x))),
        "resize");
}

Status resizeB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "dX"));
    if (resizeLinear(c)) {
        REMAT_ASSIGN_OR_RETURN(DeviceTaps t, linearTaps(c, dx->shape, dy->shape));
        REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
        return c.check(scatterWeighted(c.rt->stream(), dy->f(), t.offsets, t.weights, dx->f(),
                                       dy->numel(), t.taps),
                       "linear resize backward");
    }
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, resizeMap(c, dx->shape, dy->shape));
    REMAT_ASSIGN_OR_RETURN(const long long *dmap, uploadOffsets(c, map));
    REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
    return c.check(scatterAddByMap(c.rt->stream(), dy->f(), dmap, dx->f(), int64_t(map.size())),
                   "resize backward");
}

/// ScatterND and ScatterElements (reduction none): slice offsets as the CPU reference computes
/// them (ScatterElements: one-element slices).
Expected<core::exec::ScatterGeometry>
scatterGeometry(OpContext &c, const std::vector<int64_t> &dataShape, const DView &indices)
{
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> ids, c.rt->hostInts(indices));
    const bool elements =
        c.node && (c.node->opType == "ScatterElements" || c.node->opType == "Scatter");
    auto g = elements
                 ? core::exec::scatterElementsGeometry(c.attrString("reduction", "none"), dataShape,
                                                       indices.shape, ids, c.attrInt("axis", 0))
                 : core::exec::scatterNDGeometry(c.attrString("reduction", "none"), dataShape,
                                                 indices.shape, ids);
    if (!g)
        return c.error(g.status().message());
    return g;
}

Status scatterNDF(OpContext &c)
{
    DView *x = c.input(0), *idx = c.input(1), *upd = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(upd, "updates"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(core::exec::ScatterGeometry g, scatterGeometry(c, x->shape, *idx));
    if (int64_t(g.offsets.size()) * g.sliceSize != upd->numel())
        return c.error("updates size does not match the indices");
    REMAT_RETURN_IF_ERROR(copyDevice(c, y->data, x->data, x->numel() * int64_t(esize(*x))));
    REMAT_ASSIGN_OR_RETURN(const long long *off, uploadOffsets(c, g.offsets));
    if (c.attrString("reduction", "none") == "add") { // torch.scatter_add: repeats add up
        REMAT_RETURN_IF_ERROR(c.requireFloat(y, "output"));
        return c.check(
            scatterAddByMap(c.rt->stream(), upd->f(), off, y->f(), int64_t(g.offsets.size())),
            "scatter add");
    }
    return c.check(copySlices(c.rt->stream(), off, int64_t(g.offsets.size()), g.sliceSize,
                              upd->data, y->data, int(esize(*y)), true),
                   "scatter");
}

Status scatterNDB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *idx = c.input(1);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_ASSIGN_OR_RETURN(core::exec::ScatterGeometry g, scatterGeometry(c, dy->shape, *idx));
    REMAT_ASSIGN_OR_RETURN(const long long *off, uploadOffsets(c, g.offsets));
    const int64_t count = int64_t(g.offsets.size());
    if (DView *du = c.inputGrad(2))
        REMAT_RETURN_IF_ERROR(c.check(
            copySlices(c.rt->stream(), off, count, g.sliceSize, dy->data, du->data, 4, false),
            "scatter backward (updates)"));
    if (DView *dx = c.inputGrad(0)) {
        REMAT_RETURN_IF_ERROR(copyDevice(c, dx->data, dy->data, dy->numel() * 4));
        if (c.attrString("reduction", "none") != "add")
            REMAT_RETURN_IF_ERROR(
                c.check(zeroSlices(c.rt->stream(), off, count, g.sliceSize, dx->f()),
                        "scatter backward (data)"));
    }
    return Status::ok();
}

/// GatherElements: the CPU reference's element map (core/exec/index_maps.h), gathered as
/// Resize's nearest map is; the backward scatter-adds.
Expected<const long long *> gatherElementsMap(OpContext &c, const std::vector<int64_t> &dataShape,
                                              int64_t expected)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "indices"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> ids, c.rt->hostInts(*c.input(1)));
    auto map =
        core::exec::elementsAlongAxis(dataShape, c.input(1)->shape, ids, c.attrInt("axis", 0));
    if (!map)
        return c.error(map.status().message());
    if (int64_t(map->size()) != expected)
        return c.error("output size differs from the indices'");
    return uploadOffsets(c, *map);
}

Status gatherElementsF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(const long long *map, gatherElementsMap(c, x->shape, y->numel()));
    return c.check(gatherByMap(c.rt->stream(), x->data, map, y->data, y->numel(), int(esize(*x))),
                   "gather elements");
}

Status gatherElementsB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(const long long *map, gatherElementsMap(c, dx->shape, dy->numel()));
    REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
    return c.check(scatterAddByMap(c.rt->stream(), dy->f(), map, dx->f(), dy->numel()),
                   "gather elements backward");
}

Status padF(OpContext &c)
{
    DView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(x, "data"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(y, "output"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, padAmounts(c, x->shape.size()));
    if (const std::string mode = c.attrString("mode", "constant"); mode != "constant") {
        // edge / reflect / wrap: every output element reads one input element (core/exec/index_maps.h)
        auto map = core::exec::padSourceMap(mode, pads, x->shape, y->shape);
        if (!map)
            return c.unsupported(map.status().message());
        REMAT_ASSIGN_OR_RETURN(const long long *dmap, uploadOffsets(c, *map));
        return c.check(gatherByMap(c.rt->stream(), x->data, dmap, y->data, int64_t(map->size()), 4),
                       "pad");
    }
    double value = 0;
    if (c.input(2) && c.input(2)->numel() > 0) {
        REMAT_ASSIGN_OR_RETURN(std::vector<double> v, c.rt->hostDoubles(*c.input(2)));
        value = v[0];
    }
    REMAT_RETURN_IF_ERROR(
        c.check(fillFloat(c.rt->stream(), y->f(), float(value), y->numel()), "fill"));
    std::vector<int64_t> dims;
    int64_t xBase, yBase;
    padInterior(x->shape, pads, dims, xBase, yBase, y->shape);
    return strided(c, dims, x->data, xBase, contiguousStrides(x->shape), y->data, yBase,
                   contiguousStrides(y->shape), 4);
}

Status padB(OpContext &c)
{
    DView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.requireFloat(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.requireFloat(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, padAmounts(c, dx->shape.size()));
    REMAT_RETURN_IF_ERROR(zeroDevice(c, dx->data, dx->numel() * 4));
    if (const std::string mode = c.attrString("mode", "constant"); mode != "constant") {
        auto map = core::exec::padSourceMap(mode, pads, dx->shape, dy->shape);
        if (!map)
            return c.unsupported(map.status().message());
        REMAT_ASSIGN_OR_RETURN(const long long *dmap, uploadOffsets(c, *map));
        return c.check(
            scatterAddByMap(c.rt->stream(), dy->f(), dmap, dx->f(), int64_t(map->size())),
            "pad backward");
    }
    std::vector<int64_t> dims;
    int64_t xBase, yBase;
    padInterior(dx->shape, pads, dims, xBase, yBase, dy->shape);
    return strided(c, dims, dy->data, yBase, contiguousStrides(dy->shape), dx->data, xBase,
                   contiguousStrides(dx->shape), 4);
}

} // namespace

void addShapeOps(OpTable &t)
{
    for (const char *type : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
        t[type] = copyF;
        t[std::string(type) + "Grad"] = copyB;
    }
    t["Transpose"] = transposeF;
    t["DepthToSpace"] = [](OpContext &c) { return spaceDepth(c, false); };
    t["DepthToSpaceGrad"] = [](OpContext &c) { return spaceDepth(c, true); };
    t["SpaceToDepth"] = [](OpContext &c) { return spaceDepth(c, false); };
    t["SpaceToDepthGrad"] = [](OpContext &c) { return spaceDepth(c, true); };
    t["TransposeGrad"] = transposeB;
    t["Concat"] = concatF;
    t["ConcatGrad"] = concatB;
    t["Split"] = splitF;
    t["SplitGrad"] = splitB;
    t["Slice"] = sliceF;
    t["SliceGrad"] = sliceB;
    t["Gather"] = gatherF;
    t["GatherGrad"] = gatherB;
    t["Expand"] = expandF;
    t["ExpandGrad"] = expandB;
    t["Tile"] = tileF;
    t["TileGrad"] = tileB;
    t["CumSum"] = cumSumF;
    t["CumSumGrad"] = cumSumB;
    t["Pad"] = padF;
    t["Trilu"] = triluF;
    t["Resize"] = resizeF;
    t["ResizeGrad"] = resizeB;
    t["Upsample"] = resizeF;
    t["UpsampleGrad"] = resizeB;
    t["ScatterND"] = scatterNDF;
    t["ScatterNDGrad"] = scatterNDB;
    t["RandomNormalLike"] = [](OpContext &c) { return randomLikeF(c, true); };
    t["RandomUniformLike"] = [](OpContext &c) { return randomLikeF(c, false); };
    t["SoftmaxCrossEntropyLoss"] = [](OpContext &c) { return lossF(c, true); };
    t["SoftmaxCrossEntropyLossGrad"] = [](OpContext &c) { return lossB(c, true); };
    t["NegativeLogLikelihoodLoss"] = [](OpContext &c) { return lossF(c, false); };
    t["NegativeLogLikelihoodLossGrad"] = [](OpContext &c) { return lossB(c, false); };
    t["ScatterElements"] = scatterNDF;
    t["ScatterElementsGrad"] = scatterNDB;
    t["Scatter"] = scatterNDF;
    t["ScatterGrad"] = scatterNDB;
    t["GatherElements"] = gatherElementsF;
    t["GatherElementsGrad"] = gatherElementsB;
    t["TriluGrad"] = triluB;
    t["PadGrad"] = padB;
}

} // namespace remat::gpu
