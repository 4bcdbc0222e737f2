// Element-wise ops (onnx/defs/math and logical): arithmetic, comparisons, activations.
#include "core/ops/elementwise_math.h"
#include "core/ops/families.h"
#include "core/ops/shape_context.h"

#include <cmath>
#include <functional>
#include <string_view>

namespace remat::core::ops {
namespace {

using namespace rules;
namespace ew = ops::ew;

// ---- shape functions -------------------------------------------------------------------------

/// Constant folding of a binary op: the shared table's own f (elementwise_math.h), at double for
/// float constants and at int64 for integer ones, so folding computes what the kernels compute.
struct Folder
{
    std::function<double(const std::vector<double> &)> ff;
    std::function<int64_t(const std::vector<int64_t> &)> fi;
    bool comparison = false;
};

template <typename Fn> Folder arithmeticFolder(const ir::Node &node)
{
    const ew::Params p = Fn::params(node);
    return {[p](const std::vector<double> &v) { return Fn::f(v[0], v[1], p); },
            [p](const std::vector<int64_t> &v) { return Fn::f(v[0], v[1], p); }, false};
}

template <typename Fn> Folder compareFolder()
{
    return {[](const std::vector<double> &v) { return double(Fn::f(v[0], v[1])); },
            [](const std::vector<int64_t> &v) { return int64_t(Fn::f(v[0], v[1])); }, true};
}

Folder folderFor(std::string_view op, const ir::Node &node)
{
#define REMAT_FOLD_BINARY(Name, HostT)                                                             \
    if (op == #Name)                                                                               \
        return arithmeticFolder<ew::Name>(node);
    REMAT_EW_BINARY_OPS(REMAT_FOLD_BINARY)
#undef REMAT_FOLD_BINARY
#define REMAT_FOLD_COMPARE(Name, Since)                                                            \
    if (op == #Name)                                                                               \
        return compareFolder<ew::Name>();
    REMAT_EW_COMPARE_OPS(REMAT_FOLD_COMPARE)
#undef REMAT_FOLD_COMPARE
    return {};
}

Status inferBinary(ShapeContext &c, const std::string &op)
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
            if (da.isStatic() && db.isStatic() && da.value != db.value && da.value != 1 &&
                db.value != 1)
                c.reconcile(0, 1, ka, kb);
        }
    }
    // Two static dims that differ and neither is 1: the file contradicts itself (or a user's
    // input shape does not fit it); say where instead of inferring a wrong shape. Under a batch
    // rewrite the dims were reconciled above where they could be, so only a plain pass checks.
    if (a && b && a->rankKnown && b->rankKnown && !c.rw.atFileBatch)
        for (size_t k = 1; k <= std::min(a->rank(), b->rank()); ++k) {
            const Dim &da = a->dims[a->rank() - k], &db = b->dims[b->rank() - k];
            if (da.isStatic() && db.isStatic() && da.value != db.value && da.value != 1 &&
                db.value != 1)
                return c.fail("cannot broadcast " + a->toString() + " with " + b->toString());
        }
    auto s = broadcast({a, b});
    if (!s)
        return Status::ok();
    const Folder fold = folderFor(op, c.node);
    const DataType t = fold.comparison ? DataType::Bool : c.inType(0);
    std::shared_ptr<const ConstTensor> k;
    if (fold.ff && c.inConst(0) && c.inConst(1))
        k = constBroadcast({c.inConst(0), c.inConst(1)}, t, *s, fold.ff, fold.fi);
    c.set(0, t, *s, k);
    return Status::ok();
}

Status inferWhere(ShapeContext &c)
{
    auto out = broadcast({c.inShape(0), c.inShape(1), c.inShape(2)});
    if (!out)
        return Status::ok();
    const DataType t = c.inType(1) != DataType::Undefined ? c.inType(1) : c.inType(2);
    std::shared_ptr<const ConstTensor> k;
    if (c.inConst(0) && c.inConst(1) && c.inConst(2))
        k = constBroadcast(
            {c.inConst(0), c.inConst(1), c.inConst(2)}, t, *out,
            [](auto &v) { return v[0] != 0 ? v[1] : v[2]; },
            [](auto &v) { return v[0] != 0 ? v[1] : v[2]; });
    c.set(0, t, *out, k);
    return Status::ok();
}

Status inferUnary(ShapeContext &c, DataType outType)
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
                k->ints.push_back(op == "Neg"   ? -v
                                  : op == "Not" ? int64_t(v == 0)
                                  : op == "Abs" ? std::abs(v)
                                                : v);
            } else {
                const double v = src->at(i);
                k->floats.push_back(op == "Neg"     ? -v
                                    : op == "Abs"   ? std::fabs(v)
                                    : op == "Floor" ? std::floor(v)
                                    : op == "Ceil"  ? std::ceil(v)
                                    : op == "Sqrt"  ? std::sqrt(v)
                                                    : v);
            }
        }
    }
    c.set(0, t, *x, k);
    return Status::ok();
}

