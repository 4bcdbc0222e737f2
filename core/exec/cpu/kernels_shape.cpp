// Data-movement kernels (any dtype, moved as bytes): Reshape family, Transpose, Concat, Split,
// Slice, Gather, Expand, Tile, Pad, Trilu, ScatterND, Resize / Upsample (nearest moves bytes;
// linear, float32, weighs two taps per resized dim), the constant producers
// (Constant, ConstantOfShape, Range, Shape) and their gradients; CumSum (a scan, floats and ints).
#include "core/exec/cpu/kernel_util.h"
#include "core/exec/index_maps.h"
#include "core/exec/random_like.h"
#include "core/exec/slice_geometry.h"
#include "core/ops/space_depth.h"

#include "core/ir/tensor_data.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace remat::core::exec::cpu {
namespace {

using ir::DataType;

size_t esize(const KView &v) { return static_cast<size_t>(ir::elementSize(v.dtype)); }

/// dst[contiguous over outShape] = src[offset + sum idx*srcStrides] (element strides), elements of
/// `es` bytes. Inner loop over the last dim.
void gatherStrided(const std::byte *src, int64_t offset, const std::vector<int64_t> &srcStrides,
                   std::byte *dst, const std::vector<int64_t> &outShape, size_t es)
{
    const int64_t total = numelOf(outShape);
    if (total == 0)
        return;
    const size_t rank = outShape.size();
    if (rank == 0) {
        std::memcpy(dst, src + offset * int64_t(es), es);
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = outShape[rank - 1], innerStride = srcStrides[rank - 1];
    int64_t base = offset;
    for (int64_t o = 0; o < total; o += inner) {
        if (innerStride == 1) {
            std::memcpy(dst + o * int64_t(es), src + base * int64_t(es), size_t(inner) * es);
        } else {
            for (int64_t i = 0; i < inner; ++i)
                std::memcpy(dst + (o + i) * int64_t(es),
                            src + (base + i * innerStride) * int64_t(es), es);
        }
        for (size_t d = rank - 1; d-- > 0;) {
            ++idx[d];
            base += srcStrides[d];
            if (idx[d] < outShape[d])
                break;
            base -= srcStrides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

/// The reverse: dst[offset + sum idx*dstStrides] = src[contiguous over shape] (float add or set).
void scatterStridedFloat(const float *src, const std::vector<int64_t> &shape, float *dst,
                         int64_t offset, const std::vector<int64_t> &dstStrides, bool accumulate)
{
    const int64_t total = numelOf(shape);
    if (total == 0)
        return;
    const size_t rank = shape.size();
    if (rank == 0) {
        dst[offset] = accumulate ? dst[offset] + src[0] : src[0];
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = shape[rank - 1], innerStride = dstStrides[rank - 1];
    int64_t base = offset;
    for (int64_t o = 0; o < total; o += inner) {
        for (int64_t i = 0; i < inner; ++i) {
            float &d = dst[base + i * innerStride];
            d = accumulate ? d + src[o + i] : src[o + i];
        }
        for (size_t d = rank - 1; d-- > 0;) {
            ++idx[d];
            base += dstStrides[d];
            if (idx[d] < shape[d])
                break;
            base -= dstStrides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

void zeroView(KView &v) { std::memset(v.data, 0, size_t(v.numel()) * esize(v)); }

// ---- reshape family: the bytes do not move ------------------------------------------------

Status copyForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "reshaped"));
    if (x->numel() != y->numel())
        return c.error("element counts differ");
    copyBytes(*x, *y);
    return Status::ok();
}

Status copyGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    if (dx->numel() != dy->numel())
        return c.error("element counts differ");
    copyBytes(*dy, *dx);
    return Status::ok();
}

Status shapeForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "shape"));
    std::vector<int64_t> dims =
        x ? x->shape : (c.inShapes.empty() ? std::vector<int64_t>{} : c.inShapes[0]);
    const int64_t rank = int64_t(dims.size());
    int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    if (y->numel() != end - start)
        return c.error("output size mismatch");
    for (int64_t i = start; i < end; ++i)
        y->as<int64_t>()[i - start] = dims[size_t(i)];
    return Status::ok();
}

// ---- Transpose ----------------------------------------------------------------------------

std::vector<int64_t> transposePerm(const KernelContext &c, size_t rank)
{
    std::vector<int64_t> perm = c.attrInts("perm");
    if (perm.empty()) {
        perm.resize(rank);
        for (size_t i = 0; i < rank; ++i)
            perm[i] = int64_t(rank - 1 - i);
    }
    return perm;
}

Status permute(const KernelContext &c, const KView &x, KView &y, const std::vector<int64_t> &perm)
{
    if (perm.size() != x.rank())
        return c.error("perm length differs from the rank");
    const std::vector<int64_t> xs = rowMajorStrides(x.shape);
    std::vector<int64_t> srcStrides(perm.size());
    std::vector<int64_t> outShape(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
        srcStrides[i] = xs[size_t(perm[i])];
        outShape[i] = x.shape[size_t(perm[i])];
    }
    if (outShape != y.shape)
        return c.error("output shape mismatch");
    gatherStrided(x.data, 0, srcStrides, y.data, outShape, esize(x));
    return Status::ok();
}

Status transposeForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "transposed"));
    return permute(c, *x, *y, transposePerm(c, x->rank()));
}

