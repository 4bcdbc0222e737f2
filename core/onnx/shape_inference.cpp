#include "shape_inference.h"

#include "core/util/bytes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace remat::core::onnx {

using ir::DataType;
using ir::Dim;
using ir::Shape;

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

namespace {

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

int64_t normAxis(int64_t axis, int64_t rank)
{
    return axis < 0 ? axis + rank : axis;
}

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

int64_t product(const std::vector<int64_t> &d);

struct Ctx
{
    const ir::Graph &g;
    const ir::Node &node;
    std::vector<InferredValue> &vals;
    int64_t opset;
    const BatchRewrite &rw;

    /// The input's shape at the file's batch (rewrite pass only).
    const Shape *inFileShape(size_t i) const
    {
        if (!rw.atFileBatch || i >= node.inputs.size() || !node.inputs[i].valid())
            return nullptr;
        const InferredValue &v = (*rw.atFileBatch)[node.inputs[i].index()];
        return v.shape.rankKnown ? &v.shape : nullptr;
    }
    /// Dim k of inputs a and b disagree: when one still holds its file-batch size and the other
    /// followed the batch, the stale one is patched and the new size returned.
    std::optional<Dim> reconcile(size_t a, size_t b, size_t ka, size_t kb)
    {
        const Shape *fa = inFileShape(a), *fb = inFileShape(b);
        const Shape *ca = inShape(a), *cb = inShape(b);
        if (!fa || !fb || !ca || !cb || ka >= fa->rank() || kb >= fb->rank() || ka >= ca->rank() ||
            kb >= cb->rank())
            return std::nullopt;
        const bool aChanged = !(ca->dims[ka] == fa->dims[ka]);
        const bool bChanged = !(cb->dims[kb] == fb->dims[kb]);
        if (aChanged == bChanged || !(fa->dims[ka] == fb->dims[kb]))
            return std::nullopt;
        const size_t stale = aChanged ? b : a;
        const size_t ks = aChanged ? kb : ka;
        const Dim fresh = aChanged ? ca->dims[ka] : cb->dims[kb];
        vals[node.inputs[stale].index()].shape.dims[ks] = fresh;
        return fresh;
    }

