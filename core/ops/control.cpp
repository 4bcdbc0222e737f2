// Constant producers and shape arithmetic (onnx/defs/generator, Shape, Size): host-only values
// that never carry a gradient.
#include "core/ops/families.h"
#include "core/ops/shape_context.h"

#include <cmath>

namespace remat::core::ops {
namespace {

using namespace rules;

// ---- shape functions -------------------------------------------------------------------------
Status inferRange(ShapeContext &c)
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

Status inferShape(ShapeContext &c)
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

/// RandomNormalLike / RandomUniformLike / EyeLike: the input's shape, the dtype attribute's type
/// (else the input's).
Status inferRandomLike(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    if (!x)
        return Status::ok();
    const ir::Attribute *dtype = c.node.attribute("dtype");
    c.set(0, dtype ? static_cast<DataType>(c.node.attrInt("dtype", 1)) : c.inType(0), *x);
    return Status::ok();
}

/// RandomNormal / RandomUniform: the `shape` attribute, the dtype attribute's type (float).
Status inferRandom(ShapeContext &c)
{
    const std::vector<int64_t> dims = c.node.attrInts("shape");
    for (int64_t d : dims)
        if (d < 0)
            return c.fail("negative dim " + std::to_string(d) + " in the shape attribute");
    c.set(0, static_cast<DataType>(c.node.attrInt("dtype", 1)), Shape::fromStatic(dims));
    return Status::ok();
}

Status inferConstantOfShape(ShapeContext &c)
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

Status inferConstant(ShapeContext &c)
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

Status sizeShape(ShapeContext &c)
{
    std::shared_ptr<ConstTensor> k;
    if (const Shape *x = c.inShape(0); x && x->isStatic()) {
        k = makeConst(DataType::Int64, {});
        k->ints = {*x->numElements()};
    }
    c.set(0, DataType::Int64, Shape(), k);
    return Status::ok();
}

// ---- gradient rules --------------------------------------------------------------------------

} // namespace

void addControlOps(std::vector<OpDef> &t)
{
    t.push_back({.type = "Constant",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferConstant,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .hostOnly = "a tiny constant or shape vector, computed on the host as frameworks "
                             "keep shape arithmetic there"});
    t.push_back({.type = "ConstantOfShape",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = inferConstantOfShape,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .hostOnly = "a tiny constant or shape vector, computed on the host as frameworks "
                             "keep shape arithmetic there"});
    // Random values shaped like the input: no gradient reaches the input (only its shape is read)
    // torch.eye / torch.diagonal: ones on the k-th diagonal of a matrix shaped like the input
    t.push_back({.type = "EyeLike",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = inferRandomLike,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .hostOnly = "a tiny constant or shape vector, computed on the host as frameworks "
                             "keep shape arithmetic there"});
    t.push_back({.type = "RandomNormalLike",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferRandomLike,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient});
    t.push_back({.type = "RandomUniformLike",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferRandomLike,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient});
    // torch.randn(shape) / torch.rand(shape) of a fixed shape, torch.bernoulli(p): draws, no
    // gradient (PyTorch's bernoulli gives p none either); no kernels yet (a run refuses them)
    t.push_back({.type = "RandomNormal",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferRandom,
                 .differentiable = OpDef::noInputs});
    t.push_back({.type = "RandomUniform",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferRandom,
                 .differentiable = OpDef::noInputs});
    t.push_back({.type = "Bernoulli",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 15,
                 .inferShape = inferRandomLike,
                 .differentiable = OpDef::noInputs});
    t.push_back({.type = "Shape",
                 .family = OpFamily::DataMovement,
                 .inferShape = inferShape,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .hostOnly = "a tiny constant or shape vector, computed on the host as frameworks "
                             "keep shape arithmetic there"});
    t.push_back({.type = "Range",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 11,
                 .inferShape = inferRange,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient,
                 .hostOnly = "a tiny constant or shape vector, computed on the host as frameworks "
                             "keep shape arithmetic there"});
    t.push_back({.type = "Size",
                 .family = OpFamily::DataMovement,
                 .inferShape = sizeShape,
                 .differentiable = OpDef::noInputs});
}

} // namespace remat::core::ops
