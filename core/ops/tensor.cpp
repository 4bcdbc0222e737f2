// Data-movement ops (onnx/defs/tensor): reshapes, layout, indexing, Cast. Their backward needs
// shapes only, or indices.
#include "core/ops/families.h"
#include "core/ops/shape_context.h"
#include "core/util/bytes.h"

#include <algorithm>
#include <cmath>

namespace remat::core::ops {
namespace {

using namespace rules;

// ---- shape functions -------------------------------------------------------------------------
/// See BatchRewrite: the Reshape target of a file traced at another batch, moved to this batch.
std::optional<std::vector<int64_t>>
reshapeAtNewBatch(ShapeContext &c, const std::vector<int64_t> &target, bool allowZero)
{
    const Shape *x = c.inShape(0);
    const Shape *xf = c.inFileShape(0);
    if (!x || !xf || !x->isStatic() || !xf->isStatic() || x->rank() != xf->rank())
        return std::nullopt;
    const int64_t nNew = x->numElements().value(), nFile = xf->numElements().value();
    if (nNew == nFile || nFile == 0 || nNew == 0)
        return std::nullopt;
    // A target computed from Shape ops followed the batch by itself; only a constant that is the
    // same at both batches is stale.
    const ConstTensor *targetNow = c.inConst(1);
    const InferredValue *targetThen = c.node.inputs.size() > 1 && c.node.inputs[1].valid()
                                          ? &(*c.rw.atFileBatch)[c.node.inputs[1].index()]
                                          : nullptr;
    if (!targetNow || !targetThen || !targetThen->constant ||
        targetThen->constant->ints != targetNow->ints)
        return std::nullopt;
    // The target as the file meant it, at the file's batch.
    std::vector<int64_t> t = target;
    int64_t known = 1;
    int minus = -1;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == 0 && !allowZero) {
            if (i >= xf->rank())
                return std::nullopt;
            t[i] = xf->dims[i].value;
        }
        if (t[i] == -1)
            minus = int(i);
        else if (t[i] <= 0 || mulOverflows(known, t[i], &known))
            return std::nullopt;
    }
    if (minus >= 0) {
        if (nFile % known != 0)
            return std::nullopt;
        t[size_t(minus)] = nFile / known;
    } else if (known != nFile) {
        return std::nullopt;
    }
    const std::vector<int64_t> in = xf->sizes();
    size_t changed = in.size();
    for (size_t k = 0; k < in.size(); ++k)
        if (x->dims[k].value != in[k])
            changed = changed == in.size() ? k : in.size() + 1;
    if (changed >= in.size())
        return std::nullopt; // none or several input dims changed: no single batch dim to follow
    // Blocks of input dims and target dims with equal products; the changed input dim's block
    // holds the target dim that carried the batch.
    size_t i = 0, j = 0;
    while (i < in.size() || j < t.size()) {
        const size_t bi = i, bj = j;
        int64_t pi = 1, pj = 1;
        bool overflow = false;
        if (i < in.size())
            overflow |= mulOverflows(pi, in[i++], &pi);
        if (j < t.size())
            overflow |= mulOverflows(pj, t[j++], &pj);
        while (pi != pj && !overflow) {
            if (pi < pj && i < in.size())
                overflow |= mulOverflows(pi, in[i++], &pi);
            else if (j < t.size())
                overflow |= mulOverflows(pj, t[j++], &pj);
            else if (i < in.size())
                overflow |= mulOverflows(pi, in[i++], &pi);
            else
                return std::nullopt;
        }
        if (overflow)
            return std::nullopt;
        if (changed < bi || changed >= i)
            continue;
        auto scales = [&](size_t m) {
            int64_t p = 0;
            return !mulOverflows(t[m], nNew, &p) && p % nFile == 0;
        };
        size_t pick = t.size();
        for (size_t m = bj; m < j && pick == t.size(); ++m)
            if (t[m] == c.rw.fileBatch && scales(m))
                pick = m;
        for (size_t m = bj; m < j && pick == t.size(); ++m)
            if (scales(m))
                pick = m;
        if (pick == t.size())
            return std::nullopt;
        t[pick] = t[pick] * nNew / nFile; // no overflow: checked by scales()
        return t;
    }
    return std::nullopt;
}

/// Output 0 holds input 0's elements in another shape (Reshape, Squeeze, Unsqueeze, Flatten):
/// a small constant keeps its values under the new dims.
void setReshaped(ShapeContext &c, Shape out)
{
    std::shared_ptr<ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0); src && out.isStatic()) {
        auto kk = std::make_shared<ConstTensor>(*src);
        kk->dims = out.sizes();
        k = kk;
    }
    c.set(0, c.inType(0), std::move(out), k);
}