    const InferredValue *in(size_t i) const
    {
        if (i >= node.inputs.size() || !node.inputs[i].valid())
            return nullptr;
        return &vals[node.inputs[i].index()];
    }
    const Shape *inShape(size_t i) const
    {
        const InferredValue *v = in(i);
        return v && v->shape.rankKnown ? &v->shape : nullptr;
    }
    DataType inType(size_t i) const
    {
        const InferredValue *v = in(i);
        return v ? v->dtype : DataType::Undefined;
    }
    const ConstTensor *inConst(size_t i) const
    {
        const InferredValue *v = in(i);
        return v ? v->constant.get() : nullptr;
    }
    std::optional<std::vector<int64_t>> inInts(size_t i) const
    {
        const ConstTensor *c = inConst(i);
        if (!c)
            return std::nullopt;
        std::vector<int64_t> out(c->size());
        for (size_t k = 0; k < out.size(); ++k)
            out[k] = c->intAt(k);
        return out;
    }
    bool hasOutput(size_t i) const { return i < node.outputs.size() && node.outputs[i].valid(); }
    void set(size_t i, DataType t, Shape s, std::shared_ptr<const ConstTensor> c = nullptr)
    {
        if (!hasOutput(i))
            return;
        InferredValue &v = vals[node.outputs[i].index()];
        if (v.known() && v.shape.isStatic() && !(s.isStatic()))
            return; // keep what we were given
        if (t != DataType::Undefined)
            v.dtype = t;
        if (s.rankKnown)
            v.shape = std::move(s);
        if (c && product(c->dims) == int64_t(c->size()))
            v.constant = std::move(c);
    }
    Status fail(const std::string &problem) const
    {
        return makeError(StatusCode::ParseError, "node '" + (node.name.empty() ? node.opType : node.name) +
                                                     "' (" + node.opType + "): " + problem);
    }
};

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
std::shared_ptr<const ConstTensor> constBroadcast(const std::vector<const ConstTensor *> &ins, DataType outType,
                                                  const Shape &outShape,
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

Status inferBinary(Ctx &c, const std::string &op)
{
    const Shape *a = c.inShape(0);
    const Shape *b = c.inShape(1);
    if (a && b && c.rw.atFileBatch) {
        const size_t r = std::max(a->rank(), b->rank());
        for (size_t k = 0; k < r; ++k) {
            if (k + a->rank() < r || k + b->rank() < r)
                continue;
            const size_t ka = k + a->rank() - r, kb = k + b->rank() - r;
            const Dim &da = a->dims[ka], &db = b->dims[kb];
            if (da.isStatic() && db.isStatic() && da.value != db.value && da.value != 1 && db.value != 1)
                c.reconcile(0, 1, ka, kb);
        }
    }
    auto s = broadcast({a, b});
    if (!s)
        return Status::ok();
    const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                     op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor";
    const DataType t = cmp ? DataType::Bool : c.inType(0);
    std::function<double(const std::vector<double> &)> ff;
    std::function<int64_t(const std::vector<int64_t> &)> fi;
    if (op == "Add") {
        ff = [](auto &v) { return v[0] + v[1]; };
        fi = [](auto &v) { return v[0] + v[1]; };
    } else if (op == "Sub") {
        ff = [](auto &v) { return v[0] - v[1]; };
        fi = [](auto &v) { return v[0] - v[1]; };
    } else if (op == "Mul") {
        ff = [](auto &v) { return v[0] * v[1]; };
        fi = [](auto &v) { return v[0] * v[1]; };
    } else if (op == "Div") {
        ff = [](auto &v) { return v[0] / v[1]; };
        fi = [](auto &v) { return v[1] == 0 ? 0 : v[0] / v[1]; };
    } else if (op == "Equal") {
        ff = [](auto &v) { return double(v[0] == v[1]); };
        fi = [](auto &v) { return int64_t(v[0] == v[1]); };
    } else if (op == "Less") {
        ff = [](auto &v) { return double(v[0] < v[1]); };
        fi = [](auto &v) { return int64_t(v[0] < v[1]); };
    } else if (op == "Greater") {
        ff = [](auto &v) { return double(v[0] > v[1]); };
        fi = [](auto &v) { return int64_t(v[0] > v[1]); };
    } else if (op == "And") {
        ff = [](auto &v) { return double(v[0] != 0 && v[1] != 0); };
        fi = [](auto &v) { return int64_t(v[0] != 0 && v[1] != 0); };
    } else if (op == "Or") {
        ff = [](auto &v) { return double(v[0] != 0 || v[1] != 0); };
        fi = [](auto &v) { return int64_t(v[0] != 0 || v[1] != 0); };
    } else if (op == "Pow") {
        ff = [](auto &v) { return std::pow(v[0], v[1]); };
        fi = [](auto &v) { return int64_t(std::pow(double(v[0]), double(v[1]))); };
    } else if (op == "Max") {
        ff = [](auto &v) { return std::max(v[0], v[1]); };
        fi = [](auto &v) { return std::max(v[0], v[1]); };
    } else if (op == "Min") {
        ff = [](auto &v) { return std::min(v[0], v[1]); };
        fi = [](auto &v) { return std::min(v[0], v[1]); };
    }
    std::shared_ptr<const ConstTensor> k;
    if (ff && c.inConst(0) && c.inConst(1))
        k = constBroadcast({c.inConst(0), c.inConst(1)}, t, *s, ff, fi);
    c.set(0, t, *s, k);
    return Status::ok();
}

std::optional<std::vector<int64_t>> axesOf(Ctx &c, size_t inputIndex, int firstOpsetAsInput)
{
    if (c.opset >= firstOpsetAsInput) {
        if (!c.in(inputIndex))
            return std::vector<int64_t>{};
        return c.inInts(inputIndex);
    }
    return c.node.attrInts("axes");
}

Status inferReduce(Ctx &c, int firstOpsetAxesInput)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    auto axes = axesOf(c, 1, firstOpsetAxesInput);
    if (!axes)
        return Status::ok();
    const bool keep = c.node.attrInt("keepdims", 1) != 0;
    const int64_t r = int64_t(x->rank());
    std::vector<bool> reduce(x->rank(), false);
    if (axes->empty()) {
        if (c.node.attrInt("noop_with_empty_axes", 0) != 0) {
            c.set(0, c.inType(0), *x);
            return Status::ok();
        }
        reduce.assign(x->rank(), true);
    }
    for (int64_t a : *axes) {
        a = normAxis(a, r);
        if (a < 0 || a >= r)
            return c.fail("axis out of range");
        reduce[size_t(a)] = true;
    }
    Shape out;
    for (size_t i = 0; i < x->rank(); ++i) {
        if (!reduce[i])
            out.dims.push_back(x->dims[i]);
        else if (keep)
            out.dims.push_back(Dim(1));
    }
    const DataType t = (c.node.opType == "ArgMax" || c.node.opType == "ArgMin") ? DataType::Int64 : c.inType(0);
    c.set(0, t, out);
    return Status::ok();
}

Status inferConv(Ctx &c, bool transpose)
{
    const Shape *x = c.inShape(0);
    const Shape *w = c.inShape(1);
    if (!x || x->rank() < 3)
        return Status::ok();
    const size_t nsp = x->rank() - 2;
    std::vector<int64_t> kernel = c.node.attrInts("kernel_shape");
    if (kernel.empty() && w && w->rank() == x->rank() && w->isStatic())
        for (size_t i = 0; i < nsp; ++i)
            kernel.push_back(w->dims[2 + i].value);
    if (kernel.size() != nsp)
        return Status::ok();
    const auto strides = c.node.attrInts("strides", std::vector<int64_t>(nsp, 1));
    const auto dil = c.node.attrInts("dilations", std::vector<int64_t>(nsp, 1));
    const auto pads = c.node.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
    if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
        return c.fail("strides, dilations or pads do not match the input's rank");
    const std::string autoPad = c.node.attrString("auto_pad", "NOTSET");
    const int64_t group = c.node.attrInt("group", 1);
    Shape out;
    out.dims.push_back(x->dims[0]);
    if (w && w->rank() >= 2)
        out.dims.push_back(transpose ? (w->dims[1].isStatic() ? Dim(w->dims[1].value * group) : Dim())
                                     : w->dims[0]);
    else
        out.dims.push_back(Dim());
    if (transpose) {
        const auto outShape = c.node.attrInts("output_shape");
        const auto outPad = c.node.attrInts("output_padding", std::vector<int64_t>(nsp, 0));
        for (size_t i = 0; i < nsp; ++i) {
            if (outShape.size() == nsp) {
                out.dims.push_back(Dim(outShape[i]));
                continue;
            }
            const Dim &in = x->dims[2 + i];
            if (!in.isStatic()) {
                out.dims.push_back(Dim());
                continue;
            }
            out.dims.push_back(Dim(strides[i] * (in.value - 1) + (i < outPad.size() ? outPad[i] : 0) +
                                   (kernel[i] - 1) * dil[i] + 1 - pads[i] - pads[nsp + i]));
        }
    } else {
        for (size_t i = 0; i < nsp; ++i)
            out.dims.push_back(windowDim(x->dims[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                         pads[nsp + i], autoPad, false));
    }
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferPool(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (!x || x->rank() < 3)
        return Status::ok();
    const size_t nsp = x->rank() - 2;
    const auto kernel = c.node.attrInts("kernel_shape");
    if (kernel.size() != nsp)
        return c.fail("kernel_shape does not match the input's rank");
    const auto strides = c.node.attrInts("strides", std::vector<int64_t>(nsp, 1));
    const auto dil = c.node.attrInts("dilations", std::vector<int64_t>(nsp, 1));
    const auto pads = c.node.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
    if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp)
        return c.fail("strides, dilations or pads do not match the input's rank");
    const std::string autoPad = c.node.attrString("auto_pad", "NOTSET");
    const bool ceilMode = c.node.attrInt("ceil_mode", 0) != 0;
    Shape out;
    out.dims = {x->dims[0], x->dims[1]};
    for (size_t i = 0; i < nsp; ++i)
        out.dims.push_back(windowDim(x->dims[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                     pads[nsp + i], autoPad, ceilMode));
    c.set(0, c.inType(0), out);
    c.set(1, DataType::Int64, out); // MaxPool indices
    return Status::ok();
}

Status inferMatMul(Ctx &c)
{
    const Shape *a = c.inShape(0);
    const Shape *b = c.inShape(1);
    if (!a || !b || a->rank() == 0 || b->rank() == 0)
        return Status::ok();
    Shape A = *a, B = *b;
    const bool aVec = A.rank() == 1, bVec = B.rank() == 1;
    if (aVec)
        A.dims.insert(A.dims.begin(), Dim(1));
    if (bVec)
        B.dims.push_back(Dim(1));
    const Dim &ka = A.dims[A.rank() - 1];
    const Dim &kb = B.dims[B.rank() - 2];
    if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
        return c.fail("inner dimensions " + std::to_string(ka.value) + " and " + std::to_string(kb.value) +
                      " differ (" + a->toString() + " x " + b->toString() + ")");
    Shape ba(std::vector<Dim>(A.dims.begin(), A.dims.end() - 2));
    Shape bb(std::vector<Dim>(B.dims.begin(), B.dims.end() - 2));
    auto batch = broadcast({&ba, &bb});
    if (!batch)
        return Status::ok();
    Shape out = *batch;
    if (!aVec)
        out.dims.push_back(A.dims[A.rank() - 2]);
    if (!bVec)
        out.dims.push_back(B.dims[B.rank() - 1]);
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferGemm(Ctx &c)
{
    const Shape *a = c.inShape(0);
    const Shape *b = c.inShape(1);
    if (!a || !b)
        return Status::ok();
    if (a->rank() != 2 || b->rank() != 2)
        return c.fail("Gemm needs 2-D inputs, got " + a->toString() + " and " + b->toString());
    const bool ta = c.node.attrInt("transA", 0) != 0, tb = c.node.attrInt("transB", 0) != 0;
    const Dim m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
    const Dim kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
        return c.fail("inner dimensions " + std::to_string(ka.value) + " and " + std::to_string(kb.value) +
                      " differ (" + a->toString() + " x " + b->toString() + ")");
    c.set(0, c.inType(0), Shape({m, n}));
    return Status::ok();
}

/// See BatchRewrite: the Reshape target of a file traced at another batch, moved to this batch.
std::optional<std::vector<int64_t>> reshapeAtNewBatch(Ctx &c, const std::vector<int64_t> &target, bool allowZero)
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
    const InferredValue *targetThen =
        c.node.inputs.size() > 1 && c.node.inputs[1].valid() ? &(*c.rw.atFileBatch)[c.node.inputs[1].index()] : nullptr;
    if (!targetNow || !targetThen || !targetThen->constant || targetThen->constant->ints != targetNow->ints)
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

Status inferReshape(Ctx &c)
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
        return c.fail("cannot reshape " + x->toString() + " (" + std::to_string(inCount) + " elements) to " +
                      out.toString());
    }
    std::shared_ptr<ConstTensor> k;
    if (const ConstTensor *src = c.inConst(0); src && out.isStatic()) {
        auto kk = std::make_shared<ConstTensor>(*src);
        kk->dims = out.sizes();
        k = kk;
    }
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferTranspose(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::vector<int64_t> perm = c.node.attrInts("perm");
    if (perm.empty())
        for (size_t i = x->rank(); i-- > 0;)
            perm.push_back(int64_t(i));
    if (perm.size() != x->rank())
        return c.fail("perm has " + std::to_string(perm.size()) + " entries for input " + x->toString());
    Shape out;
    for (int64_t p : perm) {
        if (p < 0 || p >= int64_t(x->rank()))
            return c.fail("perm entry out of range");
        out.dims.push_back(x->dims[size_t(p)]);
    }
    c.set(0, c.inType(0), out);
    return Status::ok();
}

Status inferConcat(Ctx &c)
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
            return c.fail("inputs of different ranks (" + shapes[0]->toString() + ", " + s->toString() + ")");
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
            else if (out.dims[k].isStatic() && s->dims[k].isStatic() && out.dims[k].value != s->dims[k].value) {
                const size_t i = size_t(&s - shapes.data());
                auto fixed = c.reconcile(0, i, k, k);
                if (!fixed)
                    return c.fail("inputs disagree in dim " + std::to_string(k) + " (" + shapes[0]->toString() +
                                  ", " + s->toString() + ")");
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

Status inferSplit(Ctx &c)
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
        return c.fail("split has " + std::to_string(split.size()) + " sizes for " + std::to_string(nOut) + " outputs");
    for (size_t i = 0; i < nOut; ++i) {
        Shape o = *x;
        o.dims[size_t(axis)] = Dim(split[i]);
        c.set(i, c.inType(0), o);
    }
    return Status::ok();
}

Status inferSlice(Ctx &c)
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
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
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
    const ConstTensor *src = c.inConst(0);
    if (src && x->rank() == 1 && out.isStatic() && x->dims[0].value == int64_t(src->size())) {
        k = makeConst(src->dtype, out.sizes());
        for (int64_t i = 0; i < out.dims[0].value; ++i) {
            const size_t at = size_t(first[0] + i * step[0]);
            if (k->isInteger())
                k->ints.push_back(src->intAt(at));
            else
                k->floats.push_back(src->at(at));
        }
    }
    c.set(0, c.inType(0), out, k);
    return Status::ok();
}

Status inferGather(Ctx &c)
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

Status inferUnsqueeze(Ctx &c)
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
    std::shared_ptr<ConstTensor> kc;
    if (const ConstTensor *src = c.inConst(0); src && out.isStatic()) {
        auto kk = std::make_shared<ConstTensor>(*src);
        kk->dims = out.sizes();
        kc = kk;
    }
    c.set(0, c.inType(0), out, kc);
    return Status::ok();
}

Status inferSqueeze(Ctx &c)
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
    std::shared_ptr<ConstTensor> kc;
    if (const ConstTensor *src = c.inConst(0); src && out.isStatic()) {
        auto kk = std::make_shared<ConstTensor>(*src);
        kk->dims = out.sizes();
        kc = kk;
    }
    c.set(0, c.inType(0), out, kc);
    return Status::ok();
}