Status transposeGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dtransposed"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    const std::vector<int64_t> perm = transposePerm(c, dx->rank());
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
        inverse[size_t(perm[i])] = int64_t(i);
    return permute(c, *dy, *dx, inverse);
}

// ---- DepthToSpace / SpaceToDepth ----------------------------------------------------------

/// One permutation of a 6-D view (core/ops/space_depth.h); the backward runs the inverse.
Status spaceDepth(KernelContext &c, bool backward)
{
    KView *x = backward ? c.outputGrad(0) : c.input(0),
          *y = backward ? c.inputGrad(0) : c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, backward ? "doutput" : "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, backward ? "dinput" : "output"));
    const std::string type = c.node ? c.node->opType : std::string();
    auto v = ops::spaceDepthView(type, c.attrString("mode", "DCR"), c.attrInt("blocksize", 0),
                                 backward ? y->shape : x->shape);
    if (!v)
        return c.error(v.status().message());
    KView from = *x, to = *y;
    std::vector<int64_t> permuted(6), inverse(6);
    for (size_t i = 0; i < 6; ++i) {
        permuted[i] = v->in[size_t(v->perm[i])];
        inverse[size_t(v->perm[i])] = int64_t(i);
    }
    if (!backward) {
        from.shape = v->in;
        to.shape = permuted;
        return permute(c, from, to, v->perm);
    }
    from.shape = permuted;
    to.shape = v->in;
    return permute(c, from, to, inverse);
}

// ---- Concat / Split -----------------------------------------------------------------------

/// Copies a block [outer, part, inner] from src into dst [outer, total, inner] at `at` (or back).
void blockCopy(const std::byte *src, std::byte *dst, int64_t outer, int64_t part, int64_t total,
               int64_t at, int64_t inner, size_t es, bool intoWhole)
{
    const size_t chunk = size_t(part * inner) * es;
    for (int64_t o = 0; o < outer; ++o) {
        const std::byte *s = intoWhole ? src + size_t(o * part * inner) * es
                                       : src + size_t((o * total + at) * inner) * es;
        std::byte *d = intoWhole ? dst + size_t((o * total + at) * inner) * es
                                 : dst + size_t(o * part * inner) * es;
        std::memcpy(d, s, chunk);
    }
}

Status concatForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "concat_result"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(y->rank())))
        return c.error("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= y->shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < y->rank(); ++d)
        inner *= y->shape[d];
    int64_t at = 0;
    for (size_t k = 0; k < c.in.size(); ++k) {
        KView *x = c.in[k];
        REMAT_RETURN_IF_ERROR(c.require(x, "inputs"));
        const int64_t part = x->rank() ? x->shape[size_t(axis)] : 1;
        blockCopy(x->data, y->data, outer, part, y->shape[size_t(axis)], at, inner, esize(*y),
                  true);
        at += part;
    }
    if (at != y->shape[size_t(axis)])
        return c.error("input sizes do not add up to the output");
    return Status::ok();
}

Status concatGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dconcat_result"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(dy->rank())))
        return c.error("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= dy->shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < dy->rank(); ++d)
        inner *= dy->shape[d];
    int64_t at = 0;
    const size_t slots = std::max(c.inShapes.size(), c.dIn.size());
    for (size_t k = 0; k < slots; ++k) {
        int64_t part = 0;
        if (KView *dx = c.inputGrad(k))
            part = dx->shape[size_t(axis)];
        else if (k < c.inShapes.size() && c.inShapes[k].size() > size_t(axis))
            part = c.inShapes[k][size_t(axis)];
        else
            return c.error("backward needs the forward input shapes");
        if (KView *dx = c.inputGrad(k))
            blockCopy(dy->data, dx->data, outer, part, dy->shape[size_t(axis)], at, inner,
                      esize(*dy), false);
        at += part;
    }
    return Status::ok();
}

Status splitForward(KernelContext &c)
{
    KView *x = c.input(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(x->rank())))
        return c.error("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x->shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < x->rank(); ++d)
        inner *= x->shape[d];
    int64_t at = 0;
    for (size_t k = 0; k < std::max(c.out.size(), c.outShapes.size()); ++k) {
        int64_t part = 0;
        if (KView *y = c.output(k))
            part = y->shape[size_t(axis)];
        else if (k < c.outShapes.size())
            part = c.outShapes[k][size_t(axis)];
        if (KView *y = c.output(k))
            blockCopy(x->data, y->data, outer, part, x->shape[size_t(axis)], at, inner, esize(*x),
                      false);
        at += part;
    }
    return Status::ok();
}

