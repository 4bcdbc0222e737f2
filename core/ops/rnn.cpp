// Recurrent ops (onnx/defs/rnn): RNN, GRU, LSTM. Their attributes are resolved in recurrent.cpp
// (shared with the kernels); here are the shape function and the gradient rule.
#include "core/ops/families.h"
#include "core/ops/recurrent.h"
#include "core/ops/shape_context.h"

namespace remat::core::ops {
namespace {

using namespace rules;

Status recurrentShape(ShapeContext &c)
{
    const Shape *x = c.inShape(0);
    const Shape *w = c.inShape(1);
    const Shape *r = c.inShape(2);
    if (!x || x->rank() != 3)
        return Status::ok();
    const RecurrentKind kind = recurrentKind(c.node.opType);
    const int64_t gates = kind == RecurrentKind::Lstm ? 4 : (kind == RecurrentKind::Gru ? 3 : 1);
    const std::string direction = c.node.attrString("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
        return c.fail("direction '" + direction + "' (forward, reverse or bidirectional)");
    const Dim dirs(direction == "bidirectional" ? 2 : 1);
    Dim hidden;
    if (const int64_t h = c.node.attrInt("hidden_size", 0); h > 0)
        hidden = Dim(h);
    else if (r && r->rank() == 3 && r->dims[2].isStatic())
        hidden = r->dims[2];
    else if (w && w->rank() == 3 && w->dims[1].isStatic())
        hidden = Dim(w->dims[1].value / gates);
    const bool batchFirst = c.node.attrInt("layout", 0) != 0;
    const Dim seq = batchFirst ? x->dims[1] : x->dims[0];
    const Dim batch = batchFirst ? x->dims[0] : x->dims[1];
    const DataType t = c.inType(0);
    c.set(0, t, batchFirst ? Shape({batch, seq, dirs, hidden}) : Shape({seq, dirs, batch, hidden}));
    const Shape state = batchFirst ? Shape({batch, dirs, hidden}) : Shape({dirs, batch, hidden});
    c.set(1, t, state);
    if (kind == RecurrentKind::Lstm)
        c.set(2, t, state);
    return Status::ok();
}

bool recurrentDifferentiable(const ir::Node &, size_t pos) { return pos != 4; } // not sequence_lens

Expected<Spec> recurrent(const RuleContext &c)
{
    const ir::Value *x = c.input(0), *w = c.input(1), *r = c.input(2);
    if (!x || !w || !r || !x->shape.isStatic() || !w->shape.isStatic() || !r->shape.isStatic())
        return makeError(StatusCode::InvalidArgument,
                         c.node->opType + " needs X, W and R with static shapes (give the free "
                                          "dims with --dim or --input-shape)");
    auto cfg = recurrentConfig(c.node, recurrentKind(c.node->opType), x->shape.sizes(),
                               w->shape.sizes(), r->shape.sizes());
    if (!cfg)
        return cfg.status();
    const double steps = double(cfg->seq * cfg->batch * cfg->directions);
    const double gh = double(cfg->gates * cfg->hidden);
    const double inMacs = steps * gh * double(cfg->input),
                 hidMacs = steps * gh * double(cfg->hidden);
    Spec s;
    s.forwardFlops = 2 * (inMacs + hidMacs) + 8 * steps * gh;
    gradsForAll(c, s);
    if (s.gradInputs.empty())
        return s;
    // The step recursion runs backwards whatever needs a gradient: R and the saved state always.
    for (const SavedStateSpec &e : recurrentSavedState(*cfg)) {
        s.extras.push_back({e.position, e.suffix, x->dtype, ir::Shape::fromStatic(e.shape)});
        saveOutput(s, e.position);
    }
    saveInput(s, 2);
    if (c.needs(0))
        saveInput(s, 1); // dX = dGates W
    if (c.needs(1))
        saveInput(s, 0); // dW = dGates^T X (PyTorch's input projection keeps X)
    if (c.input(4))
        saveInput(s, 4); // sequence_lens
    if (c.input(7))
        saveInput(s, 7); // peepholes
    s.backwardFlops = 2 * hidMacs * 2 + 10 * steps * gh;
    if (c.needs(0))
        s.backwardFlops += 2 * inMacs;
    if (c.needs(1))
        s.backwardFlops += 2 * inMacs;
    return s;
}

} // namespace

void addRecurrentOps(std::vector<OpDef> &t)
{
    t.push_back(
        {.type = "GRU",
         .family = OpFamily::MatrixProduct,
         .inferShape = recurrentShape,
         .differentiable = recurrentDifferentiable,
         .derive = recurrent,
         .autocast = {.cuda = AutocastPolicy::LowerPrecision, .cpu = AutocastPolicy::Fp32}});
    t.push_back(
        {.type = "LSTM",
         .family = OpFamily::MatrixProduct,
         .inferShape = recurrentShape,
         .differentiable = recurrentDifferentiable,
         .derive = recurrent,
         .autocast = {.cuda = AutocastPolicy::LowerPrecision, .cpu = AutocastPolicy::Fp32}});
    t.push_back({.type = "RNN",
                 .family = OpFamily::MatrixProduct,
                 .inferShape = recurrentShape,
                 .differentiable = recurrentDifferentiable,
                 .derive = recurrent,
                 .autocast = {.cuda = AutocastPolicy::LowerPrecision,
                              .cpu = AutocastPolicy::LowerPrecision}});
}

} // namespace remat::core::ops