Status inferExpand(Ctx &c)
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
        k = constBroadcast({src}, src->dtype, *out, [](auto &v) { return v[0]; }, [](auto &v) { return v[0]; });
    c.set(0, c.inType(0), *out, k);
    return Status::ok();
}

Status inferWhere(Ctx &c)
{
    auto out = broadcast({c.inShape(0), c.inShape(1), c.inShape(2)});
    if (!out)
        return Status::ok();
    const DataType t = c.inType(1) != DataType::Undefined ? c.inType(1) : c.inType(2);
    std::shared_ptr<const ConstTensor> k;
    if (c.inConst(0) && c.inConst(1) && c.inConst(2))
        k = constBroadcast({c.inConst(0), c.inConst(1), c.inConst(2)}, t, *out,
                           [](auto &v) { return v[0] != 0 ? v[1] : v[2]; },
                           [](auto &v) { return v[0] != 0 ? v[1] : v[2]; });
    c.set(0, t, *out, k);
    return Status::ok();
}

Status inferRange(Ctx &c)
{
    const ConstTensor *s = c.inConst(0), *l = c.inConst(1), *d = c.inConst(2);
    const DataType t = c.inType(0);
    if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1) {
        c.set(0, t, Shape({Dim()}));
        return Status::ok();
    }
    const double start = s->at(0), limit = l->at(0), delta = d->at(0);
    if (delta == 0)
        return c.fail("delta 0");
    const double n = std::max(0.0, std::ceil((limit - start) / delta));
    if (n > double(int64_t(1) << 62))
        return c.fail("the range has more elements than fit in 64 bits");
    const int64_t count = int64_t(n);
    std::shared_ptr<ConstTensor> k;
    if (count <= kMaxConstElements) {
        k = makeConst(t, {count});
        for (int64_t i = 0; i < count; ++i) {
            if (k->isInteger())
                k->ints.push_back(s->intAt(0) + i * d->intAt(0));
            else
                k->floats.push_back(start + double(i) * delta);
        }
    }
    c.set(0, t, Shape::fromStatic({count}), k);
    return Status::ok();
}