Status splitGrad(KernelContext &c)
{
    KView *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    int64_t axis = c.attrInt("axis", 0);
    if (!normalizeAxis(axis, int64_t(dx->rank())))
        return c.error("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= dx->shape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < dx->rank(); ++d)
        inner *= dx->shape[d];
    zeroView(*dx);
    int64_t at = 0;
    for (size_t k = 0; k < std::max(c.dOut.size(), c.outShapes.size()); ++k) {
        int64_t part = 0;
        if (KView *dy = c.outputGrad(k))
            part = dy->shape[size_t(axis)];
        else if (k < c.outShapes.size())
            part = c.outShapes[k][size_t(axis)];
        if (KView *dy = c.outputGrad(k))
            blockCopy(dy->data, dx->data, outer, part, dx->shape[size_t(axis)], at, inner,
                      esize(*dx), true);
        at += part;
    }
    return Status::ok();
}

// ---- Slice --------------------------------------------------------------------------------

Status sliceForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(SliceGeometry g, c.sliceGeometryFor(x->shape));
    if (numelOf(g.outShape) != y->numel())
        return c.error("output shape mismatch");
    gatherStrided(x->data, g.offset, g.strides, y->data, g.outShape, esize(*x));
    return Status::ok();
}

Status sliceGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(SliceGeometry g, c.sliceGeometryFor(dx->shape));
    zeroView(*dx);
    scatterStridedFloat(dy->f(), g.outShape, dx->f(), g.offset, g.strides, false);
    return Status::ok();
}

// ---- Gather -------------------------------------------------------------------------------

Status gatherForward(KernelContext &c)
{
    KView *x = c.input(0), *idx = c.input(1), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    const auto g = gatherGeometry(c.attrInt("axis", 0), x->shape);
    if (!g)
        return c.error(g.status().message());
    const auto [outer, dim, inner] = *g;
    const std::vector<int64_t> ids = readInts(*idx);
    const size_t es = esize(*x), chunk = size_t(inner) * es;
    const int64_t n = int64_t(ids.size());
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j) {
            int64_t i = ids[size_t(j)];
            if (i < 0)
                i += dim;
            if (i < 0 || i >= dim)
                return c.error("index out of range");
            std::memcpy(y->data + size_t((o * n + j) * inner) * es,
                        x->data + size_t((o * dim + i) * inner) * es, chunk);
        }
    return Status::ok();
}

Status gatherGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *idx = c.input(1), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    const auto g = gatherGeometry(c.attrInt("axis", 0), dx->shape);
    if (!g)
        return c.error(g.status().message());
    const auto [outer, dim, inner] = *g;
    const std::vector<int64_t> ids = readInts(*idx);
    const int64_t n = int64_t(ids.size());
    zeroView(*dx);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j) {
            int64_t i = ids[size_t(j)];
            if (i < 0)
                i += dim;
            float *d = dx->f() + (o * dim + i) * inner;
            const float *s = dy->f() + (o * n + j) * inner;
            for (int64_t k = 0; k < inner; ++k)
                d[k] += s[k];
        }
    return Status::ok();
}

// ---- Expand -------------------------------------------------------------------------------

Status expandForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (x->rank() > y->rank())
        return c.error("output rank below input rank");
    gatherStrided(x->data, 0, broadcastStrides(x->shape, y->shape), y->data, y->shape, esize(*x));
    return Status::ok();
}

Status expandGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    reduceToShape(dy->f(), dy->shape, dx->f(), dx->shape);
    return Status::ok();
}

// ---- Tile ---------------------------------------------------------------------------------

/// Tile through its broadcast view (core/exec/index_maps.h tileView; CUDA uses the same view).
Expected<TileView> tileViewOf(const KernelContext &c, const std::vector<int64_t> &inShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "repeats"));
    auto v = tileView(inShape, readInts(*c.input(1)));
    if (!v)
        return c.error(v.status().message());
    return v;
}

Status tileForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "input"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(TileView v, tileViewOf(c, x->shape));
    if (numelOf(v.expanded) != y->numel())
        return c.error("output size differs from input size x repeats");
    gatherStrided(x->data, 0, broadcastStrides(v.source, v.expanded), y->data, v.expanded,
                  esize(*x));
    return Status::ok();
}

Status tileGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dinput"));
    REMAT_ASSIGN_OR_RETURN(TileView v, tileViewOf(c, dx->shape));
    if (numelOf(v.expanded) != dy->numel())
        return c.error("output gradient size differs from input size x repeats");
    reduceToShape(dy->f(), v.expanded, dx->f(), v.source);
    return Status::ok();
}

// ---- CumSum -------------------------------------------------------------------------------

Expected<ScanGeometry> cumSumOf(const KernelContext &c, const std::vector<int64_t> &shape,
                                bool backward)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "axis"));
    const std::vector<int64_t> axis = readInts(*c.input(1));
    if (axis.size() != 1)
        return c.error("axis must hold one value");
    const bool reverse = c.attrInt("reverse", 0) != 0;
    auto g = cumSumGeometry(shape, axis[0], c.attrInt("exclusive", 0) != 0,
                            backward ? !reverse : reverse);
    if (!g)
        return c.error(g.status().message());
    return g;
}

/// One running sum per line (Acc: double for floats, so a recompute is bitwise the same).
template <typename T, typename Acc> void scan(const T *x, T *y, const ScanGeometry &g)
{
    for (int64_t o = 0; o < g.outer; ++o)
        for (int64_t i = 0; i < g.inner; ++i) {
            Acc acc = 0;
            for (int64_t step = 0; step < g.len; ++step) {
                const int64_t k = g.reverse ? g.len - 1 - step : step;
                const int64_t at = (o * g.len + k) * g.inner + i;
                const Acc v = Acc(x[at]);
                if (!g.exclusive)
                    acc += v;
                y[at] = T(acc);
                if (g.exclusive)
                    acc += v;
            }
        }
}