Status inferReshape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    std::optional<std::vector<int64_t>> target =
        c.opset >= 5 ? c.inInts(1) : std::optional(c.node.attrInts("shape"));
    if (!target)
        return Status::ok();
    const bool allowZero = c.node.attrInt("allowzero", 0) != 0;
    Shape out;
    int inferIndex = -1;
    int64_t known = 1;
    bool knownStatic = true;
    for (size_t i = 0; i < target->size(); ++i) {
        int64_t d = (*target)[i];
        if (d == -1) {
            if (inferIndex >= 0)
                return c.fail("the target shape has two -1 dims");
            inferIndex = int(i);
            out.dims.push_back(Dim());
            continue;
        }
        if (d == 0 && !allowZero) {
            if (!x || i >= x->rank()) {
                if (!x)
                    return Status::ok();
                return c.fail("target dim " + std::to_string(i) + " copies a dim the input " +
                              x->toString() + " does not have");
            }
            out.dims.push_back(x->dims[i]);
        } else if (d < 0) {
            return c.fail("negative target dim " + std::to_string(d));
        } else {
            out.dims.push_back(Dim(d));
        }
        if (out.dims.back().isStatic()) {
            if (mulOverflows(known, out.dims.back().value, &known))
                return c.fail("target shape overflows 64 bits");
        } else {
            knownStatic = false;
        }
    }
    if (auto moved = reshapeAtNewBatch(c, *target, allowZero)) {
        c.set(0, c.inType(0), Shape::fromStatic(*moved));
        return Status::ok();
    }
    const bool inStatic = x && x->isStatic();
    int64_t inCount = -1;
    if (inStatic) {
        auto n = x->numElements();
        if (!n)
            return n.status();
        inCount = *n;
    }
    if (inferIndex >= 0 && inStatic && knownStatic) {
        if (known == 0 || inCount % known != 0)
            return c.fail("cannot reshape " + x->toString() + " to " + Shape(out).toString());
        out.dims[size_t(inferIndex)] = Dim(inCount / known);
    } else if (inferIndex < 0 && inStatic && knownStatic && known != inCount) {
        return c.fail("cannot reshape " + x->toString() + " (" + std::to_string(inCount) +
                      " elements) to " + out.toString());
    }
    setReshaped(c, std::move(out));
    return Status::ok();
}

/// Gathers a small constant: out element (o_0, ..., o_{r-1}) is src element
/// (first_k + o_k * step_k)_k after `perm` (out dim k reads src dim perm[k]). Shape arithmetic
/// that passes through a Transpose or an N-d Slice (torch's F.pad export: Concat -> Reshape
/// [-1,2] -> Slice(step -1) -> Transpose -> Reshape) stays known this way.
std::shared_ptr<ConstTensor>
gatherConst(const ConstTensor &src, const std::vector<int64_t> &srcDims,
            const std::vector<int64_t> &outDims, const std::vector<int64_t> &perm,
            const std::vector<int64_t> &first, const std::vector<int64_t> &step)
{
    const size_t r = outDims.size();
    if (srcDims.size() != r || perm.size() != r || product(outDims) > kMaxConstElements ||
        product(srcDims) != int64_t(src.size()))
        return nullptr;
    std::vector<int64_t> srcStride(r, 1);
    for (size_t k = r; k-- > 1;)
        srcStride[k - 1] = srcStride[k] * srcDims[k];
    auto k = makeConst(src.dtype, outDims);
    std::vector<int64_t> idx(r, 0);
    const int64_t n = product(outDims);
    for (int64_t e = 0; e < n; ++e) {
        int64_t at = 0;
        for (size_t d = 0; d < r; ++d) {
            const size_t sd = size_t(perm[d]);
            const int64_t i = first[sd] + idx[d] * step[sd];
            if (i < 0 || i >= srcDims[sd])
                return nullptr;
            at += i * srcStride[sd];
        }
        if (k->isInteger())
            k->ints.push_back(src.intAt(size_t(at)));
        else
            k->floats.push_back(src.at(size_t(at)));
        for (size_t d = r; d-- > 0;) {
            if (++idx[d] < outDims[d])
                break;
            idx[d] = 0;
        }
    }
    return k;
}