Status inferShape(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const int64_t rank = int64_t(x->rank());
    int64_t start = c.node.attrInt("start", 0), end = c.node.attrInt("end", rank);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    const int64_t n = std::max<int64_t>(0, end - start);
    std::shared_ptr<ConstTensor> k;
    bool known = true;
    for (int64_t i = start; i < end; ++i)
        known = known && x->dims[size_t(i)].isStatic();
    if (known) {
        k = makeConst(DataType::Int64, {n});
        for (int64_t i = start; i < end; ++i)
            k->ints.push_back(x->dims[size_t(i)].value);
    }
    c.set(0, DataType::Int64, Shape::fromStatic({n}), k);
    return Status::ok();
}

Status inferConstantOfShape(Ctx &c)
{
    auto dims = c.inInts(0);
    const ir::Attribute *value = c.node.attribute("value");
    DataType t = DataType::Float;
    std::shared_ptr<const ConstTensor> fill;
    if (value && value->isTensor()) {
        t = value->tensor().dtype;
        fill = constTensorFrom(value->tensor());
    }
    if (!dims) {
        if (const Shape *s = c.inShape(0); s && s->rank() == 1 && s->dims[0].isStatic())
            c.set(0, t, Shape(std::vector<Dim>(size_t(s->dims[0].value))));
        return Status::ok();
    }
    for (int64_t d : *dims)
        if (d < 0)
            return c.fail("negative dim " + std::to_string(d) + " in the requested shape");
    Shape out = Shape::fromStatic(*dims);
    auto n = out.numElements();
    if (!n)
        return c.fail(n.status().message());
    std::shared_ptr<ConstTensor> k;
    if (*n <= kMaxConstElements) {
        k = makeConst(t, *dims);
        const double fv = fill && fill->size() ? fill->at(0) : 0.0;
        const int64_t iv = fill && fill->size() ? fill->intAt(0) : 0;
        if (k->isInteger())
            k->ints.assign(size_t(*n), iv);
        else
            k->floats.assign(size_t(*n), fv);
    }
    c.set(0, t, out, k);
    return Status::ok();
}