Status cumSumForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "x"));
    REMAT_RETURN_IF_ERROR(c.require(y, "y"));
    REMAT_ASSIGN_OR_RETURN(ScanGeometry g, cumSumOf(c, x->shape, false));
    switch (x->dtype) {
    case DataType::Float: scan<float, double>(x->f(), y->f(), g); break;
    case DataType::Double: scan<double, double>(x->as<double>(), y->as<double>(), g); break;
    case DataType::Int64: scan<int64_t, int64_t>(x->as<int64_t>(), y->as<int64_t>(), g); break;
    case DataType::Int32: scan<int32_t, int64_t>(x->as<int32_t>(), y->as<int32_t>(), g); break;
    default: return c.error("float32, float64, int32 and int64 only");
    }
    return Status::ok();
}

/// dx = the same scan of dy in the other direction (exclusive stays exclusive).
Status cumSumGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dy"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dx"));
    REMAT_ASSIGN_OR_RETURN(ScanGeometry g, cumSumOf(c, dy->shape, true));
    scan<float, double>(dy->f(), dx->f(), g);
    return Status::ok();
}

// ---- Constant producers -------------------------------------------------------------------

Status writeTensorConstant(const KernelContext &c, const ir::TensorConstant &tc, KView &y)
{
    auto bytes = tc.bytes();
    if (!bytes)
        return bytes.status().withContext(c.opName);
    const size_t want = size_t(y.numel()) * esize(y);
    if (bytes->size() != want || tc.dtype != y.dtype)
        return c.error("constant value does not match the output");
    std::memcpy(y.data, bytes->data(), want);
    return Status::ok();
}

Status constantForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (!c.node)
        return c.error("no node attributes");
    if (const ir::Attribute *a = c.node->attribute("value"); a && a->isTensor())
        return writeTensorConstant(c, a->tensor(), *y);
    const int64_t n = y->numel();
    if (const ir::Attribute *a = c.node->attribute("value_float"); a && a->isFloat()) {
        y->f()[0] = float(a->f());
        return Status::ok();
    }
    if (const ir::Attribute *a = c.node->attribute("value_int"); a && a->isInt()) {
        y->as<int64_t>()[0] = a->i();
        return Status::ok();
    }
    if (const ir::Attribute *a = c.node->attribute("value_floats"); a && a->isFloats()) {
        for (int64_t i = 0; i < n; ++i)
            y->f()[i] = float(a->floats()[size_t(i)]);
        return Status::ok();
    }
    if (const ir::Attribute *a = c.node->attribute("value_ints"); a && a->isInts()) {
        for (int64_t i = 0; i < n; ++i)
            y->as<int64_t>()[i] = a->ints()[size_t(i)];
        return Status::ok();
    }
    return c.error("Constant without a supported value attribute");
}

template <typename T> void fill(KView &y, T v) { std::fill(y.as<T>(), y.as<T>() + y.numel(), v); }

Status fillDouble(const KernelContext &c, KView &y, double v)
{
    switch (y.dtype) {
    case DataType::Float: fill<float>(y, float(v)); break;
    case DataType::Double: fill<double>(y, v); break;
    case DataType::Int64: fill<int64_t>(y, int64_t(v)); break;
    case DataType::Int32: fill<int32_t>(y, int32_t(v)); break;
    case DataType::Bool: fill<bool>(y, v != 0); break;
    default: return c.error("unsupported dtype " + ir::dataTypeName(y.dtype));
    }
    return Status::ok();
}

/// RandomNormalLike / RandomUniformLike (core/exec/random_like.h): float32 output.
Status randomLikeForward(KernelContext &c, bool normal)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (y->dtype != DataType::Float)
        return c.error("random values of a type other than float32 have no kernel");
    const std::vector<float> v =
        normal ? randomLike(c.seed, y->numel(), true, c.attrFloat("mean", 0.0),
                            c.attrFloat("scale", 1.0))
               : randomLike(c.seed, y->numel(), false, c.attrFloat("low", 0.0),
                            c.attrFloat("high", 1.0));
    std::copy(v.begin(), v.end(), y->f());
    return Status::ok();
}

Status constantOfShapeForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    double v = 0;
    if (c.node)
        if (const ir::Attribute *a = c.node->attribute("value"); a && a->isTensor()) {
            auto vals = a->tensor().toFloats();
            if (!vals)
                return vals.status().withContext(c.opName);
            if (!vals->empty())
                v = (*vals)[0];
            if (a->tensor().dtype == DataType::Int64) {
                auto ints = a->tensor().toInt64s();
                if (ints && !ints->empty())
                    v = double((*ints)[0]);
            }
        }
    return fillDouble(c, *y, v);
}

