#include "core/ops/shape_context.h"

#include "core/util/bytes.h"

#include <algorithm>
#include <cstring>

namespace remat::core::ops {

std::shared_ptr<const ConstTensor> constTensorFrom(const ir::TensorConstant &t)
{
    if (!t.hasData() || !t.shape.isStatic())
        return nullptr;
    auto n = t.shape.numElements();
    if (!n || *n > kMaxConstElements)
        return nullptr;
    auto c = std::make_shared<ConstTensor>();
    c->dtype = t.dtype;
    c->dims = t.shape.sizes();
    if (ir::isFloatingPoint(t.dtype)) {
        if (t.dtype != DataType::Float && t.dtype != DataType::Double)
            return nullptr; // half types are never shape data
        auto f = t.toFloats();
        if (!f)
            return nullptr;
        c->floats.assign(f->begin(), f->end());
        if (t.dtype == DataType::Double) { // toFloats loses precision; read doubles directly
            auto raw = t.bytes();
            if (!raw)
                return nullptr;
            c->floats.resize(raw->size() / 8);
            std::memcpy(c->floats.data(), raw->data(), c->floats.size() * 8);
        }
    } else {
        auto i = t.toInt64s();
        if (!i)
            return nullptr;
        c->ints = std::move(*i);
    }
    if (int64_t(c->size()) != *n)
        return nullptr;
    return c;
}

Dim broadcastDim(const Dim &a, const Dim &b)
{
    if (a.isStatic() && a.value == 1)
        return b;
    if (b.isStatic() && b.value == 1)
        return a;
    if (a.isStatic())
        return a;
    if (b.isStatic())
        return b;
    if (!a.symbol.empty() && a.symbol == b.symbol)
        return a;
    return Dim();
}

std::optional<Shape> broadcast(const std::vector<const Shape *> &shapes)
{
    size_t rank = 0;
    for (const Shape *s : shapes) {
        if (!s || !s->rankKnown)
            return std::nullopt;
        rank = std::max(rank, s->rank());
    }
    Shape out(std::vector<Dim>(rank, Dim(1)));
    for (const Shape *s : shapes) {
        const size_t off = rank - s->rank();
        for (size_t i = 0; i < s->rank(); ++i)
            out.dims[off + i] = broadcastDim(out.dims[off + i], s->dims[i]);
    }
    return out;
}

int64_t normAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Output size of a sliding window (Conv, pools).
Dim windowDim(const Dim &in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
              int64_t padEnd, const std::string &autoPad, bool ceilMode)
{
    if (!in.isStatic() || stride <= 0)
        return Dim();
    const int64_t effK = dilation * (kernel - 1) + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
        return Dim((in.value + stride - 1) / stride);
    if (autoPad == "VALID")
        return Dim(in.value < effK ? 0 : (in.value - effK) / stride + 1);
    const int64_t span = in.value + padBegin + padEnd - effK;
    if (span < 0)
        return Dim(0);
    int64_t out = ceilMode ? (span + stride - 1) / stride + 1 : span / stride + 1;
    // A window may not start in the end padding (PyTorch's and ONNX's ceil-mode rule).
    if (ceilMode && (out - 1) * stride >= in.value + padBegin)
        --out;
    return Dim(out);
}

std::shared_ptr<ConstTensor> makeConst(DataType t, std::vector<int64_t> dims)
{
    auto c = std::make_shared<ConstTensor>();
    c->dtype = t;
    c->dims = std::move(dims);
    return c;
}

int64_t product(const std::vector<int64_t> &d)
{
    int64_t n = 1;
    for (int64_t x : d)
        if (mulOverflows(n, x, &n))
            return -1;
    return n;
}

/// Element-wise op over broadcast constants (all of them small); null when not computable.
std::shared_ptr<const ConstTensor>
constBroadcast(const std::vector<const ConstTensor *> &ins, DataType outType, const Shape &outShape,
               const std::function<double(const std::vector<double> &)> &ff,
               const std::function<int64_t(const std::vector<int64_t> &)> &fi)
{
    if (!outShape.isStatic())
        return nullptr;
    for (const ConstTensor *c : ins)
        if (!c)
            return nullptr;
    const std::vector<int64_t> od = outShape.sizes();
    const int64_t n = product(od);
    if (n < 0 || n > kMaxConstElements)
        return nullptr;
    for (const ConstTensor *c : ins) { // each must broadcast to the output and hold its elements
        if (c->dims.size() > od.size() || product(c->dims) != int64_t(c->size()))
            return nullptr;
        for (size_t d = 0; d < c->dims.size(); ++d) {
            const int64_t cd = c->dims[d], o = od[od.size() - c->dims.size() + d];
            if (cd != 1 && cd != o)
                return nullptr;
        }
    }
    bool allInt = true;
    for (const ConstTensor *c : ins)
        allInt = allInt && c->isInteger();
    auto out = makeConst(outType, od);
    const size_t rank = od.size();
    std::vector<int64_t> idx(rank, 0);
    std::vector<double> fargs(ins.size());
    std::vector<int64_t> iargs(ins.size());
    for (int64_t e = 0; e < n; ++e) {
        int64_t rem = e;
        for (size_t d = rank; d-- > 0;) {
            idx[d] = od[d] ? rem % od[d] : 0;
            rem = od[d] ? rem / od[d] : 0;
        }
        for (size_t k = 0; k < ins.size(); ++k) {
            const ConstTensor *c = ins[k];
            const size_t off = rank - c->dims.size();
            int64_t flat = 0;
            for (size_t d = 0; d < c->dims.size(); ++d)
                flat = flat * c->dims[d] + (c->dims[d] == 1 ? 0 : idx[off + d]);
            if (allInt)
                iargs[k] = c->ints[size_t(flat)];
            else
                fargs[k] = c->at(size_t(flat));
        }
        if (allInt) {
            const int64_t r = fi(iargs);
            if (ir::isFloatingPoint(outType))
                out->floats.push_back(double(r));
            else
                out->ints.push_back(r);
        } else {
            const double r = ff(fargs);
            if (ir::isFloatingPoint(outType))
                out->floats.push_back(r);
            else
                out->ints.push_back(int64_t(r));
        }
    }
    return out;
}

std::optional<std::vector<int64_t>> axesOf(ShapeContext &c, size_t inputIndex,
                                           int firstOpsetAsInput)
{
    if (c.opset >= firstOpsetAsInput) {
        if (!c.in(inputIndex))
            return std::vector<int64_t>{};
        return c.inInts(inputIndex);
    }
    return c.node.attrInts("axes");
}

} // namespace remat::core::ops