Status inferConstant(Ctx &c)
{
    const ir::Attribute *a = c.node.attribute("value");
    if (a && a->isTensor()) {
        c.set(0, a->tensor().dtype, a->tensor().shape, constTensorFrom(a->tensor()));
        return Status::ok();
    }
    if ((a = c.node.attribute("value_float"))) {
        auto k = makeConst(DataType::Float, {});
        k->floats = {a->f()};
        c.set(0, DataType::Float, Shape(), k);
    } else if ((a = c.node.attribute("value_int"))) {
        auto k = makeConst(DataType::Int64, {});
        k->ints = {a->i()};
        c.set(0, DataType::Int64, Shape(), k);
    } else if ((a = c.node.attribute("value_ints"))) {
        auto k = makeConst(DataType::Int64, {int64_t(a->ints().size())});
        k->ints = a->ints();
        c.set(0, DataType::Int64, Shape::fromStatic(k->dims), k);
    } else if ((a = c.node.attribute("value_floats"))) {
        auto k = makeConst(DataType::Float, {int64_t(a->floats().size())});
        k->floats = a->floats();
        c.set(0, DataType::Float, Shape::fromStatic(k->dims), k);
    }
    return Status::ok();
}

Status inferCast(Ctx &c)
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

Status inferPad(Ctx &c)
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