/// EyeLike: ones where column - row == k, zeros elsewhere, of a 2-D output.
Status eyeLikeForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    if (y->shape.size() != 2)
        return c.error("EyeLike needs a 2-D input");
    const int64_t rows = y->shape[0], cols = y->shape[1], k = c.attrInt("k", 0);
    REMAT_RETURN_IF_ERROR(fillDouble(c, *y, 0.0));
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t col = r + k;
        if (col < 0 || col >= cols)
            continue;
        const int64_t i = r * cols + col;
        switch (y->dtype) {
        case DataType::Float: y->f()[i] = 1.f; break;
        case DataType::Double: y->as<double>()[i] = 1.0; break;
        case DataType::Int64: y->as<int64_t>()[i] = 1; break;
        case DataType::Int32: y->as<int32_t>()[i] = 1; break;
        case DataType::Bool: y->as<bool>()[i] = true; break;
        default: return c.error("unsupported dtype");
        }
    }
    return Status::ok();
}

/// OneHot: `values[1]` where the index (negative ones count from depth) names the position along
/// the new axis, `values[0]` elsewhere; an index out of range gives a row of `values[0]` (ONNX).
Status oneHotForward(KernelContext &c)
{
    KView *idx = c.input(0), *depth = c.input(1), *values = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(depth, "depth"));
    REMAT_RETURN_IF_ERROR(c.require(values, "values"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    const std::vector<double> dv = readDoubles(*depth), vals = readDoubles(*values);
    if (dv.size() != 1 || vals.size() != 2)
        return c.error("depth must hold one value and values two");
    const int64_t d = int64_t(dv[0]);
    const int64_t rank = int64_t(idx->shape.size());
    int64_t axis = c.attrInt("axis", -1);
    if (axis < 0)
        axis += rank + 1;
    if (d < 1 || axis < 0 || axis > rank || y->numel() != idx->numel() * d)
        return c.error("output size mismatch");
    int64_t inner = 1;
    for (int64_t k = axis; k < rank; ++k)
        inner *= idx->shape[size_t(k)];
    const int64_t outer = idx->numel() / std::max<int64_t>(inner, 1);
    REMAT_RETURN_IF_ERROR(fillDouble(c, *y, vals[0]));
    const std::vector<int64_t> ids = readInts(*idx);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            int64_t k = ids[size_t(o * inner + i)];
            if (k < 0)
                k += d;
            if (k < 0 || k >= d)
                continue;
            const int64_t at = (o * d + k) * inner + i;
            switch (y->dtype) {
            case DataType::Float: y->f()[at] = float(vals[1]); break;
            case DataType::Double: y->as<double>()[at] = vals[1]; break;
            case DataType::Int64: y->as<int64_t>()[at] = int64_t(vals[1]); break;
            case DataType::Int32: y->as<int32_t>()[at] = int32_t(vals[1]); break;
            case DataType::Bool: y->as<bool>()[at] = vals[1] != 0; break;
            default: return c.error("unsupported dtype");
            }
        }
    return Status::ok();
}

Status rangeForward(KernelContext &c)
{
    KView *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(c.input(0), "start"));
    REMAT_RETURN_IF_ERROR(c.require(c.input(2), "delta"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    const double start = readDoubles(*c.input(0))[0], delta = readDoubles(*c.input(2))[0];
    for (int64_t i = 0; i < y->numel(); ++i) {
        const double v = start + double(i) * delta;
        switch (y->dtype) {
        case DataType::Float: y->f()[i] = float(v); break;
        case DataType::Double: y->as<double>()[i] = v; break;
        case DataType::Int64: y->as<int64_t>()[i] = int64_t(v); break;
        case DataType::Int32: y->as<int32_t>()[i] = int32_t(v); break;
        default: return c.error("unsupported dtype");
        }
    }
    return Status::ok();
}

// ---- Pad (constant, edge, reflect, wrap) --------------------------------------------------------

Expected<std::vector<int64_t>> padAmounts(const KernelContext &c, size_t rank)
{
    std::vector<int64_t> pads = c.input(1) ? readInts(*c.input(1)) : c.attrInts("pads");
    std::vector<int64_t> axes;
    if (c.input(3))
        axes = readInts(*c.input(3));
    std::vector<int64_t> full(2 * rank, 0);
    if (axes.empty()) {
        if (pads.size() != 2 * rank)
            return c.error("pads length differs from 2 x rank");
        return pads;
    }
    if (pads.size() != 2 * axes.size())
        return c.error("pads length differs from 2 x axes");
    for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i];
        if (!normalizeAxis(a, int64_t(rank)))
            return c.error("axis out of range");
        full[size_t(a)] = pads[i];
        full[size_t(a) + rank] = pads[i + axes.size()];
    }
    return full;
}

/// Where every output element of Pad reads from (core/exec/index_maps.h; the CUDA kernels use
/// the same map).
Expected<std::vector<int64_t>> padMap(const KernelContext &c, const std::vector<int64_t> &inShape,
                                      const std::vector<int64_t> &outShape)
{
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, padAmounts(c, inShape.size()));
    auto map = padSourceMap(c.attrString("mode", "constant"), pads, inShape, outShape);
    if (!map)
        return c.error(map.status().message());
    return map;
}

Status padForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    double value = 0;
    if (c.input(2) && c.input(2)->numel() > 0)
        value = readDoubles(*c.input(2))[0];
    if (x->dtype != DataType::Float)
        return c.error("float32 only");
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, padMap(c, x->shape, y->shape));
    for (size_t o = 0; o < map.size(); ++o)
        y->f()[o] = map[o] >= 0 ? x->f()[map[o]] : float(value);
    return Status::ok();
}