Status inferTranspose(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::vector<int64_t> perm = c.node.attrInts("perm");
    if (perm.empty())
        for (size_t i = x->rank(); i-- > 0;)
            perm.push_back(int64_t(i));
    if (perm.size() != x->rank())
        return c.fail("perm has " + std::to_string(perm.size()) + " entries for input " +
                      x->toString());
    Shape out;
    for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(x->rank()))
            return c.fail("perm entry out of range");
        out.dims.push_back(x->dims[size_t(p)]);
    }
    std::shared_ptr<ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0); src && x->isStatic())
        k = gatherConst(*src, x->sizes(), out.sizes(), perm, std::vector<int64_t>(x->rank(), 0),
                        std::vector<int64_t>(x->rank(), 1));
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferConcat(ShapeContext &c)
{
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < c.node.inputs.size(); ++i) {
        const Shape *s = c.inShape(i);
        if (!s)
            return Status::ok();
        shapes.push_back(s);
    }
    if (shapes.empty())
        return Status::ok();
    const int64_t rank = int64_t(shapes[0]->rank());
    int64_t axis = normAxis(c.node.attrInt("axis", 0), rank);
    if (axis < 0 || axis >= rank)
        return c.fail("axis out of range for " + shapes[0]->toString());
    Shape out = *shapes[0];
    int64_t sum = 0;
    bool sumKnown = true;
    for (const Shape *const &s : shapes) {
        if (int64_t(s->rank()) != rank)
            return c.fail("inputs of different ranks (" + shapes[0]->toString() + ", " +
                          s->toString() + ")");
        const Dim &d = s->dims[size_t(axis)];
        if (d.isStatic())
            sum += d.value;
        else
            sumKnown = false;
        for (size_t k = 0; k < size_t(rank); ++k) {
            if (int64_t(k) == axis)
                continue;
            if (!out.dims[k].isStatic() && s->dims[k].isStatic())
                out.dims[k] = s->dims[k];
            else if (out.dims[k].isStatic() && s->dims[k].isStatic() &&
                     out.dims[k].value != s->dims[k].value) {
                const size_t i = size_t(&s - shapes.data());
                auto fixed = c.reconcile(0, i, k, k);
                if (!fixed)
                    return c.fail("inputs disagree in dim " + std::to_string(k) + " (" +
                                  shapes[0]->toString() + ", " + s->toString() + ")");
                out.dims[k] = *fixed;
            }
        }
    }
    out.dims[size_t(axis)] = sumKnown ? Dim(sum) : Dim();
    std::shared_ptr<ConstTensor> k;
    bool allConst = out.isStatic();
    for (size_t i = 0; i < c.node.inputs.size() && allConst; ++i)
        allConst = c.inConst(i) != nullptr;
    if (allConst && product(out.sizes()) <= kMaxConstElements) {
        k = makeConst(c.inType(0), out.sizes());
        int64_t outer = 1;
        for (int64_t d = 0; d < axis; ++d)
            outer *= out.dims[size_t(d)].value;
        for (int64_t o = 0; o < outer; ++o) {
            for (size_t i = 0; i < c.node.inputs.size(); ++i) {
                const ConstTensor *src = c.inConst(i);
                const int64_t chunk = outer ? int64_t(src->size()) / outer : 0;
                for (int64_t e = 0; e < chunk; ++e) {
                    const size_t at = size_t(o * chunk + e);
                    if (k->isInteger())
                        k->ints.push_back(src->intAt(at));
                    else
                        k->floats.push_back(src->at(at));
                }
            }
        }
    }
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferSplit(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const int64_t rank = int64_t(x->rank());
    const int64_t axis = normAxis(c.node.attrInt("axis", 0), rank);
    if (axis < 0 || axis >= rank)
        return c.fail("axis out of range");
    std::vector<int64_t> split;
    if (c.opset >= 13 && c.in(1)) {
        auto s = c.inInts(1);
        if (!s)
            return Status::ok();
        split = *s;
    } else {
        split = c.node.attrInts("split");
    }
    const size_t nOut = c.node.outputs.size();
    const Dim &d = x->dims[size_t(axis)];
    if (split.empty()) {
        if (!d.isStatic() || nOut == 0)
            return Status::ok();
        const int64_t each = (d.value + int64_t(nOut) - 1) / int64_t(nOut);
        for (size_t i = 0; i < nOut; ++i)
            split.push_back(std::max<int64_t>(0, std::min(each, d.value - each * int64_t(i))));
    }
    if (split.size() != nOut)
        return c.fail("split has " + std::to_string(split.size()) + " sizes for " +
                      std::to_string(nOut) + " outputs");
    // A constant input splits into constants: tf2onnx writes a Pad's pads as the Concat of a
    // constant's Split pieces (M-LSD), and Pad's shape needs their values.
    const ConstTensor *src = c.inConst(0);
    std::vector<int64_t> perm(x->rank()), step(x->rank(), 1), first(x->rank(), 0);
    for (size_t d = 0; d < perm.size(); ++d)
        perm[d] = int64_t(d);
    for (size_t i = 0; i < nOut; ++i) {
        Shape o = *x;
        o.dims[size_t(axis)] = Dim(split[i]);
        std::shared_ptr<ConstTensor> k;
        if (src && x->isStatic() && split[i] >= 0)
            k = gatherConst(*src, x->sizes(), o.sizes(), perm, first, step);
        first[size_t(axis)] += split[i];
        c.set(i, c.inType(0), o, k);
    }
    return Status::ok();
}