Status inferVariadic(ShapeContext &c)
{
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < c.node.inputs.size(); ++i)
        shapes.push_back(c.inShape(i));
    auto out = broadcast(shapes);
    if (out)
        c.set(0, c.inType(0), *out);
    return Status::ok();
}

Status binaryShape(ShapeContext &c) { return inferBinary(c, c.node.opType); }
Status boolUnaryShape(ShapeContext &c) { return inferUnary(c, DataType::Bool); }
/// Max / Min of two inputs fold constants like the binary ops; of more, broadcast only.
Status maxMinShape(ShapeContext &c)
{
    return c.node.inputs.size() == 2 ? inferBinary(c, c.node.opType) : inferVariadic(c);
}

// ---- gradient rules --------------------------------------------------------------------------
Expected<Spec> addLike(const RuleContext &c) { return elementwise(c, 1, 1); }

/// The gradient rule of a unary op of the shared element-wise table: its backward reads what the
/// derivative is a function of (X, Y or nothing: PyTorch's derivatives.yaml, where what is saved
/// follows from the formula), at the functor's FLOPs per element.
template <typename Fn> Expected<Spec> unaryTableRule(const RuleContext &c)
{
    Spec s = elementwise(c, Fn::forwardFlops, Fn::backwardFlops);
    if (s.gradInputs.empty())
        return s;
    if (Fn::reads == ew::Reads::Input)
        saveInput(s, 0);
    else if (Fn::reads == ew::Reads::Output)
        saveOutput(s, 0);
    return s;
}

/// The gradient rule of a binary op of the shared table: each input's gradient reads the operands
/// its partial derivative is a function of (Fn::daReads / dbReads), so those are what is saved.
template <typename Fn> Expected<Spec> binaryTableRule(const RuleContext &c)
{
    if (c.node->inputs.size() != 2)
        return makeError(StatusCode::Unsupported, c.node->opType + " of " +
                                                      std::to_string(c.node->inputs.size()) +
                                                      " inputs: the gradient rule takes two");
    Spec s = elementwise(c, Fn::forwardFlops, Fn::backwardFlops);
    const int reads =
        (c.needs(0) ? Fn::daReads : ew::kNone) | (c.needs(1) ? Fn::dbReads : ew::kNone);
    if (reads & ew::kA)
        saveInput(s, 0);
    if (reads & ew::kB)
        saveInput(s, 1);
    return s;
}

Expected<Spec> where(const RuleContext &c)
{
    Spec s = elementwise(c, 1, 1);
    if (!s.gradInputs.empty())
        saveInput(s, 0);
    return s;
}

Expected<Spec> modRule(const RuleContext &c)
{
    // d(a mod b)/da = 1 almost everywhere; b gets no gradient.
    return elementwise(c, 2, 0);
}

Expected<Spec> sum(const RuleContext &c)
{
    Spec s;
    gradsForAll(c, s);
    s.forwardFlops = numel(c.output(0)) * double(std::max<size_t>(1, c.node->inputs.size()) - 1);
    return s;
}

/// PRelu's output is X's shape (its slope broadcasts to X one way); the others broadcast both ways
/// (Max / Min of more than two inputs: broadcast only).
ShapeFn binaryShapeOf(std::string_view op)
{
    if (op == "PRelu")
        return unaryShape;
    if (op == "Max" || op == "Min")
        return maxMinShape;
    return binaryShape;
}

OpFamily binaryFamily(std::string_view op)
{
    return op == "PRelu" ? OpFamily::Activation : OpFamily::Arithmetic;
}

/// The shared element-wise table's autocast rows (torch 1.13's autocast_mode.cpp): CUDA runs
/// exp, log, reciprocal, softplus and pow in float32 and prelu in half; torch 1.13's CPU list has
/// prelu on fp32 and none of the others. Every other row is on no list.
AutocastRow elementwiseAutocast(std::string_view type)
{
    if (type == "Exp" || type == "Log" || type == "Reciprocal" || type == "Softplus" ||
        type == "Pow")
        return {.cuda = AutocastPolicy::Fp32};
    if (type == "PRelu")
        return {.cuda = AutocastPolicy::LowerPrecision, .cpu = AutocastPolicy::Fp32};
    return {};
}

} // namespace