Status padGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, padMap(c, dx->shape, dy->shape));
    std::vector<double> acc(size_t(dx->numel()), 0.0);
    for (size_t o = 0; o < map.size(); ++o)
        if (map[o] >= 0)
            acc[size_t(map[o])] += dy->f()[o];
    for (size_t i = 0; i < acc.size(); ++i)
        dx->f()[i] = float(acc[i]);
    return Status::ok();
}

// ---- Trilu --------------------------------------------------------------------------------

Status triluApply(const KernelContext &c, const KView &x, KView &y)
{
    if (x.rank() < 2)
        return c.error("rank below 2");
    const int64_t k = c.input(1) ? readInts(*c.input(1))[0] : 0;
    const bool upper = c.attrInt("upper", 1) != 0;
    const int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
    const int64_t mats = x.numel() / std::max<int64_t>(rows * cols, 1);
    const size_t es = esize(x);
    for (int64_t m = 0; m < mats; ++m)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) {
                const bool keep = upper ? j - i >= k : j - i <= k;
                const size_t at = size_t((m * rows + i) * cols + j) * es;
                if (keep)
                    std::memcpy(y.data + at, x.data + at, es);
                else
                    std::memset(y.data + at, 0, es);
            }
    return Status::ok();
}

Status triluForward(KernelContext &c)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(0), "input"));
    REMAT_RETURN_IF_ERROR(c.require(c.output(0), "output"));
    return triluApply(c, *c.input(0), *c.output(0));
}

Status triluGrad(KernelContext &c)
{
    REMAT_RETURN_IF_ERROR(c.require(c.outputGrad(0), "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(c.inputGrad(0), "dinput"));
    return triluApply(c, *c.outputGrad(0), *c.inputGrad(0));
}

// ---- ScatterND, ScatterElements (reduction none), GatherElements ----------------------------

/// ScatterElements is ScatterND with one-element slices at its per-element offsets.
Expected<ScatterGeometry>
scatterGeometry(const KernelContext &c, const std::vector<int64_t> &dataShape, const KView &indices)
{
    const bool elements =
        c.node && (c.node->opType == "ScatterElements" || c.node->opType == "Scatter");
    auto g = elements
                 ? scatterElementsGeometry(c.attrString("reduction", "none"), dataShape,
                                           indices.shape, readInts(indices), c.attrInt("axis", 0))
                 : scatterNDGeometry(c.attrString("reduction", "none"), dataShape, indices.shape,
                                     readInts(indices));
    if (!g)
        return c.error(g.status().message());
    return g;
}

/// ScatterElements with reduction "add" (the geometry refuses it for ScatterND).
bool scatterAdds(const KernelContext &c) { return c.attrString("reduction", "none") == "add"; }

Status scatterNDForward(KernelContext &c)
{
    KView *x = c.input(0), *idx = c.input(1), *upd = c.input(2), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_RETURN_IF_ERROR(c.require(upd, "updates"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(ScatterGeometry g, scatterGeometry(c, x->shape, *idx));
    copyBytes(*x, *y);
    if (scatterAdds(c)) { // torch.scatter_add / index_add: repeated indices add up
        if (y->dtype != ir::DataType::Float)
            return c.error("ScatterElements with reduction 'add' runs on float32 data only");
        for (size_t i = 0; i < g.offsets.size(); ++i)
            y->f()[g.offsets[i]] += upd->f()[i];
        return Status::ok();
    }
    const size_t es = esize(*y);
    for (size_t i = 0; i < g.offsets.size(); ++i)
        std::memcpy(y->data + size_t(g.offsets[i]) * es, upd->data + i * size_t(g.sliceSize) * es,
                    size_t(g.sliceSize) * es);
    return Status::ok();
}

Status scatterNDGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *idx = c.input(1);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(idx, "indices"));
    REMAT_ASSIGN_OR_RETURN(ScatterGeometry g, scatterGeometry(c, dy->shape, *idx));
    const size_t bytes = size_t(g.sliceSize) * sizeof(float);
    if (KView *du = c.inputGrad(2))
        for (size_t i = 0; i < g.offsets.size(); ++i)
            std::memcpy(du->f() + i * size_t(g.sliceSize), dy->f() + g.offsets[i], bytes);
    if (KView *dx = c.inputGrad(0)) {
        copyBytes(*dy, *dx);
        if (!scatterAdds(c)) // an assigned element's old value reaches nothing
            for (int64_t off : g.offsets)
                std::memset(dx->f() + off, 0, bytes);
    }
    return Status::ok();
}

/// GatherND (batch_dims 0): output slice i is the data's slice at offsets[i], as ScatterND
/// writes them.
Expected<ScatterGeometry> gatherNDGeometry(const KernelContext &c,
                                           const std::vector<int64_t> &dataShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "indices"));
    if (c.attrInt("batch_dims", 0) != 0)
        return c.error("GatherND with batch_dims has no kernel (batch_dims 0 has)");
    const KView &idx = *c.input(1);
    auto g = scatterNDGeometry("none", dataShape, idx.shape, readInts(idx));
    if (!g)
        return c.error(g.status().message());
    return g;
}