Status inferSlice(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::vector<int64_t> starts, ends, axes, steps;
    if (c.opset >= 10) {
        auto s = c.inInts(1), e = c.inInts(2);
        if (!s || !e)
            return Status::ok();
        starts = *s;
        ends = *e;
        if (c.in(3)) {
            auto a = c.inInts(3);
            if (!a)
                return Status::ok();
            axes = *a;
        }
        if (c.in(4)) {
            auto st = c.inInts(4);
            if (!st)
                return Status::ok();
            steps = *st;
        }
    } else {
        starts = c.node.attrInts("starts");
        ends = c.node.attrInts("ends");
        axes = c.node.attrInts("axes");
    }
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i)
            axes.push_back(int64_t(i));
    if (steps.empty())
        steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
        return c.fail("starts, ends, axes and steps differ in length");
    Shape out = *x;
    const int64_t rank = int64_t(x->rank());
    std::vector<int64_t> first(x->rank(), 0), step(x->rank(), 1), count(x->rank(), -1);
    for (size_t i = 0; i < starts.size(); ++i) {
        const int64_t a = normAxis(axes[i], rank);
        if (a < 0 || a >= rank)
            return c.fail("axis out of range");
        if (steps[i] == 0)
            return c.fail("step 0");
        const Dim &d = x->dims[size_t(a)];
        if (!d.isStatic()) {
            out.dims[size_t(a)] = Dim();
            continue;
        }
        const int64_t n = d.value, st = steps[i];
        int64_t b = starts[i], e = ends[i];
        if (b < 0)
            b += n;
        if (e < 0)
            e += n;
        int64_t len;
        if (st > 0) {
            b = std::clamp<int64_t>(b, 0, n);
            e = std::clamp<int64_t>(e, 0, n);
            len = e > b ? (e - b + st - 1) / st : 0;
        } else {
            b = std::clamp<int64_t>(b, 0, n - 1);
            e = std::clamp<int64_t>(e, -1, n - 1);
            len = b > e ? (b - e + (-st) - 1) / (-st) : 0;
        }
        out.dims[size_t(a)] = Dim(len);
        first[size_t(a)] = b;
        step[size_t(a)] = st;
        count[size_t(a)] = len;
    }
    std::shared_ptr<ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0); src && x->isStatic() && out.isStatic()) {
        std::vector<int64_t> perm(x->rank());
        for (size_t d = 0; d < perm.size(); ++d)
            perm[d] = int64_t(d);
        k = gatherConst(*src, x->sizes(), out.sizes(), perm, first, step);
    }
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferGather(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    const Shape *idx = c.inShape(1);
    if (!x || !idx)
        return Status::ok();
    const int64_t rank = int64_t(x->rank());
    const int64_t axis = normAxis(c.node.attrInt("axis", 0), rank);
    if (axis < 0 || axis >= rank)
        return c.fail("axis out of range for " + x->toString());
    Shape out;
    for (int64_t i = 0; i < axis; ++i)
        out.dims.push_back(x->dims[size_t(i)]);
    for (const Dim &d : idx->dims)
        out.dims.push_back(d);
    for (int64_t i = axis + 1; i < rank; ++i)
        out.dims.push_back(x->dims[size_t(i)]);
    std::shared_ptr<ConstTensor> k;
    const ConstTensor *src = c.inConst(0);
    auto indices = c.inInts(1);
    if (src && indices && rank == 1 && out.isStatic()) {
        k = makeConst(src->dtype, out.sizes());
        const int64_t n = int64_t(src->size());
        for (int64_t i : *indices) {
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return c.fail("index " + std::to_string(i) + " out of range for " + x->toString());
            if (k->isInteger())
                k->ints.push_back(src->intAt(size_t(i)));
            else
                k->floats.push_back(src->at(size_t(i)));
        }
    }
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferUnsqueeze(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    auto axes = axesOf(c, 1, 13);
    if (!x || !axes)
        return Status::ok();
    const int64_t outRank = int64_t(x->rank() + axes->size());
    std::vector<bool> inserted(size_t(outRank), false);
    for (int64_t a : *axes) {
        a = normAxis(a, outRank);
        if (a < 0 || a >= outRank || inserted[size_t(a)])
            return c.fail("bad axes");
        inserted[size_t(a)] = true;
    }
    Shape out;
    size_t k = 0;
    for (int64_t i = 0; i < outRank; ++i)
        out.dims.push_back(inserted[size_t(i)] ? Dim(1) : x->dims[k++]);
    setReshaped(c, std::move(out));
    return Status::ok();
}

Status inferSqueeze(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    auto axes = axesOf(c, 1, 13);
    if (!x || !axes)
        return Status::ok();
    const int64_t rank = int64_t(x->rank());
    std::vector<bool> drop(x->rank(), false);
    if (axes->empty()) {
        for (size_t i = 0; i < x->rank(); ++i) {
            if (!x->dims[i].isStatic())
                return Status::ok();
            drop[i] = x->dims[i].value == 1;
        }
    }
    for (int64_t a : *axes) {
        a = normAxis(a, rank);
        if (a < 0 || a >= rank)
            return c.fail("axis out of range");
        drop[size_t(a)] = true;
    }
    Shape out;
    for (size_t i = 0; i < x->rank(); ++i)
        if (!drop[i])
            out.dims.push_back(x->dims[i]);
    setReshaped(c, std::move(out));
    return Status::ok();
}

Status inferExpand(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    auto target = c.inInts(1);
    if (!x || !target)
        return Status::ok();
    for (int64_t d : *target)
        if (d < 0)
            return c.fail("negative dim in the target shape");
    Shape t = Shape::fromStatic(*target);
    auto out = broadcast({x, &t});
    if (!out)
        return Status::ok();
    std::shared_ptr<const ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0))
        k = constBroadcast(
            {src}, src->dtype, *out, [](auto &v) { return v[0]; }, [](auto &v) { return v[0]; });
    c.set(0, c.inType(0), *out, k);
    return Status::ok();
}