Status inferResize(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    std::optional<std::vector<int64_t>> sizes;
    std::vector<double> scales;
    if (c.node.opType == "Upsample" && c.opset < 9) {
        for (double s : c.node.attribute("scales") ? c.node.attribute("scales")->floats() : std::vector<double>{})
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

Status inferTile(Ctx &c)
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

Status inferFlatten(Ctx &c)
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

Status inferLayerNorm(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    c.set(0, c.inType(0), *x);
    const int64_t axis = normAxis(c.node.attrInt("axis", -1), int64_t(x->rank()));
    Shape stat = *x;
    for (size_t i = size_t(std::max<int64_t>(axis, 0)); i < stat.rank(); ++i)
        stat.dims[i] = Dim(1);
    const int64_t stash = c.node.attrInt("stash_type", 1);
    const DataType st = ir::isKnownDataType(int32_t(stash)) ? DataType(int32_t(stash)) : DataType::Float;
    c.set(1, st, stat);
    c.set(2, st, stat);
    return Status::ok();
}

Status inferBatchNorm(Ctx &c)
{
    const Shape *x = c.inShape(0);
    if (x)
        c.set(0, c.inType(0), *x);
    const Shape *scale = c.inShape(1);
    if (scale)
        for (size_t i = 1; i < c.node.outputs.size(); ++i)
            c.set(i, c.inType(1), *scale);
    return Status::ok();
}

Status inferUnary(Ctx &c, DataType outType)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const DataType t = outType != DataType::Undefined ? outType : c.inType(0);
    std::shared_ptr<ConstTensor> k;
    const ConstTensor *src = c.inConst(0);
    const std::string &op = c.node.opType;
    if (src && (op == "Identity" || op == "Neg" || op == "Not" || op == "Abs" || op == "Floor" ||
                op == "Ceil" || op == "Sqrt")) {
        k = makeConst(t, src->dims);
        for (size_t i = 0; i < src->size(); ++i) {
            if (k->isInteger()) {
                const int64_t v = src->intAt(i);
                k->ints.push_back(op == "Neg" ? -v : op == "Not" ? int64_t(v == 0) : op == "Abs" ? std::abs(v) : v);
            } else {
                const double v = src->at(i);
                k->floats.push_back(op == "Neg" ? -v : op == "Abs" ? std::fabs(v) : op == "Floor" ? std::floor(v)
                                    : op == "Ceil" ? std::ceil(v) : op == "Sqrt" ? std::sqrt(v) : v);
            }
        }
    }
    c.set(0, t, *x, k);
    return Status::ok();
}

Status inferVariadic(Ctx &c)
{
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < c.node.inputs.size(); ++i)
        shapes.push_back(c.inShape(i));
    auto out = broadcast(shapes);
    if (out)
        c.set(0, c.inType(0), *out);
    return Status::ok();
}