Status gatherNDForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(ScatterGeometry g, gatherNDGeometry(c, x->shape));
    if (int64_t(g.offsets.size()) * g.sliceSize != y->numel())
        return c.error("output size differs from the indices' slices");
    const size_t es = esize(*x), slice = size_t(g.sliceSize) * es;
    for (size_t i = 0; i < g.offsets.size(); ++i)
        std::memcpy(y->data + i * slice, x->data + size_t(g.offsets[i]) * es, slice);
    return Status::ok();
}

/// dData = 0, then each slice of dY added at its offset (repeated indices add up).
Status gatherNDGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(ScatterGeometry g, gatherNDGeometry(c, dx->shape));
    if (int64_t(g.offsets.size()) * g.sliceSize != dy->numel())
        return c.error("output gradient size differs from the indices' slices");
    std::vector<double> acc(size_t(dx->numel()), 0.0);
    for (size_t i = 0; i < g.offsets.size(); ++i)
        for (int64_t e = 0; e < g.sliceSize; ++e)
            acc[size_t(g.offsets[i] + e)] += dy->f()[int64_t(i) * g.sliceSize + e];
    for (size_t i = 0; i < acc.size(); ++i)
        dx->f()[i] = float(acc[i]);
    return Status::ok();
}

Expected<std::vector<int64_t>> gatherElementsMap(const KernelContext &c,
                                                 const std::vector<int64_t> &dataShape)
{
    REMAT_RETURN_IF_ERROR(c.require(c.input(1), "indices"));
    const KView &idx = *c.input(1);
    auto map = elementsAlongAxis(dataShape, idx.shape, readInts(idx), c.attrInt("axis", 0));
    if (!map)
        return c.error(map.status().message());
    return map;
}

Status gatherElementsForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "data"));
    REMAT_RETURN_IF_ERROR(c.require(y, "output"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, gatherElementsMap(c, x->shape));
    if (int64_t(map.size()) != y->numel())
        return c.error("output size differs from the indices'");
    const size_t es = esize(*x);
    for (size_t o = 0; o < map.size(); ++o)
        std::memcpy(y->data + o * es, x->data + size_t(map[o]) * es, es);
    return Status::ok();
}

/// dData = 0, then dData[map[o]] += dY[o] (repeated indices add up), summed in double.
Status gatherElementsGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "doutput"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "ddata"));
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, gatherElementsMap(c, dx->shape));
    std::vector<double> acc(size_t(dx->numel()), 0.0);
    for (size_t o = 0; o < map.size(); ++o)
        acc[size_t(map[o])] += dy->f()[o];
    for (size_t i = 0; i < acc.size(); ++i)
        dx->f()[i] = float(acc[i]);
    return Status::ok();
}

// ---- Resize / Upsample (nearest, linear, cubic, antialias) ----------------------------------

/// The node's scales (input 1 of Resize-10 and Upsample-9, input 2 from Resize-11), or empty
/// when sizes were given instead.
std::vector<double> resizeScales(const KernelContext &c, size_t rank)
{
    const size_t inputs = c.node ? c.node->inputs.size() : 0;
    const bool early = (c.node && c.node->opType == "Upsample") || inputs <= 2;
    const KView *sv = c.input(early ? 1 : 2);
    if (sv && sv->numel() == int64_t(rank))
        return readDoubles(*sv);
    return {};
}

std::string resizeCoordinates(const KernelContext &c)
{
    return resizeCoordinateMode(c.node ? c.node->opType : "Resize",
                                c.node ? c.node->inputs.size() : 0,
                                c.attrString("coordinate_transformation_mode", ""));
}

/// Linear and cubic are gathers with weights; nearest (which ignores antialias) a plain gather.
bool resizeLinear(const KernelContext &c)
{
    const std::string mode = c.attrString("mode", "nearest");
    return mode == "linear" || mode == "bilinear" || mode == "cubic"; // "bilinear": Upsample-7
}

/// Source offset in X of every Y element (nearest neighbour; core/exec/index_maps.h).
Expected<std::vector<int64_t>> resizeMap(const KernelContext &c,
                                         const std::vector<int64_t> &inShape,
                                         const std::vector<int64_t> &outShape)
{
    const NearestResizeAttrs attrs{c.attrString("mode", "nearest"), resizeCoordinates(c),
                                   c.attrString("nearest_mode", "round_prefer_floor")};
    auto map = nearestResizeMap(attrs, resizeScales(c, inShape.size()), inShape, outShape);
    if (!map)
        return c.error(map.status().message());
    return map;
}

Expected<LinearResizeMap> linearMap(const KernelContext &c, const std::vector<int64_t> &inShape,
                                    const std::vector<int64_t> &outShape)
{
    ResizeFilter filter;
    filter.mode = c.attrString("mode", "linear");
    filter.coordinateMode = resizeCoordinates(c);
    filter.cubicCoeffA = c.attrFloat("cubic_coeff_a", -0.75);
    filter.excludeOutside = c.attrInt("exclude_outside", 0) != 0;
    filter.antialias = c.attrInt("antialias", 0) != 0;
    auto m = weightedResizeMap(filter, resizeScales(c, inShape.size()), inShape, outShape);
    if (!m)
        return c.error(m.status().message());
    return m;
}