Status inferCast(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    const DataType t = DataType(int32_t(c.node.attrInt("to", 0)));
    if (!ir::isKnownDataType(int32_t(t)))
        return c.fail("Cast to unknown data type " + std::to_string(int32_t(t)));
    if (!x)
        return Status::ok();
    std::shared_ptr<ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0)) {
        k = makeConst(t, src->dims);
        for (size_t i = 0; i < src->size(); ++i) {
            if (t == DataType::Bool)
                k->ints.push_back(src->at(i) != 0);
            else if (k->isInteger())
                k->ints.push_back(src->intAt(i));
            else
                k->floats.push_back(src->at(i));
        }
    }
    c.set(0, t, *x, k);
    return Status::ok();
}

Status inferPad(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::optional<std::vector<int64_t>> pads =
        c.opset >= 11 ? c.inInts(1) : std::optional(c.node.attrInts("pads"));
    if (!pads)
        return Status::ok();
    std::vector<int64_t> axes;
    if (c.opset >= 18 && c.in(3)) {
        auto a = c.inInts(3);
        if (!a)
            return Status::ok();
        axes = *a;
    } else {
        for (size_t i = 0; i < x->rank(); ++i)
            axes.push_back(int64_t(i));
    }
    if (pads->size() != 2 * axes.size())
        return c.fail("pads has " + std::to_string(pads->size()) + " entries for " + x->toString());
    Shape out = *x;
    for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t a = normAxis(axes[i], int64_t(x->rank()));
        if (a < 0 || a >= int64_t(x->rank()))
            return c.fail("axis out of range");
        Dim &d = out.dims[size_t(a)];
        if (d.isStatic())
            d = Dim(std::max<int64_t>(0, d.value + (*pads)[i] + (*pads)[axes.size() + i]));
    }
    c.set(0, c.inType(0), out);
    return Status::ok();
}

/// GatherElements: the indices' shape with the data's dtype.
Status inferGatherElements(ShapeContext &c)
{
    const Shape *idx = c.inShape(1);
    if (idx)
        c.set(0, c.inType(0), *idx);
    return Status::ok();
}

/// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:].
Status inferGatherND(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    const Shape *idx = c.inShape(1);
    if (!x || !idx || idx->rank() == 0 || !idx->dims.back().isStatic())
        return Status::ok();
    const int64_t batchDims = c.node.attrInt("batch_dims", 0);
    const int64_t last = idx->dims.back().value;
    if (batchDims < 0 || last < 1 || batchDims + last > int64_t(x->rank()))
        return c.fail("indices " + idx->toString() + " do not fit data " + x->toString() +
                      " (batch_dims " + std::to_string(batchDims) + ")");
    Shape out;
    out.dims.assign(idx->dims.begin(), idx->dims.end() - 1);
    out.dims.insert(out.dims.end(), x->dims.begin() + (batchDims + last), x->dims.end());
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferResize(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::optional<std::vector<int64_t>> sizes;
    std::vector<double> scales;
    if (c.node.opType == "Upsample" && c.opset < 9) {
        for (double s : c.node.attribute("scales") ? c.node.attribute("scales")->floats()
                                                   : std::vector<double>{})
            scales.push_back(s);
    } else {
        const size_t scalesIndex = (c.node.opType == "Upsample" || c.opset < 11) ? 1 : 2;
        if (c.node.opType == "Resize" && c.opset >= 11 && c.in(3)) {
            sizes = c.inInts(3);
            if (!sizes)
                return Status::ok();
        }
        if (!sizes && c.in(scalesIndex)) {
            const ConstTensor *s = c.inConst(scalesIndex);
            if (!s)
                return Status::ok();
            for (size_t i = 0; i < s->size(); ++i)
                scales.push_back(s->at(i));
        }
    }
    Shape out = *x;
    if (sizes && !sizes->empty()) {
        if (sizes->size() != x->rank())
            return c.fail("sizes do not match the input's rank");
        out = Shape::fromStatic(*sizes);
    } else {
        if (scales.size() != x->rank())
            return scales.empty() ? Status::ok() : c.fail("scales do not match the input's rank");
        for (size_t i = 0; i < x->rank(); ++i)
            if (x->dims[i].isStatic())
                out.dims[i] = Dim(int64_t(std::floor(double(x->dims[i].value) * scales[i])));
    }
    c.set(0, c.inType(0), out);
    return Status::ok();
}

/// DepthToSpace / SpaceToDepth: [N, C, H, W] -> [N, C / b^2, H b, W b] and back.
Status inferSpaceDepth(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    if (x->rank() != 4)
        return c.fail("input must be 4-D [N, C, H, W], got " + x->toString());
    const int64_t b = c.node.attrInt("blocksize", 0);
    if (b < 1)
        return c.fail("blocksize must be positive");
    const bool toSpace = c.node.opType == "DepthToSpace";
    auto scaled = [&](const Dim &d, int64_t mul, int64_t div) {
        if (!d.isStatic())
            return Dim();
        return Dim(d.value * mul / div);
    };
    const Dim &ch = x->dims[1];
    if (ch.isStatic() && toSpace && ch.value % (b * b) != 0)
        return c.fail("channels " + std::to_string(ch.value) +
                      " are not a multiple of blocksize^2");
    Shape out;
    if (toSpace)
        out = Shape(
            {x->dims[0], scaled(ch, 1, b * b), scaled(x->dims[2], b, 1), scaled(x->dims[3], b, 1)});
    else
        out = Shape(
            {x->dims[0], scaled(ch, b * b, 1), scaled(x->dims[2], 1, b), scaled(x->dims[3], 1, b)});
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferTile(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    auto reps = c.inInts(1);
    if (!x || !reps)
        return Status::ok();
    if (reps->size() != x->rank())
        return c.fail("repeats do not match the input's rank");
    Shape out = *x;
    for (size_t i = 0; i < x->rank(); ++i)
        if (out.dims[i].isStatic())
            out.dims[i] = Dim(out.dims[i].value * (*reps)[i]);
    c.set(0, c.inType(0), out);
    return Status::ok();
}

/// OneHot (F.one_hot): the indices' shape with `depth` (a constant) inserted at `axis`, in the
/// dtype of `values` ([off, on]).
Status inferOneHot(ShapeContext &c)
{
    const Shape *idx = c.inShape(0);
    const ConstTensor *depth = c.inConst(1);
    const DataType type = c.inType(2);
    if (!idx || !depth)
        return Status::ok();
    if (depth->size() != 1)
        return c.fail("depth must hold one value");
    const int64_t d = int64_t(depth->at(0));
    if (d < 1)
        return c.fail("depth must be at least 1, got " + std::to_string(d));
    const int64_t rank = int64_t(idx->rank());
    int64_t axis = c.node.attrInt("axis", -1);
    if (axis < -rank - 1 || axis > rank)
        return c.fail("axis " + std::to_string(axis) + " is out of range for indices of rank " +
                      std::to_string(rank));
    if (axis < 0)
        axis += rank + 1;
    Shape out = *idx;
    out.dims.insert(out.dims.begin() + axis, Dim(d));
    c.set(0, type, out);
    return Status::ok();
}

Status inferFlatten(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const int64_t rank = int64_t(x->rank());
    const int64_t axis = normAxis(c.node.attrInt("axis", 1), rank);
    if (axis < 0 || axis > rank)
        return c.fail("axis out of range");
    auto prod = [&](int64_t b, int64_t e) {
        int64_t n = 1;
        for (int64_t i = b; i < e; ++i) {
            if (!x->dims[size_t(i)].isStatic())
                return Dim();
            if (mulOverflows(n, x->dims[size_t(i)].value, &n))
                return Dim();
        }
        return Dim(n);
    };
    c.set(0, c.inType(0), Shape({prod(0, axis), prod(axis, rank)}));
    return Status::ok();
}

// ---- gradient rules --------------------------------------------------------------------------
Expected<Spec> gather(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    if (!s.gradInputs.empty()) {
        saveInput(s, 1); // the scatter back needs the indices
        s.backwardFlops = numel(c.output(0));
    }
    return s;
}

Expected<Spec> scatterND(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.input(2));
    if (!s.gradInputs.empty()) {
        saveInput(s, 1);
        s.backwardFlops = numel(c.input(0));
    }
    return s;
}

/// Tile (torch's repeat): the backward sums dY over the copies and needs only shapes; PyTorch's
/// repeat saves nothing but the repeats.
Expected<Spec> tile(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    if (!s.gradInputs.empty())
        s.backwardFlops = numel(c.output(0));
    return s;
}

/// CumSum: the backward is the reverse scan of dY; torch.cumsum saves nothing.
Expected<Spec> cumSum(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.output(0));
    if (!s.gradInputs.empty())
        s.backwardFlops = numel(c.output(0));
    return s;
}