Status unaryShape(ShapeContext &c) { return inferUnary(c, DataType::Undefined); }

void addElementwiseOps(std::vector<OpDef> &t)
{
    // arithmetic: broadcasting binary ops, variadic ops
    t.push_back({.type = "Add",
                 .family = OpFamily::Arithmetic,
                 .inferShape = binaryShape,
                 .differentiable = all,
                 .derive = addLike});
    t.push_back({.type = "Sub",
                 .family = OpFamily::Arithmetic,
                 .inferShape = binaryShape,
                 .differentiable = all,
                 .derive = addLike});
    t.push_back({.type = "Mod",
                 .family = OpFamily::Arithmetic,
                 .sinceOpset = 10,
                 .inferShape = binaryShape,
                 .differentiable = first,
                 .derive = modRule});
    // the table's differentiable binary ops (elementwise_math.h): shape, gradient rule, FLOPs
#define REMAT_OPDEF_BINARY_GRAD(Name, HostT)                                                       \
    t.push_back({.type = #Name,                                                                    \
                 .family = binaryFamily(#Name),                                                    \
                 .inferShape = binaryShapeOf(#Name),                                               \
                 .differentiable = firstTwo,                                                       \
                 .derive = binaryTableRule<ew::Name>,                                              \
                 .autocast = elementwiseAutocast(#Name)});
    REMAT_EW_BINARY_GRAD_OPS(REMAT_OPDEF_BINARY_GRAD)
#undef REMAT_OPDEF_BINARY_GRAD
    t.push_back({.type = "Sum",
                 .family = OpFamily::Arithmetic,
                 .inferShape = inferVariadic,
                 .differentiable = all,
                 .derive = sum});
    t.push_back({.type = "Mean",
                 .family = OpFamily::Arithmetic,
                 .inferShape = inferVariadic,
                 .flops = perOutput});
    // comparisons and logic: bool results, no gradient
#define REMAT_OPDEF_COMPARE(Name, Since)                                                           \
    t.push_back({.type = #Name,                                                                    \
                 .family = OpFamily::DataMovement,                                                 \
                 .sinceOpset = Since,                                                              \
                 .inferShape = binaryShape,                                                        \
                 .differentiable = OpDef::noInputs,                                                \
                 .derive = noGradient});
    REMAT_EW_COMPARE_OPS(REMAT_OPDEF_COMPARE)
#undef REMAT_OPDEF_COMPARE
    t.push_back({.type = "Not",
                 .family = OpFamily::DataMovement,
                 .inferShape = boolUnaryShape,
                 .differentiable = OpDef::noInputs,
                 .derive = noGradient});
    t.push_back({.type = "IsNaN",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = boolUnaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "IsInf",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 10,
                 .inferShape = boolUnaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "Where",
                 .family = OpFamily::DataMovement,
                 .sinceOpset = 9,
                 .inferShape = inferWhere,
                 .differentiable = whereData,
                 .derive = where});
    // unary math and activations: the shared element-wise table's rows (elementwise_math.h)
#define REMAT_OPDEF_UNARY(Name, HostF, HostG, Family, Since)                                       \
    t.push_back({.type = #Name,                                                                    \
                 .family = OpFamily::Family,                                                       \
                 .sinceOpset = Since,                                                              \
                 .inferShape = unaryShape,                                                         \
                 .differentiable = first,                                                          \
                 .derive = unaryTableRule<ew::Name>,                                               \
                 .autocast = elementwiseAutocast(#Name)});
    REMAT_EW_UNARY_OPS(REMAT_OPDEF_UNARY)
#undef REMAT_OPDEF_UNARY
    // Rounding and sign: a zero gradient (PyTorch's zeros_like(grad), nothing saved), so no input
    // is differentiable and the builder ends the gradient path here; no kernels yet.
    t.push_back({.type = "Floor",
                 .family = OpFamily::Arithmetic,
                 .inferShape = unaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "Ceil",
                 .family = OpFamily::Arithmetic,
                 .inferShape = unaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "Round",
                 .family = OpFamily::Arithmetic,
                 .sinceOpset = 11,
                 .inferShape = unaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "Sign",
                 .family = OpFamily::Arithmetic,
                 .sinceOpset = 9,
                 .inferShape = unaryShape,
                 .differentiable = OpDef::noInputs,
                 .flops = perOutput});
    t.push_back({.type = "Shrink",
                 .family = OpFamily::Activation,
                 .sinceOpset = 9,
                 .inferShape = unaryShape,
                 .flops = perOutput});
}

} // namespace remat::core::ops