Status resizeForward(KernelContext &c)
{
    KView *x = c.input(0), *y = c.output(0);
    REMAT_RETURN_IF_ERROR(c.require(x, "X"));
    REMAT_RETURN_IF_ERROR(c.require(y, "Y"));
    if (resizeLinear(c)) {
        if (x->dtype != DataType::Float)
            return c.error("linear and cubic Resize of float32 only");
        REMAT_ASSIGN_OR_RETURN(LinearResizeMap m, linearMap(c, x->shape, y->shape));
        for (int64_t o = 0; o < y->numel(); ++o) {
            double acc = 0;
            for (int64_t t = o * m.taps; t < (o + 1) * m.taps; ++t)
                acc += double(m.weights[size_t(t)]) * x->f()[m.offsets[size_t(t)]];
            y->f()[o] = float(acc);
        }
        return Status::ok();
    }
    REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, resizeMap(c, x->shape, y->shape));
    const size_t es = esize(*x);
    for (size_t o = 0; o < map.size(); ++o)
        std::memcpy(y->data + o * es, x->data + size_t(map[o]) * es, es);
    return Status::ok();
}

Status resizeGrad(KernelContext &c)
{
    KView *dy = c.outputGrad(0), *dx = c.inputGrad(0);
    REMAT_RETURN_IF_ERROR(c.require(dy, "dY"));
    REMAT_RETURN_IF_ERROR(c.require(dx, "dX"));
    std::vector<double> acc(size_t(dx->numel()), 0.0);
    if (resizeLinear(c)) {
        REMAT_ASSIGN_OR_RETURN(LinearResizeMap m, linearMap(c, dx->shape, dy->shape));
        for (int64_t o = 0; o < dy->numel(); ++o)
            for (int64_t t = o * m.taps; t < (o + 1) * m.taps; ++t)
                acc[size_t(m.offsets[size_t(t)])] += double(m.weights[size_t(t)]) * dy->f()[o];
    } else {
        REMAT_ASSIGN_OR_RETURN(std::vector<int64_t> map, resizeMap(c, dx->shape, dy->shape));
        for (size_t o = 0; o < map.size(); ++o)
            acc[size_t(map[o])] += dy->f()[o];
    }
    for (size_t i = 0; i < acc.size(); ++i)
        dx->f()[i] = float(acc[i]);
    return Status::ok();
}

} // namespace

void addShapeKernels(KernelTable &t)
{
    for (const char *type : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
        t[type] = copyForward;
        t[std::string(type) + "Grad"] = copyGrad;
    }
    t["Shape"] = shapeForward;
    t["Transpose"] = transposeForward;
    t["DepthToSpace"] = [](KernelContext &c) { return spaceDepth(c, false); };
    t["DepthToSpaceGrad"] = [](KernelContext &c) { return spaceDepth(c, true); };
    t["SpaceToDepth"] = [](KernelContext &c) { return spaceDepth(c, false); };
    t["SpaceToDepthGrad"] = [](KernelContext &c) { return spaceDepth(c, true); };
    t["TransposeGrad"] = transposeGrad;
    t["Concat"] = concatForward;
    t["ConcatGrad"] = concatGrad;
    t["Split"] = splitForward;
    t["SplitGrad"] = splitGrad;
    t["Slice"] = sliceForward;
    t["SliceGrad"] = sliceGrad;
    t["Gather"] = gatherForward;
    t["GatherGrad"] = gatherGrad;
    t["Expand"] = expandForward;
    t["ExpandGrad"] = expandGrad;
    t["Tile"] = tileForward;
    t["TileGrad"] = tileGrad;
    t["CumSum"] = cumSumForward;
    t["CumSumGrad"] = cumSumGrad;
    t["Constant"] = constantForward;
    t["ConstantOfShape"] = constantOfShapeForward;
    t["RandomNormalLike"] = [](KernelContext &c) { return randomLikeForward(c, true); };
    t["RandomUniformLike"] = [](KernelContext &c) { return randomLikeForward(c, false); };
    t["Range"] = rangeForward;
    t["OneHot"] = oneHotForward;
    t["EyeLike"] = eyeLikeForward;
    t["Pad"] = padForward;
    t["PadGrad"] = padGrad;
    t["Trilu"] = triluForward;
    t["TriluGrad"] = triluGrad;
    t["ScatterND"] = scatterNDForward;
    t["ScatterNDGrad"] = scatterNDGrad;
    t["ScatterElements"] = scatterNDForward;
    t["ScatterElementsGrad"] = scatterNDGrad;
    t["Scatter"] = scatterNDForward;
    t["ScatterGrad"] = scatterNDGrad;
    t["GatherND"] = gatherNDForward;
    t["GatherNDGrad"] = gatherNDGrad;
    t["GatherElements"] = gatherElementsForward;
    t["GatherElementsGrad"] = gatherElementsGrad;
    t["Resize"] = resizeForward;
    t["ResizeGrad"] = resizeGrad;
    t["Upsample"] = resizeForward;
    t["UpsampleGrad"] = resizeGrad;
}

} // namespace remat::core::exec::cpu