/// GatherElements (torch.gather): torch 1.13's gather keeps the input and the indices (measured
/// with saved-tensor hooks; the backward reads only the input's size); the backward scatter-adds.
Expected<Spec> gatherElements(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    if (!s.gradInputs.empty()) {
        saveInput(s, 0);
        saveInput(s, 1);
        s.backwardFlops = numel(c.output(0));
    }
    return s;
}

/// GatherND (x[rows, cols] with index tensors, torch.diagonal as torch.onnx exports it): the
/// backward scatter-adds dY at the indices into zeros of the data's shape; torch's index keeps
/// the indices (IndexBackward0), the data's size only.
Expected<Spec> gatherND(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    if (!s.gradInputs.empty()) {
        saveInput(s, 1);
        s.backwardFlops = numel(c.output(0));
    }
    return s;
}

/// Pad: torch's constant pad keeps nothing; reflection and replication padding
/// (ReflectionPad2d, ReplicationPad2d: ONNX modes reflect and edge) keep their input.
Expected<Spec> pad(const RuleContext &c)
{
    Spec s = *layoutOnly(c);
    const std::string mode = c.node->attrString("mode", "constant");
    if (!s.gradInputs.empty() && (mode == "reflect" || mode == "edge"))
        saveInput(s, 0);
    return s;
}

/// torch.onnx's index_add / index_add_ (symbolic_opset9.index_add, at every opset): the source
/// expanded to itself (Expand), scattered into a Constant of zeros (ScatterElements, reduction
/// none) and added to self. torch 1.13's IndexAddBackward0 keeps the source besides the index
/// (for its sizes); ScatterAddBackward0 (scatter_add, reduction add at opset 16 and later, or a
/// source that is no Expand before) keeps the index alone.
bool isTorchIndexAdd(const RuleContext &c)
{
    if (!c.graph || c.node->attrString("reduction", "none") != "none")
        return false;
    const ir::TensorConstant *zeros = c.constantInput(0);
    if (!zeros || !zeros->hasData())
        return false;
    auto values = zeros->toFloats();
    if (!values || std::any_of(values->begin(), values->end(), [](float v) { return v != 0.0f; }))
        return false;
    const ir::Value *src = c.input(2);
    if (!src || !src->producer.valid() || c.graph->node(src->producer).opType != "Expand")
        return false;
    const ir::Value *out = c.output(0);
    if (!out || out->consumers.empty())
        return false;
    for (const auto reader : out->consumers)
        if (c.graph->node(reader).opType != "Add")
            return false;
    return true;
}