bool isUnary(std::string_view op)
{
    static const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs",
                                "Reciprocal", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu", "Selu",
                                "Gelu", "Softplus", "Softsign", "Identity", "Clip", "LRN", "Softmax",
                                "LogSoftmax", "Hardmax", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos",
                                "Trilu", "ScatterND", "ScatterElements", "CumSum", "InstanceNormalization",
                                "Celu", "ThresholdedRelu", "Mish", "Shrink", "PRelu",
                                "LpNormalization", "MeanVarianceNormalization", "Not"};
    for (const char *o : ops)
        if (op == o)
            return true;
    return false;
}

Status inferNode(Ctx &c)
{
    const std::string &op = c.node.opType;
    if (!c.node.domain.empty() && c.node.domain != "ai.onnx")
        return Status::ok();
    if (op == "Constant")
        return inferConstant(c);
    if (op == "Dropout") {
        const Shape *x = c.inShape(0);
        if (x) {
            c.set(0, c.inType(0), *x, nullptr);
            c.set(1, DataType::Bool, *x);
        }
        return Status::ok();
    }
    if (op == "Not")
        return inferUnary(c, DataType::Bool);
    if (op == "IsNaN" || op == "IsInf")
        return inferUnary(c, DataType::Bool);
    if (isUnary(op))
        return inferUnary(c, DataType::Undefined);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" ||
        op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
        op == "Or" || op == "Xor" || op == "Mod" || ((op == "Max" || op == "Min") && c.node.inputs.size() == 2))
        return inferBinary(c, op);
    if (op == "Sum" || op == "Max" || op == "Min" || op == "Mean")
        return inferVariadic(c);
    if (op == "Where")
        return inferWhere(c);
    if (op == "Conv")
        return inferConv(c, false);
    if (op == "ConvTranspose")
        return inferConv(c, true);
    if (op == "MaxPool" || op == "AveragePool" || op == "LpPool")
        return inferPool(c);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
        const Shape *x = c.inShape(0);
        if (x && x->rank() >= 2) {
            Shape out = *x;
            for (size_t i = 2; i < out.rank(); ++i)
                out.dims[i] = Dim(1);
            c.set(0, c.inType(0), out);
        }
        return Status::ok();
    }
    if (op == "BatchNormalization")
        return inferBatchNorm(c);
    if (op == "LayerNormalization")
        return inferLayerNorm(c);
    if (op == "Flatten")
        return inferFlatten(c);
    if (op == "Gemm")
        return inferGemm(c);
    if (op == "MatMul")
        return inferMatMul(c);
    if (op == "Reshape")
        return inferReshape(c);
    if (op == "Transpose")
        return inferTranspose(c);
    if (op == "Concat")
        return inferConcat(c);
    if (op == "Split")
        return inferSplit(c);
    if (op == "Slice")
        return inferSlice(c);
    if (op == "Gather")
        return inferGather(c);
    if (op == "Unsqueeze")
        return inferUnsqueeze(c);
    if (op == "Squeeze")
        return inferSqueeze(c);
    if (op == "Expand")
        return inferExpand(c);
    if (op == "Range")
        return inferRange(c);
    if (op == "Shape")
        return inferShape(c);
    if (op == "Size") {
        std::shared_ptr<ConstTensor> k;
        if (const Shape *x = c.inShape(0); x && x->isStatic()) {
            k = makeConst(DataType::Int64, {});
            k->ints = {*x->numElements()};
        }
        c.set(0, DataType::Int64, Shape(), k);
        return Status::ok();
    }
    if (op == "ConstantOfShape")
        return inferConstantOfShape(c);
    if (op == "Cast")
        return inferCast(c);
    if (op == "Pad")
        return inferPad(c);
    if (op == "Resize" || op == "Upsample")
        return inferResize(c);
    if (op == "Tile")
        return inferTile(c);
    if (op == "ReduceSum")
        return inferReduce(c, 13);
    if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
        op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
        op == "ReduceSumSquare")
        return inferReduce(c, 18);
    if (op == "ArgMax" || op == "ArgMin") {
        const Shape *x = c.inShape(0);
        if (!x)
            return Status::ok();
        const int64_t axis = normAxis(c.node.attrInt("axis", 0), int64_t(x->rank()));
        if (axis < 0 || axis >= int64_t(x->rank()))
            return c.fail("axis out of range");
        Shape out;
        for (size_t i = 0; i < x->rank(); ++i) {
            if (int64_t(i) != axis)
                out.dims.push_back(x->dims[i]);
            else if (c.node.attrInt("keepdims", 1))
                out.dims.push_back(Dim(1));
        }
        c.set(0, DataType::Int64, out);
        return Status::ok();
    }
    return Status::ok();
}

} // namespace

Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const StopToken &stop)
{
    return inferShapes(graph, opset, values, BatchRewrite{}, stop);
}

Status inferShapes(const ir::Graph &graph, int64_t opset, std::vector<InferredValue> &values,
                   const BatchRewrite &rewrite, const StopToken &stop)
{
    values.resize(graph.valueCount());
    size_t k = 0;
    for (NodeId id : graph.topologicalOrder()) {
        if ((++k & 255) == 0 && stop.stopRequested())
            return makeError(StatusCode::Cancelled, "shape inference cancelled");
        Ctx c{graph, graph.node(id), values, opset, rewrite};
        REMAT_RETURN_IF_ERROR(inferNode(c));
    }
    return Status::ok();
}

} // namespace remat::core::onnx