/// ScatterElements with reduction none (torch.scatter) or add (torch.scatter_add, index_add):
/// the backward reads the indices only, as torch keeps them (add passes the whole gradient to
/// the data, none zeroes the overwritten elements), and index_add's source as torch keeps it;
/// mul / max / min have no rule.
Expected<Spec> scatterElements(const RuleContext &c)
{
    const std::string reduction = c.node->attrString("reduction", "none");
    if (reduction != "none" && reduction != "add")
        return makeError(StatusCode::Unsupported,
                         "ScatterElements with reduction '" + reduction +
                             "' has no gradient rule (none and add have); export the model with "
                             "the scatter written as a sum of one-hot products, or classify its "
                             "inputs as constants");
    auto s = scatterND(c);
    if (s && c.needs(2) && isTorchIndexAdd(c))
        saveInput(*s, 2);
    return s;
}

bool castDifferentiable(const ir::Node &node, size_t pos)
{
    return pos == 0 && ir::isFloatingPoint(static_cast<ir::DataType>(node.attrInt("to", 0)));
}

} // namespace

namespace {

/// torch 1.13's CPU autocast list has reflection_pad and replication_pad on fp32; a constant pad
/// is on no list.
AutocastPolicy padReflectOnCpuFp32(const ir::Node *node, size_t, AutocastDevice device,
                                   AutocastPolicy listed)
{
    if (device != AutocastDevice::Cpu || !node)
        return listed;
    const std::string mode = node->attrString("mode", "constant");
    return mode == "reflect" || mode == "edge" ? AutocastPolicy::Fp32 : listed;
}

/// scatter_add is on CUDA's promote list; the other reductions and plain scatter on none.
AutocastPolicy scatterAddPromotes(const ir::Node *node, size_t, AutocastDevice device,
                                  AutocastPolicy listed)
{
    if (device == AutocastDevice::Cuda && node && node->attrString("reduction", "none") == "add")
        return AutocastPolicy::Promote;
    return listed;
}

} // namespace

void addTensorOps(std::vector<OpDef> &t)
{
    t.push_back({.type = "Reshape",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferReshape,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Flatten",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferFlatten,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Squeeze",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferSqueeze,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Unsqueeze",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferUnsqueeze,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Transpose",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferTranspose,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "DepthToSpace",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferSpaceDepth,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "SpaceToDepth",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferSpaceDepth,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Identity",
                 .family = OpFamily::DataMovement,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Cast",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferCast,
                 .differentiable = castDifferentiable,
                 .derive = layoutOnly});
    t.push_back({.type = "Concat",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferConcat,
                 .differentiable = all,
                 .derive = layoutOnly});
    t.push_back({.type = "Split",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferSplit,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Slice",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferSlice,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Pad",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferPad,
                 .differentiable = first,
                 .derive = pad,
                 .autocast = {.refine = padReflectOnCpuFp32}});
    t.push_back({.type = "Resize",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 10,
                 .inferShape = inferResize,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Upsample", // Upsample-7 / -9 (deprecated at 10): Resize's kernels
                 .family = OpFamily::DataMovement,
                 .inferShape = inferResize,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Trilu",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 14,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = layoutOnly});
    t.push_back({.type = "Expand",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 8,
                 .inferShape = inferExpand,
                 .differentiable = first,
                 .derive = reduction});
    t.push_back({.type = "Gather",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferGather,
                 .differentiable = first,
                 .derive = gather});
    t.push_back({.type = "ScatterND",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 11,
                 .inferShape = unaryShape,
                 .differentiable = scatterData,
                 .derive = scatterND,
                 .autocast = {.refine = scatterAddPromotes}});
    t.push_back({.type = "ScatterElements",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 11,
                 .inferShape = unaryShape,
                 .differentiable = scatterData,
                 .derive = scatterElements,
                 .autocast = {.refine = scatterAddPromotes}});
    t.push_back({.type = "Scatter", // opset 9-10's name of ScatterElements (reduction none)
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = unaryShape,
                 .differentiable = scatterData,
                 .derive = scatterElements});
    t.push_back({.type = "GatherND",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 11,
                 .inferShape = inferGatherND,
                 .differentiable = first,
                 .derive = gatherND});
    t.push_back({.type = "GatherElements",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 11,
                 .inferShape = inferGatherElements,
                 .differentiable = first,
                 .derive = gatherElements});
    // F.one_hot: integer codes of indices, no gradient (PyTorch's one_hot is not differentiable)
    t.push_back({.type = "OneHot",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = inferOneHot,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient});
    t.push_back({.type = "Tile",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 6,
                 .inferShape = inferTile,
                 .differentiable = first,
                 .derive = tile});
    t.push_back({.type = "CumSum",
                 .family = OpFamily::Arithmetic,
                 .sinceOpset = 11,
                 .inferShape = unaryShape,
                 .differentiable = first,
                 .derive = cumSum,
                 .autocast = {.cuda = AutocastPolicy::Fp32}});
}

} // namespace remat::core::ops
